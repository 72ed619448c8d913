/**
 * Every error code the gateway reports, in one table: the HTTP status it stands for, its default
 * severity and visibility (an error may say otherwise), where a client meets it, and what it means. PROTOCOL.md §5.5
 * lists the same codes (a test holds the two together).
 *
 * Where a code appears:
 * - `request`: a GraphQL error before anything runs (`data: null`, HTTP 200 like the reference).
 * - `run`: the terminal status of a run that had started (`FailedResponseStatus.details.code`).
 * - `http`: an HTTP answer of the transport itself (`{"errors":[{message, extensions:{code}}]}`).
 * - `action`: an action's error result `{"error":{code,message},"result":""}`; the run goes on.
 * - `startup`: a configuration mistake, reported when the gateway is built; never on the wire.
 */
export const ERROR_CODES = {
  BAD_USER_INPUT: {
    status: 400,
    severity: 'error',
    visibility: 'banner',
    where: 'request',
    meaning: 'The input failed a check before the run.',
  },
  NOT_SUPPORTED: {
    status: 501,
    severity: 'error',
    visibility: 'banner',
    where: 'request',
    meaning:
      'A feature this gateway does not offer (the Assistants API), or a forwarded parameter its model adapter cannot ' +
      'apply; AG-UI transcription when no transcription service is configured; the thread list while it is off ' +
      '(no authentication and no THREAD_LIST_ANONYMOUS), and CopilotKit Intelligence-only routes.',
  },
  AGENT_NOT_FOUND: {
    status: 404,
    severity: 'error',
    visibility: 'banner',
    where: 'request',
    meaning: 'No agent of that name; details list the available ones.',
  },
  OVERLOADED: {
    status: 503,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning: 'The process serves its most runs (or transcriptions) at once; try again shortly.',
  },
  MODEL_NOT_ALLOWED: {
    status: 403,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning: 'forwardedParameters.model names a model outside modelLimits.allowedModels.',
  },
  LIMIT_EXCEEDED: {
    status: 400,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning:
      'maxTokens, or the conversation sent to the model, is over modelLimits (a failed run when server-side results ' +
      'grow it past them); or a run whose input alone is more than maxBufferedInputMb holds; or a run whose output ' +
      'passes maxRunOutputMb (a failed run).',
  },
  REQUEST_REFUSED: {
    status: 403,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning: 'The onBeforeRequest hook refused the request (a code for hooks to throw).',
  },
  HOOK_FAILED: {
    status: 500,
    severity: 'critical',
    visibility: 'banner',
    where: 'request',
    meaning: 'The onBeforeRequest hook threw an unexpected error (logged in full).',
  },
  THREAD_BUSY: {
    status: 409,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning: 'The thread already has a run in progress (one run per thread); details name it.',
  },
  RUN_NOT_FOUND: {
    status: 404,
    severity: 'error',
    visibility: 'banner',
    where: 'request',
    meaning: 'joinCopilotRun names a thread or run the thread store does not have.',
  },
  STORE_UNAVAILABLE: {
    status: 503,
    severity: 'error',
    visibility: 'banner',
    where: 'request',
    meaning:
      'The thread store (Redis) cannot be reached: thread reads, joins and stops fail; new runs too when ' +
      'threads.onStoreFailure is "fail"; a run whose events it took none of for longer than the lease is ended.',
  },
  UNAUTHENTICATED: {
    status: 401,
    severity: 'warning',
    visibility: 'banner',
    where: 'http',
    meaning:
      'Authentication is on and the request has no valid credentials (an API key or a JWT as `Authorization: Bearer ' +
      "…`); WebSocket: close 4403, or an `error` message for an operation asked after the connection's credentials " +
      'expired.',
  },
  AUTH_UNAVAILABLE: {
    status: 503,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'The credentials could not be checked now (the JWKS endpoint cannot be reached); try again.',
  },
  THREAD_FORBIDDEN: {
    status: 403,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning: 'The thread belongs to another principal (authentication on): no run may be started on it.',
  },
  RATE_LIMITED: {
    status: 429,
    severity: 'warning',
    visibility: 'banner',
    where: 'request',
    meaning:
      'The client is over its requests per minute or its concurrent runs, or its address over its failed logins ' +
      '(then no credential from it is accepted; WebSocket: close 4429); `details.retryAfterSeconds` (and ' +
      'Retry-After over HTTP) say when to try again.',
  },
  SHUTTING_DOWN: {
    status: 503,
    severity: 'warning',
    visibility: 'banner',
    where: 'run',
    meaning:
      'The instance is shutting down: new runs are refused, and runs still going when its grace period ends fail ' +
      'with this code (reason UNKNOWN_ERROR, which the stock client shows).',
  },
  MISSING_PUBLIC_API_KEY: {
    status: 401,
    severity: 'error',
    visibility: 'banner',
    where: 'request',
    meaning: 'cloud.guardrails is set but the request has no X-CopilotCloud-Public-API-Key header.',
  },
  GUARDRAILS_VALIDATION_FAILED: {
    status: 403,
    severity: 'warning',
    visibility: 'banner',
    where: 'run',
    meaning:
      'The guardrails service denied the request; the run says why and fails (reason GUARDRAILS_VALIDATION_FAILED).',
  },
  NO_MODEL_CONFIGURED: {
    status: 400,
    severity: 'critical',
    visibility: 'banner',
    where: 'run',
    meaning: 'The gateway has no model (EmptyAdapter) and the request needs one.',
  },
  UPSTREAM_AUTHENTICATION_FAILED: {
    status: 502,
    severity: 'critical',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream answered 401 or 403.',
  },
  UPSTREAM_RATE_LIMITED: {
    status: 429,
    severity: 'warning',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream answered 429, after the retries.',
  },
  UPSTREAM_REJECTED: {
    status: 502,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream answered another 4xx.',
  },
  UPSTREAM_UNAVAILABLE: {
    status: 502,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream answered 5xx, after the retries.',
  },
  UPSTREAM_UNREACHABLE: {
    status: 502,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream could not be reached (refused, reset, DNS), after the retries.',
  },
  UPSTREAM_TIMEOUT: {
    status: 504,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream sent nothing in time (idle, connect or answer timeout).',
  },
  UPSTREAM_STREAM_INTERRUPTED: {
    status: 502,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream stream broke off or ended before it was complete.',
  },
  UPSTREAM_BAD_RESPONSE: {
    status: 502,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'An upstream sent something unreadable (a malformed line or event).',
  },
  AGENT_ERROR: {
    status: 502,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning: 'The agent reported an error of its own.',
  },
  RUN_STOPPED: {
    status: 409,
    severity: 'info',
    visibility: 'silent',
    where: 'run',
    meaning: 'The run was stopped by stopCopilotRun (or interrupted by a newer run on its thread).',
  },
  INSTANCE_LOST: {
    status: 503,
    severity: 'error',
    visibility: 'banner',
    where: 'run',
    meaning:
      'The gateway instance running the run stopped answering (killed or cut off); the run was ended from its stored ' +
      'events.',
  },
  CLIENT_DISCONNECTED: {
    status: 499,
    severity: 'info',
    visibility: 'silent',
    where: 'run',
    meaning: 'The client went away before the run finished (logs only).',
  },
  INTERNAL_SERVER_ERROR: {
    status: 500,
    severity: 'critical',
    visibility: 'banner',
    where: 'run',
    meaning: 'Unexpected error, masked as "Unexpected error." and logged in full.',
  },
  CONFIGURATION_ERROR: {
    status: 500,
    severity: 'critical',
    visibility: 'banner',
    where: 'startup',
    meaning: 'Invalid configuration.',
  },
  INVALID_ARGUMENTS: {
    status: 400,
    severity: 'error',
    visibility: 'banner',
    where: 'action',
    meaning: 'The arguments of an action call failed its schema.',
  },
  ACTION_FAILED: {
    status: 500,
    severity: 'error',
    visibility: 'banner',
    where: 'action',
    meaning: 'A server-side action threw.',
  },
  ACTION_TIMEOUT: {
    status: 504,
    severity: 'error',
    visibility: 'banner',
    where: 'action',
    meaning: 'A server-side or remote action took longer than actionTimeoutMs.',
  },
  BAD_REQUEST: {
    status: 400,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning:
      'A malformed HTTP request (invalid JSON, batching); answered 405 for a method the route does not take ' +
      '(MethodNotAllowedError) and 415 for an AG-UI body that is not JSON (UnsupportedMediaTypeError).',
  },
  NOT_FOUND: {
    status: 404,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'A path other than the GraphQL path and /health.',
  },
  FORBIDDEN_ORIGIN: {
    status: 403,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'A CORS preflight from an origin that is not allowed.',
  },
  FORBIDDEN_HOST: {
    status: 403,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'In development, a Host that is not loopback, an IP or allowed.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning:
      'A body over maxBodyBytes (or over maxBufferedInputMb, when smaller), or a recording over the transcription ' +
      'limit (transcription.maxBytes).',
  },
  NOT_ACCEPTABLE: {
    status: 406,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'A streaming operation for a client that takes no streaming format.',
  },
  GRAPHQL_PARSE_FAILED: {
    status: 400,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'The document does not parse.',
  },
  GRAPHQL_VALIDATION_FAILED: {
    status: 400,
    severity: 'error',
    visibility: 'banner',
    where: 'http',
    meaning: 'The document fails validation.',
  },
} as const satisfies Record<
  string,
  { status: number; severity: Severity; visibility: Visibility; where: ErrorPlace; meaning: string }
>;

export type ErrorPlace = 'request' | 'run' | 'http' | 'action' | 'startup';
export type ErrorCode = keyof typeof ERROR_CODES;

/** The HTTP status a code stands for. */
export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}

export type Severity = 'critical' | 'error' | 'warning' | 'info';
/** Who should see the error: CopilotKit's UI shows `banner` errors to developers. */
export type Visibility = 'banner' | 'toast' | 'silent';
