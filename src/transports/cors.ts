import { ConfigurationError } from '../core/errors.js';

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

/** Checks a configured origin (`scheme://host[:port]`) and returns it in canonical form. */
export function normalizeOrigin(origin: string): string {
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
