import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { Agent, fetch as undiciFetch, request as undiciRequest, type Dispatcher } from 'undici';
import { abortableDelay } from '../core/abort.js';
import { GatewayError, UpstreamError } from '../core/errors.js';
import type { RetryObserver } from './attempts.js';
import { upstreamNetworkError, upstreamStatusError } from './errors.js';
import { backoffDelay, isRetryableNetworkError, parseRetryAfter, type RetryPolicy } from './retry.js';

/** One call to an upstream. */
export interface UpstreamCall {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  /** A JSON body (sent with `content-type: application/json`). */
  json?: unknown;
  /** Who is called, for messages and logs: `agent "crew"`, `the remote endpoint of action "add"`. Never a URL. */
  who: string;
  policy: RetryPolicy;
  /** Aborts the call at every stage: while waiting to retry, while connecting, while streaming. */
  signal: AbortSignal;
  logger: Logger;
  /** Told of this call's retries instead of the client's `onRetry` (a model call: its run's gateway counts them). */
  onRetry?: RetryObserver;
}

/** A successful (2xx) response whose body has not been read yet. */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body; iterate it for streams. A network error while reading it is an UPSTREAM_STREAM_INTERRUPTED. */
  body: AsyncIterable<Uint8Array> & Readable;
  /** Attempts made, the successful one included. */
  attempts: number;
}

export interface UpstreamClientOptions {
  /** Time to open a connection. @default 10000 */
  connectTimeoutMs?: number;
  /** How long an idle pooled connection is kept open. @default 10000 */
  keepAliveTimeoutMs?: number;
  /** Told of every retry: which upstream, and why (an error code, or the status that was declined). */
  onRetry?: RetryObserver;
}

/** Set as an attempt's abort reason when it took longer than `attemptTimeoutMs`. */
class AttemptTimeout extends Error {}

const MAX_ERROR_BODY_BYTES = 8 * 1024;
/** How long an error answer's body is waited for; the status alone is enough to go on. */
const ERROR_BODY_WAIT_MS = 2_000;
const MAX_JSON_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The one HTTP client for agents, remote actions and discovery, on undici: a keep-alive pool per
 * origin (one dispatcher for the whole gateway, no per-request agents), retries with exponential
 * backoff and full jitter, `Retry-After` honoured, per-attempt and overall timeouts, and a caller's
 * abort honoured at every stage.
 *
 * A call is retried only before any byte of its response has arrived: a retryable status (the
 * upstream declined the call as a whole) or a network error before the headers. Once a response
 * has started, a broken body fails the call instead of calling the upstream twice; nothing is
 * retried after that.
 */
export class UpstreamClient {
  readonly dispatcher: Dispatcher;
  private readonly onRetry: RetryObserver | undefined;

  constructor(options: UpstreamClientOptions = {}) {
    this.onRetry = options.onRetry;
    this.dispatcher = new Agent({
      connect: { timeout: options.connectTimeoutMs ?? 10_000 },
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 10_000,
      // Streams may be quiet for long: the run's idle timeout decides when one has gone silent.
      bodyTimeout: 0,
      headersTimeout: 0,
    });
  }

  /** Sends the call (retrying as its policy says) and resolves with a 2xx response; throws a GatewayError otherwise. */
  async request(call: UpstreamCall): Promise<UpstreamResponse> {
    const body = encodeBody(call);
    const headers: Record<string, string> = { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...call.headers };
    const { response, attempts, release } = await retrying(call, call.onRetry ?? this.onRetry, async (signal) => {
      const response = await undiciRequest(call.url, {
        dispatcher: this.dispatcher,
        method: call.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        body,
        signal,
      });
      return {
        status: response.statusCode,
        retryAfter: header(response.headers['retry-after']),
        // Not read to the end: a declined answer's body could stall; the connection is given up.
        discard: () => destroyQuietly(response.body),
        value: response,
      };
    });
    // The caller's abort stays linked to the body until it is over (read, failed or destroyed), not
    // for the rest of the caller's life: a run makes many calls with one signal.
    response.body.once('close', release);
    if (response.statusCode < 200 || response.statusCode > 299) {
      const detail = await readErrorDetail(response.body, ERROR_BODY_WAIT_MS);
      call.signal.throwIfAborted();
      const retryAfterMs = parseRetryAfter(header(response.headers['retry-after']));
      call.logger.warn({ upstream: call.who, status: response.statusCode, attempts, detail }, 'upstream answered with an error');
      throw upstreamStatusError(call.who, response.statusCode, {
        // An upstream's explanation of a bad request helps; its server errors may hold internals.
        detail: response.statusCode < 500 ? detail : undefined,
        retryAfterSeconds: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
      });
    }
    const stream = response.body as unknown as UpstreamResponse['body'];
    return { status: response.statusCode, headers: response.headers, body: guardBody(stream, call), attempts };
  }

