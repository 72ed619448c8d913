import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { apiKeyAuthenticator } from '../src/auth/api-keys.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, type RunningGateway } from './support/harness.js';

// The thread list as CopilotKit ≥1.50 frontends keep it: the stock thread store of @copilotkit/core 1.74 (what
// react-core's useThreads and the threads drawer run), unmodified, in Node with Node's own fetch, against a real
// gateway. It pages with a small limit while threads are started between pages, renames, archives, unarchives and
// deletes, and is refused what is not its caller's. Once without authentication (THREAD_LIST_ANONYMOUS) and once
// with API keys, which the store sends as the headers its context names.

type ThreadStore = ReturnType<typeof import('@copilotkit/core').ɵcreateThreadStore>;
type ThreadState = ReturnType<ThreadStore['getState']>;

const fake = new FakeOpenAI();
let baseURL: string;
let createThreadStore: typeof import('@copilotkit/core').ɵcreateThreadStore;

beforeAll(async () => {
  baseURL = await fake.start();
  ({ ɵcreateThreadStore: createThreadStore } = await import('@copilotkit/core'));
});
afterAll(async () => {
  await fake.stop();
});

const { start } = gatewaysPerTest();
const KEY_A = 'key-a-0123456789abcdef-secret';
const KEY_B = 'key-b-0123456789abcdef-secret';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });

/** One AG-UI run of the model on the thread, as a chat sends it; resolves once the run has ended. */
async function agRun(g: RunningGateway, threadId: string, text: string, headers: Record<string, string>) {
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
  expect(await response.text()).toContain('RUN_FINISHED');
}

