import type { Message } from '../core/messages.js';

// The ids of a thread's transcript, kept beside it by both stores, so that a claim for a client that sends the whole
// conversation (the stock GraphQL client) answers the ids alone: the run needs only to know which of the request's
// messages are new (ThreadService), not the transcript, which at 1,000 turns is about 280 KB to read and parse.
//
// The form: each id between two NULs ("\0a\0b\0"), "\0" for no message, "" for not known (an id with a NUL in it, or
// a transcript written without its ids). Joining two lists is one concatenation, and whether an id is in a list is one
// substring search ("\0id\0"), in JavaScript and in Redis's Lua alike.

/** How many of a request's ids a claim looks for in the transcript's (the first ones: a whole conversation repeats
 * them). A request that repeats none of these gets the transcript, and is told apart from there (withHistory). */
const CLAIM_CHECKED_IDS = 16;

/** The messages' ids in the kept form; "" when one has a NUL in it. */
export function joinIds(messages: readonly Message[]): string {
  if (messages.length === 0) return '\u0000';
  let ids = '';
  for (const message of messages) {
    if (message.id.includes('\u0000')) return '';
    ids += `\u0000${message.id}`;
  }
  return `${ids}\u0000`;
}

/** Two lists as one ("" when either is not known). */
export function concatIds(first: string, second: string): string {
  if (first === '' || second === '') return '';
  return first + second.slice(1);
}

/** Whether any of `ids` is in the kept list (never, when the list is not known). */
export function includesAny(list: string, ids: readonly string[]): boolean {
  if (list.length <= 1) return false;
  for (const id of ids) if (list.includes(`\u0000${id}\u0000`)) return true;
  return false;
}

/** The ids in a kept list (which must be known). */
export function splitIds(list: string): Set<string> {
  return list.length <= 1 ? new Set() : new Set(list.slice(1, -1).split('\u0000'));
}

/** The ids a claim looks for: the first CLAIM_CHECKED_IDS of the request's, less any with a NUL. */
export function idsToCheck(messages: readonly Message[]): string[] {
  const ids: string[] = [];
  for (const message of messages) {
    if (ids.length === CLAIM_CHECKED_IDS) break;
    if (!message.id.includes('\u0000')) ids.push(message.id);
  }
  return ids;
}