  /**
   * Sends the call (retrying exactly as `request` does) and hands each chunk of a successful answer's
   * body to `onChunk`, synchronously, as it arrives; resolves when the body has ended. An error thrown by
   * `onChunk` ends the call and rejects with it; the caller's abort rejects with its reason; a network
   * error while reading is an UPSTREAM_STREAM_INTERRUPTED; a non-2xx answer throws as `request` does.
   *
   * This is the streaming path of the model and the agents, so it is built on undici's `dispatch`
   * rather than `request`: one handler object per call instead of a Readable body, its stream state,
   * an abort-signal link per layer and a promise per read (BENCHMARKS.md, step 11).
   */
  stream(call: UpstreamCall, onChunk: (chunk: Buffer) => void): Promise<{ status: number; attempts: number }> {
    let body: string | undefined;
    try {
      body = encodeBody(call);
    } catch (error) {
      return Promise.reject(error);
    }
    const bytes = body === undefined ? undefined : Buffer.from(body, 'utf8');
    const headers: Record<string, string> = {
      ...(bytes !== undefined ? { 'content-type': 'application/json', 'content-length': String(bytes.length) } : {}),
      ...call.headers,
    };
    const url = new URL(call.url);
    const options: Dispatcher.DispatchOptions = { origin: url.origin, path: url.pathname + url.search, method: call.method ?? (bytes === undefined ? 'GET' : 'POST'), headers };
    const { who, signal, logger } = call;
    // Not one async function: while the answer streams, nothing holds the call (its JSON body, the
    // whole conversation) or the request's options; only what reading and its errors need.
    return retrying(call, call.onRetry ?? this.onRetry, (attemptSignal) => {
      const handler = new StreamHandler(onChunk);
      // Waiting starts before the dispatch: undici reports a request it cannot even send (a header
      // with a line break, a closed pool) to the handler within `dispatch`, synchronously.
      const started = handler.started(attemptSignal);
      try {
        this.dispatcher.dispatch(bytes === undefined ? options : { ...options, body: writtenOnce(bytes) }, handler);
      } catch (error) {
        handler.onResponseError(undefined as never, error instanceof Error ? error : new Error(String(error)));
      }
      return started.then(() => ({
        status: handler.status,
        retryAfter: handler.retryAfter,
        discard: () => handler.abort(DISCARDED),
        value: handler,
      }));
    }).then(({ response: handler, attempts, release }) => {
      // From here on one listener on the caller's signal ends the call; the attempt's link is let go.
      release();
      return readStream(handler, attempts, who, signal, logger);
    });
  }

  /** Sends the call and parses its whole (JSON) answer within the call's total timeout. */
  async json<T = unknown>(call: UpstreamCall): Promise<T> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(call.signal.reason);
    call.signal.addEventListener('abort', onAbort, { once: true });
    const deadline = setTimeout(() => controller.abort(new AttemptTimeout()), call.policy.totalTimeoutMs);
    try {
      const response = await this.request({ ...call, signal: controller.signal });
      const text = await readAll(response.body, MAX_JSON_BODY_BYTES, call);
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `${capitalize(call.who)} answered with something that is not JSON.`);
      }
    } catch (error) {
      if (call.signal.aborted) throw call.signal.reason;
      if (controller.signal.reason instanceof AttemptTimeout) {
        throw new UpstreamError('UPSTREAM_TIMEOUT', `${capitalize(call.who)} did not answer within ${call.policy.totalTimeoutMs} ms.`);
      }
      throw error;
    } finally {
      call.signal.removeEventListener('abort', onAbort);
      clearTimeout(deadline);
    }
  }

  /**
   * A `fetch` for SDKs (the LangGraph SDK) that goes through the same pool and retry policy.
   * Non-2xx answers are returned as they are once the retries are spent (the SDK reads them);
   * network failures reject with the gateway's UPSTREAM_* errors.
   */
  fetchFor(who: string, policy: RetryPolicy, logger: Logger): typeof fetch {
    const dispatcher = this.dispatcher;
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const signal = init?.signal ?? new AbortController().signal;
      const { response, release } = await retrying({ url, who, policy, signal, logger }, this.onRetry, async (attemptSignal) => {
        const response = await undiciFetch(url, { ...(init as object), dispatcher, signal: attemptSignal } as Parameters<typeof undiciFetch>[1]);
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after') ?? undefined,
          discard: () => {
            response.body?.cancel().catch(() => {});
          },
          value: response,
        };
      });
      return releasingWhenRead(response, release) as unknown as Response;
    }) as typeof fetch;
  }

  /** Closes the pool: calls still going get a moment to finish, then their connections are cut. */
  async close(graceMs = 1_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const closed = this.dispatcher.close();
    const late = await Promise.race([closed.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs)))]);
    clearTimeout(timer);
    if (late) await this.dispatcher.destroy();
  }
}

