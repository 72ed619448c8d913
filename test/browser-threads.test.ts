import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from './clients/playwright.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { copilotKitReady, installBrowserApps } from './support/browser-apps.js';
import { RedisServer } from './support/redis.js';

// The thread list of a stock CopilotKit 1.74 React app (react-core's `useThreads`, unmodified) in headless Chromium,
// against two gateway processes sharing one Redis, started as `npm start` starts them, with
// THREAD_LIST_ANONYMOUS=true. Threads are made through both; the page, on another origin, talks to instance A only:
// it lists every thread newest first; rename, archive, unarchive and delete take effect, survive a reload, and are
// what instance B lists; opening a thread restores its messages in the chat (agent/connect); a suggestion chip
// leaves no thread behind.
//
// Each wait is for a state of the page or the gateway, with no bound of its own: the test's timeout is the one
// bound, so a busy machine makes the suite slower, not red.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') {
  throw new Error(`Chromium is required in CI at ${CHROMIUM} (.ci/run installs it with apt-get).`);
}
const SKIPPED = available
  ? ''
  : ` (skipped: no Chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH)`;
const TEST_TIMEOUT = 180_000;
jest.setTimeout(TEST_TIMEOUT);

interface Instance {
  /** The runtime URL (http://127.0.0.1:PORT/api/copilotkit). */
  url: string;
  child: ChildProcess;
  /** The process's log lines (pino JSON), as they come. */
  logs: any[];
}

const fake = new FakeOpenAI();
let redis: RedisServer;
let pageServer: Server;
let pageOrigin: string;
let script: string;
let a: Instance;
let b: Instance;
let browser: Browser;

