import { createServer } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { messagesBytes } from '../src/core/messages.js';
import { approximateBytes } from '../src/core/values.js';
import WebSocket, { WebSocketServer } from 'ws';
import { InputBudget } from '../src/core/input-budget.js';
import { countWebSocketInput } from '../src/transports/ws/input.js';
import { close, listen } from './support/loopback.js';
import { gatewaysPerTest, metricValue, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { HTTP_STREAMED } from './support/documents.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { failOnProcessErrors } from './support/process-errors.js';
import { until } from './support/threads.js';

// A run holds its input until its model answers, and outlives its client (AG-UI runs go on after a disconnect): large
// requests to a slow model, each under the body limit, ended the process (heap out of memory, found from outside:
// about 85 runs of 9 MB). maxBufferedInputMb bounds the input runs in flight hold at once.

failOnProcessErrors();

const fake = new FakeOpenAI();
let fakeUrl = '';
beforeAll(async () => {
  fakeUrl = await fake.start();
});
afterAll(async () => {
  await fake.stop();
});
const { start } = gatewaysPerTest();

/** An AG-UI run of one user message of about `size` characters, asking the model for `directives`. */
function agUiRun(g: RunningGateway, runId: string, size: number, directives: string) {
  return fetch(`${g.url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId: `thread-${runId}`,
      runId,
      state: {},
      tools: [],
      context: [],
      forwardedProps: {},
      messages: [{ id: `${runId}-1`, role: 'user', content: `${'x'.repeat(size)} ${directives}` }],
    }),
  });
}

describe('the input of runs in flight (maxBufferedInputMb)', () => {
  it('refuses a run OVERLOADED while those in flight hold the budget, and admits runs again once they end', async () => {
    const g = await start({
      maxBufferedInputMb: 1,
      adapter: new OpenAIAdapter({ baseURL: fakeUrl, apiKey: 'k', maxRetries: 0 }),
    });
    // 600 KB, with a model that takes a few seconds: its client leaves at once, the run goes on.
    const first = await agUiRun(g, 'first', 600_000, '[tokens=40] [delay=100]');
    expect(first.status).toBe(200);
    await first.body!.cancel();
    // Another 600 KB would pass 1 MiB: its body is refused as it is read.
    const refused = await agUiRun(g, 'second', 600_000, '[tokens=2]');
    expect(refused.status).toBe(503);
    const answer = (await refused.json()) as { code: string; message: string };
    expect(answer.code).toBe('OVERLOADED');
    expect(answer.message).toMatch(/most input at once \(maxBufferedInputMb, 1 MiB\)/);
    // A body that fits (about 400 KB) whose run does not (3,000 short messages weigh more as messages than as JSON):
    // refused as the run starts.
    const many = Array.from({ length: 3_000 }, (_, index) => ({ id: `m${index}`, role: 'user', content: 'a' }));
    const crowded = await fetch(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({
        threadId: 'thread-crowded',
        runId: 'crowded',
        state: {},
        tools: [],
        context: [],
        forwardedProps: {},
        messages: [...many, { id: 'last', role: 'user', content: `${'x'.repeat(280_000)} [tokens=2]` }],
      }),
    });
    expect(crowded.status).toBe(503);
    expect(((await crowded.json()) as { message: string }).message).toMatch(
      /most input of runs in flight \(maxBufferedInputMb, 1 MiB\)/,
    );
    // A small one fits beside it.
    const small = await agUiRun(g, 'small', 1_000, '[tokens=2]');
    expect(small.status).toBe(200);
    expect((await small.text()).includes('RUN_FINISHED')).toBe(true);
    // Once the first has ended, the large one is taken.
    const admitted = await until(
      async () => {
        const response = await agUiRun(g, `third-${Date.now()}`, 600_000, '[tokens=2]');
        const text = await response.text();
        return { status: response.status, finished: text.includes('RUN_FINISHED') };
      },
      (result) => result.status === 200,
      'a large run admitted again',
      30_000,
    );
    expect(admitted.finished).toBe(true);
  }, 60_000);

  it('counts the bodies being read in the same budget: one never finished holds only its part, until it goes', async () => {
    const g = await start({ maxBufferedInputMb: 2 });
    const { hostname: host, port, pathname } = new URL(g.url);
    // A client declares 1.9 MB, sends 1.5 MB of it, and waits.
    const holder = connect({ host, port: Number(port) });
    holder.on('error', () => {});
    holder.write(
      `POST ${pathname}/agent/default/run HTTP/1.1\r\nhost: ${host}:${port}\r\ncontent-type: application/json\r\n` +
        `content-length: 1900000\r\n\r\n{"threadId":"held","runId":"held","messages":[{"id":"h","role":"user","content":"` +
        'y'.repeat(1_500_000),
    );
    // Once its part is counted (a run sent sooner could be counted first, and the holder be the one refused),
    await until(
      () => metricValue(g.url, 'copilot_gateway_input_held_bytes'),
      (held) => held >= 1_500_000,
      "the holder's part counted",
      20_000,
    );
    // a run of 1 MB does not fit beside it: refused, its body drained and not kept.
    const refused = await until(
      async () => {
        const response = await agUiRun(g, `refused-${Date.now()}`, 1_000_000, '');
        return { status: response.status, body: await response.text() };
      },
      (answer) => answer.status === 503,
      'a body refused while the other is held',
      20_000,
    );
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'OVERLOADED' });
    expect(JSON.parse(refused.body).message).toMatch(/most input at once \(maxBufferedInputMb, 2 MiB\)/);
    // The holder goes: what it held is given back, and the same run is served.
    holder.destroy();
    const served = await until(
      async () => {
        const response = await agUiRun(g, `served-${Date.now()}`, 1_000_000, '');
        return { status: response.status, finished: (await response.text()).includes('RUN_FINISHED') };
      },
      (answer) => answer.status === 200,
      'the run served once the holder left',
      20_000,
    );
    expect(served.finished).toBe(true);
    // Nothing is held once the runs have ended.
    await until(
      () => metricValue(g.url, 'copilot_gateway_input_held_bytes'),
      (held) => held === 0,
      'the input given back',
      20_000,
    );
  }, 60_000);

  it('counts WebSocket messages being received in the same budget: one that would pass it closes its socket', async () => {
    const g = await start({ maxBufferedInputMb: 2 });
    const open = async () => {
      const socket = new WebSocket(g.wsUrl, 'graphql-transport-ws');
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
      );
      return { socket, closed };
    };
    // A message begun (1.5 MB of it, in fragments) and never finished.
    const holder = await open();
    holder.socket.send(`{"type":"connection_init","payload":{"x":"${'y'.repeat(750_000)}`, { fin: false });
    holder.socket.send('y'.repeat(750_000), { fin: false });
    // Another 1 MB would pass 2 MiB: that socket is closed, 1013.
    const second = await open();
    await new Promise((resolve) => setTimeout(resolve, 200));
    second.socket.send('z'.repeat(1_000_000), { fin: false });
    const refused = await second.closed;
    expect(refused.code).toBe(1013);
    expect(refused.reason).toMatch(/most input at once \(maxBufferedInputMb, 2 MiB\)/);
    // The holder goes: what it had sent is given back, and a socket may send as much again.
    holder.socket.terminate();
    await holder.closed;
    const third = await open();
    third.socket.send('w'.repeat(500_000), { fin: false });
    third.socket.send('w'.repeat(1_000_000), { fin: false });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(third.socket.readyState).toBe(WebSocket.OPEN);
    third.socket.terminate();
  }, 60_000);

  it('refuses a body or a WebSocket message larger than the whole budget as too large (final), not OVERLOADED', async () => {
    // The body limit is 10 MiB; the budget, 1 MiB, could never hold a body of 1.5 MB, however long the client waits.
    const g = await start({ maxBufferedInputMb: 1 });
    const graphql = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ hello }', variables: { pad: 'x'.repeat(1_500_000) } }),
    });
    expect(graphql.status).toBe(413);
    expect(await graphql.json()).toMatchObject({
      errors: [
        { message: 'The request body is larger than 1048576 bytes.', extensions: { code: 'PAYLOAD_TOO_LARGE' } },
      ],
    });
    const agUi = await agUiRun(g, 'too-large', 1_500_000, '[tokens=2]');
    expect(agUi.status).toBe(413);
    expect(await agUi.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    // Over WebSocket: the message limit is the budget too (1009, message too big).
    const socket = new WebSocket(g.wsUrl, 'graphql-transport-ws');
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send(`{"type":"connection_init","payload":{"x":"${'y'.repeat(1_100_000)}"}}`);
    expect(await closed).toBe(1009);
    // A body that fits is served, once what the refused ones held is let go: a refusal's answer can reach the client
    // before its bytes are (CI once saw this body refused OVERLOADED; the cause is in the notes to look into).
    await until(
      () => metricValue(g.url, 'copilot_gateway_input_held_bytes'),
      (held) => held === 0,
      'the refused input to be let go',
    );
    const served = await agUiRun(g, 'fits', 500_000, '[tokens=2]');
    expect(served.status).toBe(200);
    expect(await served.text()).toContain('RUN_FINISHED');
  }, 60_000);

  it('refuses a run whose input alone counts more than the whole budget as LIMIT_EXCEEDED (final), not OVERLOADED', async () => {
    // Bodies that fit in 1 MiB, of thousands of one-letter messages: each message counts about 160 bytes as a run holds
    // it, so the run counts more than the budget could hold with nothing else in flight, and no wait would admit it.
    const g = await start({
      maxBufferedInputMb: 1,
      adapter: new OpenAIAdapter({ baseURL: fakeUrl, apiKey: 'k', maxRetries: 0 }),
    });
    const many = Array.from({ length: 8_000 }, (_, index) => ({ id: `m${index}`, role: 'user', content: 'a' }));
    const agUi = await fetch(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({
        threadId: 'thread-many',
        runId: 'many',
        state: {},
        tools: [],
        context: [],
        forwardedProps: {},
        messages: many,
      }),
    });
    expect(agUi.status).toBe(400);
    const refusal = (await agUi.json()) as { code: string; message: string };
    expect(refusal.code).toBe('LIMIT_EXCEEDED');
    expect(refusal.message).toMatch(/more than the gateway holds for all runs at once \(maxBufferedInputMb, 1 MiB\)/);
    const messages = Array.from({ length: 7_000 }, (_, index) => userMessage('a', `g${index}`));
    const body = JSON.stringify({ query: HTTP_STREAMED, variables: { data: runInput(messages) } });
    expect(body.length).toBeLessThan(1024 * 1024);
    const graphql = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
      body,
    });
    const text = await graphql.text();
    expect(text).toContain('"code":"LIMIT_EXCEEDED"');
    expect(text).toMatch(/more than the gateway holds for all runs at once \(maxBufferedInputMb, 1 MiB\)/);
    expect(text).not.toContain('OVERLOADED');
    // Nothing was held: a run that fits is served at once.
    expect(await metricValue(g.url, 'copilot_gateway_input_held_bytes')).toBe(0);
    const served = await agUiRun(g, 'fits', 1_000, '[tokens=2]');
    expect(served.status).toBe(200);
    expect(await served.text()).toContain('RUN_FINISHED');
  }, 60_000);

  it('counts strings, keys and a few bytes per value of what a run was sent (approximateBytes)', () => {
    expect(approximateBytes('abc')).toBe(16 + 3);
    expect(approximateBytes({ ab: ['c', 1, null] })).toBe(16 + 2 + 16 + (16 + 1) + 16 + 16);
    // Text beyond Latin-1 takes two bytes a character on the heap (UTF-16), Latin-1 text one.
    expect(approximateBytes('日本語')).toBe(16 + 6);
    expect(approximateBytes('café')).toBe(16 + 4);
    expect(approximateBytes({ 键: 'x' })).toBe(16 + 2 + 16 + 1);
  });

  it("counts a run's messages as the heap holds them (messagesBytes): two bytes a character beyond Latin-1", () => {
    const text = (content: string) => [{ kind: 'text' as const, id: 'm', role: 'user' as const, content }];
    expect(messagesBytes(text('日本語'.repeat(1000))) - messagesBytes(text('abc'.repeat(1000)))).toBe(3000);
  });
});

