import { GraphQLError, Kind, type GraphQLFormattedError, type OperationDefinitionNode } from 'graphql';
import type { Logger } from 'pino';
import { GatewayError } from '../core/errors.js';
import { drainRefusalStatus, isDrainRefusal } from '../engine/drain.js';
import { formatGraphQLError, originalErrorOf } from './errors.js';

// What an executed operation's errors make of its HTTP answer, in one place for both ways an answer is made: Apollo's
// pipeline calls these from the gateway's plugins and its `formatError` (apollo.ts, plugins.ts), and the fast executor
// calls them for the answers it makes without that pipeline (fast/direct-answer.ts, a later payload with errors), so
// that both make the same bytes, status and headers (test/known-documents.test.ts, test/incremental.test.ts).

/** What an answer's errors set of its HTTP head: a status, and headers (lower-case names). */
export interface ErrorHead {
  status: number | undefined;
  readonly headers: Map<string, string>;
}

/** Shapes one error for clients (Apollo's `formatError` option). */
export type ErrorFormatter = (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;

/** The gateway's formatter (formatGraphQLError); `suggestions`: "Did you mean …" kept (introspection on). */
export function gatewayErrorFormatter(suggestions: boolean): ErrorFormatter {
  return (formatted, error) => formatGraphQLError(formatted, error, suggestions);
}

/**
 * Errors as clients get them, as Apollo Server 5 formats them with the gateway's options (its
 * `normalizeAndFormatErrors`, no stack traces): each made a GraphQLError, given the code INTERNAL_SERVER_ERROR when it
 * has none, its `extensions.http` taken out into `head`, then shaped by `format`; a formatter that throws gives
 * Apollo's masked error instead.
 */
export function formatErrors(
  errors: readonly unknown[],
  format: ErrorFormatter,
  head: ErrorHead,
): GraphQLFormattedError[] {
  return errors.map((error) => {
    try {
      return format(enriched(error, head), error);
    } catch {
      return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
  });
}

function enriched(maybeError: unknown, head: ErrorHead): GraphQLFormattedError {
  const error = asGraphQLError(maybeError);
  const extensions: Record<string, unknown> = {
    ...error.extensions,
    code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR',
  };
  const http = extensions.http;
  if (isHead(http)) {
    if (http.status) head.status = http.status;
    if (http.headers) for (const [name, value] of http.headers) head.headers.set(name.toLowerCase(), value);
    delete extensions.http;
  }
  return { ...error.toJSON(), extensions };
}

/**
 * An error of variables that did not coerce, coded BAD_USER_INPUT as Apollo codes it (its UserInputError, for an
 * error graphql-js made without a code); any other error as it is.
 */
export function asUserInputError(error: GraphQLError): GraphQLError {
  if (error.extensions?.code != null || !isVariableError(error)) return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    originalError: error.originalError ?? error,
    extensions: { ...error.extensions, code: 'BAD_USER_INPUT' },
  });
}

/** graphql-js's words for a variable that did not coerce (Apollo's isBadUserInputGraphQLError). */
function isVariableError(error: GraphQLError): boolean {
  const node = error.nodes?.length === 1 ? error.nodes[0] : undefined;
  if (node?.kind !== Kind.VARIABLE_DEFINITION) return false;
  const variable = `Variable "$${node.variable.name.value}"`;
  return [' has invalid value', ' got invalid value ', ' of required type ', ' of non-null type '].some((words) =>
    error.message.startsWith(variable + words),
  );
}

/** What Apollo makes of anything thrown (its ensureGraphQLError). */
export function asGraphQLError(thrown: unknown): GraphQLError {
  if (thrown instanceof GraphQLError) return thrown;
  if (thrown instanceof Error) return new GraphQLError(thrown.message, { originalError: thrown });
  return new GraphQLError(`Unexpected error value: ${String(thrown)}`);
}

function isHead(value: unknown): value is { status?: number; headers?: Map<string, string> } {
  return (
    !!value &&
    typeof value === 'object' &&
    (!('status' in value) || typeof value.status === 'number') &&
    (!('headers' in value) || value.headers instanceof Map)
  );
}

/** Puts the request id into each error the client gets (the first result's), so a report can be found in the logs. */
export function tagRequestId(errors: readonly GraphQLFormattedError[] | undefined, requestId: string): void {
  for (const error of errors ?? []) {
    (error as { extensions?: Record<string, unknown> }).extensions = { ...error.extensions, requestId };
  }
}

/**
 * What a refusal that says when to try again sets of the head (the first such error decides): a `retry-after`
 * header (RATE_LIMITED, SHUTTING_DOWN), and for a draining refusal with no data HTTP 503, or the status a proxy asked
 * for in `asked` (engine/drain.ts) when nothing of the operation ran. Other refusals keep the reference's HTTP 200.
 * `raw`: the errors as thrown (formatted lose their origin).
 */
export function applyRefusal(
  result: { readonly errors?: readonly GraphQLFormattedError[]; readonly data?: unknown },
  raw: readonly GraphQLError[] | undefined,
  operation: OperationDefinitionNode | undefined,
  asked: string | undefined,
  head: ErrorHead,
): void {
  for (const error of result.errors ?? []) {
    const code = error.extensions?.code;
    if (code !== 'RATE_LIMITED' && code !== 'SHUTTING_DOWN') continue;
    const retryAfter = (error.extensions?.details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
    if (typeof retryAfter === 'number') head.headers.set('retry-after', String(retryAfter));
    if (code === 'SHUTTING_DOWN' && result.data == null) {
      head.status = nothingRan(operation, raw) ? drainRefusalStatus(asked) : 503;
    }
    return;
  }
}

/**
 * Whether the operation did nothing but be refused by the draining launcher: one root field (with two, the
 * other may have done its work before the refusal nulled the whole result) and that field's one error the
 * launcher's refusal, thrown before anything of the run was done.
 */
function nothingRan(operation: OperationDefinitionNode | undefined, errors: readonly GraphQLError[] | undefined) {
  const roots = operation?.selectionSet.selections ?? [];
  return (
    roots.length === 1 &&
    roots[0].kind === Kind.FIELD &&
    errors?.length === 1 &&
    isDrainRefusal(originalErrorOf(errors[0]))
  );
}

/**
 * Logs what a client was told: gateway errors briefly, unexpected ones in full (they were masked); those of the first
 * result and those of later @defer/@stream payloads (an item that failed).
 */
export function logErrors(logger: Logger, errors: readonly GraphQLError[]): void {
  for (const error of errors) {
    const original = originalErrorOf(error);
    if (original instanceof GatewayError) {
      logger.info({ code: original.code }, `request error: ${original.message}`);
    } else if (original) {
      logger.error({ err: original }, 'unexpected error (masked for the client)');
    }
  }
}
