import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { ThreadService } from '../src/engine/thread-service.js';
import { SlowReaderGuard } from '../src/transports/slow-readers.js';
import type { ModelAdapter, ModelOutput } from '../src/adapters/adapter.js';
import WebSocket from 'ws';
import { STOCK_DOCUMENT } from './support/fuzz-documents.js';
import {
  gatewaysPerTest,
  metricValue,
  runInput,
  silentLogger,
  userMessage,
  type RunningGateway,
} from './support/harness.js';
import { close, listen } from './support/loopback.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { failOnProcessErrors } from './support/process-errors.js';
import { memoryStore, until } from './support/threads.js';

// A client that sends a short request for a long thread's replay (AG-UI connect) and never reads holds that replay in
// the gateway's memory for as long as its connection stays open; enough of them ended the process (a heap out of
// memory, found from outside). maxBufferedOutputMb bounds what the process holds for readers that do not read.

failOnProcessErrors();

// The demo model: its answer is short, whatever it is asked.
const { start } = gatewaysPerTest({ maxBodyBytes: 64 * 1024 * 1024 });
/** One user message this long: its thread's replay is one AG-UI frame about as long. */
const LONG = 24 * 1024 * 1024;
const opened: Socket[] = [];
const fake = new FakeOpenAI();
let fakeUrl = '';
beforeAll(async () => {
  fakeUrl = await fake.start();
});
afterAll(async () => {
  for (const socket of opened) socket.destroy();
  await fake.stop();
});

const agUiInput = (threadId: string, runId: string, messages: unknown[]) =>
  JSON.stringify({ threadId, runId, state: {}, tools: [], context: [], forwardedProps: {}, messages });

/** A thread with one run whose input is one long user message. */
function longThread(g: RunningGateway, threadId: string): Promise<void> {
  return finishedRuns(g, threadId, 1, LONG);
}

/** `count` finished runs on `threadId`, each of one user message `size` characters long. */
async function finishedRuns(g: RunningGateway, threadId: string, count: number, size: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const response = await fetch(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: agUiInput(threadId, `run-${index}`, [
        { id: `${threadId}-${index}`, role: 'user', content: 'y'.repeat(size) },
      ]),
    });
    expect(response.status).toBe(200);
    // (A boolean: a failure would print the whole long text.)
    expect((await response.text()).includes('RUN_FINISHED')).toBe(true);
  }
}

/**
 * A raw connection to `url`'s host that sends a GET of its path, or a POST of the JSON `body` to it, and, `paused` (the
 * default), reads nothing of the answer.
 */
