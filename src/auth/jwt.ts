import {
  createRemoteJWKSet,
  customFetch,
  errors,
  jwtVerify,
  type FetchImplementation,
  type JWTVerifyGetKey,
} from 'jose';
import { AuthUnavailableError, ConfigurationError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { isHttpUrl } from '../core/urls.js';
import { isObject } from '../core/values.js';
import { bearerToken, unauthenticated, type Authenticate } from './authenticate.js';

export interface JwtOptions {
  /** Where the signing keys are published (a JWKS, fetched and cached by jose). One of this or `secret`. */
  jwksUrl?: string;
  /** A shared secret for HMAC-signed tokens (HS256/384/512), at least 32 characters. */
  secret?: string;
  /** The `iss` every token must have. */
  issuer?: string;
  /** The `aud` every token must include. */
  audience?: string;
  /** Clock skew allowed for `exp` and `nbf`, in seconds. @default 30 */
  clockToleranceSeconds?: number;
}

/** JOSE failures that mean "this token is not acceptable", as opposed to "the keys cannot be fetched now". */
const REFUSALS: Record<string, string> = {
  ERR_JWT_EXPIRED: 'the token has expired',
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'a claim of the token is not accepted', // which one: claimRefusal
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: "the token's signature does not verify",
  ERR_JWS_INVALID: 'not a signed token',
  ERR_JWT_INVALID: 'not a valid token',
  ERR_JOSE_ALG_NOT_ALLOWED: "the token's algorithm is not accepted",
  // (jose's code for an algorithm it does not know, and for a `crit` header parameter it does not recognise)
  ERR_JOSE_NOT_SUPPORTED: "the token's algorithm or a critical header parameter of it is not supported",
  ERR_JWKS_NO_MATCHING_KEY: 'no published key matches the token',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'several published keys match the token',
};

/**
 * Which claim of a token was refused, and how (missing, not a number, or not the accepted value), from
 * jose's `claim` and `reason`: never the value expected (the issuer or audience configured), nor the
 * token's own.
 */
function claimRefusal(error: errors.JWTClaimValidationFailed): string {
  const { claim, reason } = error;
  if (typeof claim !== 'string' || !/^[A-Za-z_]{1,32}$/.test(claim)) return 'a claim of the token is not accepted';
  if (reason === 'missing') return `the token has no "${claim}" claim`;
  if (reason === 'invalid') return `the token's "${claim}" claim is not a number`;
  switch (claim) {
    case 'nbf':
      return 'the token is not valid yet ("nbf" is in the future)';
    case 'iat':
      return 'the token\'s "iat" claim is in the future';
    case 'iss':
      return 'the token\'s "iss" claim is not the accepted issuer';
    case 'aud':
      return 'the token\'s "aud" claim names no accepted audience';
    default:
      return `the token's "${claim}" claim is not accepted`;
  }
}

/** The largest key set read: a real one is a few keys, a few kilobytes. */
const MAX_KEY_SET_BYTES = 1024 * 1024;
const MAX_KEY_SET_KEYS = 100;
/** After a failed fetch of the key set, how long tokens that need it are answered AUTH_UNAVAILABLE without another. */
const KEY_SET_RETRY_MS = 5_000;

/**
 * jose's fetch of the key set, bounded. jose reads an answer of any size, and after a failed fetch starts no cooldown
 * (it counts from its last success), so found from outside: a key set of 200,000 keys (130 MB) held 468 MB and made
 * every token check scan it (about 50 ms each); and while the key server was down, every token naming an unknown key
 * made the gateway fetch it again (20 requests, 20 fetches), refusals that are not counted as failed logins. Here an
 * answer is at most 1 MiB and 100 keys, and for 5 s after a failure the set is not asked for again.
 */
function guardedKeySetFetch(): FetchImplementation {
  let failedAt = -Infinity;
  return async (url, init) => {
    if (Date.now() - failedAt < KEY_SET_RETRY_MS) throw new Error('the key set could not be fetched moments ago');
    try {
      const response = await fetch(url, init);
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`the key set's server answered HTTP ${response.status}`);
      }
      const text = await boundedText(response, MAX_KEY_SET_BYTES);
      const keys = (JSON.parse(text) as { keys?: unknown } | null)?.keys;
      // (A list jose would refuse, of keys that are not objects, is a failed fetch here too: found in review.)
      if (!Array.isArray(keys) || keys.length > MAX_KEY_SET_KEYS || !keys.every(isObject)) {
        throw new Error(`the key set is not a list of at most ${MAX_KEY_SET_KEYS} keys`);
      }
      return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
    } catch (error) {
      failedAt = Date.now();
      throw error;
    }
  };
}

