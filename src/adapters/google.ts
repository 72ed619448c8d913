import type {
  ApiError,
  GenerateContentConfig,
  GenerateContentResponse,
  GenerateContentResponseUsageMetadata,
  GoogleGenAI,
} from '@google/genai';
import { Agent, fetch as undiciFetch } from 'undici';
import { ConfigurationError, GatewayError, UpstreamError } from '../core/errors.js';
import { tokenUsage } from '../core/events.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import { SdkAttempts } from '../upstream/attempts.js';
import { adapterSecrets, causeWithoutSecrets, withoutSecrets } from '../upstream/bodies.js';
import { readSdkStream } from './sdk-stream.js';
import { guardedEventStream } from '../upstream/stream-limits.js';
import { commonCauseHint, upstreamNetworkError, upstreamStatusError } from '../upstream/errors.js';
import { isObject, kindOf } from '../core/values.js';
import type { ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';
import { toGeminiContents, toGeminiFunctions, toGeminiToolConfig } from './google-messages.js';

export interface GoogleAdapterOptions {
  /** Gemini API key (sent as `x-goog-api-key`). */
  apiKey?: string;
  /**
   * Base URL of the Gemini API, for proxies (a Vertex or enterprise proxy, LiteLLM). @default
   * "https://generativelanguage.googleapis.com"
   */
  baseURL?: string;
  /** Model used unless a request's forwardedParameters.model names another. @default "gemini-flash-latest" */
  model?: string;
  /** Retries before the stream starts (the SDK's: 408, 429, 5xx). @default 2 */
  maxRetries?: number;
  /** Extra headers for every request. */
  defaultHeaders?: Record<string, string>;
}

const WHO = 'the model provider (Google Gemini)';

type GoogleSdk = typeof import('@google/genai');
/** The SDK, loaded on first use: a gateway on another provider does not pay for it (about 30 MB). */
const loadSdk = loadOnFirstUse(() => import('@google/genai'));

/** How many function calls' thought signatures an adapter remembers (least recently seen forgotten first). */
const MAX_SIGNATURES = 10_000;

/**
 * Gemini through the Gemini API, streamed, with function calling, on the official SDK
 * (`@google/genai`): its request types, its stream reader and its retries. Requests go through an
 * undici pool of the adapter's own, closed with the gateway.
 *
 * Thought parts (the adapter asks for none; a model that streams thought summaries anyway) are shown as the run's
 * reasoning, never sent back. Gemini marks its function calls with thought signatures it wants back with them in the
 * next request; the adapter remembers them by call id (the last 10,000) and sends them with the
 * calls, so a run continued after server-side actions, or a conversation continued through the
 * same process, keeps them.
 */
export class GoogleAdapter implements ModelAdapter {
  readonly name = 'google';
  readonly model: string;
  private readonly options: GoogleAdapterOptions;
  private readonly signatures = new Map<string, string>();
  private pool: { client: GoogleGenAI; dispatcher: Agent } | undefined;
  /** What an error's explanation must not show (adapterSecrets). */
  private readonly secrets: readonly string[];

  constructor(options: GoogleAdapterOptions = {}) {
    if (!options.apiKey && !options.baseURL) {
      throw new ConfigurationError('GoogleAdapter needs an apiKey (or a baseURL for a proxy that needs no key).');
    }
    this.options = options;
    this.secrets = adapterSecrets(options);
    this.model = options.model ?? 'gemini-flash-latest';
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.dispatcher.close();
  }

  async stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const params = request.forwardedParameters;
    const { systemInstruction, contents } = toGeminiContents(request.messages, this.signatures);
    const functions = toGeminiFunctions(request.tools);
    const config: GenerateContentConfig = {
      abortSignal: signal,
      ...(systemInstruction !== undefined ? { systemInstruction } : {}),
      ...(functions.length ? { tools: [{ functionDeclarations: functions }] } : {}),
      ...(params.maxTokens != null ? { maxOutputTokens: params.maxTokens } : {}),
      ...(params.temperature != null ? { temperature: params.temperature } : {}),
      ...(params.stop?.length ? { stopSequences: params.stop } : {}),
    };
    const toolConfig = functions.length ? toGeminiToolConfig(params) : undefined;
    if (toolConfig) config.toolConfig = toolConfig;

    const reader = new GeminiChunkReader(output, (callId, signature) => this.remember(callId, signature));
    const sdk = await loadSdk();
    const { client, dispatcher } = this.connected(sdk);
    // The SDK retries inside itself: this call's own fetch sees its attempts.
    config.httpOptions = {
      fetch: this.countingFetch(new SdkAttempts(WHO, request.onRetry, request.logger), dispatcher),
    };
    let stream: AsyncGenerator<GenerateContentResponse>;
    try {
      stream = await client.models.generateContentStream({ model: params.model || this.model, contents, config });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw providerError(sdk, error, 'connect', this.secrets);
    }
    await readSdkStream(
      stream,
      (chunk) => reader.chunk(chunk),
      signal,
      (error) => providerError(sdk, error, 'stream', this.secrets),
    );
    reader.finish();
  }

  private remember(callId: string, signature: string): void {
    this.signatures.delete(callId);
    this.signatures.set(callId, signature);
    if (this.signatures.size > MAX_SIGNATURES) this.signatures.delete(this.signatures.keys().next().value as string);
  }

  /** The SDK's client and the pool under it, made on first use. */
  private connected(sdk: GoogleSdk): { client: GoogleGenAI; dispatcher: Agent } {
    if (!this.pool) {
      // Streams may be quiet for long: the run's idle timeout decides when one has gone silent.
      const dispatcher = new Agent({ bodyTimeout: 0, headersTimeout: 0, keepAliveTimeout: 10_000 });
      const client = new sdk.GoogleGenAI({
        // The SDK reads GOOGLE_API_KEY itself when given none. A proxy without a key gets a stand-in,
        // sent nowhere (the fetch below drops the key's header): with none, the SDK prints a warning
        // to the console, a line outside the gateway's JSON logs.
        apiKey: this.options.apiKey ?? 'keyless',
        httpOptions: {
          ...(this.options.baseURL ? { baseUrl: this.options.baseURL } : {}),
          headers: this.options.defaultHeaders,
          retryOptions: { attempts: (this.options.maxRetries ?? 2) + 1 },
          fetch: ((url: string, init: RequestInit) => this.send(url, init, dispatcher)) as never,
        },
      });
      this.pool = { client, dispatcher };
    }
    return this.pool;
  }

  /** A request through the adapter's pool (an event stream's events capped in size as the SDK reads them). */
  private send(url: string, init: RequestInit, dispatcher: Agent): Promise<Response> {
    // Keyless (a proxy that adds its own): the SDK would still send an empty key header.
    const headers = this.options.apiKey ? init.headers : withoutKey(init.headers);
    return undiciFetch(url, { ...(init as object), headers, dispatcher } as Parameters<typeof undiciFetch>[1]).then(
      (response) => guardedEventStream(response as unknown as Response, WHO),
    );
  }

  /** One call's fetch (the SDK takes it in the call's `httpOptions`), its attempts counted. */
  private countingFetch(attempts: SdkAttempts, dispatcher: Agent): typeof fetch {
    return ((url: string, init: RequestInit) => attempts.send(() => this.send(url, init, dispatcher))) as never;
  }
}

