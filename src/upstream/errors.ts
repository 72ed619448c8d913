import { GatewayError, UpstreamError, type UpstreamErrorCode } from '../core/errors.js';

/**
 * The one mapping from what an upstream did (an HTTP status, a network error) to the gateway's
 * UPSTREAM_* codes, shared by the model adapters, the agent clients, remote actions and discovery.
 * Messages name the upstream in words a developer recognises (`the model provider`, `agent "crew"`)
 * and never contain its URL or credentials; the upstream's own text goes to the logs only, except
 * where noted, because it can quote a key.
 */

/** The codes an upstream's HTTP status can stand for. */
type StatusErrorCode = Extract<
  UpstreamErrorCode,
  | 'UPSTREAM_AUTHENTICATION_FAILED'
  | 'UPSTREAM_TIMEOUT'
  | 'UPSTREAM_RATE_LIMITED'
  | 'UPSTREAM_UNAVAILABLE'
  | 'UPSTREAM_REJECTED'
>;

/** The code an upstream's HTTP status stands for. */
function codeForStatus(status: number): StatusErrorCode {
  if (status === 401 || status === 403) return 'UPSTREAM_AUTHENTICATION_FAILED';
  if (status === 408 || status === 504) return 'UPSTREAM_TIMEOUT';
  if (status === 429) return 'UPSTREAM_RATE_LIMITED';
  if (status >= 500) return 'UPSTREAM_UNAVAILABLE';
  return 'UPSTREAM_REJECTED';
}

export interface StatusErrorOptions {
  /** A short, client-safe detail from the upstream's answer (never shown for 401/403). */
  detail?: string;
  /** What the developer should check, appended to the message. */
  hint?: string;
  cause?: unknown;
  /** Seconds the upstream asked to wait (Retry-After), when it did. */
  retryAfterSeconds?: number;
}

/**
 * What to check when a model provider refuses a request for one of the common reasons: a model it
 * does not have (404), or a conversation longer than the model's context window (a 400 or 413 whose
 * explanation says so, in each provider's words).
 */
export function commonCauseHint(status: number, detail: string | undefined, modelVariable: string): string | undefined {
  if (status === 404) return `Check the model name (${modelVariable}).`;
  if ((status === 400 || status === 413) && detail && CONTEXT_TOO_LONG.test(detail)) {
    return 'The conversation is longer than the model can take: start a new thread, or cap it with MAX_INPUT_CHARS.';
  }
  return undefined;
}

const CONTEXT_TOO_LONG = new RegExp(
  [
    'context[_ ]length',
    'context window',
    'maximum context',
    'prompt is too long',
    'too many tokens',
    'exceeds the maximum number of tokens',
    'input is too long',
    'reduce the length',
  ].join('|'),
  'i',
);

/** An error for an upstream that answered with a non-success HTTP status. */
export function upstreamStatusError(who: string, status: number, options: StatusErrorOptions = {}): UpstreamError {
  const code = codeForStatus(status);
  const details: Record<string, unknown> = { upstreamStatus: status };
  if (options.retryAfterSeconds !== undefined) details.retryAfterSeconds = options.retryAfterSeconds;
  const detail =
    options.detail && code !== 'UPSTREAM_AUTHENTICATION_FAILED'
      ? `: ${truncate(withoutUrls(options.detail), 300)}`
      : '.';
  const hint = options.hint ? ` ${options.hint}` : '';
  const what: string = (
    {
      UPSTREAM_AUTHENTICATION_FAILED: `refused the credentials (HTTP ${status})`,
      UPSTREAM_TIMEOUT: `timed out (HTTP ${status})`,
      UPSTREAM_RATE_LIMITED: `rate limit was reached (HTTP ${status})`,
      UPSTREAM_UNAVAILABLE: `failed (HTTP ${status})`,
      UPSTREAM_REJECTED: `rejected the request (HTTP ${status})`,
    } satisfies Record<StatusErrorCode, string>
  )[code];
  const subject = code === 'UPSTREAM_RATE_LIMITED' ? `${possessive(who)}` : capitalize(who);
  return new UpstreamError(code, `${subject} ${what}${detail}${hint}`, { cause: options.cause, details });
}

/** Network-level failures, by the phase they happened in. */
export type NetworkPhase = 'connect' | 'response' | 'stream';

/**
 * An error for a request that got no (complete) answer: refused, reset, unknown host, timed out,
 * or cut in the middle of a streamed body. `phase` says how far the request got.
 */
export function upstreamNetworkError(who: string, error: unknown, phase: NetworkPhase): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = networkCode(error);
  if (phase === 'stream' && code !== 'UPSTREAM_TIMEOUT') {
    return new UpstreamError(
      'UPSTREAM_STREAM_INTERRUPTED',
      `The connection to ${who} broke off in the middle of its answer.`,
      { cause: error },
    );
  }
  if (code === 'UPSTREAM_TIMEOUT') {
    return new UpstreamError('UPSTREAM_TIMEOUT', `${capitalize(who)} did not answer in time.`, { cause: error });
  }
  return new UpstreamError(
    'UPSTREAM_UNREACHABLE',
    `${capitalize(who)} could not be reached (${describeNetworkError(error)}).`,
    { cause: error },
  );
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
]);

/** Whether a network failure was a timeout or the upstream could not be reached. */
export function networkCode(error: unknown): 'UPSTREAM_TIMEOUT' | 'UPSTREAM_UNREACHABLE' {
  for (const code of errorCodes(error)) if (TIMEOUT_CODES.has(code)) return 'UPSTREAM_TIMEOUT';
  if ((error as Error)?.name === 'TimeoutError') return 'UPSTREAM_TIMEOUT';
  return 'UPSTREAM_UNREACHABLE';
}

/** The system or undici codes of an error and its causes (fetch wraps them in `cause`). */
export function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  let current = error as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string') codes.push(current.code);
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const inner of errors) codes.push(...errorCodes(inner));
    current = current.cause as typeof current;
  }
  return codes;
}

const DESCRIPTIONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host lookup failed',
  EPIPE: 'connection closed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_CLOSED: 'connection closed',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
};

function describeNetworkError(error: unknown): string {
  for (const code of errorCodes(error)) if (DESCRIPTIONS[code]) return DESCRIPTIONS[code];
  return 'network error';
}

/** Never pass an address on: an upstream's text may name its own or another service's URL. */
function withoutUrls(text: string): string {
  return text.replace(/\b(?:https?|wss?):\/\/\S+/gi, '<url>');
}

function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function possessive(who: string): string {
  return `${capitalize(who)}'s`;
}
