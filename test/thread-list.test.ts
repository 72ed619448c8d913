import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT } from 'jose';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { apiKeyAuthenticator } from '../src/auth/api-keys.js';
import { anyOf } from '../src/auth/authenticate.js';
import { jwtAuthenticator } from '../src/auth/jwt.js';
import type { SequencedEvent } from '../src/core/events.js';
import { RUN_SUCCESS } from '../src/core/status.js';
import type { RedisThreadStore } from '../src/threads/redis/store.js';
import type { ThreadStore } from '../src/threads/store.js';
import { MemoryThreadStore } from '../src/threads/memory.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { RedisServer, startRedisStore } from './support/redis.js';
import { RedisCluster } from './support/redis-cluster.js';
import { COPILOT_RUN, memoryStore, until, watch } from './support/threads.js';

// The thread list CopilotKit ≥1.50 frontends read (`/threads`, and `resource/request` on the single route): the
// stores' pages (memory and Redis), the routes' shapes and statuses, and that one caller never reaches another's.

const fake = new FakeOpenAI();
let baseURL: string;
let redis: RedisServer;
let cluster: RedisCluster;

beforeAll(async () => {
  [baseURL, redis, cluster] = await Promise.all([fake.start(), RedisServer.start(), RedisCluster.start()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([fake.stop(), redis.close(), cluster.close()]);
});

/** Where each Redis store of these tests is: one server, or a three-primary cluster (lists and threads in other slots). */
const redisConnections = [
  ['Redis', () => ({ url: redis.url })],
  [
    'Redis Cluster',
    () => ({ clusterNodes: cluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })) }),
  ],
] as const;

const { start } = gatewaysPerTest();
const KEY_A = 'key-a-0123456789abcdef-secret';
const KEY_B = 'key-b-0123456789abcdef-secret';
const JWT_SECRET = 'a-shared-secret-of-at-least-32-characters!';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A whole run's events, as a log takes them. */
function runEvents(threadId: string, runId: string, text = 'hello'): SequencedEvent[] {
  return [
    { type: 'RunStarted', threadId, runId, sequence: 0 },
    { type: 'TextMessageStart', messageId: `m-${runId}`, parentMessageId: null, role: 'assistant', sequence: 1 },
    { type: 'TextMessageContent', messageId: `m-${runId}`, content: text, sequence: 2 },
    { type: 'TextMessageEnd', messageId: `m-${runId}`, status: { code: 'Success' }, sequence: 3 },
    { type: 'RunFinished', status: RUN_SUCCESS, sequence: 4 },
  ];
}

/** Records one whole run on the thread, as the engine would. */
async function record(
  store: ThreadStore,
  threadId: string,
  details: { owner?: string; agentId?: string; name?: string } = {},
): Promise<void> {
  const { runId } = await store.claim(threadId, `r-${Math.random()}`, `f-${Math.random()}`, details);
  const input = [{ kind: 'text' as const, id: `u-${threadId}-${runId}`, role: 'user' as const, content: 'hi' }];
  const log = store.open(threadId, runId, { messages: input, newMessages: input });
  for (const event of runEvents(threadId, runId)) log.append(event);
  await until(
    () => store.run(threadId, runId),
    (run) => run?.finishedAt !== null && run?.finishedAt !== undefined,
    'the run recorded',
  );
}

const stores: [string, () => Promise<ThreadStore>][] = [
  ['memory', async () => memoryStore()],
  ...redisConnections.map(([kind, connection]): [string, () => Promise<ThreadStore>] => [
    kind,
    () => startRedisStore(connection(), { keyPrefix: `list${Math.random().toString(36).slice(2, 8)}:` }),
  ]),
];

