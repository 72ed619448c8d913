import type { GraphQLSchema } from 'graphql';
import { CloseCode, type ServerOptions } from 'graphql-ws';
import type { Logger } from 'pino';
import { BadUserInputError, UnauthenticatedError } from '../../core/errors.js';
import { MAX_NESTING, nestsDeeperThan } from '../../core/depth.js';
import type { DocumentCache } from '../../graphql/documents.js';
import { connectionAuthorization, type AccessControl } from '../access.js';
import { expireConnectionAt, type ConnectionExtra } from './connection.js';
import { closeReason, codedError } from './messages.js';

// Who may connect, and which operations a connection may ask: graphql-ws's `onConnect` and
// `onSubscribe` hooks, through the access control every transport shares (access.ts).

type Hooks = ServerOptions<Record<string, unknown>, ConnectionExtra>;

/**
 * Authentication: a connection without valid credentials is closed with 4403 before any operation
 * runs; one from an address limited for failed logins, with 4429 (graphql-ws's "too many", which its
 * client does not retry) and when to try again; one whose credentials cannot be checked now, with
 * 1013 (try again later). Each close says why, as the HTTP refusal's message does (within the 123
 * bytes a close reason may hold). Undefined when authentication is off.
 */
export function connectionAuthentication(access: AccessControl, logger: Logger): Hooks['onConnect'] {
  if (!access.authenticating) return undefined;
  return async (ctx) => {
    const facts = ctx.extra.facts ?? { clientAddress: undefined, authorization: undefined };
    const admission = await access.admitConnection(ctx.connectionParams, facts);
    if ('error' in admission) {
      const { error } = admission;
      if (error.code === 'UNAUTHENTICATED') {
        // HTTP's words, except where they are about a header: over WebSocket the credential goes in
        // connection_init's payload, and HTTP's sentence saying so does not fit in a close reason.
        const missing = connectionAuthorization(ctx.connectionParams, facts) === undefined;
        const why = missing
          ? 'authentication is required: send "authorization": "Bearer <credential>" in connection_init\'s payload'
          : error.message;
        ctx.extra.socket?.close(CloseCode.Forbidden, closeReason(`Forbidden: ${why}`));
        return false;
      }
      if (error.code === 'RATE_LIMITED') {
        const retryAfter = error.details?.retryAfterSeconds ?? 60;
        const reason = `Too many failed logins: try again in ${retryAfter} s`;
        ctx.extra.socket?.close(CloseCode.TooManyInitialisationRequests, reason);
        return false;
      }
      logger.warn({ code: error.code, transport: 'ws' }, 'a WebSocket connection could not be authenticated now');
      ctx.extra.socket?.close(1013, closeReason(`Try again later: ${error.message}`));
      return false;
    }
    ctx.extra.admitted = admission;
    const expiresAt = admission.principal?.expiresAt;
    if (expiresAt !== undefined && ctx.extra.socket) expireConnectionAt(ctx.extra.socket, expiresAt);
    return true;
  };
}

/**
 * An operation admitted: refused once the connection's credentials have expired, counted towards the
 * client's requests per minute, and its document parsed and validated here, so that a bad document
 * gets an `error` message with a code instead of graphql-ws closing the whole socket (4500) on a
 * syntax error. Documents are kept once parsed and validated (DocumentCache), not held per operation.
 */
export function operationAdmission(
  access: AccessControl,
  schema: GraphQLSchema,
  documents: DocumentCache,
): NonNullable<Hooks['onSubscribe']> {
  const counting = access.limiter !== undefined && access.limiter.limits.requestsPerMinute > 0;
  return (ctx, _id, handed) => {
    // Kept for a draining gateway, which closes the connections with no operation (WsConnection.idle).
    ctx.extra.operations ??= ctx.subscriptions;
    const payload = ctx.extra.slot ?? handed;
    ctx.extra.slot = undefined;
    // As an HTTP request with the same credentials would be: refused once they have expired.
    const expiresAt = ctx.extra.admitted?.principal?.expiresAt;
    if (expiresAt !== undefined && Date.now() >= expiresAt) return [codedError(credentialsExpired())];
    const prepare = () => {
      if (nestsDeeperThan(payload.variables) || nestsDeeperThan(payload.extensions)) {
        return [codedError(new BadUserInputError(`The variables nest deeper than ${MAX_NESTING} levels.`))];
      }
      const prepared = documents.prepare(payload.query);
      if (prepared.errors) return [...prepared.errors];
      return {
        schema,
        document: prepared.document,
        operationName: payload.operationName,
        variableValues: payload.variables,
      };
    };
    if (!counting) return prepare();
    // Every operation counts towards the client's requests per minute.
    const client = ctx.extra.admitted?.client ?? `ip:${ctx.extra.facts?.clientAddress ?? 'unknown'}`;
    return access.count(client).then((refused) => (refused ? [codedError(refused)] : prepare()));
  };
}

/** An operation asked on a connection whose credentials have expired. */
function credentialsExpired(): UnauthenticatedError {
  return new UnauthenticatedError("The connection's credentials have expired: connect again with fresh ones.");
}
