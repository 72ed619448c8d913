import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequestError, BadUserInputError, OverloadedError, PayloadTooLargeError } from '../../core/errors.js';
import type { InputBudget } from '../../core/input-budget.js';
import { MAX_NESTING, nestsDeeperThan } from '../../core/depth.js';
import { sendGatewayError } from '../responses.js';
import { awaitsContinue, continueIfAwaited } from './continue.js';

/** What a body reader answers when it has already answered the request (too large, not JSON). */
export const NO_BODY = Symbol('no body');

/** Why a body was not read: over its limit, the client gone, or over the budget of input held (`overloaded`). */
export type NotRead = 'too-large' | 'aborted' | 'overloaded';

/** The request's body as text (see readChunks). */
export function readBody(req: IncomingMessage, limit: number, budget?: InputBudget): Promise<string | NotRead> {
  return readChunks(req, limit, (chunks) => Buffer.concat(chunks).toString('utf8'), budget);
}

/** The request's body as bytes (see readChunks); Buffer.concat's memory is a plain ArrayBuffer, never a shared one. */
export function readBodyBytes(
  req: IncomingMessage,
  limit: number,
  budget?: InputBudget,
): Promise<Buffer<ArrayBuffer> | NotRead> {
  return readChunks(req, limit, (chunks) => Buffer.concat(chunks) as Buffer<ArrayBuffer>, budget);
}

/**
 * The request's body, up to `limit` bytes, made by `finish` from its chunks; a body over the limit is drained (not
 * kept) so that the answer can be read. Once settled it keeps nothing: the request's listeners outlive the read (a
 * streamed answer's whole life), and through them this would keep the chunks and, through the promise, the body.
 * What it keeps while reading counts in `budget` (maxBufferedInputMb): bodies sent slowly, or never finished, would
 * otherwise hold up to the body limit each, with no bound on how many; one that would pass the budget is drained
 * too (`overloaded`).
 */
function readChunks<T>(
  req: IncomingMessage,
  limit: number,
  finish: (chunks: Buffer[]) => T,
  budget?: InputBudget,
): Promise<T | NotRead> {
  // A client that waits for its 100 before sending a body declared too large is refused before it sends a byte.
  if (awaitsContinue(req) && Number(req.headers['content-length']) > limit) return Promise.resolve('too-large');
  continueIfAwaited(req);
  let resolve: ((value: T | NotRead) => void) | undefined;
  const read = new Promise<T | NotRead>((settle) => (resolve = settle));
  let chunks: Buffer[] = [];
  let size = 0;
  const settle = (value: T | NotRead) => {
    const settleRead = resolve;
    if (!settleRead) return;
    resolve = undefined;
    chunks = [];
    budget?.release(size);
    settleRead(value);
  };
  const drain = (why: 'too-large' | 'overloaded') => {
    req.removeAllListeners('data');
    req.resume();
    settle(why);
  };
  req.on('data', (chunk: Buffer) => {
    if (!resolve) return;
    if (size + chunk.length > limit) return drain('too-large');
    if (budget && !budget.take(chunk.length)) return drain('overloaded');
    size += chunk.length;
    chunks.push(chunk);
  });
  req.on('end', () => resolve && settle(finish(chunks)));
  req.on('error', () => settle('aborted'));
  req.on('close', () => settle('aborted'));
  return read;
}

/** What a body is told when the input held is over maxBufferedInputMb. */
export function inputOverloaded(budget: InputBudget | undefined): OverloadedError {
  return new OverloadedError(
    `The gateway holds its most input at once (${budget?.name ?? 'maxBufferedInputMb'}); try again shortly.`,
  );
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
  budget?: InputBudget,
): Promise<{ body: unknown; tooDeep: boolean } | typeof NO_BODY> {
  const raw = await readBody(req, limit, budget);
  if (raw === 'too-large') {
    sendGatewayError(res, tooLarge(limit));
    return NO_BODY;
  }
  if (raw === 'overloaded') {
    sendGatewayError(res, inputOverloaded(budget));
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