/** A response's body as text, refused past `limit` bytes (the rest is not read). */
async function boundedText(response: Response, limit: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new Error(`the key set is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * JWTs sent as `Authorization: Bearer <token>`, verified with jose against a JWKS URL (keys cached;
 * fetched again when a token names an unknown key, at most every 30 s, and
 * not within 5 s of a failed fetch: guardedKeySetFetch) or a shared secret, with the
 * issuer and audience checked when set. The principal is the token's `sub` ("jwt:<sub>"), with its
 * verified claims, and with an `exp` its `expiresAt` (that time plus the tolerance). A JWKS that
 * cannot be fetched is AUTH_UNAVAILABLE (503), not a refusal.
 */
export function jwtAuthenticator(options: JwtOptions): Authenticate {
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError('JWT authentication needs options: {jwksUrl | secret, issuer?, audience?}.');
  const { jwksUrl, secret, issuer, audience } = options;
  if ((jwksUrl === undefined) === (secret === undefined)) {
    throw new ConfigurationError(
      'JWT authentication needs exactly one of a JWKS URL (JWT_JWKS_URL) and a shared secret (JWT_SECRET).',
    );
  }
  if (jwksUrl !== undefined && !isHttpUrl(jwksUrl))
    throw new ConfigurationError(`The JWKS URL must be an http(s) URL (got ${JSON.stringify(jwksUrl)}).`);
  if (secret !== undefined && (typeof secret !== 'string' || secret.length < 32)) {
    throw new ConfigurationError('The JWT secret (JWT_SECRET) must be at least 32 characters.');
  }
  for (const [name, value] of [
    ['issuer', issuer],
    ['audience', audience],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || value === ''))
      throw new ConfigurationError(`The JWT ${name} must be a non-empty string.`);
  }
  const tolerance = options.clockToleranceSeconds ?? 30;
  if (typeof tolerance !== 'number' || !Number.isInteger(tolerance) || tolerance < 0 || tolerance > 3600) {
    throw new ConfigurationError(
      `The JWT clock tolerance must be a whole number of seconds from 0 to 3600 (got ${JSON.stringify(tolerance)}).`,
    );
  }
  const key: JWTVerifyGetKey | Uint8Array = jwksUrl
    ? createRemoteJWKSet(new URL(jwksUrl), {
        timeoutDuration: 5_000,
        cooldownDuration: 30_000,
        cacheMaxAge: 10 * 60_000,
        [customFetch]: guardedKeySetFetch(),
      })
    : new TextEncoder().encode(secret);
  const algorithms = secret !== undefined ? ['HS256', 'HS384', 'HS512'] : undefined;

  return async ({ authorization }) => {
    const token = bearerToken(authorization);
    if (!token) throw unauthenticated(authorization, authorization ? 'expected "Bearer <token>"' : undefined);
    let payload;
    try {
      const verifyOptions = { issuer, audience, clockTolerance: tolerance, algorithms };
      ({ payload } =
        typeof key === 'function'
          ? await jwtVerify(token, key, verifyOptions)
          : await jwtVerify(token, key, verifyOptions));
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (error instanceof errors.JWTClaimValidationFailed) throw unauthenticated(authorization, claimRefusal(error));
      if (code && Object.hasOwn(REFUSALS, code)) throw unauthenticated(authorization, REFUSALS[code]);
      // The key set's fetch failing (timeout, a non-200 answer, a redirect, not JSON: jose's generic error)
      // is the gateway's problem, not the token's: AUTH_UNAVAILABLE below, so clients retry.
      if (
        error instanceof errors.JOSEError &&
        !['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC'].includes(code ?? '')
      ) {
        throw unauthenticated(authorization, 'not a valid token');
      }
      throw new AuthUnavailableError(
        'The token could not be checked now: the signing keys cannot be fetched. Try again shortly.',
        { cause: error },
      );
    }
    if (typeof payload.sub !== 'string' || payload.sub === '')
      throw unauthenticated(authorization, 'the token has no "sub"');
    const principal: Principal = {
      id: `jwt:${payload.sub}`,
      method: 'jwt',
      claims: payload as Record<string, unknown>,
    };
    // Accepted until then by jose, given the tolerance: a WebSocket connection it opened ends then.
    if (typeof payload.exp === 'number') principal.expiresAt = (payload.exp + tolerance) * 1000;
    return principal;
  };
}
