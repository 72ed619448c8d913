import { ConfigurationError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { retryPolicy, type RetryPolicy } from '../upstream/retry.js';

/** What an `onBeforeRequest` hook is told about the call it may add headers to. */
export interface BeforeRequestContext {
  /** The request's `properties` argument (`{}` for discovery, which is shared by all requests). */
  properties: Record<string, unknown>;
  /** Which call: "info", "agents/execute", "actions/execute", "agents/state", "run", "state", … */
  call: string;
  agentName?: string;
  threadId?: string;
  /** Who asked for the run, when authentication is on (to send an upstream a per-user credential, say). */
  principal?: Principal;
}

/** Headers and retries of one upstream (a remote endpoint, an AG-UI agent, a LangGraph deployment). */
export interface UpstreamHttpOptions {
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /**
   * Called before each call; the headers it returns are added and win over `headers`. It may be
   * async (to fetch a token, say). A hook that throws fails the call.
   */
  onBeforeRequest?: (
    context: BeforeRequestContext,
  ) => { headers?: Record<string, string> } | void | Promise<{ headers?: Record<string, string> } | void>;
  /**
   * Forward a client's `properties.authorization` as `Authorization: Bearer <it>`, and leave it in
   * the `properties` sent along. Off by default: a client's credentials reach only upstreams that
   * opt in. @default false
   */
  forwardAuthorization?: boolean;
  /** Retries and timeouts of this upstream's calls (see RetryPolicy for the defaults). */
  retry?: Partial<RetryPolicy>;
}

/** Checked options, ready for calls. */
export class UpstreamHttpSettings {
  readonly policy: RetryPolicy;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly options: UpstreamHttpOptions,
    where: string,
  ) {
    if (options.headers !== undefined) {
      if (
        options.headers === null ||
        typeof options.headers !== 'object' ||
        Object.values(options.headers).some((value) => typeof value !== 'string')
      ) {
        throw new ConfigurationError(`${where}.headers must be an object of header names to string values.`);
      }
    }
    if (options.onBeforeRequest !== undefined && typeof options.onBeforeRequest !== 'function') {
      throw new ConfigurationError(`${where}.onBeforeRequest must be a function.`);
    }
    if (options.forwardAuthorization !== undefined && typeof options.forwardAuthorization !== 'boolean') {
      throw new ConfigurationError(`${where}.forwardAuthorization must be true or false.`);
    }
    this.headers = Object.fromEntries(
      Object.entries(options.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    );
    this.policy = retryPolicy(options.retry, `${where}.retry`);
  }

  /**
   * The headers of one call: the client's authorization when forwarding is on, then the configured
   * headers, then the hook's. What the server sets always wins over what a client sent.
   */
  async headersFor(context: BeforeRequestContext): Promise<Record<string, string>> {
    const headers: Record<string, string> = {};
    const authorization = context.properties.authorization;
    if (
      this.options.forwardAuthorization &&
      typeof authorization === 'string' &&
      /^[\x21-\x7e][\x20-\x7e]*$/.test(authorization)
    ) {
      headers.authorization = /^bearer\s/i.test(authorization) ? authorization : `Bearer ${authorization}`;
    }
    Object.assign(headers, this.headers);
    const extra = await this.options.onBeforeRequest?.(context);
    for (const [name, value] of Object.entries(extra?.headers ?? {})) {
      if (typeof value === 'string') headers[name.toLowerCase()] = value;
    }
    return headers;
  }

  /** The `properties` sent in a body: a client's authorization only to upstreams that forward it. */
  bodyProperties(properties: Record<string, unknown>): Record<string, unknown> {
    if (this.options.forwardAuthorization || !('authorization' in properties)) return properties;
    const { authorization: _withheld, ...rest } = properties;
    return rest;
  }
}