describe('a WebSocket connection counted in the input budget (countWebSocketInput)', () => {
  it('gives back its control frames as they come and a message once complete: nothing adds up over days', async () => {
    const budget = new InputBudget(1024 * 1024);
    const server = createServer();
    const wss = new WebSocketServer({ server });
    const messages: number[] = [];
    wss.on('connection', (socket, request) => {
      countWebSocketInput(socket, request.socket, budget);
      socket.on('message', (data: Buffer) => messages.push(data.length));
    });
    const origin = await listen(server);
    const client = new WebSocket(origin.replace('http', 'ws'));
    await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject));
    try {
      // A message begun, pings between its fragments (as a keep-alive's pongs come), then its end.
      client.send('a'.repeat(100_000), { fin: false });
      for (let index = 0; index < 50; index++) client.ping(Buffer.from('keep-alive'));
      await until(
        async () => budget.heldBytes,
        (held) => held >= 100_000,
        'the fragment counted',
        5_000,
      );
      client.send('b'.repeat(10), { fin: true });
      await until(
        async () => messages.length,
        (count) => count === 1,
        'the message',
        5_000,
      );
      expect(messages).toEqual([100_010]);
      expect(budget.heldBytes).toBe(0);
      // Pings alone, between messages: each given back as it comes.
      for (let index = 0; index < 50; index++) client.ping(Buffer.from('keep-alive'));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(budget.heldBytes).toBe(0);
    } finally {
      client.terminate();
      wss.close();
      await close(server);
    }
  });
});
