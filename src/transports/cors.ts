import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigurationError, ForbiddenOriginError } from '../core/errors.js';
import { sendGatewayError } from './responses.js';

/**
 * Which browser origins may call the gateway. Allowed origins are echoed back (never `*`), with
 * credentials allowed; any other origin gets no CORS headers at all.
 */
export class CorsPolicy {
  private readonly origins: Set<string>;

  constructor(
    origins: readonly string[],
    /** Allow http(s)://localhost, 127.0.0.0/8 and [::1] on any port (development). */
    private readonly allowLoopback: boolean,
  ) {
    this.origins = new Set(origins.map((origin) => normalizeOrigin(origin)));
  }

  isAllowed(origin: string): boolean {
    if (this.origins.has(origin.toLowerCase())) return true;
    return this.allowLoopback && isLoopbackOrigin(origin);
  }
}

/**
 * The CORS headers of an answer: an allowed origin echoed back, with credentials and the headers a page may read
 * (`x-request-id`, `retry-after`); `Vary: Origin` always. Whether the request's origin is allowed.
 */
export function applyCors(req: IncomingMessage, res: ServerResponse, cors: CorsPolicy): boolean {
  const origin = req.headers.origin;
  const allowed = typeof origin === 'string' && cors.isAllowed(origin);
  if (allowed) {
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-allow-credentials', 'true');
    res.setHeader('access-control-expose-headers', 'x-request-id, retry-after');
  }
  res.setHeader('vary', 'Origin');
  return allowed;
}

/** Answers a preflight (OPTIONS): 204 with the methods and the headers asked for, or FORBIDDEN_ORIGIN. */
export function answerPreflight(req: IncomingMessage, res: ServerResponse, originAllowed: boolean): void {
  if (!originAllowed) {
    const origin = req.headers.origin;
    const message =
      typeof origin === 'string'
        ? `The origin ${origin} is not allowed. Add it to CORS_ORIGINS.`
        : 'A CORS preflight needs an Origin header.';
    return sendGatewayError(res, new ForbiddenOriginError(message));
  }
  res.setHeader('access-control-allow-methods', 'GET, POST, PATCH, DELETE, OPTIONS');
  const requested = req.headers['access-control-request-headers'];
  if (requested) res.setHeader('access-control-allow-headers', requested);
  res.setHeader('access-control-max-age', '600');
  res.statusCode = 204;
  res.end();
}

/** Checks a configured origin (`scheme://host[:port]`) and returns it in canonical form. */
function normalizeOrigin(origin: string): string {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new ConfigurationError(
      `CORS origin ${JSON.stringify(origin)} is not a valid origin such as "https://app.example.com".`,
    );
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.origin !== origin.replace(/\/$/, '').toLowerCase()
  ) {
    throw new ConfigurationError(
      `CORS origin ${JSON.stringify(origin)} must be just a scheme, host and optional port, such as ` +
        `"https://app.example.com".`,
    );
  }
  return url.origin;
}

/** Whether a configured value is an origin (`scheme://host[:port]`, http or https). */
export function isOrigin(origin: string): boolean {
  try {
    normalizeOrigin(origin);
    return true;
  } catch {
    return false;
  }
}

function isLoopbackOrigin(origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const host = url.hostname;
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Whether a browser's Origin is the gateway's own (same host and port as the request's Host). */
export function isSameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}
