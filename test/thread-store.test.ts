import { describe, expect, it, jest } from '@jest/globals';
import type { SequencedEvent } from '../src/core/events.js';
import type { Message } from '../src/core/messages.js';
import { RUN_SUCCESS } from '../src/core/status.js';
import { ThreadService, withHistory } from '../src/engine/thread-service.js';
import type { RunRequest } from '../src/engine/request.js';
import { Run } from '../src/engine/run.js';
import { GatewayError } from '../src/core/errors.js';
import type { EventConsumer } from '../src/core/events.js';
import { silentLogger } from './support/harness.js';
import { EventFeed } from '../src/threads/feed.js';
import { closingEvents } from '../src/threads/log.js';
import type { MemoryThreadStore } from '../src/threads/memory.js';
import type { RunInput } from '../src/threads/store.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { eventually, gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { THREAD, gql, memoryStore } from './support/threads.js';

// The in-memory store's bounds and lifetime, and the pure parts of threads: history completion,
// replay compaction, the events that end a run cut short.

const text = (id: string, role: 'user' | 'assistant' | 'system', content: string): Message => ({
  kind: 'text',
  id,
  role,
  content,
});

/** A whole run's events: a text of `chunks` chunks of `size` characters. */
function runEvents(runId: string, chunks: number, size = 10): SequencedEvent[] {
  let sequence = 0;
  const events: SequencedEvent[] = [{ type: 'RunStarted', threadId: 't', runId, sequence: sequence++ }];
  events.push({
    type: 'TextMessageStart',
    messageId: `m-${runId}`,
    parentMessageId: null,
    role: 'assistant',
    sequence: sequence++,
  });
  for (let i = 0; i < chunks; i++)
    events.push({
      type: 'TextMessageContent',
      messageId: `m-${runId}`,
      content: 'x'.repeat(size),
      sequence: sequence++,
    });
  events.push({ type: 'TextMessageEnd', messageId: `m-${runId}`, status: { code: 'Success' }, sequence: sequence++ });
  events.push({ type: 'RunFinished', status: RUN_SUCCESS, sequence });
  return events;
}

const store = memoryStore;

async function record(
  s: MemoryThreadStore,
  threadId: string,
  input: Message[],
  events: SequencedEvent[],
): Promise<string> {
  const { runId } = await s.claim(threadId, `run-${threadId}-${Math.random()}`, `fresh-${Math.random()}`);
  const log = s.open(threadId, runId, { messages: input, newMessages: input });
  for (const event of events) log.append(event);
  return runId;
}

