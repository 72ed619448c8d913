import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { SequencedEvent } from '../src/core/events.js';
import type { Message } from '../src/core/messages.js';
import { RUN_SUCCESS } from '../src/core/status.js';
import { idsToCheck } from '../src/threads/message-ids.js';
import type { RedisRunLog } from '../src/threads/redis/run-log.js';
import type { Claim, RunLog, ThreadStore } from '../src/threads/store.js';
import { RedisServer, startRedisStore } from './support/redis.js';
import { memoryStore } from './support/threads.js';

// A claim for a request that repeats a stored message (a client that sends the whole conversation, as the stock
// GraphQL client does) answers the transcript's message ids, not the transcript: the run's conversation is the
// request's, and the ids are all it needs (which messages are new). Both stores, the same assertions.

const message = (id: string, content = id): Message => ({ kind: 'text', id, role: 'user', content });

/** A run's whole log: an answer `messageId` to whatever it was given. */
const answer = (runId: string, messageId: string): SequencedEvent[] => [
  { type: 'RunStarted', threadId: 't', runId, sequence: 0 },
  { type: 'TextMessageStart', messageId, parentMessageId: null, role: 'assistant', sequence: 1 },
  { type: 'TextMessageContent', messageId, content: `answer ${messageId}`, sequence: 2 },
  { type: 'TextMessageEnd', messageId, status: { code: 'Success' }, sequence: 3 },
  { type: 'RunFinished', status: RUN_SUCCESS, sequence: 4 },
];

async function written(log: RunLog): Promise<void> {
  await (log as Partial<RedisRunLog>).settled;
}

const sorted = (ids: Iterable<string>) => [...ids].sort();

let redis: RedisServer;
beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(() => redis.close());
/** Stores and connections a test opened, closed after it whether it passed or not. */
const opened: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((each) => each.close()));
});
async function started<T extends { close(): Promise<unknown> }>(store: T | Promise<T>): Promise<T> {
  opened.push(await store);
  return store;
}

interface Kind {
  name: string;
  start(): Promise<ThreadStore>;
}
const kinds: Kind[] = [
  { name: 'the memory store', start: () => started(memoryStore()) },
  { name: 'the Redis store', start: () => started(startRedisStore({ url: redis.url })) },
];