function rawRequest(url: string, { body, accept = 'text/event-stream', paused = true }: RawOptions = {}): Socket {
  const { hostname: host, port, pathname } = new URL(url);
  const socket = connect({ host, port: Number(port) });
  opened.push(socket);
  if (paused) socket.pause();
  else socket.on('data', () => undefined);
  socket.on('error', () => {});
  socket.write(
    body === undefined
      ? `GET ${pathname} HTTP/1.1\r\nhost: ${host}:${port}\r\n\r\n`
      : `POST ${pathname} HTTP/1.1\r\nhost: ${host}:${port}\r\ncontent-type: application/json\r\n` +
          `accept: ${accept}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return socket;
}

interface RawOptions {
  body?: string;
  accept?: string;
  paused?: boolean;
}

/**
 * An AG-UI connect to `threadId` on a raw connection that does not read; `readRest()` reads what it is sent from then
 * on, to its end, and resolves with how many bytes that was.
 */
function pausedConnect(g: RunningGateway, threadId: string): { readRest: () => Promise<number> } {
  const socket = rawRequest(`${g.url}/agent/default/connect`, { body: agUiInput(threadId, 'connect', []) });
  const readRest = () =>
    new Promise<number>((resolve) => {
      let bytes = 0;
      socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
      socket.once('close', () => resolve(bytes));
      socket.resume();
    });
  return { readRest };
}

/**
 * A model that answers 32 MB of text in 128 chunks, each in a turn of its own (or `paceMs` apart), unless its run is
 * ended first.
 */
class LongAnswer implements ModelAdapter {
  readonly name = 'long-answer';
  chunks = 0;

  constructor(private readonly paceMs = 0) {}

  async stream(_request: unknown, output: ModelOutput, signal?: AbortSignal): Promise<void> {
    const id = output.textStart('long');
    const chunk = 'w'.repeat(256 * 1024);
    for (let i = 0; i < 128 && !signal?.aborted; i++) {
      await new Promise((resolve) => (this.paceMs ? setTimeout(resolve, this.paceMs) : setImmediate(resolve)));
      output.textContent(id, chunk);
      this.chunks++;
    }
    output.textEnd(id);
  }
}

/** The stock client's mutation on a raw connection that never reads its answer. */
function pausedMutation(g: RunningGateway): void {
  const body = JSON.stringify({
    operationName: 'generateCopilotResponse',
    query: STOCK_DOCUMENT,
    variables: { data: runInput([userMessage('a long answer')]) },
  });
  rawRequest(g.url, { body, accept: 'multipart/mixed; deferSpec=20220824, application/json' });
}

/** An AG-UI run on a raw connection that never reads its answer. */
function pausedAgUiRun(g: RunningGateway): void {
  const body = agUiInput('long-run', 'run-1', [{ id: 'u-1', role: 'user', content: 'a long answer' }]);
  rawRequest(`${g.url}/agent/default/run`, { body });
}

/** A subscription over graphql-ws (copilotRun by default) whose client stops reading once it has subscribed. */
async function pausedSubscription(
  g: RunningGateway,
  query = 'subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename ' +
    '... on TextMessageContentEvent { content } } }',
  variables: Record<string, unknown> = { data: runInput([userMessage('a long answer')]) },
): Promise<void> {
  const client = new WebSocket(g.wsUrl, 'graphql-transport-ws');
  await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject));
  client.on('error', () => {});
  client.send(JSON.stringify({ type: 'connection_init' }));
  await new Promise((resolve) => client.once('message', resolve));
  client.send(
    JSON.stringify({
      id: '1',
      type: 'subscribe',
      payload: { query, variables },
    }),
  );
  const socket = (client as unknown as { _socket: Socket })._socket;
  opened.push(socket);
  socket.pause();
}

/** copilotThread of some thread, as a GraphQL client reads it. */
async function threadRead(
  g: RunningGateway,
): Promise<{ errors?: { message: string; extensions?: { code?: string } }[] }> {
  const response = await fetch(g.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'query($id: ID!) { copilotThread(threadId: $id) { threadId } }',
      variables: { id: 'x' },
    }),
  });
  return (await response.json()) as never;
}

/** Waits for copilotThread to be refused OVERLOADED, for the output held for clients that do not read. */
async function threadReadRefused(g: RunningGateway): Promise<void> {
  const refused = await until(
    () => threadRead(g),
    (answer) => answer.errors?.[0]?.extensions?.code === 'OVERLOADED',
    'a read of a thread refused',
    20_000,
  );
  expect(refused.errors![0].message).toMatch(/holds too much output for clients that are not reading/);
}

const droppedCount = (g: RunningGateway): Promise<number> =>
  metricValue(g.url, 'copilot_gateway_slow_readers_dropped_total');

describe('readers that do not read (maxBufferedOutputMb)', () => {
  it("closes a client that never reads a long thread's replay, refusing whole-thread reads meanwhile, and serves readers", async () => {
    const g = await start({ maxBufferedOutputMb: 8 });
    await longThread(g, 'long');
    expect(await droppedCount(g)).toBe(0);
    // A client asks for the replay (about 24 MB, more than the kernel's buffers take) and never reads it.
    const paused = pausedConnect(g, 'long');
    // While the gateway holds it (five seconds before it counts as not reading), a read of a whole thread is refused.
    await threadReadRefused(g);
    expect(
      await until(
        () => droppedCount(g),
        (count) => count >= 1,
        'the paused connection closed',
        20_000,
      ),
    ).toBe(1);
    expect((await threadRead(g)).errors).toBeUndefined();
    // A client that reads gets the whole replay, though it is larger than the budget: it is taking it.
    const response = await fetch(`${g.url}/agent/default/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: agUiInput('long', 'connect', []),
    });
    const replay = await response.text();
    expect(replay.length).toBeGreaterThan(LONG);
    expect(replay.includes('RUN_FINISHED')).toBe(true);
    expect(await droppedCount(g)).toBe(1);
    // The paused client's connection was closed by the gateway: read now, it ends with what the kernel's buffers
    // held, far from the whole replay.
    expect(await paused.readRest()).toBeLessThan(LONG);
  }, 60_000);

  it("counts the runs a connect has yet to replay as its connection's output, from the moment it reads the thread", async () => {
    const g = await start({ maxBufferedOutputMb: 8 });
    // Sixteen runs of 2 MB each: the replay is written a run at a time, each waiting for the last to be taken, so what
    // a connection that does not read holds unsent is about one run; the other runs' messages wait in memory.
    const RUNS = 16;
    await finishedRuns(g, 'many-runs', RUNS, 2 * 1024 * 1024);
    const paused = pausedConnect(g, 'many-runs');
    // Unsent, far less than the budget (the kernel's buffers take several runs); kept to be sent, far more.
    await threadReadRefused(g);
    await until(
      () => droppedCount(g),
      (count) => count === 1,
      'the paused connection closed',
      20_000,
    );
    // Closed, its runs no longer count.
    expect((await threadRead(g)).errors).toBeUndefined();
    expect(await paused.readRest()).toBeLessThan(RUNS * 2 * 1024 * 1024);
  }, 90_000);

  it("stops counting a connect's runs as it writes them: a reader following a live run holds none of them", async () => {
    const g = await start({
      maxBufferedOutputMb: 8,
      adapter: new OpenAIAdapter({ baseURL: fakeUrl, apiKey: 'k', maxRetries: 0 }),
    });
    // Eight finished runs of 2 MB each, then one that goes on for a while.
    const RUNS = 8;
    await finishedRuns(g, 'followed', RUNS, 2 * 1024 * 1024);
    const live = await fetch(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: agUiInput('followed', 'live', [{ id: 'live-1', role: 'user', content: '[tokens=300] [delay=100]' }]),
    });
    // A connect that reads: the whole replay (16 MB), then the live run as it goes.
    const connect = await fetch(`${g.url}/agent/default/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: agUiInput('followed', 'connect', []),
    });
    const reader = connect.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let from = 0;
    let finished = 0;
    while (finished < RUNS) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += decoder.decode(value, { stream: true });
      for (let at = text.indexOf('RUN_FINISHED', from); at >= 0; at = text.indexOf('RUN_FINISHED', from)) {
        finished++;
        from = at + 1;
      }
    }
    // Following the live run now, it holds none of the runs it wrote: a read of a thread is served.
    expect((await threadRead(g)).errors).toBeUndefined();
    await reader.cancel();
    await live.body!.cancel();
  }, 90_000);

  it('serves a pipelined request only once the answers before it are sent (never, if the connection goes first)', async () => {
    // A model that takes its time: the first pipelined request streams a run for a few seconds.
    const g = await start({
      maxBufferedOutputMb: 8,
      adapter: new OpenAIAdapter({ baseURL: fakeUrl, apiKey: 'k', maxRetries: 0 }),
    });
    await longThread(g, 'long-pipelined');
    const reads = async () => {
      const text = await (await fetch(new URL('/metrics', g.url))).text();
      const line = /^copilot_gateway_thread_store_operations_total\{[^}]*operation="thread"[^}]*\} (\d+)/m.exec(text);
      return Number(line?.[1] ?? 0);
    };
    const before = await reads();
    // On one connection, sent at once and never read: a run that streams for a while, then three connects to the
    // long thread. Node keeps the answers after the first in memory until the first is sent, where the budget
    // cannot see them: they must not be made before their turn.
    const { hostname: host, port, pathname } = new URL(g.url);
    const post = (route: string, body: string) =>
      `POST ${pathname}/agent/default/${route} HTTP/1.1\r\nhost: ${host}:${port}\r\n` +
      `content-type: application/json\r\naccept: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n` +
      body;
    const slowRun = post(
      'run',
      agUiInput('slow', 'slow-run', [{ id: 'slow-1', role: 'user', content: '[tokens=60] [delay=50]' }]),
    );
    const socket = connect({ host, port: Number(port) });
    opened.push(socket);
    socket.pause();
    socket.on('error', () => {});
    socket.write(slowRun + post('connect', agUiInput('long-pipelined', 'connect', [])).repeat(3));
    await until(
      () => droppedCount(g),
      (count) => count === 1,
      'the connection closed',
      30_000,
    );
    // The run was served, then the first connect (one thread read); the others' turn never came.
    expect((await reads()) - before).toBe(1);
  }, 60_000);

  it('leaves alone a client that has not read while what is held stays under the budget', async () => {
    const g = await start({ maxBufferedOutputMb: 200 });
    await longThread(g, 'long-under');
    const paused = pausedConnect(g, 'long-under');
    // Longer than several checks.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await droppedCount(g)).toBe(0);
    // It is still open, and gets the whole replay once it reads.
    const rest = paused.readRest();
    opened.at(-1)!.end();
    expect(await rest).toBeGreaterThan(LONG);
  }, 60_000);

  it('refuses reads of a whole thread while over the budget, before closing the client (not yet seen stalled)', async () => {
    // The guard on a plain server that answers 24 MB at once; checked by hand (`admit`), never by its timer.
    const server = createServer((_req, res) => res.end('z'.repeat(LONG)));
    const dropped: number[] = [];
    const logs: { msg: string; dropped?: number }[] = [];
    const guard = new SlowReaderGuard(server, {
      budgetBytes: 8 * 1024 * 1024,
      logger: pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line)) }),
      onDropped: (count) => dropped.push(count),
      checkEveryMs: 3_600_000,
      stallMs: 0,
    });
    const origin = await listen(server);
    const { port } = new URL(origin);
    const socket = connect({ host: '127.0.0.1', port: Number(port) });
    opened.push(socket);
    socket.pause();
    socket.on('error', () => {});
    try {
      expect(guard.admit()).toBe(true);
      socket.write(`GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Held, and over the budget: the next read of a thread is refused; the holder is not closed on one sighting
      // (then on any later one that finds it has taken nothing for stallMs, here 0; five seconds in the gateway).
      expect(guard.admit()).toBe(false);
      expect(dropped).toEqual([]);
      // Seen again with nothing taken: closed, and the budget is free again.
      expect(guard.admit()).toBe(true);
      expect(dropped).toEqual([1]);
      expect(logs.map((line) => [line.msg.slice(0, 19), line.dropped])).toEqual([['closed connections ', 1]]);
      // A second one closed within ten seconds of that line is counted, not logged (an attack is not a log flood).
      const second = connect({ host: '127.0.0.1', port: Number(port) });
      opened.push(second);
      second.pause();
      second.on('error', () => {});
      second.write(`GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(guard.admit()).toBe(false);
      expect(guard.admit()).toBe(true);
      expect(dropped).toEqual([1, 1]);
      expect(logs).toHaveLength(1);
    } finally {
      guard.stop();
      socket.destroy();
      await close(server);
    }
  });

  it('closes, while over the budget, a reader that would take too long at its pace, and not one that keeps up', async () => {
    // A stream of 32 KB pieces, each written once the last is taken (as a replay is), its rest declared kept.
    const TOTAL = 24 * 1024 * 1024;
    const PIECE = 32 * 1024;
    const server = createServer((_req, res) => {
      const kept = guard.keep(res, TOTAL);
      let sent = 0;
      const next = (): void => {
        while (sent < TOTAL && !res.destroyed) {
          sent += PIECE;
          kept.release(PIECE);
          if (!res.write('z'.repeat(PIECE))) return void res.once('drain', next);
        }
        res.end();
      };
      next();
    });
    const dropped: number[] = [];
    const guard = new SlowReaderGuard(server, {
      budgetBytes: 1024 * 1024,
      logger: silentLogger,
      onDropped: (count) => dropped.push(count),
      checkEveryMs: 100,
      // Judged by its pace alone: never as stalled.
      stallMs: 3_600_000,
      paceMs: 1_000,
      maxDrainMs: 5_000,
    });
    const origin = await listen(server);
    const { port } = new URL(origin);
    try {
      // 64 KB twice a second: 24 MB would take over three minutes.
      const slow = connect({ host: '127.0.0.1', port: Number(port) });
      opened.push(slow);
      slow.pause();
      slow.on('error', () => {});
      let slowRead = 0;
      let allowance = 0;
      slow.on('data', (chunk: Buffer) => {
        slowRead += chunk.length;
        allowance -= chunk.length;
        if (allowance <= 0) slow.pause();
      });
      const trickle = setInterval(() => {
        allowance = 64 * 1024;
        slow.resume();
      }, 500);
      slow.write(`GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
      // Meanwhile (over the budget all along) a reader that keeps up gets all of its answer.
      const fast = await fetch(origin);
      expect((await fast.arrayBuffer()).byteLength).toBe(TOTAL);
      // (Its client sees the end only once it has read what its kernel still holds.)
      await until(
        async () => dropped.length,
        (count) => count === 1,
        'the slow reader closed',
        20_000,
      );
      clearInterval(trickle);
      expect(dropped).toEqual([1]);
      expect(slowRead).toBeGreaterThan(0);
      expect(slowRead).toBeLessThan(TOTAL);
    } finally {
      guard.stop();
      await close(server);
    }
  }, 60_000);

  it('counts what an answer keeps to write later until it is released or the answer ends (SlowReaderGuard.keep)', async () => {
    const answers: { release: (bytes: number) => void; end: () => void }[] = [];
    // Each answer keeps 24 MB to write later and writes nothing until told.
    const server = createServer((_req, res) => {
      const kept = guard.keep(res, LONG);
      answers.push({ release: kept.release, end: () => res.end('done') });
    });
    const dropped: number[] = [];
    const guard = new SlowReaderGuard(server, {
      budgetBytes: 8 * 1024 * 1024,
      logger: silentLogger,
      onDropped: (count) => dropped.push(count),
      checkEveryMs: 3_600_000,
      stallMs: 0,
    });
    const origin = await listen(server);
    try {
      const first = fetch(origin).then((response) => response.text());
      await until(
        async () => answers.length,
        (count) => count === 1,
        'the first answer',
        10_000,
      );
      expect(guard.admit()).toBe(false);
      // Nothing unsent: the client is not the one holding up, so it is never closed (a follower waiting for a live
      // run's next event holds nothing either).
      expect(guard.admit()).toBe(false);
      expect(dropped).toEqual([]);
      answers[0].release(LONG - 1024 * 1024);
      expect(guard.admit()).toBe(true);
      answers[0].end();
      expect(await first).toBe('done');
      // An answer that ends gives back what it still kept.
      const second = fetch(origin).then((response) => response.text());
      await until(
        async () => answers.length,
        (count) => count === 2,
        'the second answer',
        10_000,
      );
      expect(guard.admit()).toBe(false);
      answers[1].end();
      expect(await second).toBe('done');
      expect(guard.admit()).toBe(true);
      expect(dropped).toEqual([]);
    } finally {
      guard.stop();
      await close(server);
    }
  });

  it("counts what an answer's runs produced for a connection that takes nothing, and only then (holding)", async () => {
    // Each answer holds a run that has said 24 MB (its views keep it) and writes 16 MB, more than the kernel takes.
    const run = { heldBytes: LONG };
    const server = createServer((req, res) => {
      if (req.url === '/runs') guard.holding(res).hold(run);
      res.write('z'.repeat(16 * 1024 * 1024));
    });
    const dropped: number[] = [];
    const guard = new SlowReaderGuard(server, {
      budgetBytes: 32 * 1024 * 1024,
      logger: silentLogger,
      onDropped: (count) => dropped.push(count),
      checkEveryMs: 3_600_000,
      stallMs: 0,
    });
    const origin = await listen(server);
    const paused = (path: string): Socket => rawRequest(`${origin}${path}`);
    try {
      // Without runs: what it holds is its unsent output alone, under the budget, seen stalled or not.
      const plain = paused('/plain');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(guard.admit()).toBe(true);
      expect(guard.admit()).toBe(true);
      expect(dropped).toEqual([]);
      plain.destroy();
      // With its run: first seen, not yet stalled, not counted; seen again having taken nothing, its run's output
      // counts, the total is over the budget, and it is closed.
      const holding = paused('/runs');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(guard.admit()).toBe(true);
      expect(guard.admit()).toBe(true);
      expect(dropped).toEqual([1]);
      holding.destroy();
      // A reader that reads is never charged for its run: it holds nothing unsent.
      const reading = fetch(`${origin}/runs`);
      const response = await reading;
      const reader = response.body!.getReader();
      let read = 0;
      while (read < 16 * 1024 * 1024) read += (await reader.read()).value!.length;
      expect(guard.admit()).toBe(true);
      expect(guard.admit()).toBe(true);
      expect(dropped).toEqual([1]);
      await reader.cancel();
    } finally {
      guard.stop();
      await close(server);
    }
  });

  it("charges a connection for its answer's runs once it stops taking, not while it reads nor after the answer let go", async () => {
    // Each answer holds a run that has said 24 MB and streams 1 MB pieces as fast as its client takes them; `/released`
    // lets go of its run at once, as an answer that is over does.
    const server = createServer((req, res) => {
      const output = guard.output(res.socket);
      output.hold({ heldBytes: LONG });
      if (req.url === '/released') output.release();
      res.on('close', () => output.release());
      const piece = 'p'.repeat(1024 * 1024);
      const more = (): void => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    });
    const dropped: number[] = [];
    const guard = new SlowReaderGuard(server, {
      budgetBytes: 8 * 1024 * 1024,
      logger: silentLogger,
      onDropped: (count) => dropped.push(count),
      checkEveryMs: 100,
      stallMs: 500,
    });
    const origin = await listen(server);
    const client = (path: string): Socket => rawRequest(`${origin}${path}`, { paused: false });
    try {
      const reading = client('/runs');
      // Reading all along: judged by what is unsent for it, never by its run.
      for (let i = 0; i < 10; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(guard.admit()).toBe(true);
      }
      expect(dropped).toEqual([]);
      // It stops reading: half a second later its run counts, and it is closed.
      reading.pause();
      await until(
        async () => dropped.length,
        (count) => count === 1,
        'the reader that stopped closed',
        10_000,
      );
      // An answer that let go of its run is judged by its unsent output alone, however long it takes nothing.
      client('/released').pause();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(dropped).toEqual([1]);
    } finally {
      guard.stop();
      await close(server);
    }
  }, 30_000);

  it('closes a graphql-ws client that stops reading a run it joined (joinCopilotRun)', async () => {
    // A run that takes some four seconds to say its 32 MB, read by its own client.
    const g = await start({ adapter: new LongAnswer(30), maxBufferedOutputMb: 8 });
    const own = fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed; deferSpec=20220824, application/json' },
      body: JSON.stringify({
        operationName: 'generateCopilotResponse',
        query: STOCK_DOCUMENT,
        variables: { data: { ...runInput([userMessage('a long answer')]), threadId: 'long-join' } },
      }),
    }).then((response) => response.text());
    // Joined while it runs, by a client that stops reading: what comes meanwhile waits in its feed.
    await until(
      () => metricValue(g.url, 'copilot_gateway_active_runs'),
      (runs) => runs === 1,
      'the run started',
      10_000,
    );
    await pausedSubscription(
      g,
      'subscription { joinCopilotRun(threadId: "long-join") { __typename ... on TextMessageContentEvent { content } } }',
      {},
    );
    expect(
      await until(
        () => droppedCount(g),
        (count) => count >= 1,
        'the paused joiner closed',
        30_000,
      ),
    ).toBe(1);
    expect((await own).length).toBeGreaterThan(32 * 1024 * 1024);
  }, 60_000);

  it('tracks what an answer holds only between its first hold and its end, however it ends', async () => {
    const server = createServer();
    const guard = new SlowReaderGuard(server, {
      budgetBytes: 1024 * 1024,
      logger: silentLogger,
      checkEveryMs: 3_600_000,
    });
    const tracked = (): number => (guard as unknown as { tracked: Map<unknown, unknown> }).tracked.size;
    const origin = await listen(server);
    const { port } = new URL(origin);
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect({ host: '127.0.0.1', port: Number(port) });
    opened.push(client);
    const socket = await accepted;
    try {
      // An answer that holds nothing is not tracked.
      const idle = guard.output(socket);
      expect(tracked()).toBe(0);
      idle.release();
      // Held, then over: tracked, then not; several answers on one connection are told apart.
      const first = guard.output(socket);
      const second = guard.output(socket);
      first.hold({ heldBytes: 10 });
      second.hold({ heldBytes: 20 });
      second.hold({ heldBytes: 30 });
      expect(second.bytes).toBe(50);
      expect(tracked()).toBe(1);
      first.release();
      expect(tracked()).toBe(1);
      second.release();
      second.release();
      expect(tracked()).toBe(0);
      // Over before its run was held (a graphql-ws operation completed while its run was admitted): never tracked.
      const late = guard.output(socket);
      late.release();
      late.hold({ heldBytes: 10 });
      expect(late.bytes).toBe(0);
      expect(tracked()).toBe(0);
      // A socket that closes takes what was tracked for it with it.
      guard.output(socket).hold({ heldBytes: 10 });
      expect(tracked()).toBe(1);
      const closed = new Promise((resolve) => socket.once('close', resolve));
      client.destroy();
      await closed;
      expect(tracked()).toBe(0);
    } finally {
      guard.stop();
      await close(server);
    }
  });

  it.each(['multipart', 'graphql-ws', 'AG-UI'] as const)(
    "closes a %s client that stops reading a run whose output is held for it (the views', not the socket's)",
    async (transport) => {
      const adapter = new LongAnswer();
      const g = await start({ adapter, maxBufferedOutputMb: 8 });
      if (transport === 'multipart') pausedMutation(g);
      else if (transport === 'AG-UI') pausedAgUiRun(g);
      else await pausedSubscription(g);
      expect(
        await until(
          () => droppedCount(g),
          (count) => count >= 1,
          'the paused client closed',
          30_000,
        ),
      ).toBe(1);
      expect(adapter.chunks).toBeGreaterThan(0);
    },
    60_000,
  );

  it("refuses a thread's read OVERLOADED while the transports' budget says no (ThreadService.limitReads)", async () => {
    const service = new ThreadService(memoryStore(), { onBusy: 'refuse', onStoreFailure: 'serve' }, silentLogger);
    let admit = false;
    service.limitReads(() => admit);
    await expect(service.thread('any')).rejects.toMatchObject({ code: 'OVERLOADED' });
    admit = true;
    await expect(service.thread('any')).resolves.toBeUndefined();
  });
});