interface Attempt<T> {
  status: number;
  retryAfter: string | undefined;
  discard: () => void;
  value: T;
}

/**
 * The call's JSON body. What the gateway sends is built from client input, checked for depth where it
 * comes in; a value that still nests too deep for JSON.stringify is the client's, said so.
 */
function encodeBody(call: UpstreamCall): string | undefined {
  if (call.json === undefined) return undefined;
  try {
    return JSON.stringify(call.json);
  } catch (error) {
    if (error instanceof RangeError) {
      throw new GatewayError('BAD_USER_INPUT', `The request to ${call.who} could not be written: its input nests too deeply.`);
    }
    throw error;
  }
}

/**
 * A request body undici writes once and then lets go of. A Buffer or string body stays on undici's
 * request until the answer has ended: for a model's or an agent's stream, its whole life, and it is
 * the whole conversation (tens of kilobytes a stream). Given as an iterable, the bytes are held only
 * until written; with the request's content-length set, undici frames the request as for a Buffer
 * (headers and body in one corked write, no chunked encoding).
 */
function writtenOnce(bytes: Buffer): Dispatcher.DispatchOptions['body'] {
  let held: Buffer | undefined = bytes;
  // undici's dispatch takes iterables (its docs; `writeIterable`), though its types name only the other kinds.
  return <Dispatcher.DispatchOptions['body']>(<unknown>{
    *[Symbol.iterator]() {
      const chunk = held;
      held = undefined;
      if (chunk !== undefined && chunk.length > 0) yield chunk;
    },
  });
}

/**
 * The retry loop shared by `request`, `stream` and `fetchFor`: resolves with the last attempt's
 * response, still linked to the caller's abort; `release()` unlinks it, for a caller that takes
 * over listening to its signal.
 */
async function retrying<T>(
  call: Pick<UpstreamCall, 'who' | 'policy' | 'signal' | 'logger' | 'url'>,
  onRetry: RetryObserver | undefined,
  attempt: (signal: AbortSignal) => Promise<Attempt<T>>,
): Promise<{ response: T; attempts: number; release: () => void }> {
  const { policy, signal, who, logger } = call;
  const deadline = Date.now() + policy.totalTimeoutMs;
  for (let retry = 0; ; retry++) {
    signal.throwIfAborted();
    const controller = new AbortController();
    // The caller's abort reaches the attempt at every stage, the streamed body included.
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const attemptMs = Math.max(1, Math.min(policy.attemptTimeoutMs, deadline - Date.now()));
    const timer = setTimeout(() => controller.abort(new AttemptTimeout()), attemptMs);
    let result: Attempt<T>;
    try {
      result = await attempt(controller.signal);
    } catch (error) {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) throw signal.reason;
      const timedOut = controller.signal.reason instanceof AttemptTimeout;
      const failure = timedOut
        ? new UpstreamError('UPSTREAM_TIMEOUT', `${capitalize(who)} did not answer within ${attemptMs} ms.`, { cause: error })
        : upstreamNetworkError(who, error, 'connect');
      const wait = backoffDelay(policy, retry);
      const retryable = timedOut || isRetryableNetworkError(error);
      if (!retryable || error instanceof GatewayError || retry >= policy.maxRetries || Date.now() + wait >= deadline) {
        logger.warn({ upstream: who, attempts: retry + 1, code: failure.code, cause: (error as Error)?.message }, 'upstream call failed');
        throw failure;
      }
      logger.info({ upstream: who, attempt: retry + 1, code: failure.code, waitMs: wait }, 'upstream call failed; retrying');
      onRetry?.(who, failure.code);
      await abortableDelay(wait, signal);
      continue;
    }
    clearTimeout(timer);
    // The caller's abort stays linked to the answer: to its streamed body, and to an error body,
    // which a stalled upstream could otherwise hold open for ever.
    const release = () => signal.removeEventListener('abort', onAbort);
    if (!policy.retryStatuses.includes(result.status) || retry >= policy.maxRetries) {
      return { response: result.value, attempts: retry + 1, release };
    }
    const retryAfter = parseRetryAfter(result.retryAfter);
    const wait = retryAfter !== undefined ? Math.min(retryAfter, policy.maxRetryAfterMs) : backoffDelay(policy, retry);
    if (Date.now() + wait >= deadline) return { response: result.value, attempts: retry + 1, release };
    signal.removeEventListener('abort', onAbort);
    result.discard();
    logger.info({ upstream: who, attempt: retry + 1, status: result.status, waitMs: wait }, 'upstream declined the call; retrying');
    onRetry?.(who, `HTTP ${result.status}`);
    await abortableDelay(wait, signal);
  }
}

