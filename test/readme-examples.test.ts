import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApolloClient, HttpLink, InMemoryCache, split, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { possibleTypes } from '../src/index.js';
import { startGateway, type RunningGateway } from './support/harness.js';
import { close, listen } from './support/loopback.js';
import { createServer } from 'node:http';

// The README's examples, as written: the curl requests, the graphql-ws subscription, and Apollo
// Client (with the possibleTypes the gateway ships) selecting the same fields.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const curlBlock = readme.slice(readme.indexOf('## Try it with curl'), readme.indexOf('## Stream a run over WebSocket'));
const bodies = [...curlBlock.matchAll(/ -d '([\s\S]*?)'/g)].map((match) => JSON.parse(match[1]));
const wsBlock = readme.slice(
  readme.indexOf('## Stream a run over WebSocket'),
  readme.indexOf('## Apollo Client and urql'),
);
const subscription = wsBlock.match(/query: `([\s\S]*?)`/)![1];
const [queryBody, mutationBody, streamedBody] = bodies;

let demo: RunningGateway;
let broken: RunningGateway;
const closedPort = createServer();
let unreachable: string;

beforeAll(async () => {
  demo = await startGateway(); // npm start without a key: the demo model
  unreachable = await listen(closedPort);
  await close(closedPort);
  broken = await startGateway({ adapter: new OpenAIAdapter({ baseURL: `${unreachable}/v1`, maxRetries: 0 }) });
});

afterAll(async () => {
  await demo.close();
  await broken.close();
});

function post(url: string, body: unknown, accept = 'application/json') {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify(body),
  });
}

/** The SSE events' data, parsed. */
async function sse(response: Response): Promise<any[]> {
  const text = await response.text();
  return [...text.matchAll(/^event: next\ndata: (.*)$/gm)].map((match) => JSON.parse(match[1]));
}

describe("the README's curl examples, as written", () => {
  it('has the three requests', () => {
    expect(bodies).toHaveLength(3);
  });

  it('answers the query', async () => {
    expect(await (await post(demo.url, queryBody)).json()).toEqual({
      data: { hello: 'Hello World', availableAgents: { agents: [] } },
    });
  });

  it('answers the mutation as one result whose content is a list of chunks, with its status', async () => {
    const { data } = await (await post(demo.url, mutationBody)).json();
    const response = data.generateCopilotResponse;
    expect(response.status).toEqual({ code: 'Success' });
    // Not streamed, the list is read whole for the executor (PROTOCOL §2.4): its chunks may be joined.
    expect(response.messages[0].content.length).toBeGreaterThan(0);
    expect(response.messages[0].content.join('')).toContain('[demo mode]');
  });

  it('streams the mutation as server-sent events, the status last', async () => {
    const events = await sse(await post(demo.url, streamedBody, 'text/event-stream'));
    expect(events.length).toBeGreaterThan(3);
    const last = events.at(-1);
    expect(last.hasNext).toBe(false);
    expect(last.incremental.find((entry: any) => entry.data?.status)).toMatchObject({
      data: { status: { code: 'Success' } },
    });
  });

  it('shows a failure in the streamed status, as the README says', async () => {
    const events = await sse(await post(broken.url, streamedBody, 'text/event-stream'));
    const status = events.flatMap((event) => event.incremental ?? []).find((entry: any) => entry.data?.status)
      .data.status;
    expect(status).toMatchObject({
      code: 'Failed',
      reason: 'UNKNOWN_ERROR',
      details: {
        code: 'UPSTREAM_UNREACHABLE',
        description:
          'The model provider could not be reached (connection refused). Check OPENAI_BASE_URL and that the server is running.',
      },
    });
  });
});

