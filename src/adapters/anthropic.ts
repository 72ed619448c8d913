import type Anthropic from '@anthropic-ai/sdk';
import type { APIError } from '@anthropic-ai/sdk';
import type {
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
  Usage,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { Agent, fetch as undiciFetch } from 'undici';
import { ConfigurationError, GatewayError, UpstreamError } from '../core/errors.js';
import { tokenUsage } from '../core/events.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import { capitalize, commonCauseHint, upstreamNetworkError, upstreamStatusError } from '../upstream/errors.js';
import { SdkAttempts } from '../upstream/attempts.js';
import { parseRetryAfter } from '../upstream/retry.js';
import type { ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';
import { toAnthropicMessages, toAnthropicToolChoice, toAnthropicTools } from './anthropic-messages.js';

export interface AnthropicAdapterOptions {
  /** API key (sent as `x-api-key`). */
  apiKey?: string;
  /**
   * Base URL of the Messages API, for proxies and gateways (Bedrock or Vertex proxies, LiteLLM). @default
   * "https://api.anthropic.com"
   */
  baseURL?: string;
  /** Model used unless a request's forwardedParameters.model names another. @default "claude-sonnet-5-5" */
  model?: string;
  /** `max_tokens` when a request sets none: the Messages API requires one. @default 4096 */
  maxTokens?: number;
  /** Retries before the stream starts (the SDK's: 408, 409, 429, 5xx, connection errors). @default 2 */
  maxRetries?: number;
  /** Extra headers for every request (`anthropic-beta`, a proxy's routing headers). */
  defaultHeaders?: Record<string, string>;
}

const WHO = 'the model provider (Anthropic)';
/** Where a call's attempts counter rides in the init the SDK hands to fetch. */
const ATTEMPTS = Symbol('attempts');

type AnthropicSdk = typeof import('@anthropic-ai/sdk');
/** The SDK, loaded on first use: a gateway on another provider does not pay for it (about 15 MB). */
const loadSdk = loadOnFirstUse(() => import('@anthropic-ai/sdk'));

/**
 * Claude through the Messages API, streamed, with tool use, on the official SDK (`@anthropic-ai/sdk`):
 * its request types, its SSE reader and its retries (2 by default, before the stream starts, never
 * after). Requests go through an undici pool of the adapter's own, closed with the gateway.
 *
 * The adapter does not ask for extended thinking; a model that streams thinking anyway has it shown as the run's
 * reasoning (never sent back to the model: its signatures are not kept), and redacted thinking is left out
 * (PROTOCOL.md §4.10).
 */
export class AnthropicAdapter implements ModelAdapter {
  readonly name = 'anthropic';
  readonly model: string;
  private readonly maxTokens: number;
  private readonly options: AnthropicAdapterOptions;
  private pool: { client: Anthropic; dispatcher: Agent } | undefined;

  constructor(options: AnthropicAdapterOptions = {}) {
    if (!options.apiKey && !options.baseURL) {
      throw new ConfigurationError('AnthropicAdapter needs an apiKey (or a baseURL for a proxy that needs no key).');
    }
    if (options.maxTokens !== undefined && (!Number.isSafeInteger(options.maxTokens) || options.maxTokens < 1)) {
      throw new ConfigurationError(
        `AnthropicAdapter: maxTokens must be a whole number, 1 or more (got ${JSON.stringify(options.maxTokens)}).`,
      );
    }
    this.options = options;
    this.model = options.model ?? 'claude-sonnet-5-5';
    this.maxTokens = options.maxTokens ?? 4096;
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.dispatcher.close();
  }

  async stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const params = request.forwardedParameters;
    const { system, messages } = toAnthropicMessages(request.messages);
    const tools = toAnthropicTools(request.tools);
    const body: MessageCreateParamsStreaming = {
      model: params.model || this.model,
      max_tokens: params.maxTokens ?? this.maxTokens,
      messages,
      stream: true,
      ...(system !== undefined ? { system } : {}),
      ...(tools.length ? { tools } : {}),
      ...(params.temperature != null ? { temperature: params.temperature } : {}),
      ...(params.stop?.length ? { stop_sequences: params.stop } : {}),
    };
    const toolChoice = tools.length ? toAnthropicToolChoice(params) : undefined;
    if (toolChoice) body.tool_choice = toolChoice;

    const reader = new EventReader(output);
    const sdk = await loadSdk();
    // The SDK retries inside itself: its attempts reach the fetch below with this call's counter.
    const attempts = { [ATTEMPTS]: new SdkAttempts(WHO, request.onRetry, request.logger) };
    let stream: AsyncIterable<RawMessageStreamEvent>;
    try {
      stream = await this.client(sdk).messages.create(body, { signal, fetchOptions: attempts as object });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw providerError(sdk, error, 'connect');
    }
    try {
      for await (const event of stream) reader.event(event);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw providerError(sdk, error, 'stream');
    }
    // The SDK ends an aborted stream quietly.
    if (signal.aborted) throw signal.reason;
    reader.finish();
  }

  private client(sdk: AnthropicSdk): Anthropic {
    if (!this.pool) {
      // Streams may be quiet for long: the run's idle timeout decides when one has gone silent.
      const dispatcher = new Agent({ bodyTimeout: 0, headersTimeout: 0, keepAliveTimeout: 10_000 });
      const client = new sdk.Anthropic({
        apiKey: this.options.apiKey ?? null,
        ...(this.options.baseURL ? { baseURL: this.options.baseURL } : {}),
        maxRetries: this.options.maxRetries ?? 2,
        // Without a key (a proxy that adds its own), the SDK must be told to send no credentials.
        defaultHeaders: { ...(this.options.apiKey ? {} : { authorization: null }), ...this.options.defaultHeaders },
        // The SDK (1.13) spreads a call's `fetchOptions` into every attempt's init (its buildRequest, then
        // fetchWithTimeout), so the call's counter is there. A middleware that made a new Request would
        // drop it: the adapter's tests would then see no retries.
        fetch: ((url: string, init: RequestInit & { [ATTEMPTS]?: SdkAttempts }) => {
          const send = () => undiciFetch(url, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]);
          const attempts = init[ATTEMPTS];
          return attempts ? attempts.send(send) : send();
        }) as never,
        // The SDK's own logging stays off: the gateway logs failures with the run.
        logLevel: 'off',
      });
      this.pool = { client, dispatcher };
    }
    return this.pool.client;
  }
}