describe('the in-memory thread store', () => {
  it('keeps at most maxThreads threads, dropping the least recently used first', async () => {
    const s = store({ maxThreads: 50 });
    for (let i = 0; i < 500; i++) await record(s, `t${i}`, [text(`u${i}`, 'user', 'hi')], runEvents(`r${i}`, 3));
    expect(s.size.threads).toBe(50);
    expect(await s.thread('t0')).toBeUndefined();
    expect(await s.thread('t449')).toBeUndefined();
    expect((await s.thread('t450'))?.messages).toHaveLength(2);
    expect(await s.thread('t499')).toBeDefined();
    await s.close();
  });

  it('keeps about maxBytes at most, and a thread that was read recently outlives older ones', async () => {
    const s = store({ maxBytes: 200_000 });
    await record(s, 'keep', [text('k', 'user', 'hello')], runEvents('rk', 10));
    for (let i = 0; i < 200; i++) {
      await record(s, `big${i}`, [text(`b${i}`, 'user', 'y'.repeat(5_000))], runEvents(`rb${i}`, 50, 20));
      if (i % 10 === 0) await s.thread('keep'); // reading a thread keeps it fresh
    }
    expect(s.size.bytes).toBeLessThanOrEqual(200_000);
    expect(s.size.threads).toBeLessThan(40);
    expect(await s.thread('big0')).toBeUndefined();
    expect(await s.thread('keep')).toBeDefined();
    await s.close();
  });

  it('never drops a thread whose run is going on, however far over its bounds', async () => {
    const s = store({ maxThreads: 2 });
    const { runId } = await s.claim('busy', 'r-busy', 'f');
    const log = s.open('busy', runId, { messages: [text('u', 'user', 'hi')], newMessages: [] });
    log.append({ type: 'RunStarted', threadId: 'busy', runId, sequence: 0 });
    for (let i = 0; i < 20; i++) await record(s, `other${i}`, [], runEvents(`o${i}`, 1));
    expect((await s.run('busy'))?.status).toEqual({ code: 'Pending' });
    await expect(s.claim('busy', 'r2', 'f2')).rejects.toMatchObject({
      code: 'THREAD_BUSY',
      details: { threadId: 'busy', runId: 'r-busy' },
    });
    await s.close();
  });

  it('forgets threads older than their time to live, and claims that were never opened', async () => {
    const s = store({ ttlSeconds: 1, claimTimeoutMs: 50 });
    await record(s, 'old', [], runEvents('r-old', 1));
    await s.claim('claimed', 'r-claim', 'f');
    await expect(s.claim('claimed', 'r-again', 'f2')).rejects.toMatchObject({ code: 'THREAD_BUSY' });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await s.thread('old')).toBeUndefined();
    // The claim ran out: the thread is free.
    await expect(s.claim('claimed', 'r-again', 'f2')).resolves.toMatchObject({ runId: 'r-again' });
    await s.close();
  });

  it('counts the threads it lets go of by why (its bounds, their age), not those deleted on request', async () => {
    // Fake timers: the store's clock (Date.now) and its sweep (setInterval) move only when the test says so.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
    try {
      const s = store({ maxThreads: 2, ttlSeconds: 10 });
      for (const id of ['a', 'b', 'c']) await record(s, id, [text(`u-${id}`, 'user', 'hi')], runEvents(`r-${id}`, 2));
      expect(s.census()).toEqual({ threads: 2, bytes: s.size.bytes, dropped: { bound: 1, expired: 0 } });
      expect(await s.remove('b', '')).toBe(true);
      expect(s.census().dropped).toEqual({ bound: 1, expired: 0 });
      expect(s.census().threads).toBe(1);

      // Past its time to live, a thread read is found gone (and counted) before any sweep.
      jest.setSystemTime(Date.now() + 15_000);
      expect(await s.thread('c')).toBeUndefined();
      expect(s.census()).toEqual({ threads: 0, bytes: 0, dropped: { bound: 1, expired: 1 } });

      // The sweep (every ttlSeconds when under a minute) lets go of one no one asks for.
      await record(s, 'd', [], runEvents('r-d', 1));
      jest.advanceTimersByTime(25_000);
      expect(s.census()).toEqual({ threads: 0, bytes: 0, dropped: { bound: 1, expired: 2 } });
      // Deleting what is already gone counts nothing again.
      expect(await s.remove('d', '')).toBe(false);
      expect(s.census().dropped).toEqual({ bound: 1, expired: 2 });
      await s.close();
    } finally {
      jest.useRealTimers();
    }
  });

  it('keeps a finished run merged, and still replays exactly what follows any sequence in it', async () => {
    const s = store();
    const events = runEvents('r', 6, 1).map((event, i) =>
      event.type === 'TextMessageContent' ? { ...event, content: String(i) } : event,
    );
    const runId = await record(s, 'packed', [], events);
    const replay = async (after: number) => {
      const out: SequencedEvent[] = [];
      for await (const event of s.follow('packed', runId, after)) out.push(event);
      return out;
    };
    const full = events
      .filter((e) => e.type === 'TextMessageContent')
      .map((e: any) => e.content)
      .join('');
    expect(full).toBe('234567');
    for (let after = -1; after < events.length - 1; after++) {
      const rest = await replay(after);
      const expected = events.filter((e) => e.sequence > after);
      expect(rest.map((e: any) => e.content ?? '').join('')).toBe(expected.map((e: any) => e.content ?? '').join(''));
      expect(rest.at(-1)).toEqual(events.at(-1));
      expect(rest[0]?.sequence).toBeGreaterThan(after);
    }
    // Stored as five events, not ten.
    expect((await replay(-1)).map((e) => e.type)).toEqual([
      'RunStarted',
      'TextMessageStart',
      'TextMessageContent',
      'TextMessageEnd',
      'RunFinished',
    ]);
    await s.close();
  });

  /** A run's events whose answer is message `messageId`. */
  const answer = (runId: string, messageId: string): SequencedEvent[] =>
    runEvents(runId, 1).map((event) => ('messageId' in event ? { ...event, messageId } : event));

  /** Opens a run, spying on JSON.stringify: the lengths of the arrays made JSON by the open. */
  const openCounted = (s: MemoryThreadStore, threadId: string, runId: string, input: RunInput) => {
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      const log = s.open(threadId, runId, input);
      return {
        log,
        made: stringify.mock.calls
          .map(([value]) => value)
          .filter(Array.isArray)
          .map((a) => a.length),
      };
    } finally {
      stringify.mockRestore();
    }
  };

  /**
   * Run `n` of a thread: the claim's transcript and one new message `u<n>` (`extendsHistory`, as ThreadService says
   * when the request has only new messages), or, with `whole`, the same input said not to extend it; its answer is
   * message `answerId`. Resolves with the lengths of the arrays its open made JSON.
   */
  const extend = async (
    s: MemoryThreadStore,
    threadId: string,
    n: number,
    answerId: string,
    whole = false,
    latin1 = false,
  ) => {
    const { runId, history } = await s.claim(threadId, `run-${n}`, `fresh-${n}`);
    const next = text(`u${n}`, 'user', latin1 ? `question ${n} é` : `question ${n} €`);
    const input = { messages: [...history, next], newMessages: [next], extendsHistory: !whole };
    const { log, made } = openCounted(s, threadId, runId, input);
    for (const event of answer(runId, answerId)) log.append(event);
    return made;
  };

  /** A first run that sends its conversation whole, a message id repeated in it (kept once). */
  const first = async (s: MemoryThreadStore, threadId: string) => {
    const whole = [text('s', 'system', 'be brief'), text('u', 'user', 'hi'), text('s', 'system', 'again')];
    const { runId } = await s.claim(threadId, 'run-0', 'fresh-0');
    const log = s.open(threadId, runId, { messages: whole, newMessages: whole });
    for (const event of answer(runId, 'a0')) log.append(event);
  };

  it('keeps the whole transcript of runs that send only their new messages, without making the history JSON again', async () => {
    const s = store();
    await first(s, 'long');
    // Its transcript is not its input and output joined (the repeated id went): the next input is made JSON whole.
    expect(await extend(s, 'long', 1, 'a1')).toEqual([1, 4]);
    // Then only the new message each time.
    expect(await extend(s, 'long', 2, 'a2')).toEqual([1]);
    // An answer that repeats an earlier message's id: kept once, where it first was.
    expect(await extend(s, 'long', 3, 'u1')).toEqual([1]);
    expect(await extend(s, 'long', 4, 'a4')).toEqual([1]);
    const thread = await s.thread('long');
    expect(thread!.messages.map((message) => message.id)).toEqual([
      's',
      'u',
      'a0',
      'u1',
      'a1',
      'u2',
      'a2',
      'u3',
      'u4',
      'a4',
    ]);
    expect(thread!.messages[0]).toEqual(text('s', 'system', 'be brief'));
    expect(thread!.messages[3]).toEqual(text('u1', 'user', 'question 1 €'));
    expect(thread!.runs.at(-1)!.newMessages).toEqual([text('u4', 'user', 'question 4 €')]);
    await s.close();
  });

  it('counts a thread joined from its parts as one made whole, and keeps the same transcript', async () => {
    // Text beyond Latin-1 (two bytes a character), and Latin-1 only (one).
    for (const latin1 of [false, true]) {
      const joined = store();
      const whole = store();
      for (const s of [joined, whole]) {
        await first(s, 't');
        for (let n = 1; n <= 4; n++) await extend(s, 't', n, `a${n}`, s === whole, latin1);
      }
      expect(joined.size.bytes).toBe(whole.size.bytes);
      expect((await joined.thread('t'))!.messages).toEqual((await whole.thread('t'))!.messages);
      await Promise.all([joined.close(), whole.close()]);
    }
  });

  it('makes the whole input JSON at an open whose claim ran out and was made again (another claim read last)', async () => {
    const s = store({ claimTimeoutMs: 1 });
    await first(s, 't');
    expect(await extend(s, 't', 1, 'a1')).toEqual([1, 4]);
    // A claim whose run has not opened when its time runs out, and the same run id claimed again (a retry).
    const { runId, history } = await s.claim('t', 'run-2', 'fresh-2');
    await new Promise((resolve) => setTimeout(resolve, 10));
    const again = await s.claim('t', 'run-2', 'fresh-2');
    expect(again.runId).toBe(runId);
    // The first claim's run opens: it may not take what the second claim read for its own.
    const next = text('u2', 'user', 'question 2');
    const { log, made } = openCounted(s, 't', runId, {
      messages: [...history, next],
      newMessages: [next],
      extendsHistory: true,
    });
    expect(made).toEqual([1, history.length + 1]);
    for (const event of answer(runId, 'a2')) log.append(event);
    expect((await s.thread('t'))!.messages.map((message) => message.id)).toEqual([
      's',
      'u',
      'a0',
      'u1',
      'a1',
      'u2',
      'a2',
    ]);
    await s.close();
  });

  it('keeps maxRunsPerThread runs per thread', async () => {
    const s = store({ maxRunsPerThread: 3 });
    for (let i = 0; i < 5; i++) await record(s, 'many', [], runEvents(`r${i}`, 1));
    expect((await s.thread('many'))?.runs).toHaveLength(3);
    await s.close();
  });
});