describe("the README's graphql-ws example", () => {
  it('streams the run, every event with its sequence, the status at the end', async () => {
    const client = createClient({ url: demo.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
    const events: any[] = [];
    const variables = {
      data: {
        metadata: { requestType: 'Chat' },
        frontend: { actions: [] },
        messages: [
          { id: '1', createdAt: new Date().toISOString(), textMessage: { role: 'user', content: 'What time is it?' } },
        ],
      },
    };
    for await (const { data } of client.iterate({ query: subscription, variables }))
      events.push((data as any).copilotRun);
    await client.dispose();
    expect(events.every((event) => typeof event.sequence === 'number')).toBe(true);
    expect(events.find((event) => event.__typename === 'ActionExecutionResultEvent')).toMatchObject({
      actionName: 'getCurrentTime',
    });
    expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
  });
});

describe('Apollo Client 4 with the possibleTypes the gateway ships', () => {
  function apollo(url: string, cacheOptions: ConstructorParameters<typeof InMemoryCache>[0]) {
    const wsClient = createClient({
      url: url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: true,
    });
    const client = new ApolloClient({
      link: split(
        ({ query }) => {
          const definition = getMainDefinition(query);
          return definition.kind === 'OperationDefinition' && definition.operation === 'subscription';
        },
        new GraphQLWsLink(wsClient),
        new HttpLink({ uri: url }),
      ),
      cache: new InMemoryCache(cacheOptions),
    });
    return { client, dispose: () => wsClient.dispose() };
  }

  async function subscriptionEvents(client: ApolloClient): Promise<any[]> {
    const variables = {
      data: {
        metadata: { requestType: 'Chat' },
        frontend: { actions: [] },
        messages: [
          { id: '1', createdAt: new Date().toISOString(), textMessage: { role: 'user', content: 'What time is it?' } },
        ],
      },
    };
    return new Promise((resolve, reject) => {
      const events: any[] = [];
      client.subscribe({ query: gql(subscription), variables }).subscribe({
        next: (result) => events.push((result.data as any).copilotRun),
        error: reject,
        complete: () => resolve(events),
      });
    });
  }

  it("sees every field the README's subscription selects, sequence included", async () => {
    const { client, dispose } = apollo(demo.url, { possibleTypes });
    const events = await subscriptionEvents(client);
    await dispose();
    expect(events.length).toBeGreaterThan(5);
    expect(events.map((event) => event.sequence).every((sequence) => typeof sequence === 'number')).toBe(true);
    expect(events[0]).toMatchObject({
      __typename: 'RunStartedEvent',
      sequence: 0,
      threadId: expect.any(String),
      runId: expect.any(String),
    });
    expect(events.find((event) => event.__typename === 'ActionExecutionStartEvent')).toMatchObject({
      actionName: 'getCurrentTime',
      actionExecutionId: expect.any(String),
    });
    expect(events.find((event) => event.__typename === 'TextMessageContentEvent')).toMatchObject({
      messageId: expect.any(String),
      content: expect.any(String),
    });
    expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
  });

  it('loses those fields without them, which is why they are shipped', async () => {
    const { client, dispose } = apollo(demo.url, {});
    const events = await subscriptionEvents(client);
    await dispose();
    expect(events.every((event) => event.sequence === undefined)).toBe(true);
  });

  it("runs the README's query and mutation over HTTP", async () => {
    const { client, dispose } = apollo(demo.url, { possibleTypes });
    const query = await client.query({ query: gql(queryBody.query) });
    expect(query.data).toEqual({ hello: 'Hello World', availableAgents: { __typename: 'AgentsResponse', agents: [] } });
    const mutation = await client.mutate({ mutation: gql(mutationBody.query), variables: mutationBody.variables });
    const response = (mutation.data as any).generateCopilotResponse;
    expect(response.status).toMatchObject({ code: 'Success' });
    expect(response.messages[0].content.join('')).toContain('[demo mode]');
    await dispose();
  });
});

describe("the README's thread example", () => {
  const threadsBlock = readme.slice(readme.indexOf('## Threads: restore a chat'), readme.indexOf('## Scale out'));
  const resume = threadsBlock.match(/```graphql\n([\s\S]*?)```/)![1];

  it('resumes a run after the last sequence seen, with its document as written', async () => {
    const client = createClient({ url: demo.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
    try {
      const data = {
        threadId: 'readme-resume',
        metadata: { requestType: 'Chat' },
        frontend: { actions: [] },
        messages: [
          { id: 'r1', createdAt: new Date().toISOString(), textMessage: { role: 'user', content: 'Hello there' } },
        ],
      };
      const first: any[] = [];
      for await (const { data: event } of client.iterate({ query: subscription, variables: { data } }))
        first.push((event as any).copilotRun);
      const seen = first.slice(0, 3);
      const rest: any[] = [];
      for await (const { data: event } of client.iterate({
        query: resume,
        variables: { threadId: 'readme-resume', afterSequence: seen.at(-1).sequence },
      })) {
        rest.push((event as any).joinCopilotRun);
      }
      expect(rest[0].sequence).toBeGreaterThan(seen.at(-1).sequence);
      expect(rest.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
      const text = (events: any[]) =>
        events
          .filter((e) => e.__typename === 'TextMessageContentEvent')
          .map((e) => e.content)
          .join('');
      expect(text(seen) + text(rest)).toBe(text(first));
    } finally {
      await client.dispose();
    }
  });
});
