import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client as UrqlClient, subscriptionExchange, gql } from '@urql/core';
import { GraphQLError, parse } from 'graphql';
import { GRAPHQL_TRANSPORT_WS_PROTOCOL, MessageType, createClient, makeServer, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { WS_RUN as RUN } from './support/documents.js';
import { rawWsExchange } from './support/fuzz-client.js';
import { metricValue, runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';
import { until } from './support/threads.js';
import { nextMessage, withWsErrors } from '../src/transports/ws/messages.js';
import { buildSchema } from '../src/graphql/schema.js';

// graphql-ws's own client (and urql over it) against the gateway's WebSocket transport.

const fake = new FakeOpenAI();
let gateway: RunningGateway;
let client: Client;

beforeAll(async () => {
  const baseURL = await fake.start();
  gateway = await startGateway({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0 }),
    actions: [
      { name: 'sayHello', description: 'Greets.', handler: ({ message }: { message: string }) => `Hello, ${message}!` },
    ],
  });
  client = createClient({ url: gateway.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
});

afterAll(async () => {
  await client.dispose();
  await gateway.close();
  await fake.stop();
});

/** All `next` payloads of one operation until it completes. */
async function collect(query: string, variables: Record<string, unknown> = {}): Promise<any[]> {
  const results: any[] = [];
  for await (const result of client.iterate({ query, variables })) results.push(result);
  return results;
}

function events(results: any[]) {
  return results.map((result) => {
    expect(result.errors).toBeUndefined();
    return result.data.copilotRun;
  });
}

describe('the copilotRun subscription over graphql-ws', () => {
  it('streams the run as ordered, typed events from RunStarted to RunFinished', async () => {
    const list = events(
      await collect(RUN, { data: runInput([userMessage('[tokens=8] [delay=2]')], { threadId: 'thread-ws-1' }) }),
    );
    expect(list[0]).toMatchObject({ __typename: 'RunStartedEvent', sequence: 0, threadId: 'thread-ws-1' });
    expect(typeof list[0].runId).toBe('string');
    expect(list[1]).toMatchObject({ __typename: 'TextMessageStartEvent', role: 'assistant' });
    const messageId = list[1].messageId;
    const contents = list.filter((e) => e.__typename === 'TextMessageContentEvent');
    expect(contents.every((e) => e.messageId === messageId)).toBe(true);
    expect(contents.map((e) => e.content).join('')).toBe(Array.from({ length: 8 }, (_, i) => `tok${i} `).join(''));
    expect(list[list.length - 2]).toMatchObject({
      __typename: 'TextMessageEndEvent',
      messageId,
      messageStatus: { __typename: 'SuccessMessageStatus' },
    });
    expect(list[list.length - 1]).toMatchObject({
      __typename: 'RunFinishedEvent',
      status: { __typename: 'SuccessResponseStatus' },
    });
    expect(list.map((e) => e.sequence)).toEqual(list.map((_, i) => i));
  });

  it('streams a server-side action, its result and the continuation', async () => {
    const list = events(
      await collect(RUN, { data: runInput([userMessage('[tool=sayHello] [toolargs={"message":"Ann"}]')]) }),
    );
    const kinds = list.map((e) => e.__typename).filter((kind, i, all) => kind !== all[i - 1]);
    expect(kinds).toEqual([
      'RunStartedEvent',
      'ActionExecutionStartEvent',
      'ActionExecutionArgsEvent',
      'ActionExecutionEndEvent',
      'ActionExecutionResultEvent',
      'TextMessageStartEvent',
      'TextMessageContentEvent',
      'TextMessageEndEvent',
      'RunFinishedEvent',
    ]);
    const result = list.find((e) => e.__typename === 'ActionExecutionResultEvent');
    expect(result).toMatchObject({
      actionName: 'sayHello',
      result: 'Hello, Ann!',
      messageId: `result-${result.actionExecutionId}`,
    });
  });

  it('rejects an invalid input with a typed error and starts nothing', async () => {
    const before = fake.requests.length;
    const results = await collect(RUN, {
      data: runInput([{ id: 'm1', createdAt: new Date().toISOString() }]),
    }).catch((errors) => [{ errors }]);
    const errors = results[0].errors;
    expect(errors[0].message).toMatch(/messages\[0\].*must set exactly one/);
    expect(errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(fake.requests.length).toBe(before);
  });

  // A subscribe message goes to graphql-ws without its payload, which waits by operation id (ws.ts
  // slimSubscribe): the conversation is not held in graphql-ws's handler for the stream's life.
  it('gives a long conversation to the model whole, and the operation its name', async () => {
    const long = `${'Grüße 👋 '.repeat(6000)}end`;
    const results: any[] = [];
    // Two operations in the document: without its operationName, graphql-js could not pick one.
    const operation = {
      query: `${RUN}\nquery Other { hello }`,
      operationName: 'Run',
      variables: { data: runInput([userMessage(long, 'long-1')]) },
    };
    for await (const result of client.iterate(operation)) results.push(result);
    expect(events(results).at(-1)).toMatchObject({ __typename: 'RunFinishedEvent' });
    expect(fake.requests.at(-1).messages.at(-1)).toMatchObject({ role: 'user', content: long });
  });

  it('keeps graphql-ws’s answers to subscribe messages: a reused id closes with 4409, a bad payload with 4400', async () => {
    const subscribe = (id: string, payload: unknown) => JSON.stringify({ id, type: 'subscribe', payload });
    const slow = {
      query: RUN,
      variables: { data: runInput([userMessage(`[delay=200] ${'x'.repeat(400)}`)]) },
      operationName: 'Run',
    };
    const reused = await rawWsExchange(gateway.wsUrl, [subscribe('same', slow), subscribe('same', slow)]);
    expect(reused.closeCode).toBe(4409);
    // An id too long for the close frame's reason (graphql-ws quotes it): still 4409, the reason cut to fit.
    const longId = 'x'.repeat(300);
    const reusedLong = await rawWsExchange(gateway.wsUrl, [subscribe(longId, slow), subscribe(longId, slow)]);
    expect(reusedLong.closeCode).toBe(4409);
    expect(reusedLong.closeReason).toMatch(/^Subscriber for x+…$/);
    const badVariables = await rawWsExchange(gateway.wsUrl, [
      subscribe('bad', { query: `${RUN}${' '.repeat(400)}`, variables: [1, 2] }),
    ]);
    expect(badVariables.closeCode).toBe(4400);
    const badName = await rawWsExchange(gateway.wsUrl, [
      subscribe('bad', { query: `${RUN}${' '.repeat(400)}`, operationName: 7 }),
    ]);
    expect(badName.closeCode).toBe(4400);
  });
});

describe('an operation id the client completes and uses again', () => {
  // graphql-ws's client names each operation anew, and sends nothing for an operation it completes before its
  // `subscribe` went out: these messages come from a raw socket (a careless or hostile client).
  const subscribe = (prompt: string) =>
    JSON.stringify({
      id: 'reused',
      type: 'subscribe',
      payload: { query: RUN, variables: { data: runInput([userMessage(prompt)]) } },
    });
  const complete = JSON.stringify({ id: 'reused', type: 'complete' });

  /** A raw graphql-ws socket, acknowledged, that has sent `frames` at once (they arrive together). */
  async function rawSocket(frames: string[]) {
    const socket = new WebSocket(gateway.wsUrl, 'graphql-transport-ws');
    const received: any[] = [];
    let onMessage = () => {};
    socket.on('message', (data) => {
      received.push(JSON.parse(String(data)));
      onMessage();
    });
    const seen = (predicate: (message: any) => boolean) =>
      new Promise<void>((resolve) => {
        onMessage = () => received.some(predicate) && resolve();
        onMessage();
      });
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await seen((message) => message.type === 'connection_ack');
    // In one write, so that the gateway reads them in one go.
    const tcp = (socket as unknown as { _socket: import('node:net').Socket })._socket;
    tcp.cork();
    for (const frame of frames) socket.send(frame);
    tcp.uncork();
    return { socket, received, seen };
  }

  const activeRuns = () => metricValue(gateway.url, 'copilot_gateway_active_runs');

  it('ends the completed operation, and streams only the new one under the id', async () => {
    // subscribe, complete, subscribe: together, before the first operation has started its run.
    const { socket, received, seen } = await rawSocket([subscribe('[stall] first'), complete, subscribe('second')]);
    await seen((message) => message.id === 'reused' && message.type === 'complete');
    const results = received.filter((message) => message.id === 'reused' && message.type === 'next');
    const names = events(results.map((message) => message.payload)).map((event) => event.__typename);
    expect(names.filter((name) => name === 'RunStartedEvent')).toHaveLength(1);
    expect(names.at(-1)).toBe('RunFinishedEvent');
    // The first run (its model stalls until its client goes away) is not left running.
    await until(activeRuns, (active) => active === 0, 'no run to be left active');
    socket.close();
  });

  it('ends every run asked under the id when the client goes away, however often the id was reused', async () => {
    const frames = [];
    for (let i = 0; i < 4; i++) frames.push(subscribe(`[stall] asked ${i}`), complete);
    const { socket } = await rawSocket([...frames, subscribe('[stall] the last')]);
    await until(activeRuns, (active) => active >= 1, 'the last run to start');
    socket.close();
    await until(activeRuns, (active) => active === 0, 'every run to end with its connection');
  });

  it('closes with 4409, as graphql-ws does, when a second subscribe comes under the id while one waits, and 4400 for a malformed one', async () => {
    const { socket } = await rawSocket([subscribe('[stall] first'), complete, subscribe('a'), subscribe('b')]);
    expect(await new Promise<number>((resolve) => socket.once('close', resolve))).toBe(4409);
    await until(activeRuns, (active) => active === 0, 'no run to be left active');
    // A malformed subscribe (no payload) is not held: graphql-ws refuses it at once (4400), as on any id.
    const malformed = JSON.stringify({ id: 'reused', type: 'subscribe' });
    const refused = await rawSocket([subscribe('[stall] first'), complete, malformed, complete]);
    expect(await new Promise<number>((resolve) => refused.socket.once('close', resolve))).toBe(4400);
    await until(activeRuns, (active) => active === 0, 'no run to be left active');
  });
});

describe('queries and the mutation over graphql-ws', () => {
  it('answers an invalid document with a coded error and keeps the socket open', async () => {
    const opened: unknown[] = [];
    const closed: unknown[] = [];
    const single = createClient({
      url: gateway.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      on: { opened: (socket) => opened.push(socket), closed: (event) => closed.push(event) },
    });
    const run = async (query: string) => {
      const results: any[] = [];
      for await (const result of single.iterate({ query })) results.push(result);
      return results;
    };
    const keepAlive = single.iterate({
      query: RUN,
      variables: { data: runInput([userMessage('[tokens=50] [delay=20]')]) },
    });
    await keepAlive.next(); // one operation in flight on the socket while the bad ones arrive
    const syntax = await run('{ hello').catch((errors) => errors);
    expect(syntax[0]).toMatchObject({
      message: expect.stringMatching(/Syntax Error/),
      extensions: { code: 'GRAPHQL_PARSE_FAILED' },
    });
    const invalid = await run('{ nope }').catch((errors) => errors);
    expect(invalid[0]).toMatchObject({
      message: expect.stringMatching(/nope/),
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
    expect(await run('{ hello }')).toEqual([{ data: { hello: 'Hello World' } }]);
    expect(opened).toHaveLength(1);
    expect(closed).toHaveLength(0);
    await keepAlive.return?.(undefined);
    await single.dispose();
  });

  it('answers hello and availableAgents', async () => {
    const [result] = await collect('{ hello availableAgents { agents { id name } } }');
    expect(result).toEqual({ data: { hello: 'Hello World', availableAgents: { agents: [] } } });
  });

  it('streams generateCopilotResponse with @stream and @defer as successive payloads', async () => {
    const results = await collect(
      `mutation($data: GenerateCopilotResponseInput!) {
        generateCopilotResponse(data: $data) {
          threadId
          ... @defer { status { ... on BaseResponseStatus { code } } }
          messages @stream { id ... on TextMessageOutput { content @stream } }
        }
      }`,
      { data: runInput([userMessage('[tokens=5] [delay=5]')]) },
    );
    expect(results.length).toBeGreaterThan(3);
    expect(results[0].hasNext).toBe(true);
    expect(results[results.length - 1].hasNext).toBe(false);
    const items = results.flatMap((r) => r.incremental ?? []).filter((i: any) => i.items && i.path.length === 5);
    expect(items.flatMap((i: any) => i.items).join('')).toBe('tok0 tok1 tok2 tok3 tok4 ');
    const status = results.flatMap((r) => r.incremental ?? []).find((i: any) => i.data?.status);
    expect(status.data.status).toEqual({ code: 'Success' });
  });
});

describe('urql over graphql-ws', () => {
  it('receives the run events through subscriptionExchange', async () => {
    const wsClient = createClient({ url: gateway.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const urql = new UrqlClient({
      url: gateway.url,
      exchanges: [
        subscriptionExchange({
          forwardSubscription: (request) => ({
            subscribe: (sink) => ({
              unsubscribe: wsClient.subscribe({ ...request, query: request.query ?? '' }, sink as any),
            }),
          }),
        }),
      ],
    });
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const { unsubscribe } = urql
        .subscription(gql(RUN), { data: runInput([userMessage('[tokens=3]')]) })
        .subscribe((result) => {
          if (result.error) return reject(result.error);
          const event = result.data.copilotRun;
          seen.push(event.__typename);
          if (event.__typename === 'RunFinishedEvent') {
            unsubscribe();
            resolve();
          }
        });
    });
    await wsClient.dispose();
    expect(seen[0]).toBe('RunStartedEvent');
    expect(seen).toContain('TextMessageContentEvent');
    expect(seen[seen.length - 1]).toBe('RunFinishedEvent');
  });
});

describe('pushed subscriptions write the next messages graphql-ws writes', () => {
  it('for results with and without errors, an empty error list, extensions', async () => {
    // graphql-ws's own server (with the transport's onNext hook) sends these results over a socket
    // of ours; the transport's pushed path must frame each one the same, byte for byte.
    const results = [
      { data: { copilotRun: { __typename: 'RunStartedEvent', sequence: 0 } } },
      {
        data: { copilotRun: { __typename: 'TextMessageContentEvent', content: 'a "quoted" \u2603\n' } },
        errors: undefined,
      },
      {
        data: null,
        errors: [
          new GraphQLError('boom', {
            path: ['copilotRun', 'content'],
            extensions: { code: 'INTERNAL_SERVER_ERROR', http: { status: 500 } },
          }),
        ],
      },
      { data: { copilotRun: null }, errors: [] },
      { data: { copilotRun: { __typename: 'RunFinishedEvent' } }, extensions: { cost: 1 } },
    ] as any[];
    const schema = buildSchema();
    const server = makeServer({
      schema,
      // The document is not executed (subscribe yields the results): graphql-ws only needs its operation.
      onSubscribe: () => ({ schema, document: parse('subscription { copilotRun(data: {}) { __typename } }') }),
      onNext: (_ctx, _id, _payload, _args, result) => withWsErrors(result, false),
      subscribe: async function* () {
        yield* results;
      },
    });
    const frames: string[] = [];
    let handle: (data: string) => Promise<void> = async () => {};
    const closed = server.opened(
      {
        protocol: GRAPHQL_TRANSPORT_WS_PROTOCOL,
        send: (data) => void frames.push(data),
        close: () => {},
        onMessage: (cb) => {
          handle = cb;
        },
      },
      {},
    );
    await handle(JSON.stringify({ type: MessageType.ConnectionInit }));
    await handle(JSON.stringify({ id: 'op-1', type: MessageType.Subscribe, payload: { query: '' } }));
    await closed(1000, 'done');
    const nexts = frames.filter((frame) => JSON.parse(frame).type === 'next');
    expect(nexts).toHaveLength(results.length);
    expect(results.map((result) => nextMessage('op-1', result))).toEqual(nexts);
    expect(JSON.parse(nexts[2]).payload.errors[0].extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR' });
  });
});