describe('history completion (withHistory)', () => {
  const history = [
    text('s', 'system', 'old instructions'),
    text('u1', 'user', 'one'),
    text('a1', 'assistant', 'reply'),
  ];

  it('takes a request that repeats any stored message as the whole conversation', () => {
    const request = [text('s2', 'system', 'new'), text('u1', 'user', 'one'), text('u2', 'user', 'two')];
    expect(withHistory(history, request)).toBe(request);
    // Regenerating: the client leaves the last reply out on purpose.
    const regenerate = [text('u1', 'user', 'one')];
    expect(withHistory(history, regenerate)).toBe(regenerate);
  });

  it('puts the stored conversation before a request of new messages only, its system messages replaced by the request’s', () => {
    expect(withHistory(history, [text('u2', 'user', 'two')]).map((m) => m.id)).toEqual(['s', 'u1', 'a1', 'u2']);
    expect(withHistory(history, [text('s2', 'system', 'new'), text('u2', 'user', 'two')]).map((m) => m.id)).toEqual([
      'u1',
      'a1',
      's2',
      'u2',
    ]);
    expect(withHistory([], [text('u2', 'user', 'two')]).map((m) => m.id)).toEqual(['u2']);
  });
});

describe('replays', () => {
  it('merge consecutive chunks of one message without losing or reordering anything', async () => {
    const events = runEvents('r', 5, 2);
    // What a joiner's feed gives when the whole log is pushed before it reads.
    const feed = new EventFeed(-1);
    for (const event of events) feed.push(event);
    const compacted: SequencedEvent[] = [];
    for await (const event of feed) compacted.push(event);
    expect(compacted.map((e) => e.type)).toEqual([
      'RunStarted',
      'TextMessageStart',
      'TextMessageContent',
      'TextMessageEnd',
      'RunFinished',
    ]);
    expect(compacted[2]).toMatchObject({ content: 'xxxxxxxxxx', sequence: 6 });
    // The log itself is untouched.
    expect(events[2]).toMatchObject({ content: 'xx', sequence: 2 });
  });

  it('end a run cut short: open messages and calls Failed, then the terminal status, numbered after the log', () => {
    const log = runEvents('r', 2).slice(0, 4); // started, message open, two chunks
    log.push({
      type: 'ActionExecutionStart',
      actionExecutionId: 'c1',
      actionName: 'a',
      parentMessageId: null,
      sequence: 4,
    });
    const status = {
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: { description: 'lost', code: 'INSTANCE_LOST', originalError: {} },
    } as const;
    expect(closingEvents(log, status)).toEqual([
      { type: 'TextMessageEnd', messageId: 'm-r', status: { code: 'Failed', reason: 'lost' }, sequence: 5 },
      { type: 'ActionExecutionEnd', actionExecutionId: 'c1', status: { code: 'Failed', reason: 'lost' }, sequence: 6 },
      { type: 'RunFinished', status, sequence: 7 },
    ]);
  });
});

