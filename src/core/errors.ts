import { ERROR_CODES, statusOf, type ErrorCode, type Severity, type Visibility } from './error-codes.js';

export { ERROR_CODES, statusOf, type ErrorCode, type Severity, type Visibility } from './error-codes.js';

export interface GatewayErrorOptions {
  /** Override the code's table entry (its status only a class fixes: see `httpStatus`). */
  severity?: Severity;
  visibility?: Visibility;
  cause?: unknown;
  /** Extra, client-safe facts (never secrets, URLs or stack traces). */
  details?: Record<string, unknown>;
}

/**
 * One error base class for everything the gateway reports. Each error has a stable `code` from the
 * table above and the HTTP status it stands for; anything that is not a GatewayError is unexpected
 * and masked before it reaches a client.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly severity: Severity;
  readonly visibility: Visibility;
  readonly details: Record<string, unknown> | undefined;

  /**
   * The HTTP status of every error of a class, where it is not its code's in the table: a class of its own fixes it
   * (MethodNotAllowedError), never a call site.
   */
  protected static readonly httpStatus: number | undefined = undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = (new.target as typeof GatewayError).httpStatus ?? statusOf(code);
    this.severity = options.severity ?? ERROR_CODES[code].severity;
    this.visibility = options.visibility ?? ERROR_CODES[code].visibility;
    this.details = options.details;
  }

  /** The same error (its class, message, status, cause and stack) with other details. */
  withDetails(details: Record<string, unknown>): this {
    const copy = Object.create(Object.getPrototypeOf(this) as object) as this;
    Object.defineProperties(copy, Object.getOwnPropertyDescriptors(this));
    // Read, not copied: on Node 24 `stack` is an accessor that answers only for the error it was captured on.
    Object.defineProperty(copy, 'stack', { value: this.stack, writable: true, configurable: true });
    Object.defineProperty(copy, 'details', { value: details, enumerable: true });
    return copy;
  }

  /** The client-facing form, used in GraphQL `extensions` and in a failed run's `details`. */
  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      statusCode: this.status,
      severity: this.severity,
      visibility: this.visibility,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export class ConfigurationError extends GatewayError {
  constructor(message: string) {
    super('CONFIGURATION_ERROR', message, { severity: 'critical' });
    this.name = 'ConfigurationError';
  }
}

export class BadUserInputError extends GatewayError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('BAD_USER_INPUT', message, { details });
    this.name = 'BadUserInputError';
  }
}

export class NotSupportedError extends GatewayError {
  constructor(message: string, options?: GatewayErrorOptions) {
    super('NOT_SUPPORTED', message, options);
    this.name = 'NotSupportedError';
  }
}

export class AgentNotFoundError extends GatewayError {
  /** `unreachableSources`: agent sources (remote endpoints) that could not be asked, so may hold it. */
  constructor(agentName: string, available: readonly string[], unreachableSources = 0) {
    // The model is not an agent here (a request without agentSession runs it), though AG-UI's /info lists
    // it as "default": said when it may be what was meant, so that the answer agrees with /info.
    const model = 'the gateway\'s model ("default" in AG-UI\'s /info) answers a request without agentSession';
    const list = available.length
      ? `${available.map((n) => `"${n}"`).join(', ')}${agentName === 'default' ? `; ${model}` : ''}`
      : `none configured; ${model}`;
    const unknown =
      unreachableSources > 0
        ? ` ${unreachableSources} remote endpoint${unreachableSources === 1 ? '' : 's'} could not be reached, so ${
            unreachableSources === 1 ? 'its' : 'their'
          } agents are not listed.`
        : '';
    super('AGENT_NOT_FOUND', `Agent "${agentName}" was not found. Available agents: ${list}.${unknown}`, {
      details: { agentName, availableAgents: [...available], ...(unreachableSources ? { unreachableSources } : {}) },
    });
    this.name = 'AgentNotFoundError';
  }
}

// One class per code a call site raises (as undici's errors each fix their own): `new ThreadBusyError(message)`
// says what it is, and the code, status, severity and visibility come from the table (error-codes.ts).

/** UNAUTHENTICATED: No valid credentials (authentication on). */
export class UnauthenticatedError extends GatewayError {
  declare readonly code: 'UNAUTHENTICATED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('UNAUTHENTICATED', message, options);
    this.name = 'UnauthenticatedError';
  }
}

/** AUTH_UNAVAILABLE: The credentials could not be checked now. */
export class AuthUnavailableError extends GatewayError {
  declare readonly code: 'AUTH_UNAVAILABLE';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('AUTH_UNAVAILABLE', message, options);
    this.name = 'AuthUnavailableError';
  }
}

