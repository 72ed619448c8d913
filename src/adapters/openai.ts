import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import { ConfigurationError, UpstreamError } from '../core/errors.js';
import { UpstreamClient } from '../upstream/client.js';
import { commonCauseHint } from '../upstream/errors.js';
import { retryPolicy, type RetryPolicy } from '../upstream/retry.js';
import { MAX_UNBROKEN_CHARS, tooLongError } from '../upstream/stream-limits.js';
import type { ForwardedParameters, ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';
import { toChatMessages, toChatTools, toToolChoice } from './openai-messages.js';
import { ChatChunkReader } from './openai-chunks.js';
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
   * @default "max_completion_tokens" for OpenAI itself (no baseURL, or one on api.openai.com), "max_tokens" for any
   * other server
   */
  maxTokensParameter?: 'max_tokens' | 'max_completion_tokens';
  /**
   * Whether Chat Completions is asked for the tokens each call used (`stream_options.include_usage`; reported with
   * the run's end). Usage a server sends unasked is read either way; the Responses API always reports it.
   * @default true for OpenAI itself, false for other servers (not all of them take stream_options)
   */
  streamUsage?: boolean;
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
 * retry once the answer has begun. Reasoning (Chat Completions servers' `reasoning_content` or `reasoning`, the
 * Responses API's reasoning summaries and text) is the run's reasoning, not its answer; usage, where reported, the
 * run's usage.
 */
export class OpenAIAdapter implements ModelAdapter {
  readonly name = 'openai';
  readonly model: string;
  readonly apiStyle: 'chat' | 'responses';
  /** The Responses API has no stop sequences: a request with `stop` is refused before the run. */
  readonly parameters: ReadonlySet<keyof ForwardedParameters> | undefined;
  readonly maxTokensParameter: 'max_tokens' | 'max_completion_tokens';
  readonly streamUsage: boolean;
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly policy: RetryPolicy;
  private upstream: UpstreamClient | undefined;

  constructor(options: OpenAIAdapterOptions = {}) {
    if ((options as { client?: unknown }).client !== undefined) {
      throw new ConfigurationError(
        'OpenAIAdapter no longer takes a ready openai client: give it apiKey, baseURL, defaultHeaders and ' +
          'defaultQuery instead.',
      );
    }
    if (!options.apiKey && !options.baseURL) {
      throw new ConfigurationError('OpenAIAdapter needs an apiKey (or a baseURL for a server that needs no key).');
    }
    this.model = options.model ?? 'gpt-4o-mini';
    const apiStyle = options.apiStyle ?? 'chat';
    if (apiStyle !== 'chat' && apiStyle !== 'responses') {
      throw new ConfigurationError(
        `OpenAIAdapter: apiStyle must be "chat" or "responses" (got ${JSON.stringify(apiStyle)}).`,
      );
    }
    const maxTokensParameter =
      options.maxTokensParameter ?? (isOpenAI(options.baseURL) ? 'max_completion_tokens' : 'max_tokens');
    if (maxTokensParameter !== 'max_tokens' && maxTokensParameter !== 'max_completion_tokens') {
      throw new ConfigurationError(
        `OpenAIAdapter: maxTokensParameter must be "max_tokens" or "max_completion_tokens" (got ` +
          `${JSON.stringify(maxTokensParameter)}).`,
      );
    }
    this.apiStyle = apiStyle;
    this.maxTokensParameter = maxTokensParameter;
    this.streamUsage = options.streamUsage ?? isOpenAI(options.baseURL);
    this.parameters =
      apiStyle === 'responses'
        ? new Set(['model', 'maxTokens', 'temperature', 'toolChoice', 'toolChoiceFunctionName'])
        : undefined;
    const base = (options.baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    const url = new URL(`${base}/${apiStyle === 'chat' ? 'chat/completions' : 'responses'}`);
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
      ...(this.streamUsage ? { stream_options: { include_usage: true } } : {}),
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
    const reader = this.apiStyle === 'chat' ? new ChatChunkReader(output) : new ResponsesReader(output);
    const parser = createParser({
      onEvent: (event) => reader.event(event),
      // A line without its newline, or an event without its blank line, is held at most this long: an upstream that
      // never sends one fails the run rather than the process (out of memory).
      maxBufferSize: MAX_UNBROKEN_CHARS,
      onError: (error) => {
        // The parser's other complaints (an unknown field, a bad retry) are ignored, as Server-Sent Events say.
        if (error.type === 'max-buffer-size-exceeded') {
          reader.flush(); // what came before reaches the client
          throw tooLongError(WHO, 'an event', MAX_UNBROKEN_CHARS);
        }
      },
    });
    const decoder = new StringDecoder('utf8');
    let first = true;
    // Every event of a read is handed to the run synchronously, with no await per read or token. The
    // body is read to its end, as the SDK does (past `[DONE]` too), so the connection goes back to the pool.
    // Returned, not awaited: no suspended frame (holding the request) for the life of the stream.
    return this.upstream
      .stream(
        {
          url: this.url,
          method: 'POST',
          headers: this.headers,
          json: body,
          who: WHO,
          policy: this.policy,
          signal,
          logger: request.logger,
          onRetry: request.onRetry,
        },
        (bytes) => {
          let text = decoder.write(bytes);
          if (first && text !== '') {
            first = false;
            // A byte order mark before the stream, which Server-Sent Events allow, is not part of it.
            if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
          }
          parser.feed(text);
          reader.flush();
        },
      )
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
    return new UpstreamError(error.code, `${error.message.replace(/\.$/, '')}. Check OPENAI_API_KEY.`, {
      cause: error.cause,
      details: error.details,
    });
  }
  if (error.code === 'UPSTREAM_UNREACHABLE') {
    return new UpstreamError(error.code, `${error.message} Check OPENAI_BASE_URL and that the server is running.`, {
      cause: error.cause,
      details: error.details,
    });
  }
  const status = error.details?.upstreamStatus;
  const hint = typeof status === 'number' ? commonCauseHint(status, error.message, 'OPENAI_MODEL') : undefined;
  if (hint)
    return new UpstreamError(error.code, `${error.message.replace(/\.$/, '')}. ${hint}`, {
      cause: error.cause,
      details: error.details,
    });
  return error;
}