/** A request straight to the gateway (not through the store), for what the gateway itself says. */
async function call(
  g: RunningGateway,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const response = await fetch(`${g.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** Every thread the gateway lists for the caller, all pages, in its order. */
async function gatewayList(g: RunningGateway, headers: Record<string, string>, includeArchived = false) {
  const threads: any[] = [];
  let cursor: string | null = null;
  do {
    const query = `agentId=default&limit=200${includeArchived ? '&includeArchived=true' : ''}`;
    const page = await call(g, 'GET', `/threads?${query}${cursor ? `&cursor=${cursor}` : ''}`, headers);
    expect(page.status).toBe(200);
    threads.push(...page.json.threads);
    cursor = page.json.nextCursor;
  } while (cursor);
  return threads;
}

/** Resolves with the store's state once `check` holds for it (the store's own observable; no polling). */
function when(store: ThreadStore, check: (state: ThreadState) => boolean): Promise<ThreadState> {
  return new Promise((resolve, reject) => {
    const subscription = store
      .select((state: ThreadState) => state)
      .subscribe({
        next: (state: ThreadState) => {
          if (!check(state)) return;
          resolve(state);
          queueMicrotask(() => subscription.unsubscribe());
        },
        error: reject,
      });
  });
}

const idle = (state: ThreadState) => !state.isLoading && !state.isFetchingNextPage;
const ids = (threads: readonly { id: string }[]) => threads.map((thread) => thread.id);

/** What the store sent, as the gateway received it: method, path under the runtime URL with its query, body. */
interface Sent {
  method: string;
  target: string;
  body?: unknown;
  headers: Record<string, string>;
}

/** Node's fetch, recording each request the store makes through it. */
function recordingFetch(runtimeUrl: string, sent: Sent[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(String(input));
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
    sent.push({
      method: init?.method ?? 'GET',
      target: `${url.pathname.slice(new URL(runtimeUrl).pathname.length)}${url.search}`,
      ...(init?.body !== undefined ? { body: JSON.parse(String(init.body)) } : {}),
      headers,
    });
    return fetch(input, init);
  };
}

const MODES = [
  { mode: 'without authentication (THREAD_LIST_ANONYMOUS)', keyed: false },
  { mode: 'with API keys', keyed: true },
] as const;

describe.each(MODES)('the stock @copilotkit/core 1.74 thread store, $mode', ({ keyed }) => {
  async function gateway(): Promise<RunningGateway> {
    return keyed
      ? start({ adapter: adapter(), authenticate: apiKeyAuthenticator([KEY_A, KEY_B]) })
      : start({ adapter: adapter(), threads: { listAnonymous: true } });
  }
  const mine = keyed ? bearer(KEY_A) : {};

  it('pages while threads are started between pages, and ends with what the gateway lists', async () => {
    const g = await gateway();
    // Zero-padded ids: should two runs start in the same millisecond, the gateway's tie order (id, descending)
    // is their order of creation too, as the store's stable sort by lastRunAt keeps it.
    for (let i = 0; i < 5; i++) await agRun(g, `t-0${i}`, `Question ${i}`, mine);
    if (keyed) await agRun(g, 'b-00', 'Not yours', bearer(KEY_B));

    const sent: Sent[] = [];
    const store = createThreadStore({ fetch: recordingFetch(g.url, sent) });
    store.start();
    try {
      store.setContext({ runtimeUrl: g.url, headers: mine, agentId: 'default', limit: 2 });
      let state = await when(store, (s) => s.context !== null && idle(s));
      expect(state.error).toBeNull();
      expect(ids(state.threads)).toEqual(['t-04', 't-03']);
      expect(state.nextCursor).not.toBeNull();

      // A thread started between pages sorts before the cursor: the next page goes on where the first ended.
      await agRun(g, 'n-00', 'Newer', mine);
      store.fetchNextPage();
      state = await when(store, (s) => idle(s) && s.threads.length > 2);
      expect(ids(state.threads)).toEqual(['t-04', 't-03', 't-02', 't-01']);
      await agRun(g, 'n-01', 'Newest', mine);
      store.fetchNextPage();
      state = await when(store, (s) => idle(s) && s.threads.length > 4);
      expect(state.nextCursor).toBeNull();
      expect(state.fetchMoreError).toBeNull();

      // The store holds exactly what the gateway lists, record for record, but for the threads started after
      // its first page (which a refetch brings): same order (lastRunAt, newest first), no duplicates.
      const listed = await gatewayList(g, mine);
      expect(ids(listed)).toEqual(['n-01', 'n-00', 't-04', 't-03', 't-02', 't-01', 't-00']);
      expect(state.threads).toEqual(listed.filter((thread) => thread.id.startsWith('t-')));
      expect(listed[0]).toMatchObject({ name: 'Newest', archived: false, agentId: 'default' });

      // A fresh session (as a remount or a context change does) pages to exactly the gateway's list.
      store.setContext({ runtimeUrl: g.url, headers: mine, agentId: 'default', limit: 2 });
      state = await when(store, (s) => idle(s) && s.threads.length > 0);
      expect(ids(state.threads)).toEqual(['n-01', 'n-00']);
      while (state.nextCursor) {
        const had = state.threads.length;
        store.fetchNextPage();
        state = await when(store, (s) => idle(s) && (s.threads.length > had || s.nextCursor === null));
      }
      expect(state.threads).toEqual(listed);

      // What went over the wire: GET /threads with agentId, limit and the gateway's opaque cursor, the caller's
      // headers on every request; nothing else (no /threads/subscribe: no joinCode, no wsUrl).
      const opaque = (target: string) => target.replace(/cursor=[^&]+/, 'cursor=…');
      const targets = sent.map((request) => `${request.method} ${opaque(request.target)}`);
      expect(targets).toEqual([
        'GET /threads?agentId=default&limit=2',
        'GET /threads?agentId=default&cursor=…&limit=2',
        'GET /threads?agentId=default&cursor=…&limit=2',
        'GET /threads?agentId=default&limit=2',
        'GET /threads?agentId=default&cursor=…&limit=2',
        'GET /threads?agentId=default&cursor=…&limit=2',
        'GET /threads?agentId=default&cursor=…&limit=2',
      ]);
      for (const request of sent) expect(request.headers).toMatchObject(mine);
      // The other principal's thread never reached this store.
      expect(ids(state.threads)).not.toContain('b-00');
    } finally {
      store.stop();
    }
  });

  it('renames, archives, unarchives and deletes: each resolves and takes effect on the gateway', async () => {
    const g = await gateway();
    for (const id of ['m-00', 'm-01', 'm-02']) await agRun(g, id, `About ${id}`, mine);
    const sent: Sent[] = [];
    const store = createThreadStore({ fetch: recordingFetch(g.url, sent) });
    store.start();
    try {
      store.setContext({ runtimeUrl: g.url, headers: mine, agentId: 'default', limit: 10 });
      await when(store, (s) => s.context !== null && idle(s));
      sent.length = 0;

      await store.renameThread('m-00', 'Renamed by the store');
      expect(store.getState().threads.find((thread) => thread.id === 'm-00')?.name).toBe('Renamed by the store');
      expect((await call(g, 'GET', '/threads/m-00', mine)).json.name).toBe('Renamed by the store');

      await store.archiveThread('m-01');
      expect(ids(store.getState().threads)).toEqual(['m-02', 'm-00']);
      expect(ids(await gatewayList(g, mine))).toEqual(['m-02', 'm-00']);
      const all = await gatewayList(g, mine, true);
      expect(all.map((thread) => [thread.id, thread.archived])).toEqual([
        ['m-02', false],
        ['m-01', true],
        ['m-00', false],
      ]);

      await store.unarchiveThread('m-01');
      expect((await call(g, 'GET', '/threads/m-01', mine)).json.archived).toBe(false);
      expect(ids(await gatewayList(g, mine))).toEqual(['m-02', 'm-01', 'm-00']);
      // The store leaves an unarchived thread it no longer holds to the next fetch; a refresh brings it back.
      store.refresh();
      let state = await when(store, (s) => idle(s) && s.threads.length === 3);
      expect(state.threads).toEqual(await gatewayList(g, mine));

      await store.deleteThread('m-02');
      expect(ids(store.getState().threads)).toEqual(['m-01', 'm-00']);
      expect((await call(g, 'GET', '/threads/m-02', mine)).status).toBe(404);
      expect(ids(await gatewayList(g, mine))).toEqual(['m-01', 'm-00']);
      expect(store.getState().error).toBeNull();
      expect(store.getState().inFlightMutationCount).toBe(0);

      // The wire: what the store sends for each, every body naming the agent.
      expect(sent.map(({ method, target, body }) => ({ method, target, body }))).toEqual([
        { method: 'PATCH', target: '/threads/m-00', body: { agentId: 'default', name: 'Renamed by the store' } },
        { method: 'POST', target: '/threads/m-01/archive', body: { agentId: 'default' } },
        { method: 'PATCH', target: '/threads/m-01', body: { agentId: 'default', archived: false } },
        { method: 'GET', target: '/threads?agentId=default&limit=10' },
        { method: 'DELETE', target: '/threads/m-02', body: { agentId: 'default' } },
      ]);

      // A delete the gateway refuses (the thread went meanwhile, through another client) rejects, and the store
      // puts the row it had taken out back, with the error.
      expect((await call(g, 'DELETE', '/threads/m-01', mine, { agentId: 'default' })).status).toBe(200);
      await expect(store.deleteThread('m-01')).rejects.toThrow('Request failed: 404');
      state = store.getState();
      expect(ids(state.threads)).toEqual(['m-01', 'm-00']);
      expect(state.error?.message).toBe('Request failed: 404');
      // A rename of a thread that does not exist rejects as well.
      await expect(store.renameThread('no-such-thread', 'x')).rejects.toThrow('Request failed: 404');
    } finally {
      store.stop();
    }
  });

  if (keyed)
    it("rejects every mutation of another principal's thread, and the thread stays as it was", async () => {
      const g = await gateway();
      await agRun(g, 'theirs', 'Bob asks', bearer(KEY_B));
      await agRun(g, 'ours', 'Alice asks', mine);
      const store = createThreadStore({ fetch });
      store.start();
      try {
        store.setContext({ runtimeUrl: g.url, headers: mine, agentId: 'default', limit: 10 });
        const state = await when(store, (s) => s.context !== null && idle(s));
        expect(ids(state.threads)).toEqual(['ours']);
        for (const attempt of [
          () => store.renameThread('theirs', 'Mine now'),
          () => store.archiveThread('theirs'),
          () => store.unarchiveThread('theirs'),
          () => store.deleteThread('theirs'),
        ])
          await expect(attempt()).rejects.toThrow('Request failed: 404');
        expect(ids(store.getState().threads)).toEqual(['ours']);
        expect((await call(g, 'GET', '/threads/theirs', bearer(KEY_B))).json).toMatchObject({
          id: 'theirs',
          name: 'Bob asks',
          archived: false,
        });
        // Without its key, the store's list request is refused outright, and the store says so.
        store.setContext({ runtimeUrl: g.url, headers: {}, agentId: 'default', limit: 10 });
        const refused = await when(store, (s) => idle(s) && s.error !== null);
        expect(refused.error?.message).toBe('Failed to fetch threads: 401');
        expect(refused.threads).toEqual([]);
      } finally {
        store.stop();
      }
    });
});
