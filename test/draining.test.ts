import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { createGateway } from '../src/gateway.js';
import { gatewaysPerTest, runInput, silentLogger, userMessage } from './support/harness.js';
import { COPILOT_RUN } from './support/threads.js';

// A draining instance's refusal, made before anything of the request ran, is the one answer a proxy may
// send on to another instance (deploy/nginx.conf). Asked with X-Drain-Refusal-Status: 421, the gateway
// says exactly that refusal with 421 (GraphQL over HTTP, AG-UI, the WebSocket handshake); every other
// answer keeps its status, 503s included, and without the header the refusal stays 503 SHUTTING_DOWN.

const { start } = gatewaysPerTest();

/** A model that writes one token, then waits until released (its run keeps the drain open). */
class HoldingAdapter implements ModelAdapter {
  readonly name = 'holding';
  started = 0;
  private wake: (() => void)[] = [];
  release(): void {
    for (const wake of this.wake.splice(0)) wake();
  }
  /** Lets the oldest waiting run end. */
  releaseOne(): void {
    this.wake.shift()?.();
  }
  async stream(_request: ModelRequest, output: ModelOutput): Promise<void> {
    this.started++;
    const id = output.textStart();
    output.textContent(id, 'held ');
    await new Promise<void>((resolve) => this.wake.push(resolve));
    output.textEnd(id);
  }
}

const MUTATION = 'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId } }';
const ASK_421 = { 'x-drain-refusal-status': '421' };

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), json: await response.json() };
}