/** Starts a gateway process as npm start does, on the shared Redis; resolves once it is ready. */
async function startProcess(baseURL: string): Promise<Instance> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      PORT: '0',
      LOG_LEVEL: 'info',
      OPENAI_BASE_URL: baseURL,
      OPENAI_API_KEY: 'test-key',
      REDIS_URL: redis.url,
      THREAD_LIST_ANONYMOUS: 'true',
      CORS_ORIGINS: pageOrigin,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: any[] = [];
  let output = '';
  let pending = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        try {
          logs.push(JSON.parse(line));
        } catch {
          // not a log line (the build's output)
        }
      }
      const match = output.match(/Copilot Gateway ready at (\S+)/);
      if (match) resolve(match[1]);
    });
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}):\n${output}`)));
  });
  return { url, child, logs };
}

beforeAll(async () => {
  if (!available) return;
  const appsDir = await installBrowserApps();
  const [baseURL, started] = await Promise.all([fake.start(), RedisServer.start()]);
  redis = started;
  const bundle = await build({
    entryPoints: [`${appsDir}/threads-app.tsx`],
    absWorkingDir: appsDir,
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    jsx: 'automatic',
    alias: { '@copilotkit/react-core': 'copilotkit-react-core-174', '@copilotkit/react-ui': 'copilotkit-react-ui-174' },
    loader: { '.css': 'empty' },
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  script = bundle.outputFiles[0].text;
  // The page is served before the gateways start: they allow its origin (CORS_ORIGINS).
  pageServer = createServer((req, res) => {
    if (req.url === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(script);
      return;
    }
    const query = new URL(req.url ?? '/', 'http://page').searchParams;
    // The page is on 127.0.0.1, the gateway on localhost: two origins, so every call is cross-origin.
    const settings =
      `window.RUNTIME_URL=${JSON.stringify(a.url.replace('127.0.0.1', 'localhost'))};` +
      (query.get('suggest') ? 'window.SUGGEST=true;' : '');
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(
      `<!doctype html><html><body><div id="root"></div><script>${settings}</script>` +
        `<script src="/app.js"></script></body></html>`,
    );
  });
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
  // One after the other: the first may build dist/, which the second then finds built.
  a = await startProcess(baseURL);
  b = await startProcess(baseURL);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}, 600_000); // npm ci of the apps and the gateway's build on first use take minutes

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  for (const instance of [a, b]) if (instance?.child.exitCode === null) instance.child.kill('SIGKILL');
  if (pageServer) await new Promise((resolve) => pageServer.close(resolve));
  await fake.stop();
  await redis?.close();
});

/** One AG-UI run of the model on the thread through the instance, as a chat sends it; resolves once it ended. */
async function agRun(instance: Instance, threadId: string, text: string): Promise<void> {
  const response = await fetch(`${instance.url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
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

/** What an instance lists itself: [id, name, archived] of every thread, archived ones too, newest first. */
async function listed(instance: Instance): Promise<[string, string, boolean][]> {
  const response = await fetch(`${instance.url}/threads?agentId=default&includeArchived=true&limit=200`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { threads: any[]; nextCursor: string | null };
  expect(body.nextCursor).toBeNull();
  return body.threads.map((thread) => [thread.id, thread.name, thread.archived]);
}

/** The page's thread rows: [id, name, archived], in the order it shows them. */
async function rows(page: Page): Promise<[string, string, boolean][]> {
  return page.$$eval('#thread-list > li', (items) =>
    items.map((item) => [
      item.getAttribute('data-thread-id')!,
      item.querySelector('.thread-name')!.textContent!,
      item.querySelector('.thread-archived')!.textContent === 'archived',
    ]),
  ) as Promise<[string, string, boolean][]>;
}

/** Waits until the page shows exactly these thread ids, in this order. */
async function showsThreads(page: Page, ids: string[]): Promise<void> {
  await page.waitForFunction(
    (expected) =>
      document.querySelector('#threads')?.getAttribute('data-loading') === 'false' &&
      JSON.stringify(
        Array.from(document.querySelectorAll('#thread-list > li')).map((item) => item.getAttribute('data-thread-id')),
      ) === expected,
    JSON.stringify(ids),
  );
}

/** Clicks a row's button and waits for the mutation's outcome line; returns it. */
async function mutate(page: Page, threadId: string, button: string): Promise<string> {
  const before = await page.locator('#outcomes > li').count();
  await page.click(`#thread-list > li[data-thread-id="${threadId}"] button.${button}`);
  await page.waitForFunction((count) => document.querySelectorAll('#outcomes > li').length > count, before);
  return page.locator('#outcomes > li').nth(before).innerText();
}

/** A request the page sent the gateway: method, path under the runtime URL with its query, and its JSON body. */
interface Sent {
  method: string;
  target: string;
  body?: any;
}

/** Records the requests the page sends the gateway (not CORS preflights). */
function recordRequests(page: Page): Sent[] {
  const sent: Sent[] = [];
  const runtime = new URL(a.url.replace('127.0.0.1', 'localhost'));
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.origin !== runtime.origin || request.method() === 'OPTIONS') return;
    const body = request.postData();
    sent.push({
      method: request.method(),
      target: `${url.pathname.slice(runtime.pathname.length)}${url.search}`,
      ...(body ? { body: JSON.parse(body) } : {}),
    });
  });
  return sent;
}

