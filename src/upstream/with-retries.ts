import type { Logger } from 'pino';
import { abortableDelay } from '../core/abort.js';
import { GatewayError, UpstreamError } from '../core/errors.js';
import type { RetryObserver } from './attempts.js';
import { capitalize, upstreamNetworkError } from './errors.js';
import { backoffDelay, isRetryableNetworkError, parseRetryAfter, type RetryPolicy } from './retry.js';

/** Set as an attempt's abort reason when it took longer than `attemptTimeoutMs`. */
export class AttemptTimeout extends Error {}

/** What the retry loop needs of one attempt's answer, and the answer itself (`value`). */
export interface Attempt<T> {
  status: number;
  retryAfter: string | undefined;
  /** Ends an answer that will not be used (a declined call about to be retried). */
  discard: () => void;
  value: T;
}

/** What the retry loop needs of a call. */
export interface RetriedCall {
  /** Who is called, for messages and logs. Never a URL. */
  who: string;
  policy: RetryPolicy;
  signal: AbortSignal;
  logger: Logger;
}

/**
 * The retry loop shared by `request`, `stream` and `fetchFor`: resolves with the last attempt's
 * response, still linked to the caller's abort; `release()` unlinks it, for a caller that takes
 * over listening to its signal.
 *
 * A call is retried only before any byte of its response has arrived: a retryable status (the
 * upstream declined the call as a whole) or a network error before the headers.
 */
export async function withRetries<T>(
  call: RetriedCall,
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
        ? new UpstreamError('UPSTREAM_TIMEOUT', `${capitalize(who)} did not answer within ${attemptMs} ms.`, {
            cause: error,
          })
        : upstreamNetworkError(who, error, 'connect');
      const wait = backoffDelay(policy, retry);
      const retryable = timedOut || isRetryableNetworkError(error);
      if (!retryable || error instanceof GatewayError || retry >= policy.maxRetries || Date.now() + wait >= deadline) {
        logger.warn(
          { upstream: who, attempts: retry + 1, code: failure.code, cause: (error as Error)?.message },
          'upstream call failed',
        );
        throw failure;
      }
      logger.info(
        { upstream: who, attempt: retry + 1, code: failure.code, waitMs: wait },
        'upstream call failed; retrying',
      );
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
    logger.info(
      { upstream: who, attempt: retry + 1, status: result.status, waitMs: wait },
      'upstream declined the call; retrying',
    );
    onRetry?.(who, `HTTP ${result.status}`);
    await abortableDelay(wait, signal);
  }
}