describe("a feed's held bytes (what waits for its reader, EventQueue.heldBytes)", () => {
  it('grow while its reader is behind, merged chunks included, and come back to nothing as it takes them', async () => {
    const feed = new EventFeed(-1);
    const text = (sequence: number, content: string): SequencedEvent =>
      ({ type: 'TextMessageContent', messageId: 'm', content, sequence }) as SequencedEvent;
    feed.push({ type: 'RunStarted', threadId: 't', runId: 'r', sequence: 0 } as SequencedEvent);
    feed.push({ type: 'TextMessageStart', messageId: 'm', role: 'assistant', sequence: 1 } as SequencedEvent);
    const started = feed.heldBytes;
    expect(started).toBeGreaterThan(0);
    for (let sequence = 2; sequence < 12; sequence++) feed.push(text(sequence, 'x'.repeat(1000)));
    // Ten chunks of 1,000 characters, merged into one event: each counted as it came.
    expect(feed.heldBytes).toBeGreaterThanOrEqual(started + 10_000);
    await feed.next();
    await feed.next();
    expect(feed.heldBytes).toBeGreaterThanOrEqual(10_000);
    const merged = await feed.next();
    expect((merged.value as { content: string }).content).toHaveLength(10_000);
    expect(feed.heldBytes).toBe(0);
    // A reader that leaves lets go of what waited for it.
    feed.push(text(12, 'y'.repeat(5000)));
    expect(feed.heldBytes).toBeGreaterThanOrEqual(5000);
    await feed.return();
    expect(feed.heldBytes).toBe(0);
  });
});