async function openPage(query = ''): Promise<{ page: Page; errors: string[]; sent: Sent[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(0); // no bound of its own: the test's timeout ends a wait that never ends
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const sent = recordRequests(page);
  const ready = copilotKitReady(page);
  await page.goto(`${pageOrigin}/${query}`);
  await page.waitForSelector('textarea');
  await ready;
  return { page, errors, sent };
}

(available ? describe : describe.skip)(
  `a CopilotKit 1.74 thread list in Chromium, two gateways on one Redis${SKIPPED}`,
  () => {
    it('lists both instances’ threads newest first; rename, archive, unarchive, delete persist', async () => {
      await agRun(a, 'alpha-1', 'Alpha one through A');
      await agRun(b, 'bravo-1', 'Bravo one through B');
      await agRun(a, 'alpha-2', 'Alpha two through A');
      await agRun(b, 'bravo-2', 'Bravo two through B');

      const { page, errors, sent } = await openPage();
      await showsThreads(page, ['bravo-2', 'alpha-2', 'bravo-1', 'alpha-1']);
      expect(await rows(page)).toEqual([
        ['bravo-2', 'Bravo two through B', false],
        ['alpha-2', 'Alpha two through A', false],
        ['bravo-1', 'Bravo one through B', false],
        ['alpha-1', 'Alpha one through A', false],
      ]);

      // A chat in the page starts a thread of its own (no thread chosen: CopilotKit makes up its id), named after
      // its first message; the list shows it on top once refetched (no realtime metadata from this gateway).
      await page.fill('textarea', 'Charlie from the page');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelectorAll('.copilotKitAssistantMessage').length > 0);
      await until(
        () => listed(a),
        (threads) => threads.length === 5,
      );
      await page.click('#refresh');
      await page.waitForFunction(() => document.querySelectorAll('#thread-list > li').length === 5);
      const [charlie] = await rows(page);
      expect(charlie).toEqual([expect.any(String), 'Charlie from the page', false]);
      const charlieId = charlie[0];

      await page.fill('#new-name', 'Renamed in the browser');
      expect(await mutate(page, 'bravo-1', 'rename')).toBe('rename bravo-1: ok');
      expect(await mutate(page, 'alpha-1', 'archive')).toBe('archive alpha-1: ok');
      expect(await mutate(page, 'alpha-2', 'archive')).toBe('archive alpha-2: ok');
      expect(await mutate(page, 'bravo-2', 'delete')).toBe('delete bravo-2: ok');
      await showsThreads(page, [charlieId, 'bravo-1']);
      // Archived threads shown, and one brought back.
      await page.check('#show-archived');
      await showsThreads(page, [charlieId, 'alpha-2', 'bravo-1', 'alpha-1']);
      expect(await mutate(page, 'alpha-2', 'unarchive')).toBe('unarchive alpha-2: ok');
      await page.waitForFunction(
        () =>
          document.querySelector('#thread-list > li[data-thread-id="alpha-2"] .thread-archived')?.textContent ===
          'active',
      );

      const expected: [string, string, boolean][] = [
        [charlieId, 'Charlie from the page', false],
        ['alpha-2', 'Alpha two through A', false],
        ['bravo-1', 'Renamed in the browser', false],
        ['alpha-1', 'Alpha one through A', true],
      ];
      expect(await rows(page)).toEqual(expected);
      // What instance B lists (from the shared Redis) is what the page shows; A agrees.
      expect(await listed(b)).toEqual(expected);
      expect(await listed(a)).toEqual(expected);

      // A reload starts from the gateway again: the same list, archived ones hidden until asked for.
      await page.reload();
      await showsThreads(page, [charlieId, 'alpha-2', 'bravo-1']);
      await page.check('#show-archived');
      await showsThreads(page, [charlieId, 'alpha-2', 'bravo-1', 'alpha-1']);
      expect(await rows(page)).toEqual(expected);

      // What the stock client sent for the list and the mutations, in order: the list once connected (GET /info
      // first), again on Refresh, each mutation with the agent in its body, the list with archived ones when asked
      // for, and after the reload the same again.
      expect(sent[0].target).toBe('/info');
      expect(sent.filter((request) => request.target.startsWith('/threads'))).toEqual([
        { method: 'GET', target: '/threads?agentId=default' },
        { method: 'GET', target: '/threads?agentId=default' },
        { method: 'PATCH', target: '/threads/bravo-1', body: { agentId: 'default', name: 'Renamed in the browser' } },
        { method: 'POST', target: '/threads/alpha-1/archive', body: { agentId: 'default' } },
        { method: 'POST', target: '/threads/alpha-2/archive', body: { agentId: 'default' } },
        { method: 'DELETE', target: '/threads/bravo-2', body: { agentId: 'default' } },
        { method: 'GET', target: '/threads?agentId=default&includeArchived=true' },
        { method: 'PATCH', target: '/threads/alpha-2', body: { agentId: 'default', archived: false } },
        { method: 'GET', target: '/threads?agentId=default' },
        { method: 'GET', target: '/threads?agentId=default&includeArchived=true' },
      ]);
      // The chat's own thread: connected to (empty: nothing there yet), then run; it is the thread listed on top.
      const chat = sent.filter((request) => request.target.startsWith('/agent/default/'));
      expect(chat.find((request) => request.target === '/agent/default/run')?.body.threadId).toBe(charlieId);
      expect(chat[0]).toMatchObject({ target: '/agent/default/connect', body: { threadId: charlieId, messages: [] } });
      expect(errors).toEqual([]);
      await page.close();
    });

    it('opens a thread made through B, restores its messages in the chat, and goes on with it', async () => {
      await agRun(b, 'restore-b', 'Bravo asks through B [tokens=3]');
      await agRun(a, 'restore-a', 'Alpha asks through A [tokens=2]');
      const { page, errors, sent } = await openPage();
      await page.waitForSelector('#thread-list > li[data-thread-id="restore-b"]');
      const userTexts = () => page.locator('.copilotKitUserMessage').allInnerTexts();

      await page.click('#thread-list > li[data-thread-id="restore-b"] button.open');
      await page.waitForFunction(() =>
        Array.from(document.querySelectorAll('.copilotKitUserMessage')).some((m) =>
          m.textContent!.includes('Bravo asks'),
        ),
      );
      await page.waitForFunction(() =>
        Array.from(document.querySelectorAll('.copilotKitAssistantMessage')).some((m) =>
          m.textContent!.includes('tok2'),
        ),
      );
      expect(await userTexts()).toEqual(['Bravo asks through B [tokens=3]']);
      expect(sent.at(-1)).toMatchObject({
        method: 'POST',
        target: '/agent/default/connect',
        body: { threadId: 'restore-b' },
      });

      // Another thread replaces it.
      await page.click('#thread-list > li[data-thread-id="restore-a"] button.open');
      // (The chat's messages only: the list beside it shows both threads' names.)
      await page.waitForFunction(() => {
        const users = Array.from(document.querySelectorAll('.copilotKitUserMessage')).map((m) => m.textContent!);
        return users.length === 1 && users[0].includes('Alpha asks');
      });
      expect(await userTexts()).toEqual(['Alpha asks through A [tokens=2]']);

      // Going on with it: the next run is on that thread, with its history, through A; B sees the whole transcript.
      await page.fill('textarea', 'And a follow-up [tokens=4]');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() =>
        Array.from(document.querySelectorAll('.copilotKitAssistantMessage')).some((m) =>
          m.textContent!.includes('tok3'),
        ),
      );
      const run = sent.findLast((request) => request.target === '/agent/default/run');
      expect(run?.body.threadId).toBe('restore-a');
      const transcript = await until(
        async () => (await (await fetch(`${b.url}/threads/restore-a/messages`)).json()) as { messages: any[] },
        (answer) => answer.messages.length === 4,
      );
      expect(transcript.messages.map((message) => [message.role, message.content])).toEqual([
        ['user', 'Alpha asks through A [tokens=2]'],
        ['assistant', 'tok0 tok1 '],
        ['user', 'And a follow-up [tokens=4]'],
        ['assistant', 'tok0 tok1 tok2 tok3 '],
      ]);
      // It is the most recently run thread now, and keeps its first name.
      await page.click('#refresh');
      await page.waitForFunction(
        () => document.querySelector('#thread-list > li')?.getAttribute('data-thread-id') === 'restore-a',
      );
      expect((await rows(page))[0]).toEqual(['restore-a', 'Alpha asks through A [tokens=2]', false]);
      expect(errors).toEqual([]);
      await page.close();
    });

    it('shows a suggestion chip from a run that leaves no thread behind in the list', async () => {
      const before = await listed(a);
      const logsBefore = a.logs.length;
      const { page, errors } = await openPage('?suggest=1');
      await page.waitForFunction(() => document.body.innerText.includes('Say hi'));
      // The suggestion run, on instance A: asked statelessly at /agent/default/suggest, and ended.
      const suggest = () =>
        a.logs
          .slice(logsBefore)
          .find(
            (line) =>
              line.msg === 'request completed' &&
              line.method === 'POST' &&
              /\/agent\/default\/suggest$/.test(line.path),
          );
      await until(
        async () => suggest(),
        (line) => line !== undefined,
      );
      const run = a.logs
        .slice(logsBefore)
        .find((line) => line.msg === 'run succeeded' && line.requestId === suggest().requestId);
      expect(run?.threadId).toEqual(expect.any(String));
      // Neither instance lists it, nor knows its thread; the page's list, refetched, is what it was.
      expect(await listed(a)).toEqual(before);
      expect(await listed(b)).toEqual(before);
      expect((await fetch(`${b.url}/threads/${encodeURIComponent(run.threadId)}`)).status).toBe(404);
      await page.click('#refresh');
      await showsThreads(
        page,
        before.filter(([, , archived]) => !archived).map(([id]) => id),
      );
      expect(errors).toEqual([]);
      await page.close();
    });
  },
);

/** Polls `read` until `check` holds (the gateway's own list, which has no event to wait for). */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + TEST_TIMEOUT; // only so that the loop stops once the test has timed out
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
