import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher, fetch as undiciFetch } from 'undici';
import { BadUserInputError, UpstreamError } from '../core/errors.js';
import { capitalize, upstreamNetworkError, upstreamStatusError } from './errors.js';
import { parseRetryAfter } from './retry.js';

/** The bodies of upstream calls: the JSON a call sends, and reading what comes back (answers and errors). */

/** A response body: iterate it for streams. */
export type UpstreamBody = AsyncIterable<Uint8Array> & Readable;

/** The first bytes of an error answer kept for its explanation. */
export const MAX_ERROR_BODY_BYTES = 8 * 1024;
/** How long an error answer's body is waited for; the status alone is enough to go on. */
export const ERROR_BODY_WAIT_MS = 2_000;
/** The largest JSON answer `json` reads. */
export const MAX_JSON_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The call's JSON body. What the gateway sends is built from client input, checked for depth where it
 * comes in; a value that still nests too deep for JSON.stringify is the client's, said so.
 */
export function encodeBody(call: { json?: unknown; who: string }): string | undefined {
  if (call.json === undefined) return undefined;
  try {
    return JSON.stringify(call.json);
  } catch (error) {
    if (error instanceof RangeError) {
      throw new BadUserInputError(`The request to ${call.who} could not be written: its input nests too deeply.`);
    }
    throw error;
  }
}

/**
 * A request body undici writes once and then lets go of. A Buffer or string body stays on undici's
 * request until the answer has ended: for a model's or an agent's stream, its whole life, and it is
 * the whole conversation (tens of kilobytes a stream). Given as an iterable, the bytes are held only
 * until written; with the request's content-length set, undici frames the request as for a Buffer
 * (headers and body in one corked write, no chunked encoding).
 */
export function writtenOnce(bytes: Buffer): Dispatcher.DispatchOptions['body'] {
  let held: Buffer | undefined = bytes;
  // undici's dispatch takes iterables (its docs; `writeIterable`), though its types name only the other kinds.
  return <Dispatcher.DispatchOptions['body']>(<unknown>{
    *[Symbol.iterator]() {
      const chunk = held;
      held = undefined;
      if (chunk !== undefined && chunk.length > 0) yield chunk;
    },
  });
}

/**
 * The body of a successful response, with network errors while reading it turned into
 * UPSTREAM_STREAM_INTERRUPTED and the caller's abort into its own reason.
 */
export function guardBody(body: UpstreamBody, call: { signal: AbortSignal; who: string }): UpstreamBody {
  const iterate = body[Symbol.asyncIterator].bind(body);
  Object.defineProperty(body, Symbol.asyncIterator, {
    value: async function* () {
      try {
        for await (const chunk of { [Symbol.asyncIterator]: iterate }) yield chunk as Uint8Array;
      } catch (error) {
        if (call.signal.aborted) throw call.signal.reason;
        throw upstreamNetworkError(call.who, error, 'stream');
      }
    },
  });
  return body;
}