/**
 * The gateway's error for what the SDK threw, naming what to check: while asking (`connect`, the
 * SDK has retried by then) or while reading the answer (`stream`, where a broken connection reaches
 * here as undici's own error).
 */
function providerError(sdk: AnthropicSdk, error: unknown, phase: 'connect' | 'stream'): unknown {
  if (error instanceof GatewayError) return error;
  if (error instanceof sdk.APIUserAbortError) return error;
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return new UpstreamError('UPSTREAM_TIMEOUT', `${capitalize(WHO)} did not answer in time.`, { cause: error });
  }
  if (error instanceof sdk.APIConnectionError) {
    return new UpstreamError(
      'UPSTREAM_UNREACHABLE',
      `${capitalize(WHO)} could not be reached. Check ANTHROPIC_BASE_URL and that the server is running.`,
      { cause: error },
    );
  }
  if (error instanceof sdk.APIError) {
    const detail = errorMessage(error);
    if (error.status === undefined) {
      // An `error` event in the middle of the stream (such as overloaded_error).
      return new UpstreamError(
        'UPSTREAM_UNAVAILABLE',
        'The model provider (Anthropic) reported an error in the middle of its answer.',
        {
          cause: new Error(detail ?? error.message),
        },
      );
    }
    const retryAfterMs = parseRetryAfter(error.headers?.get('retry-after'));
    const hint =
      error.status === 401 || error.status === 403
        ? 'Check ANTHROPIC_API_KEY.'
        : commonCauseHint(error.status, detail, 'ANTHROPIC_MODEL');
    return upstreamStatusError(WHO, error.status, {
      // The provider's explanation of a bad request helps; its server errors may hold internals.
      detail: error.status < 500 ? detail : undefined,
      hint,
      cause: error,
      retryAfterSeconds: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
    });
  }
  if (error instanceof SyntaxError) {
    return new UpstreamError(
      'UPSTREAM_BAD_RESPONSE',
      'The model provider (Anthropic) sent an event that is not JSON.',
      { cause: error },
    );
  }
  return upstreamNetworkError(WHO, error, phase);
}

function errorMessage(error: APIError): string | undefined {
  const body = error.error as { error?: { message?: unknown }; message?: unknown } | undefined;
  const message = body?.error?.message ?? body?.message;
  return typeof message === 'string' ? message : undefined;
}

