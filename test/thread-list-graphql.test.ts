import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, type Client } from 'graphql-ws';
import { SignJWT } from 'jose';
import WebSocket from 'ws';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { apiKeyAuthenticator } from '../src/auth/api-keys.js';
import { anyOf } from '../src/auth/authenticate.js';
import { jwtAuthenticator } from '../src/auth/jwt.js';
import type { GatewayOptions } from '../src/gateway.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { COPILOT_RUN, JOIN_RUN, THREAD, until, watch } from './support/threads.js';

// The thread list for GraphQL clients (copilotThreads, renameCopilotThread, archiveCopilotThread,
// deleteCopilotThread): the same list, rules and answers as the REST `/threads` CopilotKit ≥1.50 reads
// (test/thread-list.test.ts), over HTTP POST and graphql-ws, on both executors; one caller never reaches another's
// threads, and without authentication the list is off unless THREAD_LIST_ANONYMOUS.

const fake = new FakeOpenAI();
let baseURL: string;

beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(async () => {
  await fake.stop();
});

const { start } = gatewaysPerTest();
const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });

const SUMMARY = /* GraphQL */ `
  fragment Summary on CopilotThreadSummary {
    id
    agentId
    name
    archived
    createdAt
    updatedAt
    lastRunAt
  }
`;

const LIST = /* GraphQL */ `
  query List($agentId: String! = "default", $includeArchived: Boolean, $first: Int, $after: String) {
    copilotThreads(agentId: $agentId, includeArchived: $includeArchived, first: $first, after: $after) {
      nodes {
        ...Summary
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
  ${SUMMARY}
`;

const RENAME = /* GraphQL */ `
  mutation Rename($threadId: ID!, $name: String!) {
    renameCopilotThread(threadId: $threadId, name: $name) {
      ...Summary
    }
  }
  ${SUMMARY}
`;

const ARCHIVE = /* GraphQL */ `
  mutation Archive($threadId: ID!, $archived: Boolean!) {
    archiveCopilotThread(threadId: $threadId, archived: $archived) {
      ...Summary
    }
  }
  ${SUMMARY}
`;

/** `archived` left to its default (true). */
const ARCHIVE_DEFAULT = /* GraphQL */ `
  mutation ArchiveDefault($threadId: ID!) {
    archiveCopilotThread(threadId: $threadId) {
      id
      archived
    }
  }
`;

const DELETE = /* GraphQL */ `
  mutation Delete($threadId: ID!) {
    deleteCopilotThread(threadId: $threadId)
  }
`;

/** A GraphQL answer: its data and errors (as graphql-ws and HTTP give them alike). */
interface Answer {
  data?: any;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/** One way to send an operation: HTTP POST, or one graphql-ws connection of the caller's. */
interface Channel {
  ask(query: string, variables?: Record<string, unknown>): Promise<Answer>;
  close(): Promise<void>;
}

function httpChannel(g: RunningGateway, headers: Record<string, string> = {}): Channel {
  return {
    async ask(query, variables = {}) {
      const response = await fetch(g.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query, variables }),
      });
      return (await response.json()) as Answer;
    },
    close: async () => {},
  };
}

function wsChannel(g: RunningGateway, connectionParams: Record<string, string> = {}): Channel {
  const client: Client = createClient({
    url: g.wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    connectionParams,
  });
  return {
    ask: (query, variables = {}) =>
      new Promise<Answer>((resolve, reject) => {
        let answer: Answer | undefined;
        client.subscribe(
          { query, variables },
          {
            next: (result) => {
              answer = result as Answer;
            },
            // graphql-ws reports an operation's GraphQL errors as `error` with the errors array.
            error: (error) => (Array.isArray(error) ? resolve({ errors: error }) : reject(error as Error)),
            complete: () => (answer ? resolve(answer) : reject(new Error('completed without a result'))),
          },
        );
      }),
    close: () => Promise.resolve(client.dispose()),
  };
}

