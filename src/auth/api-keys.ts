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
  if (!Array.isArray(keys) || keys.length === 0) throw new ConfigurationError('API key authentication needs at least one key.');
  const digests = keys.map((key, index) => {
    if (typeof key !== 'string' || key.length < 16 || /\s|,/.test(key)) {
      throw new ConfigurationError(`API key number ${index + 1} must be at least 16 characters, without spaces or commas.`);
    }
    return digest(key);
  });
  const principals: Principal[] = digests.map((value) => ({ id: `api-key:${value.toString('hex').slice(0, 12)}`, method: 'api-key' }));
  return ({ authorization }) => {
    const token = bearerToken(authorization);
    if (!token) throw unauthenticated(authorization, authorization ? 'expected "Bearer <key>"' : undefined);
    const offered = digest(token);
    let found = -1;
    for (let i = 0; i < digests.length; i++) if (timingSafeEqual(offered, digests[i]) && found === -1) found = i;
    if (found === -1) throw unauthenticated(authorization, 'unknown API key');
    return principals[found];
  };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
