import type { Logger } from 'pino';
import {
  DELETED_MARK_MS,
  type ThreadChange,
  type ThreadCursor,
  type ThreadListPage,
  type ThreadListQuery,
  type ThreadSummary,
} from '../store.js';
import type { ReadRecords } from './reads.js';

// The thread list in Redis: a scope's sorted sets of one agent's threads, kept by the claim (writeListEntry), by
// updateThread and removeThread, and read page by page, each entry checked against its thread's own record.

/** What the list is read and written with: RedisRecords's connection, key names, error mapping and options. */
export interface ListRecords extends ReadRecords {
  listKey(scope: string, agentId: string): string;
  readonly ttlSeconds: number;
  readonly logger?: Logger;
}

/**
 * Brings a thread's entries in its list's sorted sets in line with its record (cgListThread; and out of the list it
 * was in, `previous`, when that changed). The sets are another hash slot than the thread's, so this is a command of
 * its own, after the thread's: the list is an index, which every page checks against the threads' own records
 * (readListPage), so an entry left behind is never shown wrongly. An entry that could not be written is logged, not
 * failed: the claim stands, and the thread's next run writes its entry again.
 */
export async function writeListEntry(
  records: ListRecords,
  threadId: string,
  list: string,
  lastRunAt: number,
  archived: boolean,
  previous = '',
): Promise<void> {
  const { redis } = records;
  try {
    if (previous) await redis.zrem(`${previous}:all`, threadId);
    if (previous) await redis.zrem(`${previous}:active`, threadId);
    await redis.cgListThread(
      `${list}:all`,
      `${list}:active`,
      threadId,
      lastRunAt,
      records.ttlSeconds,
      archived ? '1' : '',
    );
  } catch (error) {
    records.logger?.warn(
      { err: error, threadId },
      "a thread's entry in the thread list could not be written to Redis; its next run writes it again",
    );
  }
}

/** A thread's list entry, read from its record; undefined when it has no run. */
export async function readSummary(records: ListRecords, threadId: string): Promise<ThreadSummary | undefined> {
  const fields = await records.call(() => records.redis.hmget(records.threadKey(threadId, 'meta'), ...SUMMARY_FIELDS));
  return summaryFrom(threadId, fields);
}

/** Renames or (un)archives the thread (the `cgUpdateThread` script); undefined when it has no run. */
export async function updateThread(
  records: ListRecords,
  threadId: string,
  scope: string,
  { name, archived }: ThreadChange,
): Promise<ThreadSummary | undefined> {
  const [changed, list, lastRunAt, isArchived] = await records.call(() =>
    records.redis.cgUpdateThread(
      records.threadKey(threadId, 'meta'),
      name === undefined ? '' : '1',
      name ?? '',
      archived === undefined ? '' : archived ? '1' : '0',
      Date.now(),
      scope,
    ),
  );
  if (!changed) return undefined;
  if (archived !== undefined && list)
    await writeListEntry(records, threadId, list, Number(lastRunAt), isArchived === '1');
  return readSummary(records, threadId);
}

/** Deletes every key of the thread (the `cgRemoveThread` script) if it is `scope`'s; whether it had any. */
export async function removeThread(records: ListRecords, threadId: string, scope: string): Promise<boolean> {
  const [removed, list] = await records.call(() =>
    records.redis.cgRemoveThread(
      records.threadKey(threadId, 'meta'),
      records.threadKey(threadId, 'runs'),
      records.threadKey(threadId, 'states'),
      records.threadKey(threadId, 'lock'),
      records.threadKey(threadId, 'deleted'),
      records.threadKey(threadId, ''),
      DELETED_MARK_MS,
      scope,
    ),
  );
  // Its list entries (another slot); one left behind is dropped by the next page that meets it.
  if (list)
    await Promise.all([
      records.redis.zrem(`${list}:all`, threadId),
      records.redis.zrem(`${list}:active`, threadId),
    ]).catch(() => {});
  return removed === 1;
}

/**
 * One page (see ThreadStore.list), read from the scope's sorted set in the order ZRANGE … REV gives (score, then
 * member, descending), checked against each thread's own record: entries whose thread has expired are dropped
 * from the set as they are met, and the page is read on until it is full.
 */