describe('a gateway flooded with threads', () => {
  const { start } = gatewaysPerTest();

  it('holds its in-memory bounds: the newest threads are kept, the oldest dropped', async () => {
    const fake = new FakeOpenAI();
    const baseURL = await fake.start();
    try {
      const gateway = await start({
        adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
        threads: { maxThreads: 25 },
      });
      const mutation =
        'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId status { ... on BaseResponseStatus { code } } } }';
      for (let wave = 0; wave < 10; wave++) {
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            gql(gateway.url, mutation, {
              data: runInput([userMessage('[tokens=2]')], { threadId: `flood-${wave * 20 + i}` }),
            }),
          ),
        );
      }
      const kept = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          gql(gateway.url, THREAD, { threadId: `flood-${i}` }).then((a) => a.data.copilotThread !== null),
        ),
      );
      expect(kept.filter(Boolean).length).toBe(25);
      expect(kept.slice(0, 150).some(Boolean)).toBe(false);
    } finally {
      await fake.stop();
    }
  });
});

describe('/ready', () => {
  const { start } = gatewaysPerTest();

  it('is ready while listening, with the in-memory store', async () => {
    const gateway = await start();
    const response = await fetch(new URL('/ready', gateway.url));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ready',
      checks: { listening: true, leaving: false, draining: false, threadStore: { kind: 'memory', reachable: true } },
    });
  });
});

describe('a run admitted after its claim lapsed', () => {
  const request = (runId: string): RunRequest => ({
    threadId: 'slow',
    runId,
    messages: [text('u1', 'user', 'hi')],
    frontendTools: [],
    context: [],
    forwardedParameters: {},
    properties: {},
    agentSession: null,
    agentStates: [],
    metaEvents: [],
  });

  it('is refused THREAD_BUSY, and the run that took the thread meanwhile, under the same run id, is the only one', async () => {
    // A claim of 1.2 s: with the service's 1 s margin, it counts as lapsed after 0.2 s.
    const s = store({ claimTimeoutMs: 1_200 });
    const service = new ThreadService(s, { onBusy: 'refuse', onStoreFailure: 'serve' }, silentLogger);
    const slow = await service.admit(request('same'), silentLogger);
    // A slow onBeforeRequest hook or agent start; meanwhile the client sends its request again.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const again = await service.admit(request('same'), silentLogger);
    expect(again.request.runId).toBe('same');
    const late = new Run({ threadId: 'slow', runId: 'same', logger: silentLogger });
    expect(() => slow.record(late)).toThrow(expect.objectContaining({ code: 'THREAD_BUSY' }));
    slow.release(); // as the launcher does after a refusal: the claim it lost is not freed
    const run = new Run({ threadId: 'slow', runId: 'same', logger: silentLogger });
    again.record(run);
    await run.start(async ({ writer }) => {
      const id = writer.textStart();
      writer.textContent(id, 'the only answer');
      writer.textEnd(id);
    });
    const thread = await s.thread('slow');
    expect(thread!.runs.map((r) => r.runId)).toEqual(['same']);
    expect(thread!.messages.map((m) => (m as { content?: string }).content)).toEqual(['hi', 'the only answer']);
    await s.close();
  });

  it('is recorded when admitted within its claim', async () => {
    const s = store({ claimTimeoutMs: 60_000 });
    const service = new ThreadService(s, { onBusy: 'refuse', onStoreFailure: 'serve' }, silentLogger);
    const admitted = await service.admit(request('quick'), silentLogger);
    expect(() => admitted.record(new Run({ threadId: 'slow', runId: 'quick', logger: silentLogger }))).not.toThrow();
    await s.close();
  });
});