/**
 * The response with a body that calls `release` once it is over (read to its end, failed or
 * cancelled), so the caller's abort is linked to the call no longer than that. Costs one read per
 * chunk; `fetchFor` serves SDKs (LangGraph), whose streams are a line or an event per chunk.
 */
function releasingWhenRead(response: Awaited<ReturnType<typeof undiciFetch>>, release: () => void) {
  const body = response.body;
  if (!body) {
    release();
    return response;
  }
  const reader = body.getReader();
  const released = new ReadableStream<Uint8Array>({
    pull: (controller) =>
      reader.read().then(
        ({ done, value }) => {
          if (done) {
            release();
            controller.close();
          } else controller.enqueue(value);
        },
        (error: unknown) => {
          release();
          controller.error(error);
        },
      ),
    cancel: (reason) => {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(released, { status: response.status, statusText: response.statusText, headers: response.headers as unknown as HeadersInit });
}

/**
 * The body of a successful response, with network errors while reading it turned into
 * UPSTREAM_STREAM_INTERRUPTED and the caller's abort into its own reason.
 */
function guardBody(body: UpstreamResponse['body'], call: UpstreamCall): UpstreamResponse['body'] {
  const iterate = body[Symbol.asyncIterator].bind(body);
  Object.defineProperty(body, Symbol.asyncIterator, {
    value: async function* () {
      try {
        for await (const chunk of { [Symbol.asyncIterator]: iterate }) yield chunk as Uint8Array;
      } catch (error) {
        if (call.signal.aborted) throw call.signal.reason;
        throw upstreamNetworkError(call.who, error, 'stream');
      }
    },
  });
  return body;
}

async function readAll(body: AsyncIterable<Uint8Array>, limit: number, call: UpstreamCall): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `${capitalize(call.who)} answered with more than ${limit} bytes.`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A short explanation from an error body (`{"error": "…"}`, `{"error": {"message"}}`, `{"detail"}`,
 * `{"message"}` or text), read for at most `waitMs`; the body is always destroyed after.
 */
async function readErrorDetail(body: Readable, waitMs: number): Promise<string | undefined> {
  let text = '';
  const timer = setTimeout(() => destroyQuietly(body), waitMs);
  try {
    for await (const chunk of body) {
      text += String(chunk);
      if (text.length > MAX_ERROR_BODY_BYTES) break;
    }
  } catch {
    // Cut off (the wait is over, the caller went away): what arrived may still explain.
  } finally {
    clearTimeout(timer);
    destroyQuietly(body);
  }
  return errorDetail(text);
}

/** The explanation in an error body's text, at most 1,000 characters. */
function errorDetail(text: string): string | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  let detail: unknown = trimmed;
  try {
    const parsed = JSON.parse(trimmed);
    detail = parsed?.error?.message ?? parsed?.error ?? parsed?.detail ?? parsed?.message ?? trimmed;
  } catch {
    // Not JSON: the text itself.
  }
  if (typeof detail !== 'string') detail = JSON.stringify(detail);
  return (detail as string).slice(0, 1000);
}

/**
 * The rest of `stream` once an answer has started: its error, or its body read to the end. Not an
 * async function: a stream spends its life in here, and a suspended frame would be held all along.
 */
function readStream(handler: StreamHandler, attempts: number, who: string, signal: AbortSignal, logger: Logger): Promise<{ status: number; attempts: number }> {
  const onAbort = () => handler.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const unlink = () => signal.removeEventListener('abort', onAbort);
  if (handler.status < 200 || handler.status > 299) return statusError(handler, attempts, who, signal, logger).finally(unlink);
  return handler.ended.then(
    () => {
      unlink();
      return { status: handler.status, attempts };
    },
    (error: unknown) => {
      unlink();
      if (signal.aborted) throw signal.reason;
      throw handler.failedInChunk ? error : upstreamNetworkError(who, error, 'stream');
    },
  );
}

/** The error for an answer with a non-2xx status, with the explanation its body gives (waited for briefly). */
async function statusError(handler: StreamHandler, attempts: number, who: string, signal: AbortSignal, logger: Logger): Promise<never> {
  const detail = errorDetail(await handler.errorBody(ERROR_BODY_WAIT_MS));
  signal.throwIfAborted();
  const retryAfterMs = parseRetryAfter(handler.retryAfter);
  logger.warn({ upstream: who, status: handler.status, attempts, detail }, 'upstream answered with an error');
  throw upstreamStatusError(who, handler.status, {
    detail: handler.status < 500 ? detail : undefined,
    retryAfterSeconds: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
  });
}

/** The reason an attempt whose answer is not used (a declined call about to be retried) is ended with. */
const DISCARDED = new Error('The answer was not used.');

/**
 * One dispatched attempt of `stream`: resolves `started` with the answer's status and headers, then
 * hands a successful body's chunks to `onChunk` as they arrive (or keeps the first bytes of an error
 * body), and settles `ended` when the body is over.
 */
class StreamHandler implements Dispatcher.DispatchHandler {
  status = 0;
  /** The answer's Retry-After header, if any: the only header the call needs. */
  retryAfter: string | undefined;
  /** Settles when the body has ended (or failed, or was aborted). */
  readonly ended: Promise<void>;
  /** Whether `ended` rejected with what `onChunk` threw (not a network error). */
  failedInChunk = false;
  private controller: Dispatcher.DispatchController | undefined;
  private abortReason: Error | undefined;
  private errorText = '';
  private onStart: (() => void) | undefined;
  private onStartFailed: ((error: unknown) => void) | undefined;
  private onEnd!: () => void;
  private onFail!: (error: unknown) => void;
  private settled = false;

  constructor(private readonly onChunk: (chunk: Buffer) => void) {
    this.ended = new Promise<void>((resolve, reject) => {
      this.onEnd = resolve;
      this.onFail = reject;
    });
    this.ended.catch(() => {});
  }

  /** Resolves when the answer's status and headers are in; rejects on a failure before that or `signal`'s abort. */
  started(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Ends the attempt, and stops waiting for it at once (a queued request ends when undici starts it).
      const onAbort = () => {
        this.abort(signal.reason);
        const onStartFailed = this.onStartFailed;
        this.onStart = this.onStartFailed = undefined;
        onStartFailed?.(signal.reason);
      };
      this.onStart = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.onStartFailed = (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  abort(reason: unknown): void {
    const error = reason instanceof Error ? reason : new Error(String(reason));
    this.abortReason ??= error;
    this.controller?.abort(error);
  }

  /** The first bytes of an error answer's body, waiting at most `waitMs` for it to end; the call is ended after. */
  async errorBody(waitMs: number): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ended.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    this.abort(DISCARDED);
    return this.errorText;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason) controller.abort(this.abortReason);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // undici's controller would hold the raw header buffers for as long as the answer streams.
    controller.rawHeaders = null;
    if (statusCode < 200) return; // 1xx: informational, the answer is still to come
    this.status = statusCode;
    this.retryAfter = header(headers['retry-after']);
    const onStart = this.onStart;
    this.onStart = this.onStartFailed = undefined;
    onStart?.();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    if (this.status < 200 || this.status > 299) {
      if (this.errorText.length <= MAX_ERROR_BODY_BYTES) this.errorText += chunk.toString('utf8');
      return;
    }
    try {
      this.onChunk(chunk);
    } catch (error) {
      this.failedInChunk = true;
      this.fail(error);
      controller.abort(error instanceof Error ? error : new Error(String(error)));
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.settled = true;
    this.onEnd();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const onStartFailed = this.onStartFailed;
    this.onStart = this.onStartFailed = undefined;
    if (onStartFailed) onStartFailed(error);
    this.fail(error);
  }

  private fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.onFail(error);
  }
}

/** Ends a body nobody will read; undici reports that as an error event, which must not go unheard. */
function destroyQuietly(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
