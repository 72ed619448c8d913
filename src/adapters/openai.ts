import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import { ConfigurationError, UpstreamError } from '../core/errors.js';
import { UpstreamClient } from '../upstream/client.js';
import { commonCauseHint } from '../upstream/errors.js';
import { retryPolicy, type RetryPolicy } from '../upstream/retry.js';
import type { ForwardedParameters, ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';
import { toChatMessages, toChatTools, toToolChoice } from './openai-messages.js';
import { ResponsesReader, toResponsesInput, toResponsesToolChoice, toResponsesTools } from './openai-responses.js';

export interface OpenAIAdapterOptions {
  /** API key; servers that need none (Ollama, vLLM) may leave it out when `baseURL` is set. */
  apiKey?: string;
  /** Base URL of any OpenAI-compatible server. @default "https://api.openai.com/v1" */
  baseURL?: string;
  /** Model used unless a request's forwardedParameters.model names another. @default "gpt-4o-mini" */
  model?: string;
  /** Retries before the stream starts (408, 409, 429, 5xx, connection errors). @default 2 */
  maxRetries?: number;
  /** Extra headers for every request (Azure's api-key, gateways' routing headers). */
  defaultHeaders?: Record<string, string>;
  /** Extra query parameters for every request (Azure's api-version). */
  defaultQuery?: Record<string, string>;
  /**
   * Which API to call: `chat` (Chat Completions, which nearly every OpenAI-compatible server speaks)
   * or `responses` (OpenAI's Responses API, which has no stop sequences). @default "chat"
   */
  apiStyle?: 'chat' | 'responses';
  /**
   * How Chat Completions is told `maxTokens`: `max_completion_tokens` (OpenAI's current name, which
   * its reasoning models require) or `max_tokens` (the only one many compatible servers know).
   * @default "max_completion_tokens" for OpenAI itself (no baseURL, or one on api.openai.com), "max_tokens" for any other server
   */
  maxTokensParameter?: 'max_tokens' | 'max_completion_tokens';
}

const WHO = 'the model provider';
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI and every OpenAI-compatible server: Chat Completions streaming (the default, `apiStyle:
 * "chat"`) or OpenAI's Responses API (`apiStyle: "responses"`, stored nowhere: `store: false`).
 *
 * The requests and events are the openai SDK's own types, but the stream is read here, on the
 * gateway's undici pool with eventsource-parser, not through the SDK: its fetch and web-stream reader
 * (which copies its buffer after every event) cost more CPU than everything else a streamed token
 * goes through (BENCHMARKS.md). Retries keep the SDK's semantics: `maxRetries` (2) retries of 408,
 * 409, 429, 5xx and connection errors with exponential backoff, `Retry-After` honoured, and never a
 * retry once the answer has begun. Reasoning content (Chat Completions servers' `reasoning_content`,
 * the Responses API's reasoning items and summaries) is dropped: it is not the answer.
 */
export class OpenAIAdapter implements ModelAdapter {
  readonly name = 'openai';
  readonly model: string;
  readonly apiStyle: 'chat' | 'responses';
  /** The Responses API has no stop sequences: a request with `stop` is refused before the run. */
  readonly parameters: ReadonlySet<keyof ForwardedParameters> | undefined;
  readonly maxTokensParameter: 'max_tokens' | 'max_completion_tokens';
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly policy: RetryPolicy;
  private upstream: UpstreamClient | undefined;

  constructor(options: OpenAIAdapterOptions = {}) {
    if ((options as { client?: unknown }).client !== undefined) {
      throw new ConfigurationError('OpenAIAdapter no longer takes a ready openai client: give it apiKey, baseURL, defaultHeaders and defaultQuery instead.');
    }
    if (!options.apiKey && !options.baseURL) {
      throw new ConfigurationError('OpenAIAdapter needs an apiKey (or a baseURL for a server that needs no key).');
    }
    this.model = options.model ?? 'gpt-4o-mini';
    const apiStyle = options.apiStyle ?? 'chat';
    if (apiStyle !== 'chat' && apiStyle !== 'responses') {
      throw new ConfigurationError(`OpenAIAdapter: apiStyle must be "chat" or "responses" (got ${JSON.stringify(apiStyle)}).`);
    }
    const maxTokensParameter = options.maxTokensParameter ?? (isOpenAI(options.baseURL) ? 'max_completion_tokens' : 'max_tokens');
    if (maxTokensParameter !== 'max_tokens' && maxTokensParameter !== 'max_completion_tokens') {
      throw new ConfigurationError(`OpenAIAdapter: maxTokensParameter must be "max_tokens" or "max_completion_tokens" (got ${JSON.stringify(maxTokensParameter)}).`);
    }
    this.apiStyle = apiStyle;
    this.maxTokensParameter = maxTokensParameter;
    this.parameters = apiStyle === 'responses' ? new Set(['model', 'maxTokens', 'temperature', 'toolChoice', 'toolChoiceFunctionName']) : undefined;
    const url = new URL(`${(options.baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, '')}/${apiStyle === 'chat' ? 'chat/completions' : 'responses'}`);
    for (const [name, value] of Object.entries(options.defaultQuery ?? {})) url.searchParams.set(name, value);
    this.url = url.href;
    this.headers = {
      accept: 'text/event-stream',
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      ...options.defaultHeaders,
    };
    this.policy = retryPolicy(
      {
        maxRetries: options.maxRetries ?? 2,
        baseDelayMs: 500,
        maxDelayMs: 8_000,
        maxRetryAfterMs: 60_000,
        retryStatuses: [408, 409, 429, 500, 502, 503, 504],
        // Time to the answer's headers; the run's idle timeout watches the stream after that.
        attemptTimeoutMs: 600_000,
        totalTimeoutMs: 600_000,
      },
      'OpenAIAdapter',
    );
  }

  private chatBody(request: ModelRequest): ChatCompletionCreateParamsStreaming {
    const params = request.forwardedParameters;
    const tools = toChatTools(request.tools);
    const body: ChatCompletionCreateParamsStreaming = {
      model: params.model || this.model,
      messages: toChatMessages(request.messages),
      stream: true,
      ...(tools.length ? { tools } : {}),
      ...(params.maxTokens != null ? { [this.maxTokensParameter]: params.maxTokens } : {}),
      ...(params.temperature != null ? { temperature: params.temperature } : {}),
      ...(params.stop?.length ? { stop: params.stop } : {}),
    };
    const toolChoice = tools.length ? toToolChoice(params) : undefined;
    if (toolChoice) body.tool_choice = toolChoice;
    return body;
  }

  private responsesBody(request: ModelRequest): ResponseCreateParamsStreaming {
    const params = request.forwardedParameters;
    const tools = toResponsesTools(request.tools);
    const body: ResponseCreateParamsStreaming = {
      model: params.model || this.model,
      input: toResponsesInput(request.messages),
      stream: true,
      // The conversation is sent whole every time: nothing is kept on OpenAI's side.
      store: false,
      ...(tools.length ? { tools } : {}),
      ...(params.maxTokens != null ? { max_output_tokens: params.maxTokens } : {}),
      ...(params.temperature != null ? { temperature: params.temperature } : {}),
    };
    const toolChoice = tools.length ? toResponsesToolChoice(params) : undefined;
    if (toolChoice) body.tool_choice = toolChoice;
    return body;
  }

  /** Closes the adapter's connection pool (the gateway calls this when it closes); a later call opens a new one. */
  async close(): Promise<void> {
    const upstream = this.upstream;
    this.upstream = undefined;
    await upstream?.close();
  }

  async stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const body = this.apiStyle === 'chat' ? this.chatBody(request) : this.responsesBody(request);
    this.upstream ??= new UpstreamClient();
    const reader = this.apiStyle === 'chat' ? new ChunkReader(output) : new ResponsesReader(output);
    const parser = createParser({ onEvent: (event) => reader.event(event) });
    const decoder = new StringDecoder('utf8');
    let first = true;
    // Every event of a read is handed to the run synchronously, with no await per read or token. The
    // body is read to its end, as the SDK does (past `[DONE]` too), so the connection goes back to the pool.
    // Returned, not awaited: no suspended frame (holding the request) for the life of the stream.
    return this.upstream
      .stream({ url: this.url, method: 'POST', headers: this.headers, json: body, who: WHO, policy: this.policy, signal, logger: request.logger }, (bytes) => {
        let text = decoder.write(bytes);
        if (first && text !== '') {
          first = false;
          // A byte order mark before the stream, which Server-Sent Events allow, is not part of it.
          if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        }
        parser.feed(text);
        reader.flush();
      })
      .then(
        () => reader.finish(),
        (error: unknown) => {
          throw withHint(error);
        },
      );
  }
}

/** Whether the server is OpenAI's own (no base URL, or one on api.openai.com). */
function isOpenAI(baseURL: string | undefined): boolean {
  if (!baseURL) return true;
  try {
    return new URL(baseURL).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

/** A hint for what a developer should check, on the errors where there is one. */
function withHint(error: unknown): unknown {
  if (!(error instanceof UpstreamError)) return error;
  if (error.code === 'UPSTREAM_AUTHENTICATION_FAILED') {
    return new UpstreamError(error.code, `${error.message.replace(/\.$/, '')}. Check OPENAI_API_KEY.`, { cause: error.cause, details: error.details });
  }
  if (error.code === 'UPSTREAM_UNREACHABLE') {
    return new UpstreamError(error.code, `${error.message} Check OPENAI_BASE_URL and that the server is running.`, { cause: error.cause, details: error.details });
  }
  const status = error.details?.upstreamStatus;
  const hint = typeof status === 'number' ? commonCauseHint(status, error.message, 'OPENAI_MODEL') : undefined;
  if (hint) return new UpstreamError(error.code, `${error.message.replace(/\.$/, '')}. ${hint}`, { cause: error.cause, details: error.details });
  return error;
}

/**
 * Turns Chat Completions chunks into the run's text messages and action calls. Text deltas of one
 * network read are joined and written once (`flush`), so tokens that arrived together become one
 * chunk; the joined text is the same.
 */
class ChunkReader {
  done = false;
  private finished = false;
  // This completion's open text message and open tool calls, by the provider's tool-call index
  // (so calls whose deltas interleave keep their own arguments), with the provider's call id.
  private openText: string | undefined;
  private pendingText = '';
  /** Created with the first tool call: a held text stream pays for every empty map it keeps. */
  private openCalls: Map<number, { id: string; providerId: string | undefined }> | undefined;
  private parentId: string | undefined;

  constructor(private readonly output: ModelOutput) {}

  event(event: EventSourceMessage): void {
    if (this.done) return;
    if (event.data === '[DONE]') {
      this.done = true;
      return;
    }
    let chunk: ChatCompletionChunk & { error?: { message?: string } };
    try {
      chunk = JSON.parse(event.data);
    } catch {
      this.flush(); // what came before the bad event reaches the client
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', 'The model provider sent an event that is not JSON.');
    }
    if (event.event === 'error' || chunk?.error) {
      this.flush();
      const message = typeof chunk?.error?.message === 'string' ? chunk.error.message : undefined;
      throw new UpstreamError('UPSTREAM_UNAVAILABLE', 'The model provider reported an error in the middle of its answer.', {
        cause: new Error(message ?? event.data.slice(0, 500)),
      });
    }
    if (chunk === null || typeof chunk !== 'object') throw this.malformed('a chunk that is not an object');
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta;
    const chunkId = typeof chunk.id === 'string' ? chunk.id : undefined;
    const content: unknown = delta?.content;
    if (content) {
      if (typeof content !== 'string') throw this.malformed('text content that is not a string');
      this.endCalls();
      if (this.openText === undefined) this.parentId = this.openText = this.output.textStart(chunkId);
      this.pendingText += content;
    }
    if (delta?.tool_calls?.length) {
      if (!Array.isArray(delta.tool_calls)) throw this.malformed('tool calls that are not a list');
      this.flush();
      for (const toolCall of delta.tool_calls) {
        if (!isToolCallDelta(toolCall)) throw this.malformed('a tool call of the wrong shape');
        this.toolCall(toolCall, chunkId);
      }
    }
    if (choice.finish_reason) this.finished = true;
  }

  /** Writes the text that arrived since the last flush as one chunk. */
  flush(): void {
    if (this.pendingText === '' || this.openText === undefined) return;
    const text = this.pendingText;
    this.pendingText = '';
    this.output.textContent(this.openText, text);
  }

  /** The stream has ended: everything must have been said, and is closed. */
  finish(): void {
    this.flush();
    if (!this.finished) {
      throw new UpstreamError('UPSTREAM_STREAM_INTERRUPTED', 'The model provider ended its stream before the answer was complete.');
    }
    this.endCalls();
    if (this.openText !== undefined) this.output.textEnd(this.openText);
    this.openText = undefined;
  }

  /** UPSTREAM_BAD_RESPONSE for a chunk that parses but is not what Chat Completions sends; what came before reaches the client. */
  private malformed(what: string): UpstreamError {
    this.flush();
    return new UpstreamError('UPSTREAM_BAD_RESPONSE', `The model provider sent ${what}.`);
  }

  private toolCall(toolCall: ChatCompletionChunk.Choice.Delta.ToolCall, chunkId: string | undefined): void {
    const openCalls = (this.openCalls ??= new Map());
    let call = openCalls.get(toolCall.index);
    // Some OpenAI-compatible servers send every call at index 0: a different id is a new call.
    if (call && toolCall.id && call.providerId !== undefined && toolCall.id !== call.providerId) {
      this.output.actionEnd(call.id);
      call = undefined;
    }
    if (!call) {
      if (this.openText !== undefined) this.output.textEnd(this.openText);
      this.openText = undefined;
      const id = this.output.actionStart(toolCall.id, toolCall.function?.name ?? '', this.parentId ?? chunkId);
      call = { id, providerId: toolCall.id };
      openCalls.set(toolCall.index, call);
    } else if (toolCall.id && call.providerId === undefined) {
      call.providerId = toolCall.id; // the id came in a later delta than the call's first
    }
    const args = toolCall.function?.arguments;
    if (args) this.output.actionArgs(call.id, args);
  }

  private endCalls(): void {
    // Called for every text delta: an empty map is left as it is (clear() allocates a new table).
    const openCalls = this.openCalls;
    if (openCalls === undefined || openCalls.size === 0) return;
    for (const call of openCalls.values()) this.output.actionEnd(call.id);
    openCalls.clear();
  }
}


/** A tool-call delta the reader can take: a numeric index, an id, a name and arguments, each when present (some compatible servers leave the index out). */
function isToolCallDelta(value: unknown): value is ChatCompletionChunk.Choice.Delta.ToolCall {
  if (value === null || typeof value !== 'object') return false;
  const call = value as { index?: unknown; id?: unknown; function?: unknown };
  if (call.index != null && typeof call.index !== 'number') return false;
  if (call.id != null && typeof call.id !== 'string') return false;
  if (call.function == null) return true;
  if (typeof call.function !== 'object') return false;
  const fn = call.function as { name?: unknown; arguments?: unknown };
  return (fn.name == null || typeof fn.name === 'string') && (fn.arguments == null || typeof fn.arguments === 'string');
}
