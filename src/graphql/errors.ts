import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ERROR_CODES, GatewayError, statusOf, type ErrorCode } from '../core/errors.js';

/** The code every error the gateway does not know is answered with (masked). */
const UNEXPECTED: ErrorCode = 'INTERNAL_SERVER_ERROR';
import { withoutSuggestions } from './validation.js';

/**
 * The one place errors are shaped for clients (Apollo's formatError and graphql-ws share it):
 * a GatewayError shows its code, HTTP status, severity and visibility; GraphQL's own errors
 * (syntax, validation, bad variables) pass as they are, without "Did you mean …" suggestions unless `suggestions`
 * (introspection on: where it is off they would reveal the schema; Apollo takes them out of validation errors only,
 * not out of a variable's value refused, which names enum values and input fields); anything else is masked as
 * "Unexpected error." — it is logged in full with the request id, never sent. No stack traces.
 */
export function formatGraphQLError(
  formatted: GraphQLFormattedError,
  error: unknown,
  suggestions: boolean,
): GraphQLFormattedError {
  const original = originalErrorOf(error);
  const { stacktrace: _omit, ...extensions } = (formatted.extensions ?? {}) as Record<string, unknown>;
  if (original instanceof GatewayError) {
    return {
      message: original.message,
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: {
        code: original.code,
        statusCode: original.status,
        severity: original.severity,
        visibility: original.visibility,
        ...(original.details ? { details: original.details } : {}),
      },
    };
  }
  if (original && !(original instanceof GraphQLError)) {
    return {
      message: 'Unexpected error.',
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: {
        code: UNEXPECTED,
        statusCode: statusOf(UNEXPECTED),
        severity: ERROR_CODES[UNEXPECTED].severity,
        visibility: ERROR_CODES[UNEXPECTED].visibility,
      },
    };
  }
  // GraphQL's own errors (syntax, validation, variables), coded by Apollo or the WebSocket transport:
  // with a code of the gateway's table (Apollo's own codes, or none, said in the table's words).
  const message = suggestions ? formatted.message : withoutSuggestions(formatted.message);
  return { ...formatted, message, extensions: { ...extensions, code: tableCode(extensions.code, formatted.message) } };
}

/** Apollo's codes outside the gateway's table, as the table says them. */
const FOREIGN_CODES: Record<string, ErrorCode> = {
  OPERATION_RESOLUTION_FAILURE: 'BAD_REQUEST',
  PERSISTED_QUERY_NOT_SUPPORTED: 'NOT_SUPPORTED',
  PERSISTED_QUERY_NOT_FOUND: 'NOT_SUPPORTED',
};

function tableCode(code: unknown, message: string): ErrorCode {
  if (typeof code === 'string' && Object.hasOwn(ERROR_CODES, code)) return code as ErrorCode;
  if (typeof code === 'string' && Object.hasOwn(FOREIGN_CODES, code)) return FOREIGN_CODES[code];
  // graphql-js's uncoded errors: bad variables, and an operation it cannot pick.
  return /^Variable "\$/.test(message) ? 'BAD_USER_INPUT' : 'BAD_REQUEST';
}

/** The error a resolver threw, below GraphQL's wrapping. */
export function originalErrorOf(error: unknown): unknown {
  let current = error;
  while (current instanceof GraphQLError && current.originalError) current = current.originalError;
  return current instanceof GraphQLError ? undefined : current;
}