const channels: [string, (g: RunningGateway, credential?: string) => Channel][] = [
  ['HTTP POST', (g, credential) => httpChannel(g, credential ? { authorization: `Bearer ${credential}` } : {})],
  ['graphql-ws', (g, credential) => wsChannel(g, credential ? { authorization: `Bearer ${credential}` } : {})],
];
const executors: NonNullable<GatewayOptions['executor']>[] = ['fast', 'stock'];

/** One AG-UI run of the model on the thread, to its end. */
async function agRun(g: RunningGateway, threadId: string, text: string, credential?: string): Promise<void> {
  const response = await fetch(`${g.url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
    body: JSON.stringify({
      threadId,
      runId: `run-${Math.random().toString(36).slice(2)}`,
      messages: [{ id: `u-${Math.random().toString(36).slice(2)}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('RUN_FINISHED');
}

/** One GraphQL run (the `copilotRun` subscription) on the thread, to its end. */
async function graphqlRun(g: RunningGateway, threadId: string, text: string): Promise<void> {
  const run = watch(g.wsUrl, COPILOT_RUN, { data: runInput([userMessage(text)], { threadId }) });
  await run.done;
  expect(run.errors).toEqual([]);
  expect(run.events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
}

const ids = (answer: Answer) => answer.data.copilotThreads.nodes.map((node: any) => node.id);
const codeOf = (answer: Answer) => answer.errors?.[0]?.extensions?.code;

describe.each(executors)('on the %s executor', (executor) => {
  describe.each(channels)('over %s', (_name, open) => {
    it('lists, pages, renames, archives, unarchives and deletes, as the REST list shows the same threads', async () => {
      const g = await start({ executor, adapter: adapter(), threads: { listAnonymous: true } });
      const gql = open(g);
      try {
        await agRun(g, 'h-1', 'What is the weather   like\nin Paris?');
        await agRun(g, 'h-2', 'Second thread');
        await graphqlRun(g, 'g-1', 'Asked through GraphQL');
        await agRun(g, 'h-1', 'And tomorrow?');

        const listed = await gql.ask(LIST);
        expect(listed.errors).toBeUndefined();
        expect(ids(listed)).toEqual(['h-1', 'g-1', 'h-2']);
        expect(listed.data.copilotThreads.pageInfo).toEqual({ hasNextPage: false, endCursor: null });
        const [first] = listed.data.copilotThreads.nodes;
        expect(first).toEqual({
          id: 'h-1',
          agentId: 'default',
          name: 'What is the weather like in Paris?',
          archived: false,
          createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
          lastRunAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        });
        expect(first.lastRunAt >= first.createdAt).toBe(true);
        // The same entries, field for field, as the REST list CopilotKit ≥1.50 reads.
        const rest = (await (await fetch(`${g.url}/threads?agentId=default`)).json()) as { threads: any[] };
        expect(listed.data.copilotThreads.nodes).toEqual(
          rest.threads.map(({ id, agentId, name, archived, createdAt, updatedAt, lastRunAt }) => {
            return { id, agentId, name, archived, createdAt, updatedAt, lastRunAt };
          }),
        );
        // Another agent's list is another list.
        expect(ids(await gql.ask(LIST, { agentId: 'researcher' }))).toEqual([]);

        const renamed = await gql.ask(RENAME, { threadId: 'h-2', name: '  Trip plans ' });
        expect(renamed).toEqual({ data: { renameCopilotThread: expect.objectContaining({ id: 'h-2' }) } });
        expect(renamed.data.renameCopilotThread).toMatchObject({ name: 'Trip plans', archived: false });
        expect(renamed.data.renameCopilotThread.updatedAt >= renamed.data.renameCopilotThread.lastRunAt).toBe(true);

        const archived = await gql.ask(ARCHIVE_DEFAULT, { threadId: 'h-1' });
        expect(archived).toEqual({ data: { archiveCopilotThread: { id: 'h-1', archived: true } } });
        expect(ids(await gql.ask(LIST))).toEqual(['g-1', 'h-2']);
        const all = await gql.ask(LIST, { includeArchived: true });
        expect(all.data.copilotThreads.nodes.map((node: any) => [node.id, node.archived, node.name])).toEqual([
          ['h-1', true, 'What is the weather like in Paris?'],
          ['g-1', false, 'Asked through GraphQL'],
          ['h-2', false, 'Trip plans'],
        ]);
        const unarchived = await gql.ask(ARCHIVE, { threadId: 'h-1', archived: false });
        expect(unarchived.data.archiveCopilotThread).toMatchObject({ id: 'h-1', archived: false });
        expect(ids(await gql.ask(LIST))).toEqual(['h-1', 'g-1', 'h-2']);

        expect(await gql.ask(DELETE, { threadId: 'g-1' })).toEqual({ data: { deleteCopilotThread: true } });
        expect(ids(await gql.ask(LIST, { includeArchived: true }))).toEqual(['h-1', 'h-2']);
        expect((await gql.ask(THREAD, { threadId: 'g-1' })).data).toEqual({ copilotThread: null });
        // A thread that is gone answers as one that never was.
        expect(await gql.ask(DELETE, { threadId: 'g-1' })).toEqual({ data: { deleteCopilotThread: false } });
        expect(await gql.ask(RENAME, { threadId: 'g-1', name: 'x' })).toEqual({ data: { renameCopilotThread: null } });
        expect(await gql.ask(ARCHIVE, { threadId: 'never', archived: true })).toEqual({
          data: { archiveCopilotThread: null },
        });
      } finally {
        await gql.close();
      }
    });

    it('pages with endCursor, a page staying put while threads are added, and refuses bad input', async () => {
      const g = await start({ executor, adapter: adapter(), threads: { listAnonymous: true } });
      const gql = open(g);
      try {
        for (let i = 0; i < 5; i++) await agRun(g, `p-${i}`, `thread ${i}`);
        const first = await gql.ask(LIST, { first: 2 });
        expect(ids(first)).toEqual(['p-4', 'p-3']);
        const { pageInfo } = first.data.copilotThreads;
        expect(pageInfo).toEqual({ hasNextPage: true, endCursor: expect.any(String) });
        // A thread run between two pages sorts before the cursor: the next page goes on where the first ended.
        await agRun(g, 'p-new', 'newer');
        const second = await gql.ask(LIST, { first: 2, after: pageInfo.endCursor });
        expect(ids(second)).toEqual(['p-2', 'p-1']);
        const third = await gql.ask(LIST, { first: 2, after: second.data.copilotThreads.pageInfo.endCursor });
        expect(third.data.copilotThreads).toEqual({
          nodes: [expect.objectContaining({ id: 'p-0' })],
          pageInfo: { hasNextPage: false, endCursor: null },
        });
        // Null and empty `after` are the first page; `first` null is the default page.
        expect(ids(await gql.ask(LIST, { first: null, after: '' }))).toEqual([
          'p-new',
          'p-4',
          'p-3',
          'p-2',
          'p-1',
          'p-0',
        ]);
        expect(ids(await gql.ask(LIST, { first: 200, after: null }))).toHaveLength(6);

        for (const variables of [
          { first: 0 },
          { first: 201 },
          { first: -1 },
          { after: 'garbage' },
          { after: Buffer.from('[1,2,3]').toString('base64url') },
          { agentId: '' },
        ]) {
          const answer = await gql.ask(LIST, variables);
          expect([variables, codeOf(answer), answer.data ?? null]).toEqual([variables, 'BAD_USER_INPUT', null]);
        }
        expect((await gql.ask(LIST, { first: 0 })).errors?.[0].message).toBe('first must be from 1 to 200 (got 0).');
        for (const name of ['', '   ', 'x'.repeat(201), 'bad \ud800 text']) {
          const answer = await gql.ask(RENAME, { threadId: 'p-0', name });
          // The field is nullable: it is null beside the error.
          expect([name, codeOf(answer), answer.data]).toEqual([name, 'BAD_USER_INPUT', { renameCopilotThread: null }]);
        }
        expect((await gql.ask(RENAME, { threadId: 'p-0', name: '' })).errors?.[0].message).toBe(
          'name is 1 to 200 characters (not only spaces).',
        );
        // A thread id no store can hold is refused before the store is asked.
        for (const query of [DELETE, ARCHIVE_DEFAULT]) {
          expect(codeOf(await gql.ask(query, { threadId: '' }))).toBe('BAD_USER_INPUT');
          expect(codeOf(await gql.ask(query, { threadId: 'x'.repeat(257) }))).toBe('BAD_USER_INPUT');
          // Half of a surrogate pair: as UTF-8 (the store's keys) every one would be the same U+FFFD.
          expect(codeOf(await gql.ask(query, { threadId: 'p-0\ud800' }))).toBe('BAD_USER_INPUT');
        }
        expect(codeOf(await gql.ask(RENAME, { threadId: 'p-0\udc00', name: 'n' }))).toBe('BAD_USER_INPUT');
        expect(codeOf(await gql.ask(LIST, { agentId: 'default\ud800' }))).toBe('BAD_USER_INPUT');
        // Nothing was changed by the refusals; a name of exactly 200 characters is taken.
        expect(ids(await gql.ask(LIST, { first: 200 }))).toHaveLength(6);
        const p0 = (await gql.ask(LIST, { first: 1, after: second.data.copilotThreads.pageInfo.endCursor })).data;
        expect(p0.copilotThreads.nodes[0]).toMatchObject({ id: 'p-0', name: 'thread 0' });
        const longest = await gql.ask(RENAME, { threadId: 'p-0', name: 'y'.repeat(200) });
        expect(longest.data.renameCopilotThread.name).toBe('y'.repeat(200));
      } finally {
        await gql.close();
      }
    });

    it('is off without authentication unless THREAD_LIST_ANONYMOUS: NOT_SUPPORTED, and nothing changes', async () => {
      const g = await start({ executor, adapter: adapter() });
      const gql = open(g);
      try {
        await agRun(g, 'off-1', 'hello');
        const listed = await gql.ask(LIST);
        expect(codeOf(listed)).toBe('NOT_SUPPORTED');
        expect(listed.errors?.[0].message).toContain('THREAD_LIST_ANONYMOUS');
        expect(listed.data ?? null).toBeNull();
        for (const [query, variables] of [
          [RENAME, { threadId: 'off-1', name: 'x' }],
          [ARCHIVE, { threadId: 'off-1', archived: true }],
          [DELETE, { threadId: 'off-1' }],
          [DELETE, { threadId: 'never-was' }],
        ] as const) {
          const answer = await gql.ask(query, variables);
          expect([query, codeOf(answer)]).toEqual([query, 'NOT_SUPPORTED']);
        }
        // The thread is still there, as it was.
        const thread = await gql.ask(THREAD, { threadId: 'off-1' });
        expect(thread.data.copilotThread).toMatchObject({ threadId: 'off-1', messages: expect.any(Array) });
        expect(thread.data.copilotThread.messages).toHaveLength(2);
      } finally {
        await gql.close();
      }
    });
  });
});

describe('deleteCopilotThread', () => {
  it("stops the thread's run going on first: its GraphQL client sees RUN_STOPPED saying why", async () => {
    const g = await start({ adapter: adapter(), threads: { listAnonymous: true } });
    const gql = httpChannel(g);
    const run = watch(g.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[stall]')], { threadId: 'd-1' }) });
    await until(
      () => gql.ask(LIST),
      (answer) => answer.data?.copilotThreads.nodes.length === 1,
      'the running thread listed',
    );
    expect(await gql.ask(DELETE, { threadId: 'd-1' })).toEqual({ data: { deleteCopilotThread: true } });
    await run.done;
    expect(run.events.at(-1)).toMatchObject({
      __typename: 'RunFinishedEvent',
      status: {
        code: 'Failed',
        details: expect.objectContaining({
          code: 'RUN_STOPPED',
          description: 'The thread was deleted; its run was stopped.',
        }),
      },
    });
    expect(ids(await gql.ask(LIST, { includeArchived: true }))).toEqual([]);
    expect((await gql.ask(THREAD, { threadId: 'd-1' })).data).toEqual({ copilotThread: null });
    const join = watch(g.wsUrl, JOIN_RUN, { threadId: 'd-1' });
    await join.done;
    expect(join.errors).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'RUN_NOT_FOUND' }) }),
    ]);
  });
});