function withoutKey(headers: RequestInit['headers']): Headers {
  const copy = new Headers(headers);
  copy.delete('x-goog-api-key');
  return copy;
}

/** The gateway's error for what the SDK threw, naming what to check. */
function providerError(
  sdk: GoogleSdk,
  error: unknown,
  phase: 'connect' | 'stream',
  /** The credentials the adapter sends: an explanation that echoes one is logged and shown without it. */
  secrets: readonly string[],
): unknown {
  if (error instanceof GatewayError) return error;
  if (error instanceof sdk.ApiError) {
    const detail = withoutSecrets(apiErrorMessage(error), secrets);
    if (!error.status || error.status < 400) {
      return new UpstreamError(
        'UPSTREAM_UNAVAILABLE',
        'The model provider (Google Gemini) reported an error in the middle of its answer.',
        {
          cause: detail !== undefined ? new Error(detail) : causeWithoutSecrets(error, secrets),
        },
      );
    }
    // Gemini answers a bad key with 400 API_KEY_INVALID: that is a refused credential.
    const status =
      error.status === 400 && /API_KEY_INVALID|API key not valid/i.test(error.message) ? 401 : error.status;
    const hint =
      status === 401 || status === 403 ? 'Check GOOGLE_API_KEY.' : commonCauseHint(status, detail, 'GOOGLE_MODEL');
    return upstreamStatusError(WHO, status, {
      detail: status < 500 ? detail : undefined,
      hint,
      cause: causeWithoutSecrets(error, secrets),
    });
  }
  if (phase === 'connect') {
    const network = upstreamNetworkError(WHO, innermost(error), 'connect');
    if (network.code === 'UPSTREAM_UNREACHABLE') {
      return new UpstreamError(
        'UPSTREAM_UNREACHABLE',
        `${network.message} Check GOOGLE_BASE_URL and that the server is running.`,
        { cause: error },
      );
    }
    return network;
  }
  if (
    error instanceof SyntaxError ||
    /exception parsing stream chunk|Incomplete JSON segment/.test(String((error as Error)?.message))
  ) {
    return new UpstreamError(
      'UPSTREAM_BAD_RESPONSE',
      'The model provider (Google Gemini) sent a chunk that is not JSON.',
      { cause: error },
    );
  }
  return upstreamNetworkError(WHO, innermost(error), 'stream');
}

