import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigurationError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { bearerToken, unauthenticated, type Authenticate } from './authenticate.js';

/**
 * Static API keys, sent as `Authorization: Bearer <key>`. Each key is its own principal, named by the
 * start of its SHA-256 digest ("api-key:1a2b3c4d5e6f"): stable across restarts and instances, and safe
 * to log. Keys are compared by digest in constant time, all of them every time.
 */
export function apiKeyAuthenticator(keys: readonly string[]): Authenticate {
  if (!Array.isArray(keys) || keys.length === 0)
    throw new ConfigurationError('API key authentication needs at least one key.');
  keys.forEach((key, index) => {
    if (typeof key !== 'string' || key.length < 16 || /\s|,/.test(key)) {
      throw new ConfigurationError(
        `API key number ${index + 1} must be at least 16 characters, without spaces or commas.`,
      );
    }
  });
  const match = keyMatcher(keys);
  const principals: Principal[] = keys.map((key) => ({
    id: `api-key:${digest(key).toString('hex').slice(0, 12)}`,
    method: 'api-key',
  }));
  return ({ authorization }) => {
    const token = bearerToken(authorization);
    if (!token) throw unauthenticated(authorization, authorization ? 'expected "Bearer <key>"' : undefined);
    const found = match(token);
    if (found === -1) throw unauthenticated(authorization, 'unknown API key');
    return principals[found];
  };
}

/**
 * Which of `keys` a credential is (its index, or -1): compared by SHA-256 digest in constant time,
 * against all of them every time. Also guards the metrics (METRICS_TOKEN).
 */
export function keyMatcher(keys: readonly string[]): (credential: string) => number {
  const digests = keys.map(digest);
  return (credential) => {
    const offered = digest(credential);
    let found = -1;
    for (let i = 0; i < digests.length; i++) if (timingSafeEqual(offered, digests[i]) && found === -1) found = i;
    return found;
  };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