/** CLIENT_DISCONNECTED: The client went away before the run finished. */
export class ClientDisconnectedError extends GatewayError {
  declare readonly code: 'CLIENT_DISCONNECTED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('CLIENT_DISCONNECTED', message, options);
    this.name = 'ClientDisconnectedError';
  }
}

/** STORE_UNAVAILABLE: The thread store cannot be reached, or took none of a run's events for too long. */
export class StoreUnavailableError extends GatewayError {
  declare readonly code: 'STORE_UNAVAILABLE';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('STORE_UNAVAILABLE', message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** SHUTTING_DOWN: The instance is shutting down. */
export class ShuttingDownError extends GatewayError {
  declare readonly code: 'SHUTTING_DOWN';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('SHUTTING_DOWN', message, options);
    this.name = 'ShuttingDownError';
  }
}

/** RATE_LIMITED: The client is over a limit; details say when to try again. */
export class RateLimitedError extends GatewayError {
  declare readonly code: 'RATE_LIMITED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('RATE_LIMITED', message, options);
    this.name = 'RateLimitedError';
  }
}

/** LIMIT_EXCEEDED: maxTokens or the conversation is over the model limits. */
export class LimitExceededError extends GatewayError {
  declare readonly code: 'LIMIT_EXCEEDED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('LIMIT_EXCEEDED', message, options);
    this.name = 'LimitExceededError';
  }
}

/** INSTANCE_LOST: The instance running the run stopped answering. */
export class InstanceLostError extends GatewayError {
  declare readonly code: 'INSTANCE_LOST';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('INSTANCE_LOST', message, options);
    this.name = 'InstanceLostError';
  }
}

/** RUN_STOPPED: The run was stopped. */
export class RunStoppedError extends GatewayError {
  declare readonly code: 'RUN_STOPPED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('RUN_STOPPED', message, options);
    this.name = 'RunStoppedError';
  }
}

/** RUN_NOT_FOUND: No such thread or run in the store. */
export class RunNotFoundError extends GatewayError {
  declare readonly code: 'RUN_NOT_FOUND';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('RUN_NOT_FOUND', message, options);
    this.name = 'RunNotFoundError';
  }
}

/** INTERNAL_SERVER_ERROR: Unexpected: masked as "Unexpected error." to clients. */
export class InternalError extends GatewayError {
  declare readonly code: 'INTERNAL_SERVER_ERROR';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('INTERNAL_SERVER_ERROR', message, options);
    this.name = 'InternalError';
  }
}

/** ACTION_FAILED: A server-side action threw. */
export class ActionFailedError extends GatewayError {
  declare readonly code: 'ACTION_FAILED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('ACTION_FAILED', message, options);
    this.name = 'ActionFailedError';
  }
}

/** ACTION_TIMEOUT: An action took longer than actionTimeoutMs. */
export class ActionTimeoutError extends GatewayError {
  declare readonly code: 'ACTION_TIMEOUT';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('ACTION_TIMEOUT', message, options);
    this.name = 'ActionTimeoutError';
  }
}

/** THREAD_FORBIDDEN: The thread belongs to another principal. */
export class ThreadForbiddenError extends GatewayError {
  declare readonly code: 'THREAD_FORBIDDEN';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('THREAD_FORBIDDEN', message, options);
    this.name = 'ThreadForbiddenError';
  }
}

/** THREAD_BUSY: The thread already has a run in progress. */
export class ThreadBusyError extends GatewayError {
  declare readonly code: 'THREAD_BUSY';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('THREAD_BUSY', message, options);
    this.name = 'ThreadBusyError';
  }
}

/** OVERLOADED: The process serves its most runs at once. */
export class OverloadedError extends GatewayError {
  declare readonly code: 'OVERLOADED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('OVERLOADED', message, options);
    this.name = 'OverloadedError';
  }
}

/** MISSING_PUBLIC_API_KEY: Guardrails are on and the request has no public API key. */
export class MissingPublicApiKeyError extends GatewayError {
  declare readonly code: 'MISSING_PUBLIC_API_KEY';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('MISSING_PUBLIC_API_KEY', message, options);
    this.name = 'MissingPublicApiKeyError';
  }
}

/** HOOK_FAILED: The onBeforeRequest hook threw unexpectedly. */
export class HookFailedError extends GatewayError {
  declare readonly code: 'HOOK_FAILED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('HOOK_FAILED', message, options);
    this.name = 'HookFailedError';
  }
}

