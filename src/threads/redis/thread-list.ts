import type { ThreadCursor, ThreadListPage, ThreadListQuery, ThreadSummary } from '../store.js';
import type { ReadRecords } from './reads.js';

// The thread list's pages in Redis: a scope's sorted sets (kept by the claim, update and remove writes in
// records.ts) read page by page, each entry checked against its thread's own record.

/** What a page is read with: RedisRecords's connection, key names and error mapping. */
export interface ListRecords extends ReadRecords {
  listKey(scope: string, agentId: string): string;
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
export const SUMMARY_FIELDS = [
  'principal',
  'agent',
  'name',
  'archived',
  'createdAt',
  'updatedAt',
  'lastRunAt',
  'latest',
];

/** A thread's list entry from its `meta` fields (SUMMARY_FIELDS); undefined when it has no run. */
export function summaryFrom(threadId: string, fields: (string | null)[]): ThreadSummary | undefined {
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