describe("one caller never reaches another caller's threads through GraphQL", () => {
  const KEY_A = 'key-a-0123456789abcdef-secret';
  const KEY_B = 'key-b-0123456789abcdef-secret';
  const JWT_SECRET = 'a-shared-secret-of-at-least-32-characters!';

  async function token(sub: string): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(JWT_SECRET));
  }

  it.each(channels)('over %s, with API keys and with JWTs', async (_name, open) => {
    const g = await start({
      adapter: adapter(),
      authenticate: anyOf(apiKeyAuthenticator([KEY_A, KEY_B]), jwtAuthenticator({ secret: JWT_SECRET })),
    });
    const alice = KEY_A;
    const bob = KEY_B;
    const carol = await token('carol');
    const dave = await token('dave');
    await agRun(g, 'alice-1', 'Alice asks', alice);
    await agRun(g, 'carol-1', 'Carol asks', carol);

    for (const [owner, other, id] of [
      [alice, bob, 'alice-1'],
      [carol, dave, 'carol-1'],
      [alice, carol, 'alice-1'],
      [carol, alice, 'carol-1'],
    ] as const) {
      const mine = open(g, owner);
      const theirs = open(g, other);
      try {
        expect(ids(await mine.ask(LIST))).toEqual([id]);
        expect(ids(await theirs.ask(LIST, { includeArchived: true }))).not.toContain(id);
        // Another's thread answers exactly as one that does not exist.
        const tries = [
          await theirs.ask(RENAME, { threadId: id, name: 'mine now' }),
          await theirs.ask(ARCHIVE, { threadId: id, archived: true }),
          await theirs.ask(ARCHIVE, { threadId: id, archived: false }),
          await theirs.ask(DELETE, { threadId: id }),
          await theirs.ask(THREAD, { threadId: id }),
        ];
        const missing = [
          await theirs.ask(RENAME, { threadId: 'no-such-thread', name: 'mine now' }),
          await theirs.ask(ARCHIVE, { threadId: 'no-such-thread', archived: true }),
          await theirs.ask(ARCHIVE, { threadId: 'no-such-thread', archived: false }),
          await theirs.ask(DELETE, { threadId: 'no-such-thread' }),
          await theirs.ask(THREAD, { threadId: 'no-such-thread' }),
        ];
        expect(tries).toEqual(missing);
        expect(tries.map((answer) => Object.values(answer.data)[0])).toEqual([null, null, null, false, null]);
        // Nothing changed.
        expect((await mine.ask(LIST)).data.copilotThreads.nodes).toEqual([
          expect.objectContaining({ id, archived: false, name: expect.stringContaining('asks') }),
        ]);
      } finally {
        await Promise.all([mine.close(), theirs.close()]);
      }
    }
  });

  it('refuses a caller without credentials before anything runs: 401 over HTTP, 4403 over graphql-ws', async () => {
    const g = await start({ adapter: adapter(), authenticate: apiKeyAuthenticator([KEY_A]) });
    await agRun(g, 'kept', 'Kept', KEY_A);
    const response = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: DELETE, variables: { threadId: 'kept' } }),
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as Answer).errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
    const anonymous = wsChannel(g);
    await expect(anonymous.ask(LIST)).rejects.toMatchObject({ code: 4403 });
    await anonymous.close();
    expect(ids(await httpChannel(g, { authorization: `Bearer ${KEY_A}` }).ask(LIST))).toEqual(['kept']);
  });
});
