import { describe, expect, it } from '@jest/globals';
import { fail } from 'node:assert';
import { continuesChunk, mergeEvents } from '../src/core/event-merge.js';
import type { SequencedEvent } from '../src/core/events.js';
import type { Message } from '../src/core/messages.js';
import type { RunStatus } from '../src/core/status.js';
import { LiveEvents } from '../src/threads/live-events.js';
import type { MemoryThreadStore } from '../src/threads/memory.js';
import type { RunRecord } from '../src/threads/store.js';
import { memoryStore } from './support/threads.js';

// The memory store keeps a finished run sealed (one flat string, src/threads/sealed-run.ts) and a thread's input as
// JSON: what readers get from it is what they got from the events and messages as they came, and what it counts is
// what it keeps.

const store = memoryStore;

type Event = SequencedEvent extends infer E ? (E extends SequencedEvent ? Omit<E, 'sequence'> : never) : never;

/** Events numbered from 0 in order, as a run emits them. */
const numbered = (events: Event[]): SequencedEvent[] =>
  events.map((event, sequence) => ({ ...event, sequence }) as SequencedEvent);

const text = (id: string, role: 'user' | 'assistant', content: string): Message => ({
  kind: 'text',
  id,
  role,
  content,
});

const failed: RunStatus = {
  code: 'Failed',
  reason: 'UNKNOWN_ERROR',
  details: { description: 'The model "fell" over.', code: 'UPSTREAM_ERROR', originalError: { status: 500 } },
};

/**
 * A run of two texts, an action call with streamed arguments and its result, agent states (one between two chunks
 * of a text, so that text is two stretches), quotes, newlines, an emoji split between two chunks, a chunk longer
 * than 35 characters; it fails.
 */
function richRun(threadId: string, runId: string): SequencedEvent[] {
  return numbered([
    { type: 'RunStarted', threadId, runId },
    { type: 'TextMessageStart', messageId: 'm1', parentMessageId: null, role: 'assistant' },
    { type: 'TextMessageContent', messageId: 'm1', content: 'Hel' },
    { type: 'TextMessageContent', messageId: 'm1', content: 'lo "wo' },
    { type: 'TextMessageContent', messageId: 'm1', content: 'rld"\n\\' },
    { type: 'TextMessageContent', messageId: 'm1', content: '\ud83d' },
    { type: 'TextMessageContent', messageId: 'm1', content: '\ude00 ok' },
    { type: 'TextMessageEnd', messageId: 'm1', status: { code: 'Success' } },
    { type: 'ActionExecutionStart', actionExecutionId: 'c1', actionName: 'search', parentMessageId: 'm1' },
    { type: 'ActionExecutionArgs', actionExecutionId: 'c1', args: '{"q":' },
    { type: 'ActionExecutionArgs', actionExecutionId: 'c1', args: '"long ' },
    { type: 'ActionExecutionArgs', actionExecutionId: 'c1', args: 'x'.repeat(40) },
    { type: 'ActionExecutionArgs', actionExecutionId: 'c1', args: '"}' },
    { type: 'ActionExecutionEnd', actionExecutionId: 'c1', status: { code: 'Success' } },
    { type: 'ActionExecutionResult', messageId: 'r1', actionExecutionId: 'c1', actionName: 'search', result: '[1,2]' },
    { type: 'TextMessageStart', messageId: 'm2', parentMessageId: null, role: 'assistant' },
    { type: 'TextMessageContent', messageId: 'm2', content: 'a' },
    { type: 'TextMessageContent', messageId: 'm2', content: 'b' },
    {
      type: 'AgentStateMessage',
      messageId: 's1',
      threadId,
      agentName: 'researcher',
      nodeName: 'n',
      runId,
      active: true,
      role: 'assistant',
      state: '{"step":1}',
      running: true,
    },
    { type: 'TextMessageContent', messageId: 'm2', content: 'c' },
    { type: 'TextMessageContent', messageId: 'm2', content: 'd€' },
    { type: 'TextMessageContent', messageId: 'm2', content: 'e' },
    { type: 'TextMessageEnd', messageId: 'm2', status: { code: 'Failed', reason: 'cut short' } },
    { type: 'TextMessageStart', messageId: 'm3', parentMessageId: null, role: 'assistant' },
    { type: 'TextMessageContent', messageId: 'm3', content: 'one chunk' },
    { type: 'TextMessageEnd', messageId: 'm3', status: { code: 'Success' } },
    { type: 'RunFinished', status: failed },
  ]);
}