describe.each(stores)('the %s store lists threads', (_kind, make) => {
  it('pages most recently run first, and a page stays where it was while threads are added', async () => {
    const store = await make();
    for (let i = 0; i < 7; i++) await record(store, `t${i}`, { agentId: 'a' });
    await record(store, 'other-agent', { agentId: 'b' });
    await record(store, 'other-owner', { agentId: 'a', owner: 'someone' });
    const first = await store.list({ scope: '', agentId: 'a', includeArchived: false, limit: 3 });
    expect(first.threads.map((t) => t.threadId)).toEqual(['t6', 't5', 't4']);
    // Threads started between two pages sort before the cursor: the next page goes on where the first ended.
    await record(store, 'new1', { agentId: 'a' });
    await record(store, 'new2', { agentId: 'a' });
    const second = await store.list({ scope: '', agentId: 'a', includeArchived: false, limit: 3, after: first.next });
    expect(second.threads.map((t) => t.threadId)).toEqual(['t3', 't2', 't1']);
    const third = await store.list({ scope: '', agentId: 'a', includeArchived: false, limit: 3, after: second.next });
    expect(third.threads.map((t) => t.threadId)).toEqual(['t0']);
    expect(third.next).toBeUndefined();
    const theirs = await store.list({ scope: 'someone', agentId: 'a', includeArchived: false, limit: 10 });
    expect(theirs.threads.map((t) => t.threadId)).toEqual(['other-owner']);
    expect(theirs.threads[0]).toMatchObject({ owner: 'someone', agentId: 'a', archived: false });
    await store.close();
  });

  it('orders threads whose runs started in the same millisecond by id, and pages through the tie', async () => {
    const store = await make();
    const realNow = Date.now;
    const frozen = realNow();
    Date.now = () => frozen;
    try {
      for (const id of ['c', 'a', 'e', 'b', 'd']) await record(store, id, { agentId: 'tie' });
    } finally {
      Date.now = realNow;
    }
    const seen: string[] = [];
    let after;
    do {
      const page = await store.list({ scope: '', agentId: 'tie', includeArchived: false, limit: 2, after });
      seen.push(...page.threads.map((t) => t.threadId));
      after = page.next;
    } while (after);
    expect(seen).toEqual(['e', 'd', 'c', 'b', 'a']);
    await store.close();
  });

  it('keeps the first name, renames, archives out of the default list and back, and forgets a removed thread', async () => {
    const store = await make();
    await record(store, 'named', { agentId: 'n', name: 'First question' });
    await record(store, 'named', { agentId: 'n', name: 'Second question' });
    const summary = await store.summary('named');
    expect(summary).toMatchObject({ name: 'First question', agentId: 'n', archived: false });
    expect(summary!.lastRunAt.getTime()).toBeGreaterThan(summary!.createdAt.getTime() - 1);
    await store.update('named', '', { name: 'Renamed' });
    await record(store, 'named', { agentId: 'n', name: 'Third' });
    expect((await store.summary('named'))?.name).toBe('Renamed');

    await store.update('named', '', { archived: true });
    expect((await store.list({ scope: '', agentId: 'n', includeArchived: false, limit: 5 })).threads).toEqual([]);
    const all = await store.list({ scope: '', agentId: 'n', includeArchived: true, limit: 5 });
    expect(all.threads).toEqual([expect.objectContaining({ threadId: 'named', archived: true })]);
    await store.update('named', '', { archived: false });
    expect((await store.list({ scope: '', agentId: 'n', includeArchived: false, limit: 5 })).threads).toHaveLength(1);

    expect(await store.remove('named', '')).toBe(true);
    expect(await store.summary('named')).toBeUndefined();
    expect(await store.thread('named')).toBeUndefined();
    expect((await store.list({ scope: '', agentId: 'n', includeArchived: true, limit: 5 })).threads).toEqual([]);
    expect(await store.update('named', '', { name: 'x' })).toBeUndefined();
    expect(await store.remove('named', '')).toBe(false);
    // The id can be used again: a new thread.
    await record(store, 'named', { agentId: 'n', name: 'Again' });
    expect((await store.summary('named'))?.name).toBe('Again');
    await store.close();
  });

  it('changes and removes a thread only for its owner, checked in the same step', async () => {
    const store = await make();
    await record(store, 'owned', { owner: 'alice', agentId: 'o' });
    expect(await store.update('owned', 'bob', { name: 'mine' })).toBeUndefined();
    expect(await store.update('owned', '', { name: 'mine' })).toBeUndefined();
    expect(await store.remove('owned', 'bob')).toBe(false);
    expect(await store.remove('owned', '')).toBe(false);
    expect(await store.summary('owned')).toMatchObject({ owner: 'alice', name: null });
    expect(await store.update('owned', 'alice', { name: 'Hers' })).toMatchObject({ name: 'Hers' });
    expect(await store.remove('owned', 'alice')).toBe(true);
    await store.close();
  });

  it('lets no run that held a removed thread make it again: removed between claim and open, or while it writes', async () => {
    const store = await make();
    const input = [{ kind: 'text' as const, id: 'secret', role: 'user' as const, content: 'secret' }];
    // Claimed by alice, removed before the run opened: the run is ended, nothing is made, bob finds nothing.
    const { runId } = await store.claim('gone', 'r1', 'f1', { owner: 'alice' });
    expect(await store.remove('gone', 'alice')).toBe(true);
    const lost: unknown[] = [];
    const log = store.open('gone', runId, { messages: input, newMessages: input }, (error) => lost.push(error));
    for (const event of runEvents('gone', runId)) log.append(event);
    await until(
      async () => lost.length,
      (count) => count > 0,
      'the run told it was deleted',
    );
    expect(lost[0]).toMatchObject({ code: 'RUN_STOPPED', message: 'The thread was deleted; its run was stopped.' });
    expect(await store.summary('gone')).toBeUndefined();
    expect(await store.owner('gone')).toBeUndefined();
    expect((await store.claim('gone', 'r2', 'f2', { owner: 'bob' })).history).toEqual([]);
    store.release('gone', 'r2');

    // Removed while its run writes (a run that did not stop in time): what it writes afterwards makes nothing.
    const claim = await store.claim('busy', 'b1', 'g1', { owner: 'alice' });
    const lostToo: unknown[] = [];
    const writing = store.open('busy', claim.runId, { messages: input, newMessages: input }, (error) =>
      lostToo.push(error),
    );
    const events = runEvents('busy', claim.runId);
    writing.append(events[0]);
    writing.append(events[1]);
    await until(
      () => store.run('busy', claim.runId),
      (run) => run?.lastSequence === 1,
      'the first events stored',
    );
    expect(await store.remove('busy', 'alice')).toBe(true);
    // Someone claims the id meanwhile and gives it up (a request refused after its claim): still nothing comes back.
    await store.claim('busy', 'c1', 'h1', { owner: 'carol' });
    store.release('busy', 'c1');
    for (const event of events.slice(2)) writing.append(event);
    if (store.kind === 'redis') {
      await until(
        async () => lostToo.length,
        (count) => count > 0,
        'the run told it was deleted',
      );
    }
    expect(await store.summary('busy')).toBeUndefined();
    expect(await store.thread('busy')).toBeUndefined();
    expect((await store.list({ scope: 'alice', agentId: 'default', includeArchived: true, limit: 5 })).threads).toEqual(
      [],
    );
    // A new thread under the id, claimed after the delete, is the new claimer's, mark or not.
    await record(store, 'busy', { owner: 'carol' });
    expect(await store.summary('busy')).toMatchObject({ owner: 'carol' });
    expect((await store.thread('busy'))?.messages.map((message) => message.id)).not.toContain('secret');
    if (store instanceof MemoryThreadStore) expect(store.size.threads).toBe(2);
    await store.close();
  });
});

