import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import {
  ERROR_BODY_WAIT_MS,
  MAX_ERROR_BODY_BYTES,
  errorAnswerFailure,
  errorDetail,
  header,
  type SentRequest,
} from './bodies.js';
import { upstreamNetworkError } from './errors.js';

/**
 * Reading a streamed answer on undici's `dispatch` (the streaming path of the model and the agents):
 * one handler object per attempt hands each chunk on as it arrives, with no Readable, no promise per
 * read and no abort link per layer (BENCHMARKS.md, step 11).
 */

/** The reason an attempt whose answer is not used (a declined call about to be retried) is ended with. */
export const DISCARDED = new Error('The answer was not used.');

/**
 * The rest of `stream` once an answer has started: its error, or its body read to the end. Not an
 * async function: a stream spends its life in here, and a suspended frame would be held all along.
 */
export function readStream(
  handler: StreamHandler,
  attempts: number,
  who: string,
  signal: AbortSignal,
  logger: Logger,
  /** What the call sent (an error answer's explanation is logged without its credentials). */
  sent?: SentRequest,
): Promise<{ status: number; attempts: number }> {
  const onAbort = () => handler.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const unlink = () => signal.removeEventListener('abort', onAbort);
  if (handler.status < 200 || handler.status > 299) {
    return statusError(handler, attempts, who, signal, logger, sent).finally(unlink);
  }
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
async function statusError(
  handler: StreamHandler,
  attempts: number,
  who: string,
  signal: AbortSignal,
  logger: Logger,
  sent: SentRequest | undefined,
): Promise<never> {
  const detail = errorDetail(await handler.errorBody(ERROR_BODY_WAIT_MS));
  signal.throwIfAborted();
  const { status, retryAfter } = handler;
  throw errorAnswerFailure({ who, status, retryAfter, detail, attempts, logger, sent });
}

/**
 * One dispatched attempt of `stream`: resolves `started` with the answer's status and headers, then
 * hands a successful body's chunks to `onChunk` as they arrive (or keeps the first bytes of an error
 * body), and settles `ended` when the body is over.
 */
export class StreamHandler implements Dispatcher.DispatchHandler {
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
    await Promise.race([
      this.ended.catch(() => {}),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs))),
    ]);
    clearTimeout(timer);
    this.abort(DISCARDED);
    return this.errorText;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason) controller.abort(this.abortReason);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
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