/** An AG-UI run on a thread of its own, as sent (its answer an SSE stream, or a refusal's JSON). */
function agUiPost(url: string, headers: Record<string, string> = {}) {
  return fetch(`${url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({
      threadId: `t-${Math.random().toString(36).slice(2)}`,
      runId: `r-${Math.random().toString(36).slice(2)}`,
      state: {},
      messages: [{ id: 'u1', role: 'user', content: 'late' }],
      tools: [],
      context: [],
      forwardedProps: {},
    }),
  });
}

/** An AG-UI run that is refused: its status, Retry-After and JSON body. */
async function agUiRun(url: string, headers: Record<string, string> = {}) {
  const response = await agUiPost(url, headers);
  return { status: response.status, retryAfter: response.headers.get('retry-after'), json: await response.json() };
}

/** The status a WebSocket handshake is answered with (101 when it is accepted). */
function handshake(wsUrl: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl, 'graphql-transport-ws', { headers });
    socket.on('upgrade', () => {
      socket.terminate();
      resolve({ status: 101, body: '' });
    });
    // Listened to, a refused handshake is this test's to end (`ws` leaves it open).
    socket.on('unexpected-response', (asked, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk));
      response.on('end', () => {
        asked.destroy();
        resolve({ status: response.statusCode ?? 0, body });
      });
    });
    socket.on('error', (error) => reject(error));
  });
}

/** A run over graphql-ws that holds the adapter; resolves its last event once it ends. */
function heldRun(wsUrl: string) {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
  const events: any[] = [];
  const done = new Promise<any[]>((resolve, reject) => {
    client.subscribe(
      { query: COPILOT_RUN, variables: { data: runInput([userMessage('hold the drain open')]) } },
      {
        next: (result: any) => events.push(result.data?.copilotRun),
        error: reject,
        complete: () => resolve(events),
      },
    );
  }).finally(() => client.dispose());
  return done;
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('the draining refusal a proxy may send on', () => {
  it('is 421 when the proxy asks for it, on every transport, and 503 SHUTTING_DOWN otherwise', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter });
    const running = heldRun(gateway.wsUrl);
    await until(() => adapter.started === 1);
    const shutdown = gateway.gateway.shutdown(30_000);

    // GraphQL over HTTP.
    const asked = await postJson(gateway.url, { query: MUTATION, variables: { data: runInput([]) } }, ASK_421);
    expect(asked.status).toBe(421);
    expect(asked.json.errors[0].extensions).toMatchObject({ code: 'SHUTTING_DOWN' });
    expect(asked.retryAfter).toBe('1');
    const plain = await postJson(gateway.url, { query: MUTATION, variables: { data: runInput([]) } });
    expect(plain.status).toBe(503);
    expect(plain.json.errors[0].extensions).toMatchObject({ code: 'SHUTTING_DOWN' });
    // Only the value 421 is taken.
    const other = await postJson(
      gateway.url,
      { query: MUTATION, variables: { data: runInput([]) } },
      {
        'x-drain-refusal-status': '500',
      },
    );
    expect(other.status).toBe(503);

    // Two root fields: the other one may have done its work before the refusal (here it only names the type,
    // and the refusal nulls the whole result): never 421.
    const twoFields = await postJson(
      gateway.url,
      {
        query:
          'mutation($data: GenerateCopilotResponseInput!) { __typename generateCopilotResponse(data: $data) { threadId } }',
        variables: { data: runInput([]) },
      },
      ASK_421,
    );
    expect(twoFields.json).toMatchObject({ data: null, errors: [{ extensions: { code: 'SHUTTING_DOWN' } }] });
    expect(twoFields.status).toBe(503);

    // AG-UI.
    const agUiAsked = await agUiRun(gateway.url, ASK_421);
    expect(agUiAsked.status).toBe(421);
    expect(agUiAsked.json).toMatchObject({ code: 'SHUTTING_DOWN' });
    const agUiPlain = await agUiRun(gateway.url);
    expect(agUiPlain.status).toBe(503);
    expect(agUiPlain.json).toMatchObject({ code: 'SHUTTING_DOWN' });

    // The WebSocket handshake: refused while draining (every run on the socket would be).
    const wsAsked = await handshake(gateway.wsUrl, ASK_421);
    expect(wsAsked.status).toBe(421);
    expect(JSON.parse(wsAsked.body).errors[0].extensions).toMatchObject({ code: 'SHUTTING_DOWN' });
    expect((await handshake(gateway.wsUrl)).status).toBe(503);

    // The run in flight finishes.
    adapter.release();
    await shutdown;
    const events = await running;
    expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
  });

  it('leaves every other refusal as it is: OVERLOADED stays 503 when the proxy asks for 421', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter, maxConcurrentRuns: 1 });
    const running = heldRun(gateway.wsUrl);
    await until(() => adapter.started === 1);

    const agUi = await agUiRun(gateway.url, ASK_421);
    expect(agUi.status).toBe(503);
    expect(agUi.json).toMatchObject({ code: 'OVERLOADED' });
    // Not draining: the handshake is accepted whatever the header.
    expect((await handshake(gateway.wsUrl, ASK_421)).status).toBe(101);

    adapter.release();
    await running;
  });
});

describe('WebSockets of a draining instance', () => {
  it('close as soon as they have no operation under way: an idle one at once, a busy one after its run ends', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter });
    const closes: string[] = [];
    // A client that stays connected between runs (lazy: false), with nothing going on.
    const idle = createClient({
      url: gateway.wsUrl,
      webSocketImpl: WebSocket,
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => {},
      on: { closed: (event: any) => closes.push(`idle ${event.code}`) },
    });
    await new Promise<void>((resolve) => idle.on('connected', () => resolve()));
    // And one whose run is under way.
    const busy = createClient({
      url: gateway.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      on: { closed: (event: any) => closes.push(`busy ${event.code}`) },
    });
    const events: any[] = [];
    const running = new Promise<void>((resolve, reject) => {
      busy.subscribe(
        { query: COPILOT_RUN, variables: { data: runInput([userMessage('hold the drain open')]) } },
        {
          next: (result: any) => events.push(result.data?.copilotRun),
          error: reject,
          complete: () => {
            closes.push('busy complete');
            resolve();
          },
        },
      );
    });
    await until(() => adapter.started === 1);

    const shutdown = gateway.gateway.shutdown(30_000);
    // The idle socket is told "going away" while the run still holds the drain open.
    await until(() => closes.includes('idle 1001'));
    expect(adapter.started).toBe(1);
    expect(closes).toEqual(['idle 1001']);

    adapter.release();
    await running;
    await until(() => closes.includes('busy 1001'));
    // The run's end and its complete came first, then the close.
    expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
    expect(closes).toEqual(['idle 1001', 'busy complete', 'busy 1001']);
    await shutdown;
    await idle.dispose();
    await busy.dispose();
  });
});

describe('HTTP connections of a draining instance', () => {
  it('close right after an answer that began before the drain ends, not left idle for a proxy to reuse', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter });
    // An AG-UI run on a keep-alive connection (as nginx keeps its upstream connections), under way.
    const agent = new Agent({ keepAlive: true });
    const body = JSON.stringify({
      threadId: 't-keep-alive',
      runId: 'r-keep-alive',
      state: {},
      messages: [{ id: 'u1', role: 'user', content: 'hi' }],
      tools: [],
      context: [],
      forwardedProps: {},
    });
    let socketClosed = false;
    const answered = new Promise<string>((resolve, reject) => {
      const asked = request(
        `${gateway.url}/agent/default/run`,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } },
        (response) => {
          expect(response.headers.connection).toBe('keep-alive');
          response.socket.once('close', () => (socketClosed = true));
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk));
          response.on('end', () => resolve(text));
        },
      );
      asked.on('error', reject);
      asked.end(body);
    });
    await until(() => adapter.started === 1);
    // A second run keeps the drain open after the first has ended.
    const second = heldRun(gateway.wsUrl);
    await until(() => adapter.started === 2);

    const shutdown = gateway.gateway.shutdown(30_000);
    adapter.releaseOne();
    expect(await answered).toContain('RUN_FINISHED');
    // Closed by the gateway while it still drains (the second run is held).
    await until(() => socketClosed);
    expect(adapter.started).toBe(2);

    adapter.release();
    await second;
    await shutdown;
    agent.destroy();
  });
});

describe('the end of a drain', () => {
  it('refuses new connections, and answers a request still on its way on a connection opened just before', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter });
    const { port } = new URL(gateway.url);
    const running = heldRun(gateway.wsUrl);
    await until(() => adapter.started === 1);
    const shutdown = gateway.gateway.shutdown(30_000);

    // A proxy opens a connection to the draining instance; its request has not left yet when the drain ends.
    const socket = await new Promise<Socket>((resolve, reject) => {
      const opened = connect(Number(port), '127.0.0.1', () => resolve(opened));
      opened.on('error', reject);
    });
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    adapter.release();
    await running;
    // The listener is closed: a new connection is refused.
    for (;;) {
      const refused = await new Promise<boolean>((resolve) => {
        const probe = connect(Number(port), '127.0.0.1', () => {
          probe.destroy();
          resolve(false);
        });
        probe.on('error', () => resolve(true));
      });
      if (refused) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // The request on the connection opened before is answered: the draining refusal, which a proxy sends on.
    const body = JSON.stringify({ query: MUTATION, variables: { data: runInput([]) } });
    socket.write(
      `POST /api/copilotkit HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
        `x-drain-refusal-status: 421\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.1 421 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toContain('SHUTTING_DOWN');
    await shutdown;
  });
});

describe('shutdownDelayMs: serving as before, not ready, before the drain', () => {
  /**
   * GET /ready on a connection of its own: one kept alive from an earlier read may be the idle connection the drain
   * closes just as the next read is sent on it (a reset no server can prevent; fetch does not send it again).
   */
  function ready(url: string): Promise<{ status: number; json: any }> {
    return new Promise((resolve, reject) => {
      const asked = request(url.replace(/\/api\/copilotkit$/, '/ready'), { agent: false }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, json: JSON.parse(body) }));
      });
      asked.on('error', reject);
      asked.end();
    });
  }

  it('answers /ready 503 and serves new runs on every transport (a proxy asking for 421 too), each HTTP answer closing its connection; close() ends it', async () => {
    const gateway = await start({ shutdownDelayMs: 120_000 });
    expect(await ready(gateway.url)).toMatchObject({ status: 200, json: { checks: { leaving: false } } });
    const shutdown = gateway.gateway.shutdown(30_000);
    expect(gateway.gateway.shutdown()).toBe(shutdown);

    expect(await ready(gateway.url)).toMatchObject({
      status: 503,
      json: { checks: { listening: true, leaving: true, draining: false } },
    });
    // Each answer closes its connection, so that the client's next request goes where a load balancer sends it (an
    // L4 balancer such as kube-proxy keeps a kept-alive connection on this instance).
    const hello = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ hello }' }),
    });
    expect(hello.status).toBe(200);
    expect(hello.headers.get('connection')).toBe('close');
    expect(await hello.json()).toMatchObject({ data: { hello: expect.any(String) } });
    const run = await postJson(gateway.url, { query: MUTATION, variables: { data: runInput([]) } }, ASK_421);
    expect(run).toMatchObject({
      status: 200,
      json: { data: { generateCopilotResponse: { threadId: expect.any(String) } } },
    });
    const agUi = await agUiPost(gateway.url, ASK_421);
    expect(agUi.status).toBe(200);
    expect(await agUi.text()).toContain('"type":"RUN_FINISHED"');
    expect((await handshake(gateway.wsUrl, ASK_421)).status).toBe(101);
    const events = await heldRun(gateway.wsUrl);
    expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });

    // close() does not wait out the delay (this test would time out), and the shutdown settles with it.
    await gateway.gateway.close();
    await shutdown;
    expect((await ready(gateway.url).catch((error) => error)).code).toBe('ECONNREFUSED');
  });

  it('then drains as without it: new runs refused, the run in flight finishing', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter, shutdownDelayMs: 200 });
    const running = heldRun(gateway.wsUrl);
    await until(() => adapter.started === 1);
    const shutdown = gateway.gateway.shutdown(30_000);
    // Whatever the timing, the phases come in order: leaving (served), then draining (refused).
    let phase = await ready(gateway.url);
    expect(phase.json.checks.leaving || phase.json.checks.draining).toBe(true);
    while (!phase.json.checks.draining) {
      expect(phase).toMatchObject({ status: 503, json: { checks: { leaving: true } } });
      await new Promise((resolve) => setTimeout(resolve, 20));
      phase = await ready(gateway.url);
    }
    expect(phase).toMatchObject({ status: 503, json: { checks: { leaving: false, draining: true } } });
    expect(gateway.gateway.shutdown()).toBe(shutdown);
    const refused = await postJson(gateway.url, { query: MUTATION, variables: { data: runInput([]) } }, ASK_421);
    expect(refused.status).toBe(421);
    expect((await handshake(gateway.wsUrl)).status).toBe(503);

    adapter.release();
    await shutdown;
    const events = await running;
    expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
  });
});

describe('a gateway closed while it starts', () => {
  it('stays closed: listen fails saying so, and nothing listens', async () => {
    // Found in review: listen went on after close() and bound the port, and Apollo, started after the close, was never
    // stopped.
    const outcomes = new Set<string>();
    const waits: (() => Promise<unknown> | undefined)[] = [
      () => undefined,
      () => Promise.resolve(),
      () => new Promise((resolve) => setImmediate(resolve)),
      () => new Promise((resolve) => setTimeout(resolve, 50)),
    ];
    for (const wait of waits) {
      const gateway = createGateway({ logger: silentLogger });
      const listening = gateway.listen(0);
      const outcome = listening.then(
        () => 'listening',
        (error: Error) => error.message,
      );
      await wait();
      await gateway.close();
      // Listening before the close came (the close then ended it), or refused saying why.
      expect(['listening', 'The gateway was closed while it was starting.']).toContain(await outcome);
      expect(gateway.server.listening).toBe(false);
      outcomes.add(await outcome);
    }
    // Closed at once, it never listens.
    expect(outcomes).toContain('The gateway was closed while it was starting.');
  });
});
