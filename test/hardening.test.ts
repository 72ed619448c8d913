import { connect } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { pino } from 'pino';
import { DemoAdapter } from '../src/adapters/demo.js';
import { GatedAdapter } from './support/gated-adapter.js';
import { HTTP_STREAMED } from './support/documents.js';
import { eventually, gatewaysPerTest, runInput, userMessage } from './support/harness.js';

// Hostile or unusual input: nothing crashes the process, hangs a stream, or runs up the bill.

const { start } = gatewaysPerTest({ adapter: new DemoAdapter({ tokenDelayMs: 0 }) });

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** Sends raw bytes and returns the status line of the answer. */
function rawRequest(url: string, request: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(request));
    socket.once('data', (data) => {
      resolve(String(data).split('\r\n')[0]);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const MUTATION = (selection: string) => `mutation($data: GenerateCopilotResponseInput!) { ${selection} }`;

describe('input that once broke the gateway', () => {
  it('answers a request target that is not a URL, and keeps serving', async () => {
    const { url } = await start();
    expect(await rawRequest(url, 'GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')).toBe('HTTP/1.1 404 Not Found');
    const { port } = new URL(url);
    expect(await rawRequest(url, `GET http://127.0.0.1:${port}/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)).toBe(
      'HTTP/1.1 200 OK',
    );
    expect(await (await post(url, { query: '{ hello }' })).json()).toEqual({ data: { hello: 'Hello World' } });
  });

  it('serves the same streamed field twice under aliases, in full', async () => {
    const { url } = await start();
    const body = await (
      await post(url, {
        query: MUTATION(
          'generateCopilotResponse(data: $data) { a: messages { id ... on TextMessageOutput { x: content y: content } } b: messages { id } }',
        ),
        variables: { data: runInput([userMessage('hi')]) },
      })
    ).json();
    const response = body.data.generateCopilotResponse;
    expect(response.a.map((m: any) => m.id)).toEqual(response.b.map((m: any) => m.id));
    expect(response.a[0].x.join('')).toBe(response.a[0].y.join(''));
    expect(response.a[0].x.join('')).toContain('[demo mode]');
  });
});

describe('answers made from stored lists', () => {
  it("refuses, before making it, a copilotThread answer past the operation's million values (messages times the fields selected, aliases included) and an eleventh whole-thread read", async () => {
    // Found from outside: 900 aliases of a message's id on a thread of 20,000 messages ended the process, out of heap.
    const { url } = await start();
    const messages = Array.from({ length: 1_000 }, (_, i) => ({ id: `m${i}`, role: 'user', content: '' }));
    const input = {
      threadId: 'wide',
      runId: 'wide-1',
      messages,
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const run = await post(`${url}/agent/default/run`, input, { accept: 'text/event-stream' });
    expect(run.status).toBe(200);
    await run.text();
    const read = async (selection: string, fragments = '') =>
      (await post(url, { query: `{ copilotThread(threadId: "wide") { ${selection} } } ${fragments}` })).json();
    const aliases = (count: number) => Array.from({ length: count }, (_, i) => `a${i}: id`).join(' ');

    // 1,001 messages (the run's answer among them) times 10 aliases: made.
    const fits = await read(`messages { ${aliases(10)} }`);
    expect(fits.data.copilotThread.messages).toHaveLength(1_001);
    // Times 1,000, or the same 1,000 from a fragment spread under an alias of the list: refused, naming the sizes.
    const refused = await read(`messages { ${aliases(1_000)} }`);
    expect(refused.data.copilotThread).toBeNull();
    expect(refused.errors[0].extensions).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { field: 'copilotThread', limit: 1_000_000, value: 1_001 * 1_000 },
    });
    const spread = await read(
      '...T',
      `fragment T on CopilotThread { list: messages { ...M } } fragment M on BaseMessageOutput { ${aliases(1_000)} }`,
    );
    expect(spread.errors[0].extensions.code).toBe('LIMIT_EXCEEDED');
    // The budgets are the operation's. Eleven whole-thread reads, of either kind: the eleventh is refused.
    const query = async (text: string) => (await post(url, { query: text })).json();
    const reads = (field: string) => Array.from({ length: 11 }, (_, i) => `t${i}: ${field}`).join(' ');
    const refusal = expect.objectContaining({
      extensions: expect.objectContaining({
        code: 'LIMIT_EXCEEDED',
        details: expect.objectContaining({ limit: 10, value: 11 }),
      }),
    });
    const threads = await query(`{ ${reads('copilotThread(threadId: "wide") { threadId }')} }`);
    expect(Object.values(threads.data).filter((answer) => answer === null)).toHaveLength(1);
    expect(threads.errors).toEqual([refusal]);
    // loadAgentState's answer is non-null: the refusal nulls the whole data.
    const states = await query(
      `{ ${reads('loadAgentState(data: { threadId: "wide", agentName: "default" }) { threadExists }')} }`,
    );
    expect(states.data).toBeNull();
    expect(states.errors).toEqual([refusal]);
    // And the values: 999 fields of 1,001 messages under one alias, then a list of them under another.
    const shared = await query(
      `{ a: copilotThread(threadId: "wide") { messages { ${aliases(999)} } } b: copilotThread(threadId: "wide") { messages { id } } }`,
    );
    expect(shared.data.a.messages).toHaveLength(1_001);
    expect(shared.data.b).toBeNull();
    expect(shared.errors[0].extensions.details).toEqual({
      field: 'copilotThread',
      limit: 1_000_000,
      value: 1_001 * 1_000,
    });
    // The gateway goes on serving.
    expect((await read('threadId')).data.copilotThread.threadId).toBe('wide');
  }, 60_000);
});

describe('limits on what one request can start', () => {
  it('allows one run per operation, over HTTP and WebSocket', async () => {
    const adapter = new GatedAdapter();
    const { url, wsUrl } = await start({ adapter });
    const query = MUTATION(
      'a: generateCopilotResponse(data: $data) { threadId } b: generateCopilotResponse(data: $data) { threadId }',
    );
    const variables = { data: runInput([userMessage('hi')]) };
    const http = await post(url, { query, variables });
    expect(http.status).toBe(400);
    expect((await http.json()).errors[0]).toMatchObject({
      message: expect.stringMatching(/may start one run/),
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const errors = await (async () => {
      for await (const _ of client.iterate({ query, variables })) return undefined;
    })().catch((e) => e);
    await client.dispose();
    expect(errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(adapter.started).toBe(0);
  });

  it('starts no second run from a fragment spread again with @defer', async () => {
    const adapter = new GatedAdapter();
    const { url } = await start({ adapter });
    const query = `mutation($data: GenerateCopilotResponseInput!) { ...F ...F @defer }
      fragment F on Mutation { generateCopilotResponse(data: $data) { threadId } }`;
    const response = await post(
      url,
      { query, variables: { data: runInput([userMessage('hi')]) } },
      { accept: 'multipart/mixed' },
    );
    const body = await response.text();
    expect(body).toContain('An operation may start one run');
    expect(adapter.started).toBe(1);
  });

  it('counts a field GraphQL merges (the same key twice) as one run', async () => {
    const { url } = await start();
    const body = await (
      await post(url, {
        query: MUTATION(
          'generateCopilotResponse(data: $data) { threadId } generateCopilotResponse(data: $data) { runId }',
        ),
        variables: { data: runInput([userMessage('hi')], { threadId: 't-merged' }) },
      })
    ).json();
    expect(body.errors).toBeUndefined();
    expect(body.data.generateCopilotResponse.threadId).toBe('t-merged');
  });

  it('refuses runs beyond maxConcurrentRuns with OVERLOADED, and accepts again when one ends', async () => {
    const adapter = new GatedAdapter();
    const { url } = await start({ adapter, maxConcurrentRuns: 1 });
    const query = MUTATION('generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } }');
    const variables = { data: runInput([userMessage('hi')]) };
    const first = post(url, { query, variables });
    await eventually(() => adapter.started === 1, 'the first run to start');
    const second = await (await post(url, { query, variables })).json();
    expect(second.errors[0].extensions).toMatchObject({ code: 'OVERLOADED', statusCode: 503 });
    adapter.finish();
    expect((await (await first).json()).data.generateCopilotResponse.status.code).toBe('Success');
    adapter.finish();
    const third = await (await post(url, { query, variables })).json();
    expect(third.data.generateCopilotResponse.status.code).toBe('Success');
  });

  it('refuses a small document whose aliased fragments expand to too many fields, over HTTP and WebSocket, at once', async () => {
    const { url, wsUrl } = await start();
    // About 1 KB of text, 20^4 selections once expanded: before this rule, compiling it for WebSocket
    // events ran the process out of memory.
    const aliased = (field: string, selection: string) =>
      Array.from({ length: 20 }, (_, i) => `${field[0]}${i}: ${field} ${selection}`).join(' ');
    const fragments = `fragment E on CopilotRunEvent { ... on RunMetaEvent { ${aliased('event', '{ ...M }')} } }
fragment M on BaseMetaEvent { ... on CopilotKitLangGraphInterruptEvent { ${aliased('data', '{ ...D }')} } }
fragment D on CopilotKitLangGraphInterruptEventData { ${aliased('messages', '{ ...S }')} }
fragment S on BaseMessageOutput { ${aliased('status', '{ __typename }')} }`;
    const subscription = `subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { ...E } }\n${fragments}`;
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const errors = await (async () => {
      for await (const _ of client.iterate({ query: subscription, variables: { data: runInput([userMessage('hi')]) } }))
        return undefined;
    })().catch((e) => e);
    await client.dispose();
    expect(errors[0].message).toMatch(
      /selects 328421 fields once its fragments are expanded; the most allowed is 2000/,
    );
    expect(errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');

    const query = `{ hello ...Q } fragment Q on Query { ${Array.from({ length: 2000 }, (_, i) => `h${i}: hello`).join(' ')} }`;
    const response = await post(url, { query });
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].message).toMatch(/selects 2001 fields/);
    expect((await (await post(url, { query: '{ hello }' })).json()).data.hello).toBe('Hello World');
  });

  it('refuses a document with too many tokens before parsing it all', async () => {
    const { url } = await start();
    const response = await post(url, { query: `{ ${'hello '.repeat(30_000)}}` });
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].message).toMatch(/more that 20000 tokens/);
  });
});

describe('WebSocket operations', () => {
  /** A gateway on a gated model, its log lines, and a raw graphql-ws socket to it, acknowledged. */
  async function gatedSocket() {
    const adapter = new GatedAdapter();
    const lines: any[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { wsUrl } = await start({ adapter, logger });
    const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
    const received: any[] = [];
    socket.on('message', (data) => received.push(JSON.parse(String(data))));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await eventually(() => received.some((m) => m.type === 'connection_ack'), 'the connection to be acknowledged');
    return { adapter, lines, socket, received };
  }

  it('aborts a run when the client completes a plain mutation still waiting for the model', async () => {
    const adapter = new GatedAdapter();
    const { wsUrl } = await start({ adapter });
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const unsubscribe = client.subscribe(
      {
        query: MUTATION('generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } }'),
        variables: { data: runInput([userMessage('hi')]) },
      },
      { next: () => {}, error: () => {}, complete: () => {} },
    );
    await eventually(() => adapter.started === 1, 'the run to start');
    unsubscribe();
    await eventually(() => adapter.aborted === 1, 'the run to be aborted');
    await client.dispose();
  });

  it('sends nothing more for an operation the client completed', async () => {
    const { adapter, lines, socket, received } = await gatedSocket();
    const mutation = MUTATION('generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } }');
    socket.send(
      JSON.stringify({
        id: '1',
        type: 'subscribe',
        payload: { query: mutation, variables: { data: runInput([userMessage('hi')]) } },
      }),
    );
    await eventually(() => adapter.started === 1, 'the run to start');
    socket.send(JSON.stringify({ id: '1', type: 'complete' }));
    await eventually(
      () => lines.some((line) => line.operationId === '1' && line.msg === 'operation completed'),
      'operation 1 to end',
    );
    // Anything sent for operation 1 was sent before this answer, on the same ordered socket.
    socket.send(JSON.stringify({ id: '2', type: 'subscribe', payload: { query: '{ hello }' } }));
    await eventually(() => received.some((m) => m.id === '2' && m.type === 'complete'), 'operation 2 to complete');
    socket.close();
    expect(adapter.aborted).toBe(1);
    expect(received.filter((m) => m.id === '1')).toEqual([]);
  });

  it('sends nothing more for a streaming subscription the client completed, and aborts its run', async () => {
    const { adapter, lines, socket, received } = await gatedSocket();
    const query =
      'subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename ... on TextMessageContentEvent { content } } }';
    socket.send(
      JSON.stringify({
        id: '1',
        type: 'subscribe',
        payload: { query, variables: { data: runInput([userMessage('hi')]) } },
      }),
    );
    await eventually(() => adapter.started === 1, 'the run to start');
    adapter.release('Hel');
    await eventually(
      () => received.some((m) => m.id === '1' && m.payload?.data?.copilotRun?.content === 'Hel'),
      'the first token',
    );
    socket.send(JSON.stringify({ id: '1', type: 'complete' }));
    await eventually(
      () => lines.some((line) => line.operationId === '1' && line.msg === 'operation completed'),
      'operation 1 to end',
    );
    await eventually(() => adapter.aborted === 1, 'the run to be aborted');
    const sentBefore = received.filter((m) => m.id === '1').length;
    adapter.release('lo');
    socket.send(JSON.stringify({ id: '2', type: 'subscribe', payload: { query: '{ hello }' } }));
    await eventually(() => received.some((m) => m.id === '2' && m.type === 'complete'), 'operation 2 to complete');
    socket.close();
    expect(received.filter((m) => m.id === '1')).toHaveLength(sentBefore);
    expect(received.filter((m) => m.id === '1').map((m) => m.type)).not.toContain('complete');
  });

  it('aborts a subscription run waiting for its first token when the socket closes', async () => {
    const adapter = new GatedAdapter();
    const { wsUrl } = await start({ adapter });
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    client.subscribe(
      {
        query: 'subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename } }',
        variables: { data: runInput([userMessage('hi')]) },
      },
      { next: () => {}, error: () => {}, complete: () => {} },
    );
    await eventually(() => adapter.started === 1, 'the run to start');
    client.terminate();
    await eventually(() => adapter.aborted === 1, 'the run to be aborted');
  });

  it("logs a subscription's run and its end with the operation's request id, operation id and transport", async () => {
    const lines: any[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { wsUrl } = await start({ logger });
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    for await (const _ of client.iterate({
      query: 'subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename } }',
      variables: { data: runInput([userMessage('hi')], { threadId: 't-logged' }) },
    }));
    await eventually(() => lines.some((line) => line.msg === 'operation completed'), 'the operation to end');
    await client.dispose();
    const run = lines.find((line) => line.msg === 'run succeeded');
    const ended = lines.find((line) => line.msg === 'operation completed');
    expect(run).toMatchObject({
      transport: 'ws',
      operationId: expect.any(String),
      requestId: expect.any(String),
      threadId: 't-logged',
      runId: expect.any(String),
    });
    expect(ended).toMatchObject({ transport: 'ws', operationId: run.operationId, requestId: run.requestId });
  });

  it('pings every socket and drops one that does not answer, keeping those that do', async () => {
    const { wsUrl } = await start({ keepAliveMs: 50 });
    const silent = new WebSocket(wsUrl, 'graphql-transport-ws', { autoPong: false });
    const answering = new WebSocket(wsUrl, 'graphql-transport-ws');
    let pings = 0;
    answering.on('ping', () => pings++);
    await Promise.all([silent, answering].map((socket) => new Promise((resolve) => socket.once('open', resolve))));
    const silentClosed = new Promise<number>((resolve) => silent.once('close', (code) => resolve(code)));
    expect(await silentClosed).toBe(1006); // terminated, not closed politely
    await eventually(() => pings >= 3, 'three pings answered');
    expect(answering.readyState).toBe(WebSocket.OPEN);
    answering.close();
  });

  it('closes a socket that sends a message over the size limit (1009)', async () => {
    const { wsUrl } = await start({ maxBodyBytes: 4096 });
    const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
    await new Promise((resolve) => socket.once('open', resolve));
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { pad: 'x'.repeat(8192) } }));
    expect(await closed).toBe(1009);
  });

  it('refuses introspection over WebSocket in production, as over HTTP', async () => {
    const { wsUrl } = await start({ environment: 'production' });
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const errors = await (async () => {
      for await (const _ of client.iterate({ query: '{ __schema { types { name } } }' })) return undefined;
    })().catch((e) => e);
    await client.dispose();
    expect(errors[0].message).toMatch(/introspection/i);
  });
});

describe('log lines of HTTP runs', () => {
  // The run's logger is a child of the transport's with the request's id, not a grandchild through the
  // request's own logger: the same fields, in the same order, each once.
  it("carry the request's id once, beside the request's own line: GraphQL, an AG-UI route and an AG-UI envelope", async () => {
    const raw: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void raw.push(line) });
    const { url } = await start({ logger });
    const agUiInput = (threadId: string) => ({
      threadId,
      runId: `r-${threadId}`,
      messages: [{ id: 'u1', role: 'user', content: 'hi' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    const post = (to: string, body: unknown, accept = 'application/json') =>
      fetch(to, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify(body),
      });
    const answers = {
      't-graphql': await post(
        url,
        { query: HTTP_STREAMED, variables: { data: runInput([userMessage('hi')], { threadId: 't-graphql' }) } },
        'multipart/mixed',
      ),
      't-route': await post(`${url}/agent/default/run`, agUiInput('t-route')),
      't-envelope': await post(url, {
        method: 'agent/run',
        params: { agentId: 'default' },
        body: agUiInput('t-envelope'),
      }),
    };
    for (const answer of Object.values(answers)) await answer.text();
    await eventually(
      () => raw.filter((line) => line.includes('"run succeeded"')).length === 3,
      'the three runs to end',
    );
    for (const [threadId, answer] of Object.entries(answers)) {
      const requestId = answer.headers.get('x-request-id');
      const line = raw.find((run) => run.includes('"run succeeded"') && run.includes(`"threadId":"${threadId}"`))!;
      expect(line.match(/"requestId"/g)).toHaveLength(1);
      const run = JSON.parse(line);
      expect(run).toMatchObject({ requestId, threadId, runId: expect.any(String) });
      // level, time, pid and hostname come first, then the run logger's fields in their order.
      const fields =
        threadId === 't-graphql' ? ['requestId', 'runId', 'threadId'] : ['requestId', 'protocol', 'runId', 'threadId'];
      expect(Object.keys(run).slice(4, 4 + fields.length)).toEqual(fields);
      await eventually(
        () =>
          raw.some((other) => other.includes('"request completed"') && other.includes(`"requestId":"${requestId}"`)),
        "the request's own line",
      );
    }
  });
});

describe('DNS-rebinding protection in development', () => {
  it('serves loopback names and IP addresses but not other host names', async () => {
    const { url } = await start({ environment: 'development', allowedHosts: ['dev.example.test'] });
    const { port } = new URL(url);
    const request = (host: string) =>
      rawRequest(url, `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    expect(await request(`localhost:${port}`)).toBe('HTTP/1.1 200 OK');
    expect(await request(`127.0.0.1:${port}`)).toBe('HTTP/1.1 200 OK');
    expect(await request(`[::1]:${port}`)).toBe('HTTP/1.1 200 OK');
    expect(await request(`dev.example.test:${port}`)).toBe('HTTP/1.1 200 OK');
    expect(await request(`localhost.:${port}`)).toBe('HTTP/1.1 200 OK');
    expect(await request(`rebind.attacker.example:${port}`)).toBe('HTTP/1.1 403 Forbidden');
    const refused = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(`GET /health HTTP/1.1\r\nHost: rebind.attacker.example:${port}\r\nConnection: close\r\n\r\n`),
      );
      socket.on('data', (data) => (text += data));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4)).errors[0].extensions.code).toBe('FORBIDDEN_HOST');
    const upgrade = await rawRequest(
      url,
      `GET /api/copilotkit HTTP/1.1\r\nHost: rebind.attacker.example:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
    );
    expect(upgrade).toMatch(/^HTTP\/1\.1 40[13]/);
  });

  it('does not check host names in production', async () => {
    const { url } = await start({ environment: 'production' });
    expect(await rawRequest(url, 'GET /health HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n')).toBe(
      'HTTP/1.1 200 OK',
    );
  });
});

describe('errors from Apollo itself', () => {
  it('carry the request id too', async () => {
    const { url } = await start();
    const response = await fetch(`${url}?query=${encodeURIComponent('{ hello }')}`); // a GET without a preflight header: CSRF rule
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.errors[0].extensions).toMatchObject({
      code: 'BAD_REQUEST',
      requestId: response.headers.get('x-request-id'),
    });
  });
});

describe('WebSocket upgrades from browsers', () => {
  /** The status line of an upgrade with the given Origin (none when undefined). */
  async function upgradeFrom(url: string, origin: string | undefined): Promise<string> {
    const { port } = new URL(url);
    return rawRequest(
      url,
      `GET /api/copilotkit HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        (origin ? `Origin: ${origin}\r\n` : '') +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
    );
  }

  it('refuses a page from an origin that is not allowed, and accepts allowed, same-origin and non-browser clients', async () => {
    const { url } = await start({ environment: 'production', corsOrigins: ['https://app.example.com'] });
    const { port } = new URL(url);
    expect(await upgradeFrom(url, 'https://evil.example')).toBe('HTTP/1.1 401 Unauthorized');
    expect(await upgradeFrom(url, 'http://localhost:3000')).toBe('HTTP/1.1 401 Unauthorized'); // no loopback allowance in production
    expect(await upgradeFrom(url, 'https://app.example.com')).toBe('HTTP/1.1 101 Switching Protocols');
    expect(await upgradeFrom(url, `http://127.0.0.1:${port}`)).toBe('HTTP/1.1 101 Switching Protocols');
    expect(await upgradeFrom(url, undefined)).toBe('HTTP/1.1 101 Switching Protocols');
  });
});