describe.each(kinds)('a claim in $name', ({ start }) => {
  let run = 0;
  /** Claims `threadId` for a request of `messages`, and records the run: `input` given, answered `reply`. */
  async function runOn(
    store: ThreadStore,
    threadId: string,
    request: Message[],
    reply: string,
  ): Promise<{ claim: Claim; input: Message[] }> {
    run += 1;
    const claim = await store.claim(threadId, `run-${run}`, `fresh-${run}`, { checkIds: idsToCheck(request) });
    const had = claim.storedIds ?? new Set(claim.history.map((m) => m.id));
    const repeats = request.some((m) => had.has(m.id));
    const input = repeats ? request : [...claim.history, ...request];
    const newMessages = input.filter((m) => !had.has(m.id));
    const log = store.open(threadId, claim.runId, { messages: input, newMessages, extendsHistory: !repeats });
    for (const event of answer(claim.runId, reply)) log.append(event);
    await written(log);
    return { claim, input };
  }

  it("answers a request that repeats a stored message the transcript's ids, whichever way the runs before were sent", async () => {
    const store = await start();
    // A first run (its input whole), then one sent only its new message (the store joins it to what it holds).
    expect((await runOn(store, 't', [message('u1')], 'a1')).claim.history).toEqual([]);
    const second = await runOn(store, 't', [message('u2')], 'a2');
    expect(second.claim.storedIds).toBeUndefined();
    expect(second.claim.history.map((m) => m.id)).toEqual(['u1', 'a1']);
    // A whole conversation: the ids of both runs' inputs and answers, no transcript.
    const whole = [message('u1'), message('a1'), message('u2'), message('a2'), message('u3')];
    const third = await runOn(store, 't', whole, 'a3');
    expect(third.claim.history).toEqual([]);
    expect(sorted(third.claim.storedIds!)).toEqual(['a1', 'a2', 'u1', 'u2']);
    // Then only new messages again: the transcript, whole, after a run that sent everything.
    const fourth = await runOn(store, 't', [message('u4')], 'a4');
    expect(fourth.claim.history.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
    // Any one stored id among the first sixteen is enough, and the ids are the transcript's only.
    const fifth = await runOn(store, 't', [message('new-1'), message('a3'), message('u5')], 'a5');
    expect(sorted(fifth.claim.storedIds!)).toEqual(['a1', 'a2', 'a3', 'a4', 'u1', 'u2', 'u3', 'u4']);
    const thread = await store.thread('t');
    expect(thread!.messages.map((m) => m.id)).toEqual(['new-1', 'a3', 'u5', 'a5']);
    expect(thread!.runs.at(-1)!.newMessages!.map((m) => m.id)).toEqual(['new-1', 'u5']);
    // The ids are those of the transcript the whole conversation made, not added to the ones before: u1 is gone.
    const u1 = await store.claim('t', 'run-u1', 'fresh-u1', { checkIds: ['u1'] });
    expect(u1.storedIds).toBeUndefined();
    expect(u1.history.map((m) => m.id)).toEqual(['new-1', 'a3', 'u5', 'a5']);
    store.release('t', u1.runId);
    // A request that repeats only the latest answer (the run's output, not its input) is taken as whole too.
    const sixth = await runOn(store, 't', [message('a5'), message('u6')], 'a6');
    expect(sorted(sixth.claim.storedIds!)).toEqual(['a3', 'a5', 'new-1', 'u5']);
  });

  it('answers the transcript when none of the first sixteen ids is stored, or when the request has no message', async () => {
    const store = await start();
    await runOn(store, 'late', [message('u1')], 'a1');
    const request = [...Array.from({ length: 16 }, (_, i) => message(`x${i}`)), message('u1')];
    const { claim } = await runOn(store, 'late', request, 'a2');
    // Told apart from there (withHistory): the request repeats u1, so it is the conversation.
    expect(claim.storedIds).toBeUndefined();
    expect(claim.history.map((m) => m.id)).toEqual(['u1', 'a1']);
    const none = await store.claim('late', 'run-none', 'fresh-none', { checkIds: [] });
    expect(none.storedIds).toBeUndefined();
    expect(none.history.map((m) => m.id)).toEqual([...request.map((m) => m.id), 'a2']);
  });

  it('keeps no ids for a transcript with a NUL in an id, and keeps them again once it has none', async () => {
    const store = await start();
    const odd = message('u\u00001');
    await runOn(store, 'nul', [odd], 'a1');
    const { claim } = await runOn(store, 'nul', [odd, message('a1'), message('u2')], 'a2');
    expect(claim.storedIds).toBeUndefined();
    expect(claim.history.map((m) => m.id)).toEqual(['u\u00001', 'a1']);
    // The odd id is still in the transcript: the next run that sends only what is new gets no ids either.
    const next = await runOn(store, 'nul', [message('u3')], 'a3');
    expect(next.claim.history.map((m) => m.id)).toEqual(['u\u00001', 'a1', 'u2', 'a2']);
    expect((await store.claim('nul', 'run-x', 'fresh-x', { checkIds: ['a1'] })).storedIds).toBeUndefined();
    store.release('nul', 'run-x');
    // A whole conversation without it.
    await runOn(store, 'nul', [message('a1'), message('u4')], 'a4');
    const last = await store.claim('nul', 'run-y', 'fresh-y', { checkIds: ['u4'] });
    expect(sorted(last.storedIds!)).toEqual(['a1', 'a4', 'u4']);
  });
});

describe('the ids kept in Redis', () => {
  it('are never taken for a transcript written without them (an earlier version): the claim answers the transcript', async () => {
    const keyPrefix = `ids-${Math.random().toString(36).slice(2, 8)}:`;
    const store = await started(startRedisStore({ url: redis.url }, { keyPrefix }));
    const direct = new Redis(redis.url);
    opened.push({ close: async () => direct.disconnect() });
    const meta = `${keyPrefix}{t}:meta`;
    expect(await direct.exists(meta)).toBe(0);
    const first = await store.claim('t', 'r1', 'f1', {});
    const log = store.open('t', first.runId, { messages: [message('u1')], newMessages: [message('u1')] });
    for (const event of answer(first.runId, 'a1')) log.append(event);
    await written(log);
    expect(await direct.hget(meta, 'ids')).toBe('\u0000u1\u0000a1\u0000');
    // An earlier version's run ended the thread with a transcript of its own and left the ids as they were.
    const transcript = JSON.stringify([message('u1'), message('a1'), message('u2'), message('a2')]);
    await direct.hset(meta, 'transcript', transcript);
    const claim = await store.claim('t', 'r2', 'f2', { checkIds: ['u1'] });
    expect(claim.storedIds).toBeUndefined();
    expect(claim.history.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2']);
    // This version's run after it, sent only its new message: what it adds is joined, but no ids kept for the whole.
    const input = [...claim.history, message('u3')];
    const next = store.open('t', claim.runId, { messages: input, newMessages: [message('u3')], extendsHistory: true });
    for (const event of answer(claim.runId, 'a3')) next.append(event);
    await written(next);
    expect(await direct.hget(meta, 'ids')).toBeNull();
    expect((await store.claim('t', 'r3', 'f3', { checkIds: ['u1'] })).history).toHaveLength(6);
  });
});