describe('the Redis store', () => {
  it('drops list entries of threads that expired, and fills the page from further down', async () => {
    const store = (await stores[1][1]()) as RedisThreadStore;
    for (let i = 0; i < 5; i++) await record(store, `x${i}`, { agentId: 'exp' });
    // x3 and x4 expire (their keys go, as Redis's expiry would take them).
    const client = store.commands!;
    for (const id of ['x3', 'x4']) await client.del(store.records.threadKey(id, 'meta'));
    const page = await store.list({ scope: '', agentId: 'exp', includeArchived: false, limit: 2 });
    expect(page.threads.map((t) => t.threadId)).toEqual(['x2', 'x1']);
    expect(page.next).toBeDefined();
    const listKey = `${store.records.listKey('', 'exp')}:active`;
    expect(await client.zrange(listKey, '0', '-1')).toEqual(['x0', 'x1', 'x2']);
    await store.close();
  });

  it('keeps scopes and agents with ":" or "%" in their names apart', async () => {
    const store = (await stores[1][1]()) as RedisThreadStore;
    await record(store, 'p1', { owner: 'a:b', agentId: 'c' });
    await record(store, 'p2', { owner: 'a', agentId: 'b:c' });
    await record(store, 'p3', { owner: 'a%3Ab', agentId: 'c' });
    const one = await store.list({ scope: 'a:b', agentId: 'c', includeArchived: false, limit: 5 });
    expect(one.threads.map((t) => t.threadId)).toEqual(['p1']);
    const two = await store.list({ scope: 'a', agentId: 'b:c', includeArchived: false, limit: 5 });
    expect(two.threads.map((t) => t.threadId)).toEqual(['p2']);
    await store.close();
  });
});

