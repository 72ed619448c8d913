import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import type { SequencedEvent } from '../src/core/events.js';
import type { Message } from '../src/core/messages.js';
import { RUN_SUCCESS } from '../src/core/status.js';
import type { RunInput, RunLog } from '../src/threads/store.js';
import type { RedisRunLog } from '../src/threads/redis/run-log.js';
import type { RedisThreadStore } from '../src/threads/redis/store.js';
import { eventually } from './support/harness.js';
import { RedisRelay, RedisServer, startRedisStore } from './support/redis.js';
import { streamTogether } from './support/run-logs.js';
import { compactEvents, storedLog, until } from './support/threads.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A run's log in Redis, on its own (no gateway): what it writes, in how many commands, and what it
// tells the run's clients (RunLog.deliverStored), against a real redis-server.

/** A user message. */
const message = (id: string, content: string) =>
  ({ kind: 'text', id, role: 'user', content, createdAt: new Date(0).toISOString() }) as unknown as Message;

/** A run's events: its start, a text answer `content` as message `messageId`, its end. */
const answer = (threadId: string, runId: string, messageId: string, content: string): Record<string, unknown>[] => [
  { type: 'RunStarted', threadId, runId },
  { type: 'TextMessageStart', messageId, parentMessageId: null, role: 'assistant' },
  { type: 'TextMessageContent', messageId, content },
  { type: 'TextMessageEnd', messageId, status: { code: 'Success' } },
  { type: 'RunFinished', status: RUN_SUCCESS },
];

/** Appends `events` to a run's log, numbered from `first`, and waits until its last event is stored. */
async function record(log: RunLog, events: Record<string, unknown>[], first = 0): Promise<void> {
  events.forEach((event, i) => log.append({ ...event, sequence: first + i } as SequencedEvent));
  await (log as RedisRunLog).settled;
}

/** Run `n` of a thread, sent only its new message `m-<n>` (the store completes the conversation), answered `reply-<n>`. */
async function runNewOnly(store: RedisThreadStore, threadId: string, n: number): Promise<void> {
  const { runId, history } = await store.claim(threadId, `run-${n}`, `fresh-${n}`);
  const next = message(`m-${n}`, `message ${n}`);
  const log = store.open(threadId, runId, { messages: [...history, next], newMessages: [next], extendsHistory: true });
  await record(log, answer(threadId, runId, `reply-${n}`, `reply ${n}`));
}

/**
 * A run on `store` with what it shows its clients (`shown`, and the codes of their failures), its events appended
 * numbered one after another; its start, a message's start and a first text, once shown.
 */
