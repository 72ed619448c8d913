import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import { AuthUnavailableError, ConfigurationError, GatewayError, UnauthenticatedError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';

/** What an `authenticate` hook is given: the same for HTTP requests and WebSocket connections. */
export interface AuthenticationRequest {
  transport: 'http' | 'ws';
  /**
   * The credentials: the `Authorization` header over HTTP; over WebSocket the `authorization` field of
   * `connection_init`'s payload (browsers cannot set headers on a WebSocket), else the upgrade
   * request's header.
   */
  authorization: string | undefined;
  /** The HTTP request's headers (over WebSocket: none; read `connectionParams`). */
  headers: IncomingHttpHeaders;
  /** WebSocket only: `connection_init`'s payload. */
  connectionParams?: Readonly<Record<string, unknown>>;
  /** The client's address (the proxy's, unless trustProxy says how many hops to look through). */
  clientAddress: string | undefined;
}

/**
 * Says who is asking: a principal, or null/undefined for "no valid credentials" (401 UNAUTHENTICATED;
 * WebSocket close 4403). It may throw a GatewayError to answer with that code instead (such as
 * AUTH_UNAVAILABLE when a key server cannot be reached); anything else it throws is logged and
 * answered as AUTH_UNAVAILABLE.
 */
export type Authenticate = (
  request: AuthenticationRequest,
) => Principal | null | undefined | Promise<Principal | null | undefined>;

/** The outcome of authenticating one request or connection. */
export type Authentication = { principal: Principal } | { error: GatewayError };

/** Runs the hook and turns whatever it does into a principal or a coded error; never throws. */
export async function authenticateRequest(
  hook: Authenticate,
  request: AuthenticationRequest,
  logger: Logger,
): Promise<Authentication> {
  try {
    const principal = await hook(request);
    if (principal === null || principal === undefined) return { error: unauthenticated(request.authorization) };
    if (typeof principal !== 'object' || typeof principal.id !== 'string' || principal.id === '') {
      logger.error(
        'the authenticate hook returned something that is not a principal ({id, method}); the request is refused',
      );
      return { error: hookFailed() };
    }
    const { expiresAt } = principal;
    if (expiresAt !== undefined) {
      // Before 2001 in milliseconds, as every time in seconds is: a hook's mistake, not the client's.
      if (typeof expiresAt !== 'number' || Number.isNaN(expiresAt) || expiresAt < 1e12) {
        logger.error(
          { expiresAt: typeof expiresAt === 'number' ? expiresAt : typeof expiresAt },
          'the authenticate hook returned a principal whose expiresAt is not a time in milliseconds since the epoch ' +
            '(seconds?); the request is refused',
        );
        return { error: hookFailed() };
      }
      if (expiresAt <= Date.now()) {
        return { error: new UnauthenticatedError('The credentials were not accepted (they have expired).') };
      }
    }
    return { principal: { ...principal, method: typeof principal.method === 'string' ? principal.method : 'custom' } };
  } catch (error) {
    if (error instanceof GatewayError) {
      // Why credentials could not be checked (a key server down): its cause's name and message, never the request.
      const cause = error.cause as Error | undefined;
      if (error.code !== 'UNAUTHENTICATED')
        logger.warn(
          { code: error.code, cause: cause && `${cause.name}: ${cause.message}` },
          'credentials could not be checked',
        );
      return { error };
    }
    // Only the error's name: its message could quote the credentials (a hook's own words), and the request is never
    // logged.
    logger.error({ error: (error as Error)?.name }, 'the authenticate hook threw (its message is not logged)');
    return { error: hookFailed() };
  }
}

/**
 * The answer when the hook failed (threw, or returned what is not a principal): the gateway's problem, not the
 * client's.
 */
function hookFailed(): AuthUnavailableError {
  return new AuthUnavailableError('The credentials could not be checked. Try again, or report it with the request id.');
}

/** The answer for missing or invalid credentials: which, without echoing them. */
export function unauthenticated(authorization: string | undefined, reason?: string): UnauthenticatedError {
  const message = authorization
    ? `The credentials were not accepted${reason ? ` (${reason})` : ''}.`
    : 'Authentication is required: send an API key or a token as "Authorization: Bearer <credential>" (over ' +
      'WebSocket, as "authorization" in connection_init\'s payload).';
  return new UnauthenticatedError(message);
}

/**
 * The credential in "Bearer <credential>" (any case), or undefined. Only ASCII spaces and tabs may
 * surround it, as HTTP's grammar allows (OWS, and `1*SP` after the scheme, loosened to tabs): any
 * other character, Unicode whitespace included (U+00A0, U+3000, U+FEFF, U+2028…), is part of the
 * credential, which then matches no key, or makes the header malformed.
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (typeof authorization !== 'string') return undefined;
  const match = /^[ \t]*bearer[ \t]+([^ \t]+)[ \t]*$/i.exec(authorization);
  return match?.[1];
}

/**
 * Tries each authenticator in turn: the first principal wins. A request refused by all is refused with
 * the last one's reason; a GatewayError other than UNAUTHENTICATED (such as AUTH_UNAVAILABLE) stops the
 * search and is answered.
 */
export function anyOf(...authenticators: Authenticate[]): Authenticate {
  if (authenticators.length === 0) throw new ConfigurationError('anyOf() needs at least one authenticator.');
  return async (request) => {
    let refusal: GatewayError | undefined;
    for (const authenticate of authenticators) {
      try {
        const principal = await authenticate(request);
        if (principal) return principal;
      } catch (error) {
        if (error instanceof GatewayError && error.code === 'UNAUTHENTICATED') refusal = error;
        else throw error;
      }
    }
    if (refusal) throw refusal;
    return null;
  };
}
