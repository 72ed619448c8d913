/**
 * One error base class for everything the gateway reports. Each error has a stable `code`
 * (listed in PROTOCOL.md) and the HTTP status it stands for; anything that is not a
 * GatewayError is unexpected and masked before it reaches a client.
 */
export type ErrorCode =
  | 'CONFIGURATION_ERROR'
  | 'BAD_REQUEST'
  | 'BAD_USER_INPUT'
  | 'NOT_SUPPORTED'
  | 'AGENT_NOT_FOUND'
  | 'NO_MODEL_CONFIGURED'
  | 'UPSTREAM_AUTHENTICATION_FAILED'
  | 'UPSTREAM_RATE_LIMITED'
  | 'UPSTREAM_REJECTED'
  | 'UPSTREAM_UNAVAILABLE'
  | 'UPSTREAM_UNREACHABLE'
  | 'UPSTREAM_TIMEOUT'
  | 'UPSTREAM_STREAM_INTERRUPTED'
  | 'CLIENT_DISCONNECTED'
  | 'OVERLOADED'
  | 'INTERNAL_SERVER_ERROR';

export type Severity = 'critical' | 'error' | 'warning' | 'info';
/** Who should see the error: CopilotKit's UI shows `banner` errors to developers. */
export type Visibility = 'banner' | 'toast' | 'silent';

export interface GatewayErrorOptions {
  status?: number;
  severity?: Severity;
  visibility?: Visibility;
  cause?: unknown;
  /** Extra, client-safe facts (never secrets or stack traces). */
  details?: Record<string, unknown>;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly severity: Severity;
  readonly visibility: Visibility;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? 500;
    this.severity = options.severity ?? 'error';
    this.visibility = options.visibility ?? 'banner';
    this.details = options.details;
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
    super('CONFIGURATION_ERROR', message, { status: 500, severity: 'critical' });
    this.name = 'ConfigurationError';
  }
}

export class BadUserInputError extends GatewayError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('BAD_USER_INPUT', message, { status: 400, details });
    this.name = 'BadUserInputError';
  }
}

export class NotSupportedError extends GatewayError {
  constructor(feature: string) {
    super('NOT_SUPPORTED', `${feature} is not supported by this gateway yet.`, { status: 501 });
    this.name = 'NotSupportedError';
  }
}

export class AgentNotFoundError extends GatewayError {
  constructor(agentName: string, available: string[]) {
    const list = available.length ? available.map((n) => `"${n}"`).join(', ') : 'none are configured';
    super('AGENT_NOT_FOUND', `Agent "${agentName}" was not found. Available agents: ${list}.`, {
      status: 404,
      details: { agentName, availableAgents: available },
    });
    this.name = 'AgentNotFoundError';
  }
}

/** A model provider or other upstream service failed. */
export class UpstreamError extends GatewayError {
  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(code, message, { status: 502, ...options });
    this.name = 'UpstreamError';
  }
}

/** Turns anything thrown into a GatewayError; unknown errors become a masked INTERNAL_SERVER_ERROR. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  return new GatewayError('INTERNAL_SERVER_ERROR', 'Unexpected error.', { cause: error });
}

/** Exhaustiveness check for switches over union types. */
export class UnreachableCaseError extends Error {
  constructor(value: never) {
    super(`Unreachable case: ${JSON.stringify(value)}`);
  }
}