/**
 * Turns Messages API stream events into the run's text messages and action calls: a text block is a
 * text message, a tool_use block an action call (its `input_json_delta`s the arguments), a thinking block a
 * reasoning message (its `thinking_delta`s the text; signatures and redacted thinking are dropped).
 */
class EventReader {
  private messageId: string | undefined;
  private model: string | undefined;
  /** message_start's usage (input and cache counts); message_delta's output count. */
  private inputUsage: Usage | undefined;
  private outputTokens: number | undefined;
  private stopReason: string | null | undefined;
  private texts = 0;
  /** Open blocks by index: the text message or action call each one is. */
  private readonly blocks = new Map<number, { kind: 'text' | 'call' | 'reasoning'; id: string }>();

  constructor(private readonly output: ModelOutput) {}

  event(event: RawMessageStreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.messageId = event.message.id;
        this.model = event.message.model;
        this.inputUsage = event.message.usage;
        break;
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text') {
          // The message's id for its first text; later texts (after a call) get ids of their own.
          const id = this.output.textStart(this.texts++ === 0 ? this.messageId : undefined);
          this.blocks.set(event.index, { kind: 'text', id });
          if (block.text) this.output.textContent(id, block.text);
        } else if (block.type === 'thinking') {
          const id = this.output.reasoningStart();
          this.blocks.set(event.index, { kind: 'reasoning', id });
          if (block.thinking) this.output.reasoningContent(id, block.thinking);
        } else if (block.type === 'tool_use') {
          const id = this.output.actionStart(block.id, block.name, this.messageId);
          this.blocks.set(event.index, { kind: 'call', id });
          // Some servers send the whole input at the start and no deltas.
          if (block.input && typeof block.input === 'object' && Object.keys(block.input).length > 0) {
            this.output.actionArgs(id, JSON.stringify(block.input));
          }
        }
        break;
      }
      case 'content_block_delta': {
        const open = this.blocks.get(event.index);
        if (!open) break;
        const delta = event.delta;
        if (delta.type === 'text_delta' && open.kind === 'text') this.output.textContent(open.id, delta.text);
        else if (delta.type === 'input_json_delta' && open.kind === 'call' && delta.partial_json)
          this.output.actionArgs(open.id, delta.partial_json);
        else if (delta.type === 'thinking_delta' && open.kind === 'reasoning')
          this.output.reasoningContent(open.id, delta.thinking);
        break;
      }
      case 'content_block_stop':
        this.close(event.index);
        break;
      case 'message_delta':
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        // The counts so far (cumulative): the last one says the whole call's output.
        if (event.usage) this.outputTokens = event.usage.output_tokens;
        break;
      case 'message_stop':
        break;
    }
  }

  /** The stream has ended: it must have said why it stopped; every block is closed. */
  finish(): void {
    for (const index of [...this.blocks.keys()]) this.close(index);
    this.reportUsage();
    if (!this.stopReason) {
      throw new UpstreamError(
        'UPSTREAM_STREAM_INTERRUPTED',
        'The model provider (Anthropic) ended its stream before the answer was complete.',
      );
    }
  }

  /**
   * What the call used. Anthropic's input_tokens leaves out what was read from or written to its cache: the three
   * added up are the input, of which the cached parts are told apart.
   */
  private reportUsage(): void {
    const input = this.inputUsage;
    const read = input?.cache_read_input_tokens ?? 0;
    const written = input?.cache_creation_input_tokens ?? 0;
    const report = tokenUsage('anthropic', this.model, {
      inputTokens: input ? input.input_tokens + read + written : undefined,
      outputTokens: this.outputTokens,
      cachedInputTokens: input?.cache_read_input_tokens ?? undefined,
      cacheWriteInputTokens: input?.cache_creation_input_tokens ?? undefined,
      totalTokens:
        input && this.outputTokens !== undefined ? input.input_tokens + read + written + this.outputTokens : undefined,
    });
    if (report) this.output.usage(report);
  }

  private close(index: number): void {
    const open = this.blocks.get(index);
    if (!open) return;
    this.blocks.delete(index);
    if (open.kind === 'text') this.output.textEnd(open.id);
    else if (open.kind === 'reasoning') this.output.reasoningEnd(open.id);
    else this.output.actionEnd(open.id);
  }
}