describe("the thread service's follow, read pushed (joinCopilotRun over WebSocket)", () => {
  function consumer(follow: any) {
    const taken: SequencedEvent[] = [];
    const failed: unknown[] = [];
    let ends = 0;
    const c: EventConsumer<SequencedEvent> = {
      take: (event) => {
        taken.push(event);
        follow.request(c); // as a pushed stream asks again once its result is written
      },
      end: () => void ends++,
      fail: (error) => void failed.push(error),
    };
    return { c, taken, failed, ends: () => ends };
  }
  const follows = (service: ThreadService) => (service as unknown as { follows: Set<unknown> }).follows.size;

  it("hands the events over and lets the feed go at the run's end", async () => {
    const s = store();
    const service = new ThreadService(s, { onBusy: 'refuse', onStoreFailure: 'serve' }, silentLogger);
    const runId = await record(s, 'joined', [text('u', 'user', 'hi')], runEvents('r-joined', 3));
    const follow = service.follow('joined', runId, -1);
    expect(typeof follow.request).toBe('function');
    expect(follows(service)).toBe(1);
    const reader = consumer(follow);
    follow.request!(reader.c);
    expect(reader.taken.map((event) => event.type)).toEqual([
      'RunStarted',
      'TextMessageStart',
      'TextMessageContent',
      'TextMessageEnd',
      'RunFinished',
    ]);
    expect(reader.taken[2]).toMatchObject({ content: 'x'.repeat(30) }); // the stored run, its chunks packed
    expect(reader.ends()).toBe(1);
    expect(follows(service)).toBe(0);
    await s.close();
  });

  it('ends a join after a sequence the running run never reaches when the run ends, with nothing taken', async () => {
    const s = store();
    const { runId } = await s.claim('past', 'r-past', 'f');
    const log = s.open('past', runId, { messages: [text('u', 'user', 'hi')], newMessages: [] });
    const events = runEvents(runId, 3);
    log.append(events[0]);
    const feed = s.follow('past', runId, 1000);
    const taken: SequencedEvent[] = [];
    const reading = (async () => {
      for await (const event of feed) taken.push(event);
    })();
    for (const event of events.slice(1)) log.append(event);
    // Before the fix the feed dropped RunFinished (its sequence is below the join's) and waited forever.
    let ended = false;
    void reading.then(() => (ended = true));
    await eventually(() => ended, 'the join ended'); // 2 s at most
    expect(taken).toEqual([]);
    // The same join made after the end ends at once, as before.
    const after: SequencedEvent[] = [];
    for await (const event of s.follow('past', runId, 1000)) after.push(event);
    expect(after).toEqual([]);
    await s.close();
  });

  it('lets the feed go when it fails (a shutdown), and when the reader leaves', async () => {
    const s = store();
    const service = new ThreadService(s, { onBusy: 'refuse', onStoreFailure: 'serve' }, silentLogger);
    const { runId } = await s.claim('live', 'r-live', 'f');
    const log = s.open('live', runId, { messages: [text('u', 'user', 'hi')], newMessages: [] });
    log.append({ type: 'RunStarted', threadId: 'live', runId, sequence: 0 });
    const failing = service.follow('live', runId, -1);
    const leaving = service.follow('live', runId, -1);
    const a = consumer(failing);
    const b = consumer(leaving);
    failing.request!(a.c);
    leaving.request!(b.c);
    expect(follows(service)).toBe(2);
    await leaving.return!();
    expect(follows(service)).toBe(1);
    service.endFollows(new GatewayError('SHUTTING_DOWN', 'The gateway is shutting down.'));
    expect(a.failed).toHaveLength(1);
    expect(follows(service)).toBe(0);
    log.append({ type: 'TextMessageStart', messageId: 'm', parentMessageId: null, role: 'assistant', sequence: 1 });
    expect(a.taken).toHaveLength(1);
    expect(b.taken).toHaveLength(1);
    expect([b.ends(), b.failed.length]).toEqual([0, 0]);
    await s.close();
  });
});
