import { ConfigurationError, GatewayError } from '../core/errors.js';
import type { ForwardedParameters, Message, ToolDefinition } from '../core/messages.js';
import type { ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';

/** A model call, as `handleRequest` sees it. */
export interface LLMRequestData {
  threadId: string;
  runId: string;
  model: string | undefined;
  messages: readonly Message[];
  actions: readonly ToolDefinition[];
  forwardedParameters: ForwardedParameters;
  /** Milliseconds since the epoch. */
  timestamp: number;
  provider: string;
}

/** What the model answered (a chunk of it, in progressive mode), as `handleResponse` sees it. */
export interface LLMResponseData {
  threadId: string;
  runId: string;
  model: string | undefined;
  /** A chunk's text or arguments (progressive), or the call's whole output: its texts and action calls. */
  output: string | { text: string; actionCalls: { id: string; name: string; arguments: string }[] };
  /** Milliseconds from the call's start. */
  latency: number;
  timestamp: number;
  provider: string;
  isProgressiveChunk: boolean;
  isFinalResponse: boolean;
}

/** A model call that failed, as `handleError` sees it. */
export interface LLMErrorData {
  threadId: string;
  runId: string;
  model: string | undefined;
  error: { code: string; message: string };
  latency: number;
  timestamp: number;
  provider: string;
}

/**
 * Observability hooks (opt-in): each model call (`handleRequest`), its answer (`handleResponse`: every
 * chunk as it streams with `progressive`, else once, whole, at the end) and its failure
 * (`handleError`). Hooks are called without being waited for, and what they throw is logged: they
 * never slow or fail a run. With no hooks the adapter is not wrapped at all.
 */
export interface ObservabilityOptions {
  progressive?: boolean;
  handleRequest?(data: LLMRequestData): void | Promise<void>;
  handleResponse?(data: LLMResponseData): void | Promise<void>;
  handleError?(data: LLMErrorData): void | Promise<void>;
}

export function resolveObservability(options: unknown): ObservabilityOptions | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError(
      'options.observability must be an object: {progressive?, handleRequest?, handleResponse?, handleError?}.',
    );
  for (const [name, value] of Object.entries(options)) {
    if (name === 'progressive') {
      if (value !== undefined && typeof value !== 'boolean')
        throw new ConfigurationError('observability.progressive must be true or false.');
    } else if (name === 'handleRequest' || name === 'handleResponse' || name === 'handleError') {
      if (value !== undefined && typeof value !== 'function')
        throw new ConfigurationError(`observability.${name} must be a function.`);
    } else {
      throw new ConfigurationError(
        `Unknown option "observability.${name}". Known: progressive, handleRequest, handleResponse, handleError.`,
      );
    }
  }
  const resolved = options as ObservabilityOptions;
  return resolved.handleRequest || resolved.handleResponse || resolved.handleError ? resolved : undefined;
}

/** `adapter`, with the observability hooks called around each of its calls. */
export class ObservedAdapter implements ModelAdapter {
  readonly name: string;
  readonly model: string | undefined;
  readonly parameters: ModelAdapter['parameters'];

  constructor(
    private readonly inner: ModelAdapter,
    private readonly hooks: ObservabilityOptions,
  ) {
    this.name = inner.name;
    this.model = inner.model;
    this.parameters = inner.parameters;
  }

  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }

  stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const { hooks } = this;
    const started = performance.now();
    const model = request.forwardedParameters.model || this.inner.model;
    const base = { threadId: request.threadId, runId: request.runId, model, provider: this.inner.name };
    const call = (name: 'handleRequest' | 'handleResponse' | 'handleError', data: unknown) => {
      const hook = hooks[name] as ((data: unknown) => unknown) | undefined;
      if (!hook) return;
      try {
        void Promise.resolve(hook(data)).catch((error: unknown) =>
          request.logger.error({ err: error, hook: name }, 'an observability hook failed'),
        );
      } catch (error) {
        request.logger.error({ err: error, hook: name }, 'an observability hook failed');
      }
    };
    call('handleRequest', {
      ...base,
      messages: request.messages,
      actions: request.tools,
      forwardedParameters: request.forwardedParameters,
      timestamp: Date.now(),
    });

    let text = '';
    const calls = new Map<string, { id: string; name: string; arguments: string }>();
    const chunk = (piece: string) => {
      if (hooks.progressive)
        call('handleResponse', {
          ...base,
          output: piece,
          latency: performance.now() - started,
          timestamp: Date.now(),
          isProgressiveChunk: true,
          isFinalResponse: false,
        });
    };
    const observed: ModelOutput = {
      textStart: (proposedId, parentMessageId) => output.textStart(proposedId, parentMessageId),
      textContent: (messageId, content) => {
        output.textContent(messageId, content);
        text += content;
        chunk(content);
      },
      textEnd: (messageId) => output.textEnd(messageId),
      actionStart: (proposedId, actionName, parentMessageId) => {
        const id = output.actionStart(proposedId, actionName, parentMessageId);
        calls.set(id, { id, name: actionName, arguments: '' });
        return id;
      },
      actionArgs: (id, args) => {
        output.actionArgs(id, args);
        const entry = calls.get(id);
        if (entry) entry.arguments += args;
        chunk(args);
      },
      actionEnd: (id) => output.actionEnd(id),
      // Reasoning is not the answer: the hooks see only text and calls, as CopilotKit's do.
      reasoningStart: (proposedId) => output.reasoningStart(proposedId),
      reasoningContent: (id, content) => output.reasoningContent(id, content),
      reasoningEnd: (id) => output.reasoningEnd(id),
      usage: (report) => output.usage(report),
    };
    return Promise.resolve(this.inner.stream(request, observed, signal)).then(
      () => {
        call('handleResponse', {
          ...base,
          output: { text, actionCalls: [...calls.values()] },
          latency: performance.now() - started,
          timestamp: Date.now(),
          isProgressiveChunk: false,
          isFinalResponse: true,
        });
      },
      (error: unknown) => {
        const coded =
          error instanceof GatewayError
            ? { code: error.code, message: error.message }
            : { code: 'INTERNAL_SERVER_ERROR', message: 'Unexpected error.' };
        call('handleError', { ...base, error: coded, latency: performance.now() - started, timestamp: Date.now() });
        throw error;
      },
    );
  }
}