/** GUARDRAILS_VALIDATION_FAILED: The guardrails service denied the request. */
export class GuardrailsDeniedError extends GatewayError {
  declare readonly code: 'GUARDRAILS_VALIDATION_FAILED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('GUARDRAILS_VALIDATION_FAILED', message, options);
    this.name = 'GuardrailsDeniedError';
  }
}

/** MODEL_NOT_ALLOWED: A model outside modelLimits.allowedModels. */
export class ModelNotAllowedError extends GatewayError {
  declare readonly code: 'MODEL_NOT_ALLOWED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('MODEL_NOT_ALLOWED', message, options);
    this.name = 'ModelNotAllowedError';
  }
}

/** NO_MODEL_CONFIGURED: The gateway has no model and the request needs one. */
export class NoModelConfiguredError extends GatewayError {
  declare readonly code: 'NO_MODEL_CONFIGURED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('NO_MODEL_CONFIGURED', message, options);
    this.name = 'NoModelConfiguredError';
  }
}

/** BAD_REQUEST: A malformed HTTP request. */
export class BadRequestError extends GatewayError {
  declare readonly code: 'BAD_REQUEST';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('BAD_REQUEST', message, options);
    this.name = 'BadRequestError';
  }
}

/**
 * BAD_REQUEST answered 405, with the methods allowed: a route asked with a method it does not take (Apollo Server
 * codes a bad method on the GraphQL path BAD_REQUEST too).
 */
export class MethodNotAllowedError extends BadRequestError {
  protected static override readonly httpStatus = 405;
  /** `allow`: the methods the route takes, for the answer's Allow header. */
  constructor(
    message: string,
    readonly allow: string,
    options?: GatewayErrorOptions,
  ) {
    super(message, options);
    this.name = 'MethodNotAllowedError';
  }
}

/** BAD_REQUEST answered 415: a body of a type the route does not read. */
export class UnsupportedMediaTypeError extends BadRequestError {
  protected static override readonly httpStatus = 415;
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedMediaTypeError';
  }
}

/** NOT_FOUND: No such route. */
export class NotFoundError extends GatewayError {
  declare readonly code: 'NOT_FOUND';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('NOT_FOUND', message, options);
    this.name = 'NotFoundError';
  }
}

/** FORBIDDEN_ORIGIN: A CORS preflight from an origin that is not allowed. */
export class ForbiddenOriginError extends GatewayError {
  declare readonly code: 'FORBIDDEN_ORIGIN';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('FORBIDDEN_ORIGIN', message, options);
    this.name = 'ForbiddenOriginError';
  }
}

/** FORBIDDEN_HOST: In development, a Host that is not allowed. */
export class ForbiddenHostError extends GatewayError {
  declare readonly code: 'FORBIDDEN_HOST';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('FORBIDDEN_HOST', message, options);
    this.name = 'ForbiddenHostError';
  }
}

/** PAYLOAD_TOO_LARGE: A body over maxBodyBytes. */
export class PayloadTooLargeError extends GatewayError {
  declare readonly code: 'PAYLOAD_TOO_LARGE';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('PAYLOAD_TOO_LARGE', message, options);
    this.name = 'PayloadTooLargeError';
  }
}

/** GRAPHQL_PARSE_FAILED: The document does not parse (or nests deeper than the parser is given). */
export class ParseFailedError extends GatewayError {
  declare readonly code: 'GRAPHQL_PARSE_FAILED';
  constructor(message: string, options?: GatewayErrorOptions) {
    super('GRAPHQL_PARSE_FAILED', message, options);
    this.name = 'ParseFailedError';
  }
}

/** The codes an upstream's failure may have (an agent's own error is one). */
export type UpstreamErrorCode = Extract<ErrorCode, `UPSTREAM_${string}`> | 'AGENT_ERROR';

/** A model provider, an agent or another upstream service failed. */
export class UpstreamError extends GatewayError {
  declare readonly code: UpstreamErrorCode;
  constructor(code: UpstreamErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(code, message, options);
    this.name = 'UpstreamError';
  }
}

/** Turns anything thrown into a GatewayError; unknown errors become a masked INTERNAL_SERVER_ERROR. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  return new InternalError('Unexpected error.', { cause: error });
}

/** Exhaustiveness check for switches over union types. */
export class UnreachableCaseError extends Error {
  constructor(value: never) {
    super(`Unreachable case: ${JSON.stringify(value)}`);
  }
}
