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
import { adapterSecrets, causeWithoutSecrets, withoutSecrets } from '../upstream/bodies.js';
import { readSdkStream } from './sdk-stream.js';
import { guardedEventStream } from '../upstream/stream-limits.js';
import { parseRetryAfter } from '../upstream/retry.js';
import { isObject, kindOf } from '../core/values.js';
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
  /** What an error's explanation must not show (adapterSecrets). */
  private readonly secrets: readonly string[];

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
    this.secrets = adapterSecrets(options);
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
      throw providerError(sdk, error, 'connect', this.secrets);
    }
    await readSdkStream(
      stream,
      (event) => reader.event(event),
      signal,
      (error) => providerError(sdk, error, 'stream', this.secrets),
    );
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
          // The SDK's event reader holds an event until it ends, however long: capped as it is read.
          const send = () =>
            undiciFetch(url, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]).then(
              (response) => guardedEventStream(response as unknown as Response, WHO),
            );
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
function providerError(
  sdk: AnthropicSdk,
  error: unknown,
  phase: 'connect' | 'stream',
  /** The credentials the adapter sends: an explanation that echoes one is logged and shown without it. */
  secrets: readonly string[],
): unknown {
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
    const detail = withoutSecrets(errorMessage(error), secrets);
    if (error.status === undefined) {
      // An `error` event in the middle of the stream (such as overloaded_error).
      return new UpstreamError(
        'UPSTREAM_UNAVAILABLE',
        'The model provider (Anthropic) reported an error in the middle of its answer.',
        {
          cause: detail !== undefined ? new Error(detail) : causeWithoutSecrets(error, secrets),
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
      cause: causeWithoutSecrets(error, secrets),
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

  /**
   * One event, its fields checked before they are read: what the Messages API never sends (text that is not a string,
   * an event that is not an object) is UPSTREAM_BAD_RESPONSE naming the field, as for Chat Completions.
   */
  event(event: RawMessageStreamEvent): void {
    if (!isObject(event)) throw malformed('an event that is not an object');
    switch (event.type) {
      case 'message_start': {
        const message: unknown = event.message;
        if (!isObject(message)) throw malformed('a message_start event without a message object');
        this.messageId = optionalString(message.id, 'message_start.message.id');
        this.model = optionalString(message.model, 'message_start.message.model');
        this.inputUsage = isObject(message.usage) ? (message.usage as unknown as Usage) : undefined;
        break;
      }
      case 'content_block_start': {
        const block: unknown = event.content_block;
        if (!isObject(block)) throw malformed('a content_block_start event without a content_block object');
        const index = blockIndex(event.index, 'content_block_start');
        if (block.type === 'text') {
          const text = optionalString(block.text, 'content_block_start.content_block.text');
          // The message's id for its first text; later texts (after a call) get ids of their own.
          const id = this.output.textStart(this.texts++ === 0 ? this.messageId : undefined);
          this.blocks.set(index, { kind: 'text', id });
          if (text) this.output.textContent(id, text);
        } else if (block.type === 'thinking') {
          const thinking = optionalString(block.thinking, 'content_block_start.content_block.thinking');
          const id = this.output.reasoningStart();
          this.blocks.set(index, { kind: 'reasoning', id });
          if (thinking) this.output.reasoningContent(id, thinking);
        } else if (block.type === 'tool_use') {
          const name = optionalString(block.name, 'content_block_start.content_block.name (of a tool_use block)');
          const input = block.input;
          if (input != null && (typeof input !== 'object' || Array.isArray(input)))
            throw malformed('a tool_use block whose input is not an object');
          const id = this.output.actionStart(
            optionalString(block.id, 'content_block_start.content_block.id (of a tool_use block)'),
            name ?? '',
            this.messageId,
          );
          this.blocks.set(index, { kind: 'call', id });
          // Some servers send the whole input at the start and no deltas.
          if (input && Object.keys(input).length > 0) this.output.actionArgs(id, JSON.stringify(input));
        }
        break;
      }
      case 'content_block_delta': {
        const delta: unknown = event.delta;
        if (!isObject(delta)) throw malformed('a content_block_delta event without a delta object');
        const open = this.blocks.get(event.index);
        if (!open) break;
        if (delta.type === 'text_delta' && open.kind === 'text')
          this.output.textContent(open.id, text(delta.text, 'text_delta.text'));
        else if (delta.type === 'input_json_delta' && open.kind === 'call') {
          const json = optionalString(delta.partial_json, 'input_json_delta.partial_json');
          if (json) this.output.actionArgs(open.id, json);
        } else if (delta.type === 'thinking_delta' && open.kind === 'reasoning')
          this.output.reasoningContent(open.id, text(delta.thinking, 'thinking_delta.thinking'));
        break;
      }
      case 'content_block_stop':
        this.close(event.index);
        break;
      case 'message_delta': {
        const delta: unknown = event.delta;
        if (!isObject(delta)) throw malformed('a message_delta event without a delta object');
        const stopReason = optionalString(delta.stop_reason, 'message_delta.delta.stop_reason');
        if (stopReason) this.stopReason = stopReason;
        // The counts so far (cumulative): the last one says the whole call's output.
        if (isObject(event.usage)) this.outputTokens = event.usage.output_tokens;
        break;
      }
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

/** UPSTREAM_BAD_RESPONSE for an event the Messages API never sends. */
function malformed(what: string): UpstreamError {
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `The model provider (Anthropic) sent ${what}.`);
}

/** A field that must be a string. */
function text(value: unknown, field: string): string {
  if (typeof value !== 'string') throw malformed(`a ${field} that is not a string (${kindOf(value)})`);
  return value;
}

/** A field that is a string when present (null and a missing field alike are undefined). */
function optionalString(value: unknown, field: string): string | undefined {
  if (value == null) return undefined;
  return text(value, field);
}

/** A block's index: a whole number. */
function blockIndex(value: unknown, event: string): number {
  if (!Number.isSafeInteger(value)) throw malformed(`a ${event} event whose index is not a whole number`);
  return value as number;
}