/** The events with each stretch of consecutive chunks of one message merged (the last chunk's sequence). */
function merged(events: readonly SequencedEvent[]): SequencedEvent[] {
  const out: SequencedEvent[] = [];
  for (const event of events) {
    const last = out[out.length - 1];
    if (last && continuesChunk(last, event)) out[out.length - 1] = mergeEvents(last, event, false)!;
    else out.push(event);
  }
  return out;
}

async function replay(s: MemoryThreadStore, threadId: string, runId: string, after: number) {
  const out: SequencedEvent[] = [];
  for await (const event of s.follow(threadId, runId, after)) out.push(event);
  return out;
}

/** Claims, opens and appends a run; returns its id. */
async function record(
  s: MemoryThreadStore,
  threadId: string,
  runId: string,
  input: Message[],
  newMessages: Message[],
  events: SequencedEvent[],
) {
  const claim = await s.claim(threadId, runId, `fresh-${runId}`);
  const log = s.open(threadId, claim.runId, { messages: input, newMessages });
  for (const event of events) log.append(event);
  return claim;
}

describe('a finished run in the memory store', () => {
  it('replays after every sequence exactly the rest of its events, chunks merged', async () => {
    const s = store();
    const events = richRun('rich', 'r1');
    await record(s, 'rich', 'r1', [], [], events);
    for (let after = -1; after < events.length; after++) {
      expect(await replay(s, 'rich', 'r1', after)).toStrictEqual(merged(events.filter((e) => e.sequence > after)));
    }
    // The texts come whole, an emoji split between two chunks too, and a reader that had half of it gets the rest.
    const whole = await replay(s, 'rich', 'r1', -1);
    expect(whole[2]).toMatchObject({ content: 'Hello "world"\n\\😀 ok', sequence: 6 });
    expect((await replay(s, 'rich', 'r1', 5))[0]).toMatchObject({ content: '\ude00 ok', sequence: 6 });
    expect((await replay(s, 'rich', 'r1', 10))[0]).toMatchObject({ args: `${'x'.repeat(40)}"}`, sequence: 12 });
    // What a reader does with what it was given changes nothing kept.
    (whole[2] as { content: string }).content = 'changed';
    expect((await replay(s, 'rich', 'r1', -1))[2]).toMatchObject({ content: 'Hello "world"\n\\😀 ok' });
    await s.close();
  });

  it('gives a reader joining a running run after any sequence exactly the rest, chunks merged, then what comes', async () => {
    const s = store();
    const events = richRun('live', 'r1');
    const log = s.open('live', (await s.claim('live', 'r1', 'f1')).runId, { messages: [], newMessages: [] });
    const running = events.slice(0, -3);
    for (const event of running) log.append(event);
    /** What a reader after `after` has been given so far (the feed is left once it has nothing more queued). */
    async function joined(after: number) {
      const feed = s.follow('live', 'r1', after);
      const out: SequencedEvent[] = [];
      for (let took = true; took;) {
        took = false;
        feed.request({
          take: (event) => (took = out.push(event) > 0),
          end: () => {},
          fail: (error) => fail(String(error)),
        });
      }
      await feed.return();
      return out;
    }
    for (let after = -1; after < running.length + 1; after++) {
      expect(await joined(after)).toStrictEqual(merged(running.filter((e) => e.sequence > after)));
    }
    // A client resuming after 3 has 0 to 3: it is given up to the stretch that holds 4 (m1's chunks, whole).
    expect((await s.readUpTo('live', 'r1', 3)).map((event) => event.sequence)).toEqual([0, 1, 6]);
    expect(await s.readUpTo('live', 'no-such-run', 3)).toEqual([]);
    // A thread read may leave out what the running run has produced (a connect replays it from its events).
    expect((await s.thread('live'))!.messages.map((message) => message.id)).toEqual(['m1', 'c1', 'r1', 'm2', 'm3']);
    expect((await s.thread('live', { runningOutput: false }))!.messages).toEqual([]);
    // m3's single chunk is kept as it came; what comes later reaches a reader that joined in the middle of m2.
    const feed = s.follow('live', 'r1', 19);
    for (const event of events.slice(-3)) log.append(event);
    const rest: SequencedEvent[] = [];
    for await (const event of feed) rest.push(event);
    expect(rest).toStrictEqual(merged(events.filter((e) => e.sequence > 19)));
    expect(rest[0]).toMatchObject({ content: 'd€e', sequence: 21 });
    // Once finished, its output is the thread's whatever the read asks.
    const ids = (await s.thread('live', { runningOutput: false }))!.messages.map((message) => message.id);
    expect(ids).toEqual(['m1', 'c1', 'r1', 'm2', 'm3']);
    await s.close();
  });

  it('makes a stretch only of chunks numbered one after another', () => {
    const live = new LiveEvents();
    const chunk = (content: string, sequence: number): SequencedEvent => ({
      type: 'TextMessageContent',
      messageId: 'm',
      content,
      sequence,
    });
    for (const event of [chunk('a', 2), chunk('b', 3), chunk('d', 5), chunk('e', 6)]) live.push(event);
    expect(live.after(3)).toEqual([chunk('de', 6)]);
    expect(live.after(5)).toEqual([chunk('e', 6)]);
    expect(live.after(-1)).toEqual([chunk('ab', 3), chunk('de', 6)]);
  });

  it('gives the same transcript, records and agent states once sealed as it did from its events', async () => {
    const s = store();
    const u1 = text('u1', 'user', 'Find "x"');
    const first = numbered([
      { type: 'RunStarted', threadId: 't', runId: 'r1' },
      { type: 'TextMessageStart', messageId: 'a1', parentMessageId: null, role: 'assistant' },
      { type: 'TextMessageContent', messageId: 'a1', content: 'Sure' },
      { type: 'TextMessageContent', messageId: 'a1', content: ', here.' },
      { type: 'TextMessageEnd', messageId: 'a1', status: { code: 'Success' } },
      { type: 'RunFinished', status: { code: 'Success' } },
    ]);
    const claim = await s.claim('t', 'r1', 'f1');
    expect(claim.history).toStrictEqual([]);
    const log = s.open('t', 'r1', { messages: [u1], newMessages: [u1] });
    for (const event of first.slice(0, -1)) log.append(event);
    const running = await s.thread('t');
    log.append(first[first.length - 1]);
    const finished = await s.thread('t');
    expect(finished!.messages).toStrictEqual(running!.messages);
    expect(finished!.messages).toStrictEqual([u1, text('a1', 'assistant', 'Sure, here.')]);
    const record1: RunRecord = {
      runId: 'r1',
      status: { code: 'Success' },
      lastSequence: 5,
      startedAt: running!.runs[0].startedAt,
      finishedAt: expect.any(Date) as unknown as Date,
      newMessages: [u1],
    };
    expect(finished!.runs).toStrictEqual([record1]);
    expect(await s.run('t', 'r1')).toStrictEqual(finished!.runs[0]);
    expect(finished!.runs[0].finishedAt!.getTime()).toBeGreaterThanOrEqual(finished!.runs[0].startedAt.getTime());

    // The next run's claim gets that transcript; its input replaces the thread's, the first run keeps its messages.
    const second = await s.claim('t', 'r2', 'f2');
    expect(second.history).toStrictEqual(finished!.messages);
    const u2 = text('u2', 'user', 'And €?');
    const events = richRun('t', 'r2');
    const log2 = s.open('t', 'r2', { messages: [...second.history, u2], newMessages: [u2] });
    for (const event of events.slice(0, -1)) log2.append(event);
    const running2 = await s.thread('t');
    log2.append(events[events.length - 1]);
    const finished2 = await s.thread('t');
    expect(finished2!.messages).toStrictEqual(running2!.messages);
    expect(finished2!.messages.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'm1', 'c1', 'r1', 'm2', 'm3']);
    expect(finished2!.messages[3]).toMatchObject({ content: 'Hello "world"\n\\😀 ok' });
    expect(finished2!.messages[4]).toMatchObject({ arguments: `{"q":"long ${'x'.repeat(40)}"}` });
    expect(finished2!.runs).toStrictEqual([
      record1,
      {
        runId: 'r2',
        status: failed,
        lastSequence: events.length - 1,
        startedAt: running2!.runs[1].startedAt,
        finishedAt: expect.any(Date),
        newMessages: [u2],
      },
    ]);
    expect(await s.run('t')).toStrictEqual(finished2!.runs[1]);
    expect(finished2!.agentStates).toStrictEqual(running2!.agentStates);
    expect(finished2!.agentStates).toEqual([expect.objectContaining({ agentName: 'researcher', runId: 'r2' })]);
    await s.close();
  });

  it('is counted by its text, about a byte per character, not by its chunks', async () => {
    /** What a store holding one thread of one finished run of `chunks` chunks making `content` counts. */
    async function counted(content: string, chunks: number) {
      const s = store();
      const size = content.length / chunks;
      const events = numbered([
        { type: 'RunStarted', threadId: 't', runId: 'r' },
        { type: 'TextMessageStart', messageId: 'm', parentMessageId: null, role: 'assistant' },
        ...Array.from({ length: chunks }, (_, i): Event => {
          return { type: 'TextMessageContent', messageId: 'm', content: content.slice(i * size, (i + 1) * size) };
        }),
        { type: 'TextMessageEnd', messageId: 'm', status: { code: 'Success' } },
        { type: 'RunFinished', status: { code: 'Success' } },
      ]);
      await record(s, 't', 'r', [text('u', 'user', 'hi')], [text('u', 'user', 'hi')], events);
      const bytes = s.size.bytes;
      await s.close();
      return bytes;
    }
    const base = await counted('ab'.repeat(1000), 10);
    // Twice the text: about 2,000 bytes more.
    const twice = (await counted('ab'.repeat(2000), 10)) - base;
    expect(twice).toBeGreaterThanOrEqual(2000);
    expect(twice).toBeLessThan(2100);
    // The same text in 1,000 chunks: a byte for each chunk's length (it was 96 and 4 per chunk).
    const tokens = (await counted('ab'.repeat(1000), 1000)) - base;
    expect(tokens).toBeGreaterThanOrEqual(950);
    expect(tokens).toBeLessThan(1100);
    // Text beyond Latin-1 is kept two bytes a character.
    const wide = (await counted('a€'.repeat(1000), 10)) - base;
    expect(wide).toBeGreaterThanOrEqual(2000);
    // The whole, ids and all (the thread's message ids too), is its text and about a kilobyte.
    expect(base).toBeGreaterThan(2000);
    expect(base).toBeLessThan(3100);
  });

  it('counts what a thread keeps now, whatever its earlier runs kept', async () => {
    const s = store({ maxRunsPerThread: 2 });
    const counts: number[] = [];
    for (let i = 0; i < 8; i++) {
      const u = text(`u${i}`, 'user', 'the same question');
      // Every other run brings its whole input as new (the input and its new messages are one string until the next
      // run), the others nothing new.
      await record(s, 'many', `r${i}`, [u], i % 2 === 0 ? [u] : [], richRun('many', `r${i}`));
      counts.push(s.size.bytes);
    }
    // Two runs kept, alike every other run: the count comes back to the same figure, drifting neither way.
    expect(counts.slice(2)).toEqual([counts[2], counts[3], counts[2], counts[3], counts[2], counts[3]]);
    expect(counts[3]).not.toBe(counts[2]);
    await s.close();
  });
});
