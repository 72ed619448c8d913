import { BadUserInputError } from '../core/errors.js';
import { isWellFormedText } from '../core/ids.js';
import type { ThreadCursor, ThreadSummary } from '../threads/store.js';

// The thread list's requests and pages as ThreadService takes and answers them: bounds, names, and the opaque
// cursors clients hold between pages.

/** A page of a thread list as the routes answer it: the threads, and where the next page starts (null at the end). */
export interface ThreadPage {
  threads: ThreadSummary[];
  nextCursor: string | null;
}

/** What a thread list asks for. */
export interface ThreadListRequest {
  agentId: string;
  includeArchived?: boolean;
  /** 1 to MAX_THREAD_PAGE. @default DEFAULT_THREAD_PAGE */
  limit?: number;
  /** A `nextCursor` from the page before. */
  cursor?: string;
}

/** Threads on a page unless the request says otherwise, and the most it may ask for. */
export const DEFAULT_THREAD_PAGE = 50;
export const MAX_THREAD_PAGE = 200;
/** The longest name a thread may be given. */
const MAX_THREAD_NAME = 200;

/** A new name for a thread: trimmed, 1 to MAX_THREAD_NAME characters, no lone surrogate (see ThreadList.update). */
export function checkedName(name: string): string {
  const trimmed = name.trim();
  if (!isWellFormedText(trimmed) || trimmed === '' || trimmed.length > MAX_THREAD_NAME)
    throw new BadUserInputError(`name is 1 to ${MAX_THREAD_NAME} characters (not only spaces).`, { field: 'name' });
  return trimmed;
}

/** A page cursor as clients hold it: opaque, URL-safe (base64url of `[lastRunAt, threadId]`). */
export function encodeCursor(cursor: ThreadCursor): string {
  return Buffer.from(JSON.stringify([cursor.lastRunAt, cursor.threadId])).toString('base64url');
}

export function decodeCursor(text: string): ThreadCursor {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString()) as unknown;
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string')
      return { lastRunAt: value[0] as number, threadId: value[1] };
  } catch {
    // reported below
  }
  throw new BadUserInputError("The cursor is not one this gateway gave: pass the last page's cursor as it came.", {
    cursor: text.slice(0, 100),
  });
}