export async function readListPage(
  records: ListRecords,
  { scope, agentId, includeArchived, limit, after }: ThreadListQuery,
): Promise<ThreadListPage> {
  const key = `${records.listKey(scope, agentId)}:${includeArchived ? 'all' : 'active'}`;
  const threads: ThreadSummary[] = [];
  /** Each listed thread's score as the set had it when read: where the next page starts (its entry may move). */
  const scores = new Map<string, number>();
  let cursor = after;
  for (;;) {
    const want = limit + 1 - threads.length;
    const candidates = await entriesAfter(records, key, cursor, want);
    if (candidates.length === 0) break;
    // Each thread's record, read at once (each is its thread's slot).
    const metas = await records.call(() =>
      Promise.all(
        candidates.map(({ threadId }) => records.redis.hmget(records.threadKey(threadId, 'meta'), ...SUMMARY_FIELDS)),
      ),
    );
    const gone: string[] = [];
    candidates.forEach(({ threadId }, i) => {
      const fields = metas[i];
      const summary = summaryFrom(threadId, fields);
      if (!summary) {
        // Expired (or deleted under this read): its entry goes. A thread claimed and not yet started stays.
        if (fields[SUMMARY_FIELDS.indexOf('agent')] === null) gone.push(threadId);
        return;
      }
      if ((summary.owner ?? '') !== scope || summary.agentId !== agentId) return;
      if (summary.archived && !includeArchived) return;
      threads.push(summary);
      scores.set(threadId, candidates[i].score);
    });
    if (gone.length) void records.redis.zrem(`${records.listKey(scope, agentId)}:all`, ...gone).catch(() => {});
    if (gone.length) void records.redis.zrem(`${records.listKey(scope, agentId)}:active`, ...gone).catch(() => {});
    const last = candidates[candidates.length - 1];
    cursor = { lastRunAt: last.score, threadId: last.threadId };
    if (threads.length > limit || candidates.length < want) break;
  }
  const page = threads.slice(0, limit);
  const end = page[page.length - 1];
  return {
    threads: page,
    ...(threads.length > limit ? { next: { lastRunAt: scores.get(end.threadId)!, threadId: end.threadId } } : {}),
  };
}

/** Up to `count` entries of the sorted set after the cursor: first those tied with it, then those older. */
async function entriesAfter(
  records: ListRecords,
  key: string,
  after: ThreadCursor | undefined,
  count: number,
): Promise<{ threadId: string; score: number }[]> {
  const entries: { threadId: string; score: number }[] = [];
  if (after) {
    // Same score: ZRANGE orders them by member; those after the cursor's id (descending) come first.
    const score = String(after.lastRunAt);
    const tied = await records.call(() => records.redis.zrange(key, score, score, 'BYSCORE'));
    for (const threadId of tied.reverse()) {
      if (threadId < after.threadId) entries.push({ threadId, score: after.lastRunAt });
      if (entries.length === count) return entries;
    }
  }
  const max = after ? `(${after.lastRunAt}` : '+inf';
  const older = await records.call(() =>
    records.redis.zrange(key, max, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, count - entries.length, 'WITHSCORES'),
  );
  for (let i = 0; i < older.length; i += 2) entries.push({ threadId: older[i], score: Number(older[i + 1]) });
  return entries;
}

/** The fields of a thread's `meta` hash its list entry is read from. */
const SUMMARY_FIELDS = ['principal', 'agent', 'name', 'archived', 'createdAt', 'updatedAt', 'lastRunAt', 'latest'];

/** A thread's list entry from its `meta` fields (SUMMARY_FIELDS); undefined when it has no run. */
function summaryFrom(threadId: string, fields: (string | null)[]): ThreadSummary | undefined {
  const [principal, agent, name, archived, createdAt, updatedAt, lastRunAt, latest] = fields;
  if (agent === null || latest === null) return undefined;
  return {
    threadId,
    ...(principal !== null ? { owner: principal } : {}),
    agentId: agent,
    name,
    archived: archived === '1',
    createdAt: new Date(Number(createdAt)),
    updatedAt: new Date(Number(updatedAt)),
    lastRunAt: new Date(Number(lastRunAt)),
  };
}

/** A scope or agent id as a piece of a list key: '%', ':', '{' and '}' percent-encoded (as \`esc\` in the scripts). */
export function listKeyPart(text: string): string {
  return text.replace(/[%:{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}