/** The SDK wraps fetch's failures ("exception … sending request"): the network error is underneath. */
function innermost(error: unknown): unknown {
  let current = error as { cause?: unknown } | undefined;
  for (let depth = 0; current?.cause && depth < 3; depth++) current = current.cause as { cause?: unknown };
  return current;
}

/** The message of Gemini's `{"error": {"message"}}` body, which the SDK's ApiError quotes. */
function apiErrorMessage(error: ApiError): string | undefined {
  const start = error.message.indexOf('{');
  if (start === -1) return undefined;
  try {
    const body = JSON.parse(error.message.slice(start)) as { error?: { message?: unknown }; message?: unknown };
    const message = body?.error?.message ?? body?.message;
    return typeof message === 'string' ? message : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Turns Gemini stream chunks into the run's text messages and action calls. Text parts extend one
 * text message; a functionCall part (Gemini sends each call whole) is an action call with its
 * arguments in one piece. Thought parts extend one reasoning message, ended when the answer or a call starts.
 */
class GeminiChunkReader {
  private text: string | undefined;
  private reasoning: string | undefined;
  private usage: GenerateContentResponseUsageMetadata | undefined;
  private model: string | undefined;
  private texts = 0;
  private responseId: string | undefined;
  private finishReason: string | undefined;

  constructor(
    private readonly output: ModelOutput,
    private readonly onSignature: (callId: string, signature: string) => void,
  ) {}

  /**
   * One chunk, the fields read checked first: what the Gemini API never sends (text that is not a string, arguments
   * that are not an object) is UPSTREAM_BAD_RESPONSE naming the field, as for Chat Completions.
   */
  chunk(chunk: GenerateContentResponse): void {
    if (!isObject(chunk)) throw malformed('a chunk that is not an object');
    this.responseId ??= optionalString(chunk.responseId, 'responseId');
    const blocked: unknown = chunk.promptFeedback?.blockReason;
    if (blocked) {
      throw new UpstreamError(
        'UPSTREAM_REJECTED',
        `The model provider (Google Gemini) refused the prompt (${String(blocked)}).`,
        { details: { blockReason: blocked } },
      );
    }
    const candidates: unknown = chunk.candidates;
    if (candidates != null && !Array.isArray(candidates)) throw malformed('candidates that are not a list');
    const candidate: unknown = candidates?.[0];
    if (candidate != null && !isObject(candidate)) throw malformed('a candidate that is not an object');
    const content: unknown = candidate?.content;
    if (content != null && !isObject(content)) throw malformed('a candidate whose content is not an object');
    const parts: unknown = content?.parts;
    if (parts != null && !Array.isArray(parts)) throw malformed('content parts that are not a list');
    for (const part of (parts ?? []) as unknown[]) {
      if (!isObject(part)) throw malformed('a content part that is not an object');
      const text = optionalString(part.text, 'parts[].text');
      if (part.thought) {
        if (!text) continue;
        this.endText();
        this.reasoning ??= this.output.reasoningStart();
        this.output.reasoningContent(this.reasoning, text);
        continue;
      }
      this.endReasoning();
      if (part.functionCall) {
        this.endText();
        const call: unknown = part.functionCall;
        if (!isObject(call)) throw malformed('a functionCall that is not an object');
        const args: unknown = call.args;
        if (args != null && (typeof args !== 'object' || Array.isArray(args)))
          throw malformed(`a functionCall whose args are not an object (${kindOf(args)})`);
        const signature = optionalString(part.thoughtSignature, 'parts[].thoughtSignature');
        const id = this.output.actionStart(
          optionalString(call.id, 'functionCall.id'),
          optionalString(call.name, 'functionCall.name') ?? '',
          this.responseId,
        );
        if (signature) this.onSignature(id, signature);
        this.output.actionArgs(id, JSON.stringify(args ?? {}));
        this.output.actionEnd(id);
      } else if (text) {
        // The response's id for its first text; later texts (after a call) get ids of their own.
        this.text ??= this.output.textStart(this.texts++ === 0 ? this.responseId : undefined);
        this.output.textContent(this.text, text);
      }
    }
    const finishReason = optionalString(candidate?.finishReason, 'finishReason');
    if (finishReason) this.finishReason = finishReason;
    // The counts so far: the last chunk's say the whole call's.
    if (isObject(chunk.usageMetadata)) this.usage = chunk.usageMetadata;
    this.model ??= optionalString(chunk.modelVersion, 'modelVersion');
  }

  /** The stream has ended: it must have said why it stopped; the text is closed. */
  finish(): void {
    this.endReasoning();
    this.endText();
    const usage = this.usage;
    if (usage) {
      // Gemini counts thoughts apart from the answer; AG-UI's outputTokens holds both.
      const answer = usage.candidatesTokenCount;
      const thoughts = usage.thoughtsTokenCount;
      const report = tokenUsage('google', this.model, {
        inputTokens: usage.promptTokenCount,
        outputTokens: answer === undefined && thoughts === undefined ? undefined : (answer ?? 0) + (thoughts ?? 0),
        totalTokens: usage.totalTokenCount,
        reasoningTokens: thoughts,
        cachedInputTokens: usage.cachedContentTokenCount,
      });
      if (report) this.output.usage(report);
    }
    if (!this.finishReason) {
      throw new UpstreamError(
        'UPSTREAM_STREAM_INTERRUPTED',
        'The model provider (Google Gemini) ended its stream before the answer was complete.',
      );
    }
    if (/MALFORMED_FUNCTION_CALL|UNEXPECTED_TOOL_CALL/.test(this.finishReason)) {
      throw new UpstreamError(
        'UPSTREAM_BAD_RESPONSE',
        `The model provider (Google Gemini) produced a call it could not complete (${this.finishReason}).`,
        {
          details: { finishReason: this.finishReason },
        },
      );
    }
    if (/SAFETY|BLOCKLIST|PROHIBITED|SPII|RECITATION/.test(this.finishReason)) {
      throw new UpstreamError(
        'UPSTREAM_REJECTED',
        `The model provider (Google Gemini) stopped its answer (${this.finishReason}).`,
        {
          details: { finishReason: this.finishReason },
        },
      );
    }
  }

  private endReasoning(): void {
    if (this.reasoning === undefined) return;
    this.output.reasoningEnd(this.reasoning);
    this.reasoning = undefined;
  }

  private endText(): void {
    if (this.text === undefined) return;
    this.output.textEnd(this.text);
    this.text = undefined;
  }
}

/** UPSTREAM_BAD_RESPONSE for a chunk the Gemini API never sends. */
function malformed(what: string): UpstreamError {
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `The model provider (Google Gemini) sent ${what}.`);
}

/** A field that is a string when present (null and a missing field alike are undefined). */
function optionalString(value: unknown, field: string): string | undefined {
  if (value == null) return undefined;
  if (typeof value !== 'string') throw malformed(`a ${field} that is not a string (${kindOf(value)})`);
  return value;
}