// --- over HTTP ---------------------------------------------------------------------------------

const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });

/** One AG-UI run of the model on the thread; resolves with the SSE text once the run has ended. */
async function agRun(
  g: RunningGateway,
  threadId: string,
  text: string,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await fetch(`${g.url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
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
  return response.text();
}

async function call(
  g: RunningGateway,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const response = await fetch(`${g.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** The same request through the single route's `resource/request` envelope. */
async function envelope(
  g: RunningGateway,
  httpMethod: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  return call(
    g,
    'POST',
    '',
    { method: 'resource/request', params: { path, httpMethod }, ...(body !== undefined ? { body } : {}) },
    headers,
  );
}

describe('/threads', () => {
  it('is off without authentication unless THREAD_LIST_ANONYMOUS: /info says so and the routes answer 501', async () => {
    const g = await start({ adapter: adapter() });
    const info = await call(g, 'GET', '/info');
    expect(info.json.threadEndpoints).toEqual({
      list: false,
      inspect: false,
      mutations: false,
      realtimeMetadata: false,
    });
    const single = await call(g, 'POST', '', { method: 'info' });
    expect(single.json.singleRoute).toEqual({ resourceOperations: false, threadEndpoints: info.json.threadEndpoints });
    await agRun(g, 'off-1', 'hello');
    const listed = await call(g, 'GET', '/threads?agentId=default');
    expect(listed.status).toBe(501);
    expect(listed.json).toMatchObject({
      code: 'NOT_SUPPORTED',
      message: expect.stringContaining('THREAD_LIST_ANONYMOUS'),
    });
    expect((await call(g, 'DELETE', '/threads/off-1', { agentId: 'default' })).status).toBe(501);
    expect((await envelope(g, 'GET', '/threads?agentId=default')).status).toBe(501);
  });

  it('lists, renames, archives, unarchives and deletes, in both forms, as the stock client reads them', async () => {
    const g = await start({ adapter: adapter(), threads: { listAnonymous: true } });
    const info = await call(g, 'GET', '/info');
    expect(info.json.threadEndpoints).toEqual({ list: true, inspect: true, mutations: true, realtimeMetadata: false });
    const single = await call(g, 'POST', '', { method: 'info' });
    expect(single.json.singleRoute).toEqual({ resourceOperations: true, threadEndpoints: info.json.threadEndpoints });

    await agRun(g, 'h-1', 'What is the weather   like\nin Paris?');
    await agRun(g, 'h-2', 'Second thread');
    await agRun(g, 'h-1', 'And tomorrow?');
    const listed = await call(g, 'GET', '/threads?agentId=default');
    expect(listed.status).toBe(200);
    expect(listed.json.nextCursor).toBeNull();
    expect(listed.json.threads.map((t: any) => t.id)).toEqual(['h-1', 'h-2']);
    const [first] = listed.json.threads;
    expect(first).toEqual({
      id: 'h-1',
      organizationId: '',
      agentId: 'default',
      createdById: '',
      name: 'What is the weather like in Paris?',
      archived: false,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      updatedAt: expect.any(String),
      lastRunAt: expect.any(String),
    });
    expect(first.lastRunAt.localeCompare(first.createdAt)).toBeGreaterThanOrEqual(0);
    // Another agent's list is another list.
    expect((await call(g, 'GET', '/threads?agentId=researcher')).json.threads).toEqual([]);
    // HEAD answers as GET does, without the body (as /info).
    for (const path of ['/threads?agentId=default', '/threads/h-1', '/threads/h-1/messages', '/info']) {
      expect(await call(g, 'HEAD', path)).toEqual({ status: 200, json: undefined });
    }
    expect((await call(g, 'HEAD', '/threads/nope')).status).toBe(404);

    expect((await call(g, 'PATCH', '/threads/h-2', { agentId: 'default', name: ' Trip plans ' })).json).toMatchObject({
      id: 'h-2',
      name: 'Trip plans',
    });
    expect((await envelope(g, 'POST', '/threads/h-1/archive', { agentId: 'default' })).json).toMatchObject({
      archived: true,
    });
    expect((await envelope(g, 'GET', '/threads?agentId=default')).json.threads.map((t: any) => t.id)).toEqual(['h-2']);
    const all = await call(g, 'GET', '/threads?agentId=default&includeArchived=true');
    expect(all.json.threads.map((t: any) => [t.id, t.archived])).toEqual([
      ['h-1', true],
      ['h-2', false],
    ]);
    await call(g, 'PATCH', '/threads/h-1', { agentId: 'default', archived: false });
    expect((await call(g, 'GET', '/threads?agentId=default')).json.threads).toHaveLength(2);

    const deleted = await envelope(g, 'DELETE', '/threads/h-2', { agentId: 'default' });
    expect(deleted).toEqual({ status: 200, json: { id: 'h-2', deleted: true } });
    expect((await call(g, 'GET', '/threads/h-2')).status).toBe(404);
    expect((await call(g, 'DELETE', '/threads/h-2', { agentId: 'default' })).status).toBe(404);
    // A connect to the deleted thread restores nothing.
    const connect = await fetch(`${g.url}/agent/default/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'h-2',
        runId: 'c',
        messages: [],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    expect(await connect.text()).toBe('');
  });

  it('pages with an opaque cursor, and refuses a bad limit, cursor or update with 400', async () => {
    const g = await start({ adapter: adapter(), threads: { listAnonymous: true } });
    for (let i = 0; i < 5; i++) await agRun(g, `p-${i}`, `thread ${i}`);
    const first = await call(g, 'GET', '/threads?agentId=default&limit=2');
    expect(first.json.threads.map((t: any) => t.id)).toEqual(['p-4', 'p-3']);
    await agRun(g, 'p-new', 'newer');
    const second = await call(g, 'GET', `/threads?agentId=default&limit=2&cursor=${first.json.nextCursor}`);
    expect(second.json.threads.map((t: any) => t.id)).toEqual(['p-2', 'p-1']);
    const third = await envelope(g, 'GET', `/threads?agentId=default&limit=2&cursor=${second.json.nextCursor}`);
    expect(third.json).toEqual({ threads: [expect.objectContaining({ id: 'p-0' })], nextCursor: null });

    for (const query of [
      '',
      '?agentId=default&limit=0',
      '?agentId=default&limit=201',
      '?agentId=default&limit=x',
      '?agentId=default&cursor=garbage',
      '?agentId=default&includeArchived=yes',
    ]) {
      const answer = await call(g, 'GET', `/threads${query}`);
      expect([query, answer.status, answer.json.code]).toEqual([query, 400, 'BAD_USER_INPUT']);
    }
    for (const body of [
      { agentId: 'default' },
      { name: '' },
      { name: 'x'.repeat(201) },
      { archived: 'yes' },
      { name: 'ok', extra: 1 },
      [1],
      { agentId: 5, name: 'x' },
    ]) {
      const answer = await call(g, 'PATCH', '/threads/p-0', body);
      expect([body, answer.status]).toEqual([body, 400]);
    }
    expect((await call(g, 'GET', '/threads/p-0')).json.name).toBe('thread 0');
    const wrongMethod = await call(g, 'PUT', '/threads/p-0', { name: 'x' });
    expect(wrongMethod.status).toBe(405);
    expect((await call(g, 'GET', '/threads/p-0/nothing')).status).toBe(404);
    expect((await call(g, 'POST', '/threads/subscribe', {})).status).toBe(501);
    expect((await envelope(g, 'GET', '/memories')).status).toBe(501);
    // Paths that name a host or do not parse are refused, not served or failed.
    for (const [path, code] of [
      ['//[', 'BAD_USER_INPUT'],
      ['//elsewhere/threads?agentId=default', 'BAD_USER_INPUT'],
      ['threads', 'BAD_REQUEST'], // the envelope's own check: not a path at all
    ]) {
      const answer = await envelope(g, 'GET', path);
      expect([path, answer.status, answer.json.code]).toEqual([path, 400, code]);
    }
    // An httpMethod that names no method is refused, not taken for GET.
    for (const httpMethod of [5, '', null, ['GET']]) {
      const answer = await call(g, 'POST', '', {
        method: 'resource/request',
        params: { path: '/threads?agentId=default', httpMethod },
      });
      expect([httpMethod, answer.status, answer.json.code]).toEqual([httpMethod, 400, 'BAD_REQUEST']);
    }
    // A thread another agent's list holds is not found through this one.
    expect((await call(g, 'PATCH', '/threads/p-0', { agentId: 'researcher', name: 'x' })).status).toBe(404);
  });

  it('serves the web inspector a thread: its messages (tool calls as {id, name, args}), state and AG-UI events', async () => {
    const g = await start({ adapter: adapter(), threads: { listAnonymous: true } });
    await agRun(g, 'i-1', 'Plain question');
    await agRun(g, 'i-1', '[tool=lookup] [toolargs={"q":"x"}]');
    const messages = await call(g, 'GET', '/threads/i-1/messages');
    expect(messages.status).toBe(200);
    const roles = messages.json.messages.map((m: any) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'user', 'assistant']);
    const call1 = messages.json.messages[3].toolCalls[0];
    expect(call1).toEqual({ id: expect.any(String), name: 'lookup', args: '{"q":"x"}' });
    expect((await call(g, 'GET', '/threads/i-1/state')).json).toEqual({ state: {} });
    const events = await envelope(g, 'GET', '/threads/i-1/events');
    const types = events.json.events.map((e: any) => e.type);
    expect(types.filter((t: string) => t === 'RUN_STARTED')).toHaveLength(2);
    expect(types.filter((t: string) => t === 'RUN_FINISHED')).toHaveLength(2);
    expect(types).toContain('TOOL_CALL_ARGS');
    // Every event is one AG-UI 1.0 knows, as its schemas check them.
    const { EventSchemas } = await import('@ag-ui/core/schemas');
    for (const event of events.json.events) EventSchemas.parse(event);
    expect((await call(g, 'GET', '/threads/nope/messages')).status).toBe(404);
  });

  it('stops a run going on when its thread is deleted: GraphQL sees RUN_STOPPED saying why, AG-UI 1.0 "cancelled"', async () => {
    const g = await start({ adapter: adapter(), threads: { listAnonymous: true } });
    const listed = (count: number) =>
      until(
        () => call(g, 'GET', '/threads?agentId=default'),
        (answer) => answer.json.threads.length === count,
        `${count} running threads listed`,
      );
    const graphql = watch(g.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[stall]')], { threadId: 'd-gql' }),
    });
    await listed(1);
    expect((await call(g, 'DELETE', '/threads/d-gql', { agentId: 'default' })).status).toBe(200);
    await graphql.done;
    const end = graphql.events.at(-1);
    expect(end.__typename).toBe('RunFinishedEvent');
    expect(end.status).toMatchObject({
      code: 'Failed',
      details: expect.objectContaining({
        code: 'RUN_STOPPED',
        description: 'The thread was deleted; its run was stopped.',
      }),
    });

    const response = fetch(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'd-agui',
        runId: 'r-agui',
        messages: [{ id: 'u-agui', role: 'user', content: '[stall]' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
        protocolVersion: '1.0.0',
      }),
    });
    await listed(1);
    expect((await call(g, 'DELETE', '/threads/d-agui', { agentId: 'default' })).status).toBe(200);
    const sse = await (await response).text();
    expect(sse).toContain('"type":"RUN_FINISHED","threadId":"d-agui","runId":"r-agui","outcome":{"type":"cancelled"}');
    await listed(0);
    expect((await call(g, 'GET', '/threads/d-agui/messages')).status).toBe(404);
    expect((await call(g, 'GET', '/threads/d-gql')).status).toBe(404);
  });
});

describe.each(redisConnections)('two instances on one %s', (_kind, connection) => {
  it('list the same threads, and a delete through one stops the run going on at the other', async () => {
    const where = connection();
    const threads = {
      ...('url' in where ? { redisUrl: where.url } : { clusterNodes: cluster.nodes }),
      keyPrefix: `two${Math.random().toString(36).slice(2, 8)}:`,
      listAnonymous: true,
    };
    const a = await start({ adapter: adapter(), threads });
    const b = await start({ adapter: adapter(), threads });
    await agRun(a, 'two-1', 'through A');
    await agRun(b, 'two-2', 'through B');
    await agRun(a, 'two-3', 'through A again');
    const fromA = await call(a, 'GET', '/threads?agentId=default');
    const fromB = await envelope(b, 'GET', '/threads?agentId=default');
    expect(fromA.json.threads.map((t: any) => t.id)).toEqual(['two-3', 'two-2', 'two-1']);
    expect(fromB.json).toEqual(fromA.json);
    await call(b, 'PATCH', '/threads/two-1', { agentId: 'default', name: 'Renamed through B' });
    expect((await call(a, 'GET', '/threads/two-1')).json.name).toBe('Renamed through B');

    const running = agRun(a, 'two-run', '[stall]');
    await until(
      () => call(b, 'GET', '/threads?agentId=default'),
      (answer) => answer.json.threads.length === 4,
      'the run at A listed through B',
    );
    expect((await call(b, 'DELETE', '/threads/two-run', { agentId: 'default' })).status).toBe(200);
    expect(await running).toContain('"type":"RUN_FINISHED","threadId":"two-run"');
    expect((await call(a, 'GET', '/threads/two-run')).status).toBe(404);
    expect((await call(a, 'GET', '/threads?agentId=default')).json.threads.map((t: any) => t.id)).toEqual([
      'two-3',
      'two-2',
      'two-1',
    ]);
  });
});

describe("one caller never reaches another caller's threads", () => {
  async function token(sub: string): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(JWT_SECRET));
  }

  it('by any route, with API keys and with JWTs', async () => {
    const g = await start({
      adapter: adapter(),
      authenticate: anyOf(apiKeyAuthenticator([KEY_A, KEY_B]), jwtAuthenticator({ secret: JWT_SECRET })),
    });
    const info = await call(g, 'GET', '/info', undefined, bearer(KEY_A));
    expect(info.json.threadEndpoints.list).toBe(true);
    const alice = bearer(KEY_A);
    const bob = bearer(KEY_B);
    const carol = bearer(await token('carol'));
    const dave = bearer(await token('dave'));
    await agRun(g, 'alice-1', 'Alice asks', alice);
    await agRun(g, 'carol-1', 'Carol asks', carol);

    for (const [owner, other, id] of [
      [alice, bob, 'alice-1'],
      [carol, dave, 'carol-1'],
      [alice, carol, 'alice-1'],
      [carol, alice, 'carol-1'],
    ] as const) {
      expect(
        (await call(g, 'GET', '/threads?agentId=default', undefined, owner)).json.threads.map((t: any) => t.id),
      ).toEqual([id]);
      expect(
        (await call(g, 'GET', '/threads?agentId=default', undefined, other)).json.threads.map((t: any) => t.id),
      ).not.toContain(id);
      expect(
        (await envelope(g, 'GET', '/threads?agentId=default', undefined, other)).json.threads.map((t: any) => t.id),
      ).not.toContain(id);
      const tries = [
        await call(g, 'GET', `/threads/${id}`, undefined, other),
        await call(g, 'PATCH', `/threads/${id}`, { agentId: 'default', name: 'mine now' }, other),
        await call(g, 'PATCH', `/threads/${id}`, { agentId: 'default', archived: true }, other),
        await call(g, 'POST', `/threads/${id}/archive`, { agentId: 'default' }, other),
        await call(g, 'DELETE', `/threads/${id}`, { agentId: 'default' }, other),
        await call(g, 'GET', `/threads/${id}/messages`, undefined, other),
        await call(g, 'GET', `/threads/${id}/state`, undefined, other),
        await call(g, 'GET', `/threads/${id}/events`, undefined, other),
        await envelope(g, 'PATCH', `/threads/${id}`, { agentId: 'default', name: 'mine now' }, other),
        await envelope(g, 'DELETE', `/threads/${id}`, { agentId: 'default' }, other),
        await envelope(g, 'GET', `/threads/${id}/messages`, undefined, other),
      ];
      expect(tries.map((answer) => answer.status)).toEqual(tries.map(() => 404));
      // Nothing changed.
      const mine = await call(g, 'GET', `/threads/${id}`, undefined, owner);
      expect(mine.json).toMatchObject({ id, archived: false, name: expect.stringContaining('asks') });
    }
    // Without a credential: 401 before anything.
    expect((await call(g, 'GET', '/threads?agentId=default')).status).toBe(401);
  });
});