/** A whole body as text, failing with UPSTREAM_BAD_RESPONSE past `limit` bytes. */
export async function readAll(body: AsyncIterable<Uint8Array>, limit: number, who: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `${capitalize(who)} answered with more than ${limit} bytes.`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The response with a body that calls `release` once it is over (read to its end, failed or
 * cancelled), so the caller's abort is linked to the call no longer than that. Costs one read per
 * chunk; `fetchFor` serves SDKs (LangGraph), whose streams are a line or an event per chunk.
 */
export function releasingWhenRead(response: Awaited<ReturnType<typeof undiciFetch>>, release: () => void) {
  const body = response.body;
  if (!body) {
    release();
    return response;
  }
  const reader = body.getReader();
  const released = new ReadableStream<Uint8Array>({
    pull: (controller) =>
      reader.read().then(
        ({ done, value }) => {
          if (done) {
            release();
            controller.close();
          } else controller.enqueue(value);
        },
        (error: unknown) => {
          release();
          controller.error(error);
        },
      ),
    cancel: (reason) => {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(released, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers as unknown as HeadersInit,
  });
}

/**
 * A short explanation from an error body (`{"error": "…"}`, `{"error": {"message"}}`, `{"detail"}`,
 * `{"message"}` or text), read for at most `waitMs`; the body is always destroyed after.
 */
export async function readErrorDetail(body: Readable, waitMs: number): Promise<string | undefined> {
  let text = '';
  const timer = setTimeout(() => destroyQuietly(body), waitMs);
  try {
    for await (const chunk of body) {
      text += String(chunk);
      if (text.length > MAX_ERROR_BODY_BYTES) break;
    }
  } catch {
    // Cut off (the wait is over, the caller went away): what arrived may still explain.
  } finally {
    clearTimeout(timer);
    destroyQuietly(body);
  }
  return errorDetail(text);
}

/** How much of an upstream's explanation is logged or sent. */
const MAX_DETAIL_CHARS = 1000;

/**
 * The explanation in an error body's text (already bounded as it was read). Cut to MAX_DETAIL_CHARS only once the
 * credentials are out of it (errorAnswerFailure), so that no part of one is left at the cut.
 */
export function errorDetail(text: string): string | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  let detail: unknown = trimmed;
  try {
    const parsed = JSON.parse(trimmed);
    detail = parsed?.error?.message ?? parsed?.error ?? parsed?.detail ?? parsed?.message ?? trimmed;
  } catch {
    // Not JSON: the text itself.
  }
  if (typeof detail !== 'string') detail = JSON.stringify(detail);
  return detail as string;
}

/** The answer had a non-2xx status: what the call fails with, logged with the explanation its body gave. */
export interface UpstreamErrorAnswer {
  who: string;
  status: number;
  /** Its Retry-After header. */
  retryAfter: string | undefined;
  /** The explanation its body gave (`errorDetail`). */
  detail: string | undefined;
  attempts: number;
  logger: Logger;
  /** What the call sent: the credentials in it are taken out of the explanation (credentialsSent). */
  sent?: SentRequest;
}

/** The parts of a call an upstream may echo its credentials from. */
export interface SentRequest {
  headers: Record<string, string>;
  url: string;
}

/**
 * Header and query parameter names whose values are credentials; `sig` alone or as a part (Azure's SAS names its
 * signature so), not inside a word such as "design".
 */
const CREDENTIAL_NAMES = /auth|key|token|secret|cookie|session|signature|password|(?:^|[-_])sig(?:$|[-_])/i;
/** Shorter values are not taken out (withoutSecrets): they could be ordinary words of the explanation. */
const MIN_SECRET_CHARS = 8;

/**
 * The credentials a call sent: the values of headers and query parameters whose names say so (without an
 * authorization scheme such as `Bearer`), and Basic credentials decoded.
 */
function credentialsSent({ headers, url }: SentRequest): string[] {
  const secrets: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (CREDENTIAL_NAMES.test(name) && typeof value === 'string') {
      secrets.push(value.replace(/^[A-Za-z][\w-]*\s+(?=\S)/, '').trim(), value.trim());
      secrets.push(...basicCredentials(value));
    }
  }
  // Each value both as written and decoded: an upstream may echo the URL as sent (`sig=AbC%2B…`) or as read.
  const query = URL.canParse(url) ? new URL(url).search.slice(1) : '';
  for (const pair of query ? query.split('&') : []) {
    const [name, raw = ''] = pair.split(/=(.*)/s);
    if (!CREDENTIAL_NAMES.test(decodedPart(name))) continue;
    secrets.push(raw, decodedPart(raw));
  }
  return secrets;
}

/**
 * Basic credentials as the server reads them (`user:password`, and the password alone), which a server may echo in
 * its error instead of the base64 it was sent.
 */
function basicCredentials(value: string): string[] {
  const encoded = /^\s*Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value)?.[1];
  if (encoded === undefined) return [];
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? [decoded] : [decoded, decoded.slice(colon + 1)];
}

/** A query string's part as read (`+` a space, %-escapes decoded), or as written when it does not decode. */
function decodedPart(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    return part;
  }
}

/**
 * `text` without `secrets`: an upstream that echoes the key it was given ("bad key sk-…") would otherwise put it in
 * the gateway's log, and for a 4xx in the client's error (found from outside, with a transcription service).
 * Longer secrets first, so that a scheme's whole value goes before its bare token.
 */
export function withoutSecrets(text: string | undefined, secrets: readonly string[]): string | undefined {
  if (text === undefined || secrets.length === 0) return text;
  let clean = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (secret.length >= MIN_SECRET_CHARS) clean = clean.split(secret).join('[redacted]');
  }
  return clean;
}

/**
 * The credentials an SDK adapter sends on every call: its key, and the credential headers and query parameters of
 * its extra headers and base URL (credentialsSent).
 */
export function adapterSecrets(options: {
  apiKey?: string;
  defaultHeaders?: Record<string, string>;
  baseURL?: string;
}): string[] {
  const sent = credentialsSent({ headers: options.defaultHeaders ?? {}, url: options.baseURL ?? '' });
  return options.apiKey ? [options.apiKey, ...sent] : sent;
}

/** `error` as the cause of the gateway's error (its message is logged): itself, or its message without `secrets`. */
export function causeWithoutSecrets(error: Error, secrets: readonly string[]): Error {
  const clean = withoutSecrets(error.message, secrets);
  return clean === error.message ? error : new Error(clean);
}

/** The error for an answer with a non-2xx status (logged here). */
export function errorAnswerFailure(answer: UpstreamErrorAnswer): UpstreamError {
  const { who, status, retryAfter, attempts, logger } = answer;
  const secrets = answer.sent ? credentialsSent(answer.sent) : [];
  const detail = withoutSecrets(answer.detail, secrets)?.slice(0, MAX_DETAIL_CHARS);
  const retryAfterMs = parseRetryAfter(retryAfter);
  logger.warn({ upstream: who, status, attempts, detail }, 'upstream answered with an error');
  return upstreamStatusError(who, status, {
    // An upstream's explanation of a bad request helps; its server errors may hold internals.
    detail: status < 500 ? detail : undefined,
    retryAfterSeconds: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
  });
}

/** Ends a body nobody will read; undici reports that as an error event, which must not go unheard. */
export function destroyQuietly(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

/** A header's (first) value. */
export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
