import { ConfigurationError } from '../core/errors.js';
import { errorCodes } from './errors.js';

/**
 * When and how the upstream client retries. One policy per upstream (remote endpoint, AG-UI agent,
 * LangGraph deployment), each field optional in configuration with the defaults below.
 */
export interface RetryPolicy {
  /** Retries after the first attempt. @default 3 */
  maxRetries: number;
  /** Backoff before the first retry, at most; it doubles for each retry, with full jitter. @default 500 */
  baseDelayMs: number;
  /** The longest backoff between two attempts. @default 8000 */
  maxDelayMs: number;
  /** A `Retry-After` (seconds or an HTTP date) is honoured up to this long. @default 30000 */
  maxRetryAfterMs: number;
  /** HTTP statuses that are retried. @default [408, 429, 500, 502, 503, 504] */
  retryStatuses: number[];
  /** Time allowed to connect and receive the response's headers, per attempt. @default 30000 */
  attemptTimeoutMs: number;
  /**
   * Time allowed for all attempts and the waits between them, up to the response's headers (for a
   * JSON answer, up to its whole body). No retry starts that could not finish within it. @default 120000
   */
  totalTimeoutMs: number;
}

const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 3,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 30_000,
  retryStatuses: [408, 429, 500, 502, 503, 504],
  attemptTimeoutMs: 30_000,
  totalTimeoutMs: 120_000,
});

const LIMITS: Record<Exclude<keyof RetryPolicy, 'retryStatuses'>, [number, number]> = {
  maxRetries: [0, 20],
  baseDelayMs: [0, 60_000],
  maxDelayMs: [0, 600_000],
  maxRetryAfterMs: [0, 3_600_000],
  attemptTimeoutMs: [1, 3_600_000],
  totalTimeoutMs: [1, 3_600_000],
};

/** The defaults with a configured override applied; a mistake throws a ConfigurationError naming `where`. */
export function retryPolicy(
  overrides: Partial<RetryPolicy> | undefined,
  where: string,
  base: Readonly<RetryPolicy> = DEFAULT_RETRY_POLICY,
): RetryPolicy {
  if (overrides === undefined) return { ...base, retryStatuses: [...base.retryStatuses] };
  if (overrides === null || typeof overrides !== 'object') throw new ConfigurationError(`${where} must be an object.`);
  const policy: RetryPolicy = { ...base, retryStatuses: [...base.retryStatuses] };
  for (const [key, value] of Object.entries(overrides)) {
    if (key === 'retryStatuses') {
      if (!Array.isArray(value) || value.some((status) => !Number.isInteger(status) || status < 100 || status > 599)) {
        throw new ConfigurationError(`${where}.retryStatuses must be an array of HTTP statuses such as [429, 503].`);
      }
      policy.retryStatuses = [...value];
      continue;
    }
    const limits = LIMITS[key as keyof typeof LIMITS];
    if (!limits) {
      throw new ConfigurationError(
        `Unknown option ${where}.${key}. Known options: ${[...Object.keys(LIMITS), 'retryStatuses'].join(', ')}.`,
      );
    }
    if (typeof value !== 'number' || !Number.isInteger(value) || value < limits[0] || value > limits[1]) {
      throw new ConfigurationError(
        `${where}.${key} must be a whole number from ${limits[0]} to ${limits[1]} (got ${JSON.stringify(value)}).`,
      );
    }
    (policy as unknown as Record<string, number>)[key] = value;
  }
  return policy;
}

/** The wait before retry number `retry` (0 for the first retry): full jitter over an exponential ceiling. */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(random() * ceiling);
}

/**
 * A `Retry-After` header as milliseconds to wait: delay-seconds or an HTTP date. Undefined when
 * absent or unreadable; never negative.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
]);

/** Whether an error is a network failure worth another attempt (refused, reset, DNS, connect timeout). */
export function isRetryableNetworkError(error: unknown): boolean {
  return errorCodes(error).some((code) => RETRYABLE_NETWORK_CODES.has(code));
}
