import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequestError, BadUserInputError, PayloadTooLargeError } from '../../core/errors.js';
import { MAX_NESTING, nestsDeeperThan } from '../../core/depth.js';
import { sendGatewayError } from '../responses.js';

/** What a body reader answers when it has already answered the request (too large, not JSON). */
export const NO_BODY = Symbol('no body');

/** The request's body as text (see readChunks). */
export function readBody(req: IncomingMessage, limit: number): Promise<string | 'too-large' | 'aborted'> {
  return readChunks(req, limit, (chunks) => Buffer.concat(chunks).toString('utf8'));
}

/** The request's body as bytes (see readChunks); Buffer.concat's memory is a plain ArrayBuffer, never a shared one. */
export function readBodyBytes(
  req: IncomingMessage,
  limit: number,
): Promise<Buffer<ArrayBuffer> | 'too-large' | 'aborted'> {
  return readChunks(req, limit, (chunks) => Buffer.concat(chunks) as Buffer<ArrayBuffer>);
}

/**
 * The request's body, up to `limit` bytes, made by `finish` from its chunks; a body over the limit is drained (not
 * kept) so that the answer can be read. Once settled it keeps nothing: the request's listeners outlive the read (a
 * streamed answer's whole life), and through them this would keep the chunks and, through the promise, the body.
 */
function readChunks<T>(
  req: IncomingMessage,
  limit: number,
  finish: (chunks: Buffer[]) => T,
): Promise<T | 'too-large' | 'aborted'> {
  let resolve: ((value: T | 'too-large' | 'aborted') => void) | undefined;
  const read = new Promise<T | 'too-large' | 'aborted'>((settle) => (resolve = settle));
  let chunks: Buffer[] = [];
  let size = 0;
  const settle = (value: T | 'too-large' | 'aborted') => {
    const settleRead = resolve;
    if (!settleRead) return;
    resolve = undefined;
    chunks = [];
    settleRead(value);
  };
  req.on('data', (chunk: Buffer) => {
    if (!resolve) return;
    size += chunk.length;
    if (size > limit) {
      req.removeAllListeners('data');
      req.resume();
      settle('too-large');
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => resolve && settle(finish(chunks)));
  req.on('error', () => settle('aborted'));
  req.on('close', () => settle('aborted'));
  return read;
}

/** What a body over the limit is told. */
export function tooLarge(limit: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`The request body is larger than ${limit} bytes.`);
}

/** What a body that nests deeper than the parsers and coercion take is told. */
export function nestsTooDeeply(): BadUserInputError {
  return new BadUserInputError(`The request body nests deeper than ${MAX_NESTING} levels.`);
}

/**
 * A GraphQL request's body: parsed when it is JSON (with whether it nests too deeply), the text
 * otherwise; NO_BODY once the request has been answered (too large, invalid JSON) or the client left.
 * A function of its own so that the text is not kept, for the answer's whole life, by the frame of
 * the caller that waits on Apollo and the response.
 */
export async function readGraphQLBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
): Promise<{ body: unknown; tooDeep: boolean } | typeof NO_BODY> {
  const raw = await readBody(req, limit);
  if (raw === 'too-large') {
    sendGatewayError(res, tooLarge(limit));
    return NO_BODY;
  }
  if (raw === 'aborted') return NO_BODY;
  if (!/^application\/(graphql-response\+)?json\b/i.test(req.headers['content-type'] ?? '')) {
    return { body: raw, tooDeep: false };
  }
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    sendGatewayError(res, new BadRequestError('The request body is not valid JSON.'));
    return NO_BODY;
  }
  return { body, tooDeep: nestsDeeperThan(body) };
}
