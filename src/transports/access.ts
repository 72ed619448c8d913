import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { authenticateRequest, type Authenticate, type AuthenticationRequest } from '../auth/authenticate.js';
import { GatewayError, RateLimitedError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { RateLimiter } from '../limits/rate-limiter.js';

/**
 * Who a request or connection is, once admitted: its principal (authentication on) and the key its limits are counted
 * under.
 */
export interface Admitted {
  principal: Principal | undefined;
  /** The principal's id, or "ip:<address>" when no one is authenticated. */
  client: string;
}

export type AccessDecision = Admitted | { error: GatewayError };

/**
 * The door every transport goes through: authentication (the `authenticate` hook) and the requests
 * per minute, the same for an HTTP request and a WebSocket connection or operation. With neither
 * configured it admits everyone at once, without a promise.
 */
export class AccessControl {
  constructor(
    private readonly authenticate: Authenticate | undefined,
    readonly limiter: RateLimiter | undefined,
    /** How many proxies in front of the gateway to look through in X-Forwarded-For. */
    private readonly trustProxy: number,
    private readonly logger: Logger,
  ) {}

  /** Whether anything is checked: without authentication or limits, `admit*` need not be called. */
  get active(): boolean {
    return this.authenticate !== undefined || (this.limiter !== undefined && this.limiter.limits.requestsPerMinute > 0);
  }

  get authenticating(): boolean {
    return this.authenticate !== undefined;
  }

  /** An HTTP request (GraphQL or AG-UI): authenticated from its Authorization header, then counted. */
  async admitHttp(req: IncomingMessage, logger: Logger): Promise<AccessDecision> {
    const clientAddress = this.clientAddress(req);
    return this.admit(
      { transport: 'http', authorization: headerValue(req.headers.authorization), headers: req.headers, clientAddress },
      logger,
    );
  }

  /**
   * A WebSocket connection at `connection_init`: authenticated from its payload's `authorization`
   * (or the upgrade request's header). Not counted as a request (its operations are), but a failed
   * login counts against its address as over HTTP, and an address limited for failed logins is refused.
   */
  async admitConnection(
    connectionParams: Readonly<Record<string, unknown>> | undefined,
    upgrade: ConnectionFacts,
  ): Promise<AccessDecision> {
    const authorization = connectionAuthorization(connectionParams, upgrade);
    return this.admit(
      { transport: 'ws', authorization, headers: {}, connectionParams, clientAddress: upgrade.clientAddress },
      this.logger,
      false,
    );
  }

  /** One more request of an admitted client (a WebSocket operation): undefined, or RATE_LIMITED. */
  async count(client: string): Promise<GatewayError | undefined> {
    const wait = (await this.limiter?.hit(client)) ?? 0;
    return wait > 0 ? rateLimited(wait, 'requests per minute') : undefined;
  }

  /** What a WebSocket connection needs of its upgrade request, kept instead of the request itself. */
  connectionFacts(req: IncomingMessage): ConnectionFacts {
    return { clientAddress: this.clientAddress(req), authorization: headerValue(req.headers.authorization) };
  }

  /**
   * `counted`: whether the request counts towards its client's requests per minute (an HTTP request
   * does; a WebSocket connection does not, its operations do). Failed logins count either way.
   */
  private async admit(request: AuthenticationRequest, logger: Logger, counted = true): Promise<AccessDecision> {
    let principal: Principal | undefined;
    if (this.authenticate) {
      const address = `ip:${request.clientAddress ?? 'unknown'}`;
      const result = await authenticateRequest(this.authenticate, request, logger);
      if ('error' in result) {
        // Failed logins count against the address, so that keys cannot be guessed at full speed.
        if (result.error.code === 'UNAUTHENTICATED') {
          const refused = await this.failedLogin(address, this.limiter?.hit(address));
          if (refused) return { error: refused };
        }
        return result;
      }
      // While the address is limited for failed logins, no credential from it is accepted, a right one
      // included: otherwise a 429 would only mean "wrong", and guessing would cost nothing. Looked at
      // after the hook, so that the failures of guesses sent at once have been counted.
      const refused = await this.failedLogin(address, this.limiter?.wait(address));
      if (refused) return { error: refused };
      principal = result.principal;
    }
    const client = principal ? principal.id : `ip:${request.clientAddress ?? 'unknown'}`;
    if (counted) {
      const refused = await this.count(client);
      if (refused) return { error: refused };
    }
    return { principal, client };
  }

  /** RATE_LIMITED for an address limited for its failed logins (`waiting`: the limiter's answer), or undefined. */
  private async failedLogin(address: string, waiting: Promise<number> | undefined): Promise<GatewayError | undefined> {
    const wait = (await waiting) ?? 0;
    if (wait <= 0) return undefined;
    const retryAfterSeconds = Math.max(1, Math.ceil(wait / 1000));
    this.logger.debug(
      { client: address, retryAfterSeconds },
      'credentials refused: too many failed logins from this address',
    );
    return new RateLimitedError(
      `Too many failed logins from this address: no credentials are accepted from it for ${retryAfterSeconds} s.`,
      { details: { retryAfterSeconds } },
    );
  }

  /**
   * The client's address: the socket's peer, or, behind `trustProxy` proxies, the address the
   * outermost trusted proxy saw (X-Forwarded-For read from the right, so a client cannot choose it).
   */
  clientAddress(req: IncomingMessage): string | undefined {
    const peer = req.socket.remoteAddress;
    if (this.trustProxy === 0) return peer;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((hop) => hop.trim())
      .filter(Boolean);
    if (hops.length === 0) return peer;
    return hops[Math.max(0, hops.length - this.trustProxy)];
  }
}

export interface ConnectionFacts {
  clientAddress: string | undefined;
  authorization: string | undefined;
}

/**
 * A WebSocket connection's credential: connection_init's `payload.authorization` (browsers cannot set
 * headers on a WebSocket), else the upgrade request's Authorization header.
 */
export function connectionAuthorization(
  connectionParams: Readonly<Record<string, unknown>> | undefined,
  upgrade: ConnectionFacts,
): string | undefined {
  const fromPayload = connectionParams?.authorization ?? connectionParams?.Authorization;
  return typeof fromPayload === 'string' ? fromPayload : upgrade.authorization;
}

/** RATE_LIMITED with when to try again, in whole seconds (at least one). */
function rateLimited(waitMs: number, what: string): RateLimitedError {
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new RateLimitedError(`Too many ${what} from this client: try again in ${retryAfterSeconds} s.`, {
    details: { retryAfterSeconds },
  });
}

/**
 * A header's value (the first, when repeated), without the spaces and tabs around it (HTTP's OWS; not
 * trim(), which would also take Unicode whitespace off a credential); undefined when absent or empty.
 */
export function headerValue(value: string | string[] | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first?.replace(/^[ \t]+|[ \t]+$/g, '') || undefined;
}
