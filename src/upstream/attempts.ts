import type { Logger } from 'pino';
import { upstreamNetworkError } from './errors.js';

/**
 * Told of each retry of an upstream call: whom it was to, as logs and errors name it, and why the
 * attempt before failed (an error code, or `HTTP <status>` for a declined call).
 */
export type RetryObserver = (who: string, reason: string) => void;

/**
 * The attempts of one call that a provider SDK makes, and retries on its own, through the gateway's
 * `fetch`: every attempt after the first is a retry, reported (and logged) with why the one before
 * it failed. The SDK decides whether and when to retry; this only sees what it did.
 */
export class SdkAttempts {
  private made = 0;
  private lastFailure = '';

  constructor(
    private readonly who: string,
    private readonly onRetry: RetryObserver,
    private readonly logger: Logger,
  ) {}

  /** Sends one attempt of the call. */
  async send<R extends { status: number }>(attempt: () => Promise<R>): Promise<R> {
    if (this.made++ > 0) {
      this.logger.info({ upstream: this.who, attempt: this.made, reason: this.lastFailure }, 'upstream call retried by the provider SDK');
      this.onRetry(this.who, this.lastFailure);
    }
    try {
      const response = await attempt();
      this.lastFailure = `HTTP ${response.status}`;
      return response;
    } catch (error) {
      this.lastFailure = upstreamNetworkError(this.who, error, 'connect').code;
      throw error;
    }
  }
}
