import type { Logger } from 'pino';
import { networkCode } from './errors.js';

/**
 * Told of each retry of an upstream call: whom it was to, as logs and errors name it, and why the
 * attempt before failed (an error code, or `HTTP <status>` for a declined call).
 */
export type RetryObserver = (who: string, reason: string) => void;

/**
 * The attempts of one call that a provider SDK makes, and retries on its own, through the gateway's
 * `fetch`: an attempt that follows a failed one (a status that is not 2xx, or a network error) is a
 * retry, logged and reported with why the one before it failed. The SDK decides whether and when to
 * retry; this only sees what it did. An attempt after a successful one is not a retry: Gemini's SDK
 * asks again to continue an answer the server cut into parts (its automatic continuation).
 */
export class SdkAttempts {
  private made = 0;
  /** Why the last attempt failed; empty when it succeeded. */
  private lastFailure = '';

  constructor(
    private readonly who: string,
    private readonly onRetry: RetryObserver | undefined,
    private readonly logger: Logger,
  ) {}

  /** Sends one attempt of the call. */
  async send<R extends { status: number }>(attempt: () => Promise<R>): Promise<R> {
    this.made++;
    if (this.lastFailure !== '') {
      this.logger.info(
        { upstream: this.who, attempt: this.made, reason: this.lastFailure },
        'upstream call retried by the provider SDK',
      );
      this.onRetry?.(this.who, this.lastFailure);
    }
    try {
      const response = await attempt();
      this.lastFailure = response.status >= 200 && response.status < 300 ? '' : `HTTP ${response.status}`;
      return response;
    } catch (error) {
      // An attempt the SDK aborted is one it timed out: had the caller aborted, there would be no retry.
      this.lastFailure = (error as Error)?.name === 'AbortError' ? 'UPSTREAM_TIMEOUT' : networkCode(error);
      throw error;
    }
  }
}