async function startedRun(store: RedisThreadStore, threadId: string) {
  const { runId } = await store.claim(threadId, 'run-1', 'fresh-1');
  const log = store.open(threadId, runId, { messages: [message('u-1', 'hi')], newMessages: [] });
  const shown: SequencedEvent[] = [];
  const failures: string[] = [];
  log.deliverStored!({ stored: (events) => shown.push(...events), failed: (error) => failures.push(error.code) });
  const shownUpTo = async (count: number) => {
    while (shown.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  let sequence = 0;
  const append = (event: Record<string, unknown>) => log.append({ ...event, sequence: sequence++ } as SequencedEvent);
  append({ type: 'RunStarted', threadId, runId });
  append({ type: 'TextMessageStart', messageId: 'm-1', parentMessageId: null, role: 'assistant' });
  append({ type: 'TextMessageContent', messageId: 'm-1', content: 'before ' });
  await shownUpTo(3);
  return { runId, log, append, shown, shownUpTo, failures };
}

/** Opens run `runId` of a thread with `input`, and resolves once its RunStarted is stored (shown to its clients). */
async function openedRun(
  store: RedisThreadStore,
  threadId: string,
  runId: string,
  input: RunInput,
  onLost?: (error: unknown) => void,
): Promise<RedisRunLog> {
  const log = store.open(threadId, runId, input, onLost) as RedisRunLog;
  const shown: SequencedEvent[] = [];
  log.deliverStored({ stored: (events) => void shown.push(...events), failed: () => {} });
  log.append({ type: 'RunStarted', threadId, runId, sequence: 0 } as SequencedEvent);
  while (shown.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  return log;
}

let redis: RedisServer;
beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(() => redis.close());

describe("a run's log in Redis", () => {
  it('takes a run id with spaces for what it is: the lock names it whole (stop, busy, release)', async () => {
    // Found from outside: the lock is "<runId> <instance>", read by splitting at the first space, so a run named
    // "run with space" could not be stopped, and releasing run "run" freed the lock of run "run with space".
    const store = await startRedisStore({ url: redis.url });
    try {
      const { runId } = await store.claim('spaced', 'run with space', 'fresh-1');
      expect(runId).toBe('run with space');
      store.open('spaced', runId, { messages: [message('u-1', 'hi')], newMessages: [] });
      await expect(store.claim('spaced', 'another', 'fresh-2')).rejects.toMatchObject({
        code: 'THREAD_BUSY',
        details: { runId: 'run with space' },
      });
      store.release('spaced', 'run');
      await expect(store.claim('spaced', 'another', 'fresh-3')).rejects.toMatchObject({ code: 'THREAD_BUSY' });
      expect(await store.requestStop('spaced', 'run with space')).toBe('run with space');
    } finally {
      await store.close();
    }
  });

  it('is kept and read over a Unix socket (REDIS_URL unix:///path)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'cg-sock-'));
    const socket = join(folder, 'redis.sock');
    const server = await RedisServer.start({ args: ['--unixsocket', socket, '--unixsocketperm', '700'] });
    try {
      const store = await startRedisStore({ url: `unix://${socket}` });
      try {
        const claim = await store.claim('sock', 'run-1', 'fresh-1');
        const log = store.open('sock', claim.runId, {
          messages: [message('m-1', 'hi')],
          newMessages: [message('m-1', 'hi')],
        });
        await record(log, answer('sock', claim.runId, 'reply-1', 'hello'));
        expect((await store.thread('sock'))!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1']);
        // Through the socket, not the port: the server lists the store's connections at the socket's address.
        const direct = new Redis(socket);
        const clients = await direct.call('CLIENT', 'LIST');
        direct.disconnect();
        expect(String(clients)).toMatch(new RegExp(`addr=${socket}`));
      } finally {
        await store.close();
      }
    } finally {
      await server.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("writes the events several runs emit in one turn of the event loop in one script call, and tells each run's clients of each event once stored, in order, once", async () => {
    const keyPrefix = `log-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const watcher = new Redis(redis.url, { lazyConnect: true });
    await watcher.connect();
    const monitor = await watcher.monitor();
    /** How many runs each script call that appends events names (its keys: each run's record, then its log). */
    const runsPerAppend: number[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (String(args[0]).toLowerCase() !== 'evalsha') return;
      const keys = args.slice(3, 3 + Number(args[2])).map(String);
      if (
        keys.length % 2 === 0 &&
        keys.every((key, i) => key.startsWith(keyPrefix) && key.includes(i % 2 === 0 ? ':run:' : ':log:'))
      )
        runsPerAppend.push(keys.length / 2);
    });
    try {
      const runs = await streamTogether(store, 'thread', 4, 20);

      for (const run of runs) {
        expect(run.failures).toEqual([]);
        // Shown: every event, in order, once.
        expect(run.shown.map((e) => e.sequence)).toEqual(run.emitted.map((e) => e.sequence));
        expect(run.shown).toEqual(run.emitted);
        // Stored: the same.
        expect((await storedLog(redis.url, keyPrefix, run.threadId, run.runId)).map((e) => e.sequence)).toEqual(
          run.emitted.map((e) => e.sequence),
        );
      }
      // Tokens of several runs in one turn went in one call.
      expect(Math.max(...runsPerAppend)).toBeGreaterThan(1);
    } finally {
      monitor.disconnect();
      watcher.disconnect();
      await store.close();
    }
  });

  it("numbers each batch's entry after its first event, so that a follower reads from its place, not the run's start", async () => {
    const keyPrefix = `seek-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const reader = new Redis(redis.url);
    const watcher = new Redis(redis.url, { lazyConnect: true });
    await watcher.connect();
    const monitor = await watcher.monitor();
    /** The reads of the logs (XRANGE, XREVRANGE), as [command, start, end, …]. */
    const ranges: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^x(rev)?range$/i.test(String(args[0])) && String(args[1]).startsWith(keyPrefix))
        ranges.push([String(args[0]).toLowerCase(), ...args.slice(2)]);
    });
    const chunk = (content: string) => ({ type: 'TextMessageContent', messageId: 'm-1', content });
    const start = (threadId: string, runId: string) => [
      { type: 'RunStarted', threadId, runId },
      { type: 'TextMessageStart', messageId: 'm-1', parentMessageId: null, role: 'assistant' },
    ];
    /** What a follower after `after` is given of what is stored, up to `last` (then it leaves). */
    const joined = async (threadId: string, runId: string, after: number, last: number) => {
      const feed = store.follow(threadId, runId, after);
      const out: SequencedEvent[] = [];
      while ((out.at(-1)?.sequence ?? after) < last) out.push((await feed.next()).value as SequencedEvent);
      await feed.return();
      return out;
    };
    /** A running run's log, and how to append events to it, numbered from `first`, until they are stored. */
    const running = (log: RunLog) => {
      let stored = -1;
      log.deliverStored!({ stored: (events) => (stored = events.at(-1)!.sequence), failed: () => {} });
      return async (events: Record<string, unknown>[], first: number) => {
        events.forEach((event, i) => log.append({ ...event, sequence: first + i } as SequencedEvent));
        await until(
          async () => stored,
          (last) => last === first + events.length - 1,
          'the batch stored',
        );
      };
    };
    try {
      const { runId } = await store.claim('seek', 'run-1', 'fresh-1');
      const append = running(store.open('seek', runId, { messages: [], newMessages: [] }));
      const events = [...start('seek', runId), chunk('a'), chunk('b'), chunk('c'), chunk('d'), chunk('e'), chunk('f')];
      await append(events.slice(0, 2), 0);
      await append(events.slice(2, 5), 2);
      await append(events.slice(5), 5);
      const key = `${keyPrefix}{seek}:log:${runId}`;
      expect((await reader.xrange(key, '-', '+')).map(([id]) => id)).toEqual(['0-1', '0-3', '0-6']);
      const numbered = events.map((event, sequence) => ({ ...event, sequence }));
      for (let after = -1; after < 7; after++) {
        const rest = compactEvents(numbered.filter((event) => event.sequence > after));
        expect(compactEvents(await joined('seek', runId, after, 7))).toEqual(rest);
      }
      // A follower after 3 (it lacks 4 on) reads the batches from 4 on, and the one that holds 4 (2 to 4) since none
      // begins at 4; after 4, the batches from 5 on: one begins there.
      await watcher.ping();
      ranges.length = 0;
      await joined('seek', runId, 3, 7);
      await joined('seek', runId, 4, 7);
      await reader.ping();
      await until(
        async () => ranges.length,
        (count) => count >= 3,
        'the three reads',
      );
      expect(ranges).toEqual([
        ['xrange', '0-5', '+'],
        ['xrevrange', '(0-5', '-', 'COUNT', '1'],
        ['xrange', '0-6', '+'],
      ]);
      // A client resuming after 3 has 0 to 3: read up to the batch that holds 4, not the rest of the run.
      const sequences = async (events: Promise<SequencedEvent[]>) => (await events).map((event) => event.sequence);
      expect(await sequences(store.readUpTo('seek', runId, 3))).toEqual([0, 1, 2, 3, 4]);
      expect(await sequences(store.readUpTo('seek', runId, 4))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(await sequences(store.readUpTo('seek', 'no-such-run', 4))).toEqual([]);
      // A thread read may leave the running run's log unread (a connect replays the run from it).
      expect((await store.thread('seek'))!.messages).toEqual([
        expect.objectContaining({ id: 'm-1', content: 'abcdef' }),
      ]);
      expect((await store.thread('seek', { runningOutput: false }))!.messages).toEqual([]);
      // A sequence of 15 digits (a Last-Event-ID may have one) is an id, not Lua's 1e+14.
      expect(await sequences(store.readUpTo('seek', runId, 999_999_999_999_999))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(await sequences(store.records.readLog('seek', runId, 999_999_999_999_999))).toEqual([5, 6, 7]);
      // A batch an earlier version appended to the log (numbered by time, after the others): a follower reads it.
      await reader.xadd(key, '*', 'e', JSON.stringify([{ ...chunk('g'), sequence: 8 }]));
      expect(await sequences(store.records.readLog('seek', runId, 6))).toEqual([5, 6, 7, 8]);

      // A log an earlier version started (its entries numbered by time) is carried on and followed as it was.
      const old = await store.claim('seek-old', 'run-2', 'fresh-2');
      const oldKey = `${keyPrefix}{seek-old}:log:${old.runId}`;
      const oldEvents = [...start('seek-old', old.runId), chunk('x'), chunk('y')].map((event, sequence) => ({
        ...event,
        sequence,
      }));
      const carried = running(store.open('seek-old', old.runId, { messages: [], newMessages: [] }));
      const oldRun = `${keyPrefix}{seek-old}:run:${old.runId}`;
      await until(
        () => reader.hget(oldRun, 'status'),
        (status) => status === 'running',
        'the run opened',
      );
      await reader.xadd(oldKey, '*', 'e', JSON.stringify(oldEvents.slice(0, 2)));
      await reader.hset(oldRun, 'last', 1);
      await carried(
        oldEvents.slice(2).map(({ sequence: _, ...event }) => event),
        2,
      );
      const ids = (await reader.xrange(oldKey, '-', '+')).map(([id]) => id);
      expect(ids).toHaveLength(2);
      expect(ids.every((id) => !id.startsWith('0-'))).toBe(true);
      expect(await sequences(store.readUpTo('seek-old', old.runId, 0))).toEqual([0, 1, 2, 3]);
      for (let after = -1; after < 4; after++) {
        const rest = compactEvents(oldEvents.filter((event) => event.sequence > after));
        expect(compactEvents(await joined('seek-old', old.runId, after, 3))).toEqual(rest);
      }
    } finally {
      reader.disconnect();
      monitor.disconnect();
      watcher.disconnect();
      await store.close();
    }
  });

  it('costs Redis the same commands at the 2nd and the 30th run of a thread, and keeps every stored run at least as long as the thread', async () => {
    const keyPrefix = `keep-${Math.random().toString(36).slice(2)}:`;
    const ttlSeconds = 3600;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix, ttlSeconds, maxRunsPerThread: 50 });
    const watcher = new Redis(redis.url, { lazyConnect: true });
    await watcher.connect();
    const monitor = await watcher.monitor();
    const threadId = 'old-thread';
    /** Commands Redis ran on the thread's keys (those its scripts ran included), by name. */
    let commands: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.slice(1).some((arg) => String(arg).startsWith(`${keyPrefix}{${threadId}}`)))
        commands.push(String(args[0]).toLowerCase());
    });
    const runOnce = async (n: number): Promise<string[]> => {
      commands = [];
      const { runId } = await store.claim(threadId, `run-${n}`, `fresh-${n}`);
      const log = store.open(threadId, runId, { messages: [], newMessages: [] });
      await record(log, answer(threadId, runId, `m-${n}`, `turn ${n}`));
      // MONITOR's lines come a little after the replies.
      await watcher.ping();
      await new Promise((resolve) => setTimeout(resolve, 50));
      return commands.sort();
    };
    try {
      await runOnce(1);
      const second = await runOnce(2);
      for (let n = 3; n < 30; n++) await runOnce(n);
      const thirtieth = await runOnce(30);
      expect(second.length).toBeGreaterThan(5);
      // The same commands: none per stored run (no renewal of each run's expiry at every run).
      expect(thirtieth).toEqual(second);

      const runs = await watcher.lrange(`${keyPrefix}{${threadId}}:runs`, 0, -1);
      expect(runs).toHaveLength(30);
      const thread = await watcher.pttl(`${keyPrefix}{${threadId}}:meta`);
      expect(thread).toBeGreaterThan((ttlSeconds - 60) * 1000);
      for (const runId of runs) {
        for (const key of [`run:${runId}`, `log:${runId}`]) {
          const ttl = await watcher.pttl(`${keyPrefix}{${threadId}}:${key}`);
          // At least the thread's, at most half a TTL more.
          expect(ttl).toBeGreaterThanOrEqual(thread);
          expect(ttl).toBeLessThanOrEqual(ttlSeconds * 1500);
        }
      }
    } finally {
      monitor.disconnect();
      watcher.disconnect();
      await store.close();
    }
  });

  it('renews every stored run of a thread once half its TTL has passed since the last renewal', async () => {
    const keyPrefix = `renew-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix, ttlSeconds: 2, maxRunsPerThread: 10 });
    const watcher = new Redis(redis.url);
    const threadId = 'renewed';
    const runOnce = async (n: number) => {
      const { runId } = await store.claim(threadId, `run-${n}`, `fresh-${n}`);
      const log = store.open(threadId, runId, { messages: [], newMessages: [] });
      await record(log, [
        { type: 'RunStarted', threadId, runId },
        { type: 'RunFinished', status: RUN_SUCCESS },
      ]);
    };
    try {
      await runOnce(1);
      const renewedAt = Number(await watcher.hget(`${keyPrefix}{${threadId}}:meta`, 'runsUntil'));
      // More than half the TTL (1 s) later, the first run would expire before the thread: the next run renews all.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      await runOnce(2);
      const renewed = Number(await watcher.hget(`${keyPrefix}{${threadId}}:meta`, 'runsUntil'));
      expect(renewed).toBeGreaterThan(renewedAt);
      const thread = await watcher.pttl(`${keyPrefix}{${threadId}}:meta`);
      for (const key of ['run:run-1', 'log:run-1', 'run:run-2', 'log:run-2'])
        expect(await watcher.pttl(`${keyPrefix}{${threadId}}:${key}`)).toBeGreaterThanOrEqual(thread);
    } finally {
      watcher.disconnect();
      await store.close();
    }
  });

  it("sends Redis only a run's new messages and output on a long thread, not the history again, and keeps the whole transcript", async () => {
    const keyPrefix = `long-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const watcher = new Redis(redis.url);
    const written = async () => Number(/total_net_input_bytes:(\d+)/.exec(await watcher.info('stats'))![1]);
    const threadId = 'long';
    const runOnce = async (n: number, send: (history: Message[]) => RunInput) => {
      const { runId, history } = await store.claim(threadId, `run-${n}`, `fresh-${n}`);
      const log = store.open(threadId, runId, send(history));
      await record(log, answer(threadId, runId, `reply-${n}`, `reply ${n}`));
    };
    try {
      // A history of about 200 KB.
      const long = message('m-long', 'x'.repeat(200_000));
      const beforeFirst = await written();
      await runOnce(1, () => ({ messages: [long], newMessages: [long], extendsHistory: true }));
      // Written once (the run's new input), not again at its end.
      expect((await written()) - beforeFirst).toBeLessThan(300_000);

      // Only the new message (the store completes the conversation, as ThreadService says): a few KB to Redis.
      const before = await written();
      const next = message('m-next', 'next');
      await runOnce(2, (history) => ({
        messages: [...history, next],
        newMessages: [next],
        extendsHistory: true,
      }));
      expect((await written()) - before).toBeLessThan(20_000);

      // The whole conversation, not as the store had it (another client's copy): sent whole at the open only.
      const beforeWhole = await written();
      const last = message('m-last', 'last');
      await runOnce(3, (history) => ({
        messages: [...history.map((m) => ({ ...m })), last],
        newMessages: [last],
        extendsHistory: false,
      }));
      const wholeBytes = (await written()) - beforeWhole;
      expect(wholeBytes).toBeGreaterThan(200_000);
      expect(wholeBytes).toBeLessThan(300_000);

      const thread = await store.thread(threadId);
      expect(thread!.messages.map((m) => m.id)).toEqual([
        'm-long',
        'reply-1',
        'm-next',
        'reply-2',
        'm-last',
        'reply-3',
      ]);
      expect((thread!.messages[0] as { content: string }).content).toHaveLength(200_000);
    } finally {
      watcher.disconnect();
      await store.close();
    }
  });

  it("keeps a thread's whole transcript when Redis loses a run's record mid-run and the run writes it again from nothing", async () => {
    const keyPrefix = `rebuilt-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const watcher = new Redis(redis.url);
    const threadId = 'rebuilt';
    try {
      // Two runs of history, each sent only its new message.
      for (const n of [1, 2]) {
        await runNewOnly(store, threadId, n);
      }
      // A third, whose record Redis loses once its start is stored (every key of the thread: a restore from nothing).
      const { runId, history } = await store.claim(threadId, 'run-3', 'fresh-3');
      const third = message('m-3', 'message 3');
      const log = await openedRun(store, threadId, runId, {
        messages: [...history, third],
        newMessages: [third],
        extendsHistory: true,
      });
      const keys = await watcher.keys(`${keyPrefix}{${threadId}}:*`);
      await watcher.del(...keys);
      // The rest of the answer, after its start.
      await record(log, answer(threadId, runId, 'reply-3', 'reply 3').slice(1), 1);
      const thread = await store.thread(threadId);
      expect(thread!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1', 'm-2', 'reply-2', 'm-3', 'reply-3']);
    } finally {
      watcher.disconnect();
      await store.close();
    }
  });

  it("keeps the thread its principal's when Redis loses the record mid-run and the run writes it again", async () => {
    // Found from outside: the record written again had no principal, and anyone could then read the conversation,
    // join or stop the run, and take the thread.
    const keyPrefix = `owned-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const watcher = new Redis(redis.url);
    const threadId = 'owned';
    try {
      const { runId, history } = await store.claim(threadId, 'run-1', 'fresh-1', { owner: 'alice' });
      const first = message('m-1', 'my secret');
      const log = await openedRun(store, threadId, runId, {
        messages: [...history, first],
        newMessages: [first],
        owner: 'alice',
      });
      await watcher.del(...(await watcher.keys(`${keyPrefix}{${threadId}}:*`)));
      await record(log, answer(threadId, runId, 'reply-1', 'reply 1').slice(1), 1);
      const thread = await store.thread(threadId);
      expect(thread).toMatchObject({ owner: 'alice' });
      expect(thread!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1']);
      await expect(store.claim(threadId, 'run-2', 'fresh-2', { owner: 'bob' })).rejects.toMatchObject({
        code: 'THREAD_FORBIDDEN',
      });
      await store.release(threadId, (await store.claim(threadId, 'run-3', 'fresh-3', { owner: 'alice' })).runId);

      // A record another principal claimed while it was gone is not written over: the run is lost, bob's thread kept.
      const second = await store.claim(threadId, 'run-4', 'fresh-4', { owner: 'alice' });
      const lost: unknown[] = [];
      const next = message('m-4', 'more');
      const log2 = await openedRun(
        store,
        threadId,
        second.runId,
        { messages: [...second.history, next], newMessages: [next], owner: 'alice' },
        (error) => lost.push(error),
      );
      await watcher.del(...(await watcher.keys(`${keyPrefix}{${threadId}}:*`)));
      const bobs = await store.claim(threadId, 'run-bob', 'fresh-bob', { owner: 'bob' });
      await store.release(threadId, bobs.runId);
      log2.append({ type: 'RunFinished', status: RUN_SUCCESS, sequence: 1 } as SequencedEvent);
      await eventually(() => lost.length > 0, 'the run lost');
      expect(await watcher.hget(store.records.threadKey(threadId, 'meta'), 'principal')).toBe('bob');
      expect((await store.thread(threadId))?.messages ?? []).toEqual([]);
    } finally {
      watcher.disconnect();
      await store.close();
    }
  });

  it('lists a thread again when Redis loses it whole mid-run and the run writes it again', async () => {
    // The record written again had no agent, name or times, and no list entry: the thread was missing from its
    // owner's list (and could not be renamed) although its conversation was kept.
    const keyPrefix = `relisted-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const watcher = new Redis(redis.url);
    const threadId = 'relisted';
    const details = { owner: 'alice', agentId: 'planner', name: 'Trip plans' };
    try {
      const { runId, history } = await store.claim(threadId, 'run-1', 'fresh-1', details);
      const first = message('m-1', 'Trip plans');
      const log = await openedRun(store, threadId, runId, {
        messages: [...history, first],
        newMessages: [first],
        ...details,
      });
      const page = { scope: 'alice', agentId: 'planner', includeArchived: false, limit: 10 };
      expect((await store.list(page)).threads.map((thread) => thread.threadId)).toEqual([threadId]);
      // Redis loses the thread and its list.
      await watcher.del(
        ...(await watcher.keys(`${keyPrefix}{${threadId}}:*`)),
        ...(await watcher.keys(`${keyPrefix}list:*`)),
      );
      await record(log, answer(threadId, runId, 'reply-1', 'reply 1').slice(1), 1);
      expect((await store.thread(threadId))!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1']);
      const listed = await store.list(page);
      expect(listed.threads).toMatchObject([{ threadId, owner: 'alice', agentId: 'planner', name: 'Trip plans' }]);
      expect(await store.update(threadId, 'alice', { name: 'Kyoto' })).toMatchObject({ name: 'Kyoto' });
      // An open written again whose answer was lost (the list's entry with it): the next attempt lists it again, in
      // the list its record names, archived as it is.
      await store.update(threadId, 'alice', { archived: true });
      await watcher.del(...(await watcher.keys(`${keyPrefix}list:*`)));
      const input = { messages: [first], newMessages: [first], ...details };
      expect(await store.records.openRecord(threadId, runId, input, true)).toBe('ok');
      expect((await store.list(page)).threads).toEqual([]);
      expect((await store.list({ ...page, includeArchived: true })).threads).toMatchObject([{ threadId }]);
      await store.update(threadId, 'alice', { archived: false });
      await store.release(threadId, runId);
      // Another run claims it as usual: the list entry stays where it is.
      await store.release(threadId, (await store.claim(threadId, 'run-2', 'fresh-2', details)).runId);
      expect((await store.list(page)).threads).toMatchObject([{ threadId, name: 'Kyoto' }]);
    } finally {
      watcher.disconnect();
      await store.close();
    }
  });

  it('frees a thread whose claim Redis took only after the gateway had given up waiting for it', async () => {
    // Found from outside: Redis stalled past the command timeout as a run was admitted; the run was served unrecorded
    // and ended, and the claim Redis took when it woke held the thread (THREAD_BUSY) for a minute more.
    const store = await startRedisStore({ url: redis.url });
    const direct = new Redis(redis.url);
    try {
      await direct.client('PAUSE', 6_500, 'ALL');
      await expect(store.claim('stalled', 'run-1', 'fresh-1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // Once Redis wakes, the claim then its release.
      await until(
        () => direct.exists(store.records.threadKey('stalled', 'meta')),
        (exists) => exists === 1,
        'the late claim to be taken',
      );
      expect(await direct.get(store.records.threadKey('stalled', 'lock'))).toBeNull();
      const next = await store.claim('stalled', 'run-2', 'fresh-2');
      expect(next.runId).toBe('run-2');
      // A request sent again under the run id of a run going on: its claim, unanswered too, frees nothing of that run.
      const log = store.open('stalled', next.runId, { messages: [message('u', 'hi')], newMessages: [] });
      log.append({ type: 'RunStarted', threadId: 'stalled', runId: next.runId, sequence: 0 } as SequencedEvent);
      await until(
        () => direct.hget(store.records.threadKey('stalled', 'run', next.runId), 'status'),
        (status) => status === 'running',
        'the run to be opened',
      );
      await direct.client('PAUSE', 6_500, 'ALL');
      await expect(store.claim('stalled', 'run-2', 'fresh-3')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // Redis awake, and every command the store sent before this one run (its connection's order).
      await store.records.redis.ping();
      expect(await direct.get(store.records.threadKey('stalled', 'lock'))).toBe(`run-2 ${store.records.instanceId}`);
      await record(log, [{ type: 'RunFinished', status: RUN_SUCCESS }], 1);
    } finally {
      direct.disconnect();
      await store.close();
    }
  }, 30_000);

  it('frees a thread whose unanswered claim ioredis sends again once Redis can be reached again', async () => {
    // Found reading ioredis: a connection that drops with the claim unanswered keeps it, and sends it again first thing
    // once it is ready again. Redis out of reach past the claim's timeout: the release was refused (no command is
    // taken while the connection is not ready), and the claim sent again then held the thread for a minute. Held here
    // past the claim's own time (6 s): the release is tried until it is answered, however long Redis is out of reach.
    const relay = await RedisRelay.start(redis.port);
    const store = await startRedisStore({ url: relay.url }, { claimTimeoutMs: 6_000 });
    const direct = new Redis(redis.url);
    try {
      relay.hold();
      const claimed = store.claim('dropped', 'run-1', 'fresh-1');
      await until(
        async () => relay.heldBytes,
        (bytes) => bytes > 0,
        'the claim to be sent',
      );
      // The claim lost on the way; the connection's next handshake held.
      relay.drop();
      await expect(claimed).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      relay.pass();
      await until(
        () => direct.hget(store.records.threadKey('dropped', 'meta'), 'claimToken'),
        (token) => token === 'fresh-1',
        'the claim sent again to be taken',
      );
      // Freed by the release, well before the claim's 6 s would have freed it.
      await until(
        () => direct.get(store.records.threadKey('dropped', 'lock')),
        (lock) => lock === null,
        'the thread to be freed',
        3_000,
      );
      expect((await store.claim('dropped', 'run-2', 'fresh-2')).runId).toBe('run-2');
    } finally {
      direct.disconnect();
      await store.close();
      await relay.close();
    }
  }, 30_000);

  it('ends a run Redis brings back unfinished after it ended here (an older snapshot), after every number it gave', async () => {
    // Found from outside: the record came back running, the thread locked by this live instance, which no longer had
    // the run: THREAD_BUSY, joins that never ended and stops that did nothing, for good.
    const keyPrefix = `restored-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix, leaseMs: 300 });
    const direct = new Redis(redis.url);
    try {
      const { runId, log, append } = await startedRun(store, 'restored');
      // The snapshot: the thread's keys and the instance's list of runs, as they are mid-run.
      const keys = [
        ...(await direct.keys(`${keyPrefix}{restored}:*`)),
        store.records.instanceKey(store.records.instanceId, 'runs'),
      ];
      const dumps = await Promise.all(keys.map((key) => direct.dumpBuffer(key)));
      append({ type: 'TextMessageEnd', messageId: 'm-1', status: { code: 'Success' } });
      append({ type: 'RunFinished', status: RUN_SUCCESS });
      await (log as RedisRunLog).settled;
      expect((await store.run('restored', runId))!.status).toEqual(RUN_SUCCESS);
      // Redis restored from it.
      for (const [i, key] of keys.entries()) await direct.restore(key, 0, dumps[i]!, 'REPLACE');
      expect((await store.run('restored', runId))!.finishedAt).toBeNull();
      const ended = await until(
        () => store.run('restored', runId),
        (run) => run?.finishedAt !== null,
        'the restored run to be ended',
      );
      expect(ended!.status).toMatchObject({ code: 'Failed', details: { code: 'INSTANCE_LOST' } });
      // 3 and 4 were shown (the end of the text, the run's end): the ending comes after them.
      const stored = await storedLog(redis.url, keyPrefix, 'restored', runId);
      expect(stored.map((event) => [event.sequence, event.type])).toEqual([
        [0, 'RunStarted'],
        [1, 'TextMessageStart'],
        [2, 'TextMessageContent'],
        [5, 'TextMessageEnd'],
        [6, 'RunFinished'],
      ]);
      expect((await store.claim('restored', 'run-2', 'fresh-2')).runId).toBe('run-2');
    } finally {
      direct.disconnect();
      await store.close();
    }
  });

  it('does not open a run whose claim lapsed and was followed by another run, whose turn stays in the transcript', async () => {
    // The run's open is sent (or sent again) after its claim ran out, say while Redis could not be reached; meanwhile
    // another run took the thread, ran and ended. Opening the first would write its older conversation over the
    // thread's transcript.
    const store = await startRedisStore({ url: redis.url });
    const direct = new Redis(redis.url);
    try {
      await runNewOnly(store, 'lapsed', 1);
      const late = await store.claim('lapsed', 'run-2', 'fresh-2');
      expect(late.claim).toEqual(expect.any(String));
      await direct.del(store.records.threadKey('lapsed', 'lock')); // the claim's time ran out
      await runNewOnly(store, 'lapsed', 3);
      const lost: unknown[] = [];
      const next = message('m-2', 'message 2');
      const log = store.open(
        'lapsed',
        late.runId,
        { messages: [...late.history, next], newMessages: [next], claim: late.claim },
        (error) => lost.push(error),
      );
      log.append({ type: 'RunStarted', threadId: 'lapsed', runId: late.runId, sequence: 0 } as SequencedEvent);
      await eventually(() => lost.length > 0, 'the run lost');
      expect(lost[0]).toMatchObject({ code: 'INSTANCE_LOST', message: expect.stringContaining('another run took') });
      expect((await store.thread('lapsed'))!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1', 'm-3', 'reply-3']);
      // The same run with its claim current opens as before.
      const current = await store.claim('lapsed', 'run-4', 'fresh-4');
      const fourth = message('m-4', 'message 4');
      const ok = store.open('lapsed', current.runId, {
        messages: [...current.history, fourth],
        newMessages: [fourth],
        claim: current.claim,
      });
      await record(ok, answer('lapsed', current.runId, 'reply-4', 'reply 4'));
      expect((await store.thread('lapsed'))!.messages.map((m) => m.id)).toEqual([
        'm-1',
        'reply-1',
        'm-3',
        'reply-3',
        'm-4',
        'reply-4',
      ]);

      // Deleted after the claim lapsed: not made again by the late open. Deleted and made again (its count of claims
      // starts again, under another epoch): not written over.
      for (const remade of [false, true]) {
        const threadId = remade ? 'remade' : 'gone';
        await runNewOnly(store, threadId, 1);
        const old = await store.claim(threadId, 'run-2', 'fresh-2');
        await direct.del(store.records.threadKey(threadId, 'lock'));
        expect(await store.remove(threadId, '')).toBe(true);
        if (remade) await runNewOnly(store, threadId, 5);
        const lostToo: unknown[] = [];
        const stale = message('m-2', 'message 2');
        const late = store.open(
          threadId,
          old.runId,
          { messages: [...old.history, stale], newMessages: [stale], claim: old.claim },
          (error) => lostToo.push(error),
        );
        late.append({ type: 'RunStarted', threadId, runId: old.runId, sequence: 0 } as SequencedEvent);
        await eventually(() => lostToo.length > 0, `the run lost (${threadId})`);
        const thread = await store.thread(threadId);
        if (remade) expect(thread!.messages.map((m) => m.id)).toEqual(['m-5', 'reply-5']);
        else expect(thread).toBeUndefined();
      }

      // Followed by a run of the same id on this instance (the client sent its request again once the claim lapsed):
      // the late open is not taken for an open of its own record sent again.
      await runNewOnly(store, 'again', 1);
      const first = await store.claim('again', 'run-2', 'fresh-2');
      await direct.del(store.records.threadKey('again', 'lock'));
      const second = await store.claim('again', 'run-2', 'fresh-3');
      expect(second.runId).toBe(first.runId);
      const fresh = message('m-2', 'message 2');
      const input = { messages: [...second.history, fresh], newMessages: [fresh] };
      const again = store.open('again', second.runId, { ...input, claim: second.claim });
      again.append({ type: 'RunStarted', threadId: 'again', runId: second.runId, sequence: 0 } as SequencedEvent);
      await until(
        () => direct.hget(store.records.threadKey('again', 'run', second.runId), 'status'),
        (status) => status === 'running',
        'the second run to be opened',
      );
      expect(await store.records.openRecord('again', first.runId, { ...input, claim: first.claim }, false)).toBe(
        'superseded',
      );
      await record(again, answer('again', second.runId, 'reply-2', 'reply 2').slice(1), 1);
      expect((await store.thread('again'))!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1', 'm-2', 'reply-2']);
    } finally {
      direct.disconnect();
      await store.close();
    }
  });

  it('writes the whole transcript at the end of a run whose input repeats a message id (each id kept once)', async () => {
    const keyPrefix = `repeated-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const threadId = 'repeated';
    try {
      const { runId } = await store.claim(threadId, 'run-1', 'fresh-1');
      const input = [message('a', 'first'), message('b', 'second'), message('a', 'first again')];
      const log = store.open(threadId, runId, { messages: input, newMessages: input, extendsHistory: true });
      await record(log, answer(threadId, runId, 'reply', 'ok'));
      const thread = await store.thread(threadId);
      expect(thread!.messages.map((m) => m.id)).toEqual(['a', 'b', 'reply']);
    } finally {
      await store.close();
    }
  });

  it('reads a thread as it stands at one moment while its runs end one after another (copilotThread, restores)', async () => {
    const store = await startRedisStore({ url: redis.url });
    const threadId = 'moment';
    const runs = 40;
    /** Every message the thread will have, in order. */
    const all = Array.from({ length: runs }, (_, n) => [`m-${n}`, `reply-${n}`]).flat();
    let writing = true;
    try {
      // One client runs the thread again and again (each run sends its new message only)…
      const writer = (async () => {
        try {
          for (let n = 0; n < runs; n++) await runNewOnly(store, threadId, n);
        } finally {
          writing = false;
        }
      })();
      // …while another reads it as fast as it answers. Every read is a beginning of the thread, in order (a running
      // run shows its new message), and shows each run it calls finished with its message and its answer (read
      // apart, a run that ended between the reads showed finished without its answer).
      let reads = 0;
      const wrong: string[] = [];
      while (writing) {
        const thread = await store.thread(threadId);
        if (!thread) continue;
        reads++;
        const ids = thread.messages.map((m) => m.id);
        if (ids.some((id, i) => id !== all[i])) wrong.push(`out of order: ${ids.slice(-4).join(',')}`);
        for (const run of thread.runs) {
          const n = run.runId.replace(/^(run|fresh)-/, '');
          if (run.finishedAt !== null && !(ids.includes(`m-${n}`) && ids.includes(`reply-${n}`)))
            wrong.push(`${run.runId} finished, messages ${ids.slice(-4).join(',')}`);
        }
      }
      await writer;
      expect(wrong.slice(0, 5)).toEqual([]);
      expect(reads).toBeGreaterThan(runs);
      const thread = await store.thread(threadId);
      expect(thread!.messages.map((m) => m.id)).toEqual(all);
    } finally {
      await store.close();
    }
  });

  it("shows a running run's output when a later run id in the thread's list has no record (expired first)", async () => {
    const keyPrefix = `ghost-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const watcher = new Redis(redis.url);
    const threadId = 'ghost';
    try {
      await runNewOnly(store, threadId, 1);
      const { runId, history } = await store.claim(threadId, 'run-2', 'fresh-2');
      const next = message('m-2', 'message 2');
      const log = store.open(threadId, runId, {
        messages: [...history, next],
        newMessages: [next],
        extendsHistory: true,
      });
      const shown: SequencedEvent[] = [];
      log.deliverStored!({ stored: (events) => void shown.push(...events), failed: () => {} });
      // Half an answer, stored.
      answer(threadId, runId, 'reply-2', 'half')
        .slice(0, 3)
        .forEach((event, i) => log.append({ ...event, sequence: i } as SequencedEvent));
      while (shown.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
      await watcher.rpush(`${keyPrefix}{${threadId}}:runs`, 'expired-run');
      const thread = await store.thread(threadId);
      expect(thread!.messages.map((m) => m.id)).toEqual(['m-1', 'reply-1', 'm-2', 'reply-2']);
      expect(thread!.runs.at(-1)).toMatchObject({ runId, finishedAt: null });
      await record(log, answer(threadId, runId, 'reply-2', 'half').slice(3), 3);
    } finally {
      watcher.disconnect();
      await store.close();
    }
  });

  it("ends a join after a sequence the running run never reaches as soon as the run's end is published", async () => {
    // With a 10 s lease the quiet spell's read of the log comes after 3.3 s: the end must come from the live channel.
    const store = await startRedisStore({ url: redis.url });
    const threadId = 'past-end';
    try {
      const { runId } = await store.claim(threadId, 'run-1', 'fresh-1');
      const log = store.open(threadId, runId, { messages: [], newMessages: [] });
      const events = answer(threadId, runId, 'reply', 'short');
      log.append({ ...events[0], sequence: 0 } as SequencedEvent);
      while (!(await store.run(threadId, runId))) await new Promise((resolve) => setTimeout(resolve, 5));
      const taken: SequencedEvent[] = [];
      const reading = (async () => {
        for await (const event of store.follow(threadId, runId, 1000)) taken.push(event);
      })();
      // Subscribed (and its first read done) before the rest is stored and published.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await record(log, events.slice(1), 1);
      let ended = false;
      void reading.then(() => (ended = true));
      await eventually(() => ended, 'the join ended'); // 2 s at most
      expect(taken).toEqual([]);
    } finally {
      await store.close();
    }
  });

  describe('an instance that was only paused while another ended its run (its lease ran out)', () => {
    /** Instance A's run, with what A shows its clients; B sweeps A's runs once A stops beating. */
    async function pausedOwner(threadId: string, options: { maxRunsPerThread?: number } = {}) {
      const settings = { leaseMs: 400, keyPrefix: `paused-${threadId}:`, ...options };
      const a = await startRedisStore({ url: redis.url }, settings);
      const b = await startRedisStore({ url: redis.url }, settings);
      const { runId, log, append, shown, failures } = await startedRun(a, threadId);
      // A stops beating, as a process stopped by a long pause (GC, SIGSTOP, a blocked loop): B ends its run.
      (a as unknown as { leases: { stop(): void } }).leases.stop();
      await until(async () => (await b.run(threadId, runId))?.finishedAt, Boolean, 'B ended the run');
      return { a, b, runId, append, shown, failures, log };
    }

    it("is told INSTANCE_LOST, and shows none of its own events under the numbers of the run's ending", async () => {
      const { a, b, runId, append, shown, failures } = await pausedOwner('paused-goes-on');
      try {
        // A goes on: its next events would take the numbers B's ending events have.
        append({ type: 'TextMessageContent', messageId: 'm-1', content: 'after' });
        append({ type: 'TextMessageEnd', messageId: 'm-1', status: { code: 'Success' } });
        append({ type: 'RunFinished', status: RUN_SUCCESS });
        await until(
          async () => failures,
          (f) => f.length > 0,
          "A's clients told",
        );
        expect(failures).toEqual(['INSTANCE_LOST']);
        const stored = await b.records.readLog('paused-goes-on', runId);
        expect(stored.map((event) => event.type)).toEqual([
          'RunStarted',
          'TextMessageStart',
          'TextMessageContent',
          'TextMessageEnd',
          'RunFinished',
        ]);
        expect(stored.at(-1)).toMatchObject({ status: { details: { code: 'INSTANCE_LOST' } } });
        // Every event A's clients were shown is the stored event with that number.
        expect(shown.length).toBe(3);
        for (const event of shown) expect(stored[event.sequence]).toEqual(event);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('does not write back its run once newer runs have dropped it (maxRunsPerThread), nor touch their messages', async () => {
      const { a, b, append, failures } = await pausedOwner('paused-dropped', { maxRunsPerThread: 1 });
      try {
        // A new run on the thread (through B) drops the ended run: a thread keeps one run here.
        const { runId, history } = await b.claim('paused-dropped', 'run-2', 'fresh-2');
        const next = message('u-2', 'next');
        const log = b.open('paused-dropped', runId, {
          messages: [...history, next],
          newMessages: [next],
          extendsHistory: true,
        });
        await record(log, answer('paused-dropped', runId, 'reply-2', 'newer'));
        const before = await b.thread('paused-dropped');
        expect(before!.runs.map((r) => r.runId)).toEqual(['run-2']);
        append({ type: 'TextMessageContent', messageId: 'm-1', content: 'after' });
        await until(
          async () => failures,
          (f) => f.length > 0,
          "A's clients told",
        );
        expect(failures).toEqual(['RUN_STOPPED']);
        const after = await b.thread('paused-dropped');
        expect(after!.messages).toEqual(before!.messages);
        expect(after!.runs.map((r) => r.runId)).toEqual(['run-2']);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('does not write back a thread removed after its run was ended', async () => {
      const { a, b, append, failures } = await pausedOwner('paused-removed');
      try {
        expect(await b.remove('paused-removed', '')).toBe(true);
        append({ type: 'TextMessageContent', messageId: 'm-1', content: 'after' });
        await until(
          async () => failures,
          (f) => f.length > 0,
          "A's clients told",
        );
        expect(failures).toEqual(['RUN_STOPPED']); // stopError('deleted')
        expect(await b.thread('paused-removed')).toBeUndefined();
        expect(await b.records.redis.exists('paused-paused-removed:{paused-removed}:lock')).toBe(0);
        // A new run of the same id on the thread, later, is a new run under a fresh id.
        const claim = await b.claim('paused-removed', 'run-1', 'fresh-2');
        expect(claim.runId).toBe('fresh-2');
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  });

  it('takes no instance for lost within a lease of its connection coming back (a restarted Redis may have lost every lease), and does after', async () => {
    const leaseMs = 1_500;
    const settings = { leaseMs, keyPrefix: `quiet-${Math.random().toString(36).slice(2)}:` };
    const a = await startRedisStore({ url: redis.url }, settings);
    const b = await startRedisStore({ url: redis.url }, settings);
    const admin = new Redis(redis.url);
    const threadId = 'quiet';
    try {
      const { runId } = await startedRun(a, threadId);
      // B's connection drops and comes back, as after a Redis restart.
      const back = new Promise<number>((resolve) => b.records.redis.once('ready', () => resolve(Date.now())));
      await admin.client('KILL', 'ID', String(await b.records.redis.client('ID')));
      const reconnectedAt = await back;
      // A stops beating and its lease is gone, as a restarted Redis may have lost it (A alive would beat again soon).
      (a as unknown as { leases: { stop(): void } }).leases.stop();
      await admin.del(a.records.instanceKey(a.instanceId));
      // B sweeps every third of the lease, but takes A for lost only a lease after its connection came back.
      while (Date.now() < reconnectedAt + leaseMs * 0.6) {
        expect((await b.run(threadId, runId))?.finishedAt).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const ended = await until(
        () => b.run(threadId, runId),
        (run) => Boolean(run?.finishedAt),
        'B ends the run once the lease has passed',
      );
      expect(ended!.status).toMatchObject({ code: 'Failed', details: { code: 'INSTANCE_LOST' } });
    } finally {
      admin.disconnect();
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  it('ends a run whose record Redis rolled back behind what it showed, and that cannot write it again, after every number shown', async () => {
    const keyPrefix = `rolled-${Math.random().toString(36).slice(2)}:`;
    const store = await startRedisStore({ url: redis.url }, { keyPrefix });
    const admin = new Redis(redis.url);
    const threadId = 'rolled';
    try {
      const { runId, append, shown, shownUpTo, failures } = await startedRun(store, threadId);
      // A follower from the start (it reads the log, then the live channel).
      const live: SequencedEvent[] = [];
      const following = (async () => {
        for await (const event of store.follow(threadId, runId, -1)) live.push(event);
      })();
      // Awaited below; handled here too, so that a test failing before then leaves no rejection behind it.
      following.catch(() => {});
      // One event at a time, each taken by the follower before the next (a follower behind merges text chunks).
      const shownToAll = async (count: number) => {
        await shownUpTo(count);
        // (A 16 MB event takes a while to publish and parse on a busy machine.)
        await until(
          async () => live.length,
          (n) => n === count,
          'the follower to have what was shown',
          20_000,
        );
      };
      await shownToAll(3);
      // A snapshot of the run's record and log, to be restored later (Redis restarted from an older snapshot).
      const keys = [`${keyPrefix}{${threadId}}:run:${runId}`, `${keyPrefix}{${threadId}}:log:${runId}`];
      const snapshot = await Promise.all(keys.map((key) => admin.dumpBuffer(key)));
      // More than the run keeps to write its record again (16 MB of text), then a little more: all shown.
      append({ type: 'TextMessageContent', messageId: 'm-1', content: 'x'.repeat(16 * 1024 * 1024 + 1) });
      await shownToAll(4);
      append({ type: 'TextMessageContent', messageId: 'm-1', content: ' after' });
      await shownToAll(5);
      await Promise.all(keys.map((key, i) => admin.restore(key, 0, snapshot[i]!, 'REPLACE')));
      append({ type: 'TextMessageContent', messageId: 'm-1', content: ' lost' });
      await until(
        async () => failures,
        (f) => f.length > 0,
        'the clients told',
      );
      expect(failures).toEqual(['INSTANCE_LOST']);
      // Its clients are told first; the ending is written from what Redis kept right after.
      const stored = await until(
        () => store.records.readLog(threadId, runId),
        (log) => log.at(-1)?.type === 'RunFinished',
        'the ending stored',
      );
      expect(stored.map((event) => [event.type, event.sequence])).toEqual([
        ['RunStarted', 0],
        ['TextMessageStart', 1],
        ['TextMessageContent', 2],
        // Numbered after 5, the highest the run gave (3 and 4 were shown, 5 was not stored).
        ['TextMessageEnd', 6],
        ['RunFinished', 7],
      ]);
      expect(stored.at(-1)).toMatchObject({ status: { details: { code: 'INSTANCE_LOST' } } });
      // No number names two events: each shown one is the stored one with its number, if that is still stored.
      expect(shown.map((event) => event.sequence)).toEqual([0, 1, 2, 3, 4]);
      for (const event of shown) {
        const same = stored.find((other) => other.sequence === event.sequence);
        if (same) expect(same).toEqual(event);
      }
      // The follower from the start gets the ending after what it was shown; so does one joining after it.
      await following;
      expect(live.map((event) => event.sequence)).toEqual([0, 1, 2, 3, 4, 6, 7]);
      const joined: SequencedEvent[] = [];
      for await (const event of store.follow(threadId, runId, 4)) joined.push(event);
      expect(joined.map((event) => [event.type, event.sequence])).toEqual([
        ['TextMessageEnd', 6],
        ['RunFinished', 7],
      ]);
      // The thread is free.
      await expect(store.claim(threadId, 'run-2', 'fresh-2')).resolves.toMatchObject({ runId: expect.any(String) });
    } finally {
      admin.disconnect();
      await store.close();
    }
  }, 30_000);

  it('gives a follower every event of a run that was opened empty and stored whole between its two reads', async () => {
    const store = await startRedisStore({ url: redis.url });
    const threadId = 'empty';
    try {
      const { runId } = await store.claim(threadId, 'run-1', 'fresh-1');
      const log = store.open(threadId, runId, { messages: [], newMessages: [] });
      while (!(await store.run(threadId, runId))) await new Promise((resolve) => setTimeout(resolve, 5));
      // The follower finds the log empty, then looks the run up: meanwhile the run stores all of it in one batch.
      const lookUp = store.records.runNow.bind(store.records);
      jest.spyOn(store.records, 'runNow').mockImplementationOnce(async (...args) => {
        await record(log, answer(threadId, runId, 'reply', 'all at once'));
        return lookUp(...args);
      });
      const followed: SequencedEvent[] = [];
      for await (const event of store.follow(threadId, runId, -1)) followed.push(event);
      expect(followed.map((event) => event.type)).toEqual([
        'RunStarted',
        'TextMessageStart',
        'TextMessageContent',
        'TextMessageEnd',
        'RunFinished',
      ]);
    } finally {
      jest.restoreAllMocks();
      await store.close();
    }
  });
});
