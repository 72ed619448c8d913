import type { Logger } from 'pino';
import { Agent, fetch as undiciFetch, request as undiciRequest, type Dispatcher, type FormData } from 'undici';
import { UpstreamError } from '../core/errors.js';
import type { RetryObserver } from './attempts.js';
import {
  ERROR_BODY_WAIT_MS,
  MAX_JSON_BODY_BYTES,
  destroyQuietly,
  encodeBody,
  errorAnswerFailure,
  guardBody,
  header,
  readAll,
  readErrorDetail,
  releasingWhenRead,
  writtenOnce,
  type UpstreamBody,
} from './bodies.js';
import { capitalize } from './errors.js';
import type { RetryPolicy } from './retry.js';
import { DISCARDED, StreamHandler, readStream } from './stream-handler.js';
import { guardedEventStream } from './stream-limits.js';
import { AttemptTimeout, withRetries } from './with-retries.js';

/** One call to an upstream. */
export interface UpstreamCall {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  /** A JSON body (sent with `content-type: application/json`). */
  json?: unknown;
  /**
   * A multipart/form-data body instead (`request` and `json` only): undici writes it, with its own boundary in the
   * content-type, anew for each attempt. Undici's FormData, not the platform's: undici tells a FormData body by
   * its own class, and a platform one fails as it is written (undici 7.30).
   */
  form?: FormData;
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
  body: UpstreamBody;
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
    const body = call.form ?? encodeBody(call);
    const headers: Record<string, string> = {
      ...(typeof body === 'string' ? { 'content-type': 'application/json' } : {}),
      ...call.headers,
    };
    const { response, attempts, release } = await withRetries(call, call.onRetry ?? this.onRetry, async (signal) => {
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
      throw errorAnswerFailure({
        who: call.who,
        status: response.statusCode,
        retryAfter: header(response.headers['retry-after']),
        detail,
        attempts,
        logger: call.logger,
        sent: { headers, url: call.url },
      });
    }
    const stream = response.body as unknown as UpstreamBody;
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
    const options: Dispatcher.DispatchOptions = {
      origin: url.origin,
      path: url.pathname + url.search,
      method: call.method ?? (bytes === undefined ? 'GET' : 'POST'),
      headers,
    };
    const { who, signal, logger } = call;
    // Not one async function: while the answer streams, nothing holds the call (its JSON body, the
    // whole conversation) or the request's options; only what reading and its errors need.
    return withRetries(call, call.onRetry ?? this.onRetry, (attemptSignal) => {
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
      return readStream(handler, attempts, who, signal, logger, { headers, url: call.url });
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
      const text = await readAll(response.body, MAX_JSON_BODY_BYTES, call.who);
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new UpstreamError(
          'UPSTREAM_BAD_RESPONSE',
          `${capitalize(call.who)} answered with something that is not JSON.`,
        );
      }
    } catch (error) {
      if (call.signal.aborted) throw call.signal.reason;
      if (controller.signal.reason instanceof AttemptTimeout) {
        throw new UpstreamError(
          'UPSTREAM_TIMEOUT',
          `${capitalize(call.who)} did not answer within ${call.policy.totalTimeoutMs} ms.`,
        );
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
      const call = { who, policy, signal, logger };
      const { response, release } = await withRetries(call, this.onRetry, async (attemptSignal) => {
        const response = await undiciFetch(url, {
          ...(init as object),
          dispatcher,
          signal: attemptSignal,
        } as Parameters<typeof undiciFetch>[1]);
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after') ?? undefined,
          discard: () => {
            response.body?.cancel().catch(() => {});
          },
          value: response,
        };
      });
      // The SDK's event reader holds an event until it ends, however long: capped as it is read.
      return guardedEventStream(releasingWhenRead(response, release) as unknown as Response, who);
    }) as typeof fetch;
  }

  /** Closes the pool: calls still going get a moment to finish, then their connections are cut. */
  async close(graceMs = 1_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const closed = this.dispatcher.close();
    const late = await Promise.race([
      closed.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (late) await this.dispatcher.destroy();
  }
}
