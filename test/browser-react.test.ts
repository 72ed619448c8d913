import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { build } from 'esbuild';
import { pino } from 'pino';
import { chromium, type Browser, type Page } from './clients/playwright.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { copilotKitReady, installBrowserApps } from './support/browser-apps.js';
import { startGateway, type RunningGateway } from './support/harness.js';

// A real CopilotKit React app (@copilotkit/react-core + react-ui, unmodified) in headless Chromium,
// served from one origin, chatting through the gateway on another, in both generations: 1.10.6 (the
// last to speak GraphQL) and 1.74 (the newest published, speaking AG-UI). The same app source is
// bundled twice; for 1.74 its imports resolve to the 1.74 packages, installed under aliases. Those packages
// live in test/browser (its own package.json), installed there on first use: the gateway's install has none.
//
// Each wait below is for an event, with no bound of its own: the test's timeout is the one bound, so a busy
// machine makes the suite slower, not red.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') {
  throw new Error(`Chromium is required in CI at ${CHROMIUM} (.ci/run installs it with apt-get).`);
}
const SKIPPED = available
  ? ''
  : ` (skipped: no Chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH)`;
/** One generous bound per test: a chat's turn takes well under a second on a quiet machine. */
const TEST_TIMEOUT = 120_000;
jest.setTimeout(TEST_TIMEOUT);

/** The two generations: which packages the app's imports resolve to, and the protocol their runs use. */
const VERSIONS = [
  { name: '1.10.6', alias: {}, protocol: undefined },
  {
    name: '1.74',
    alias: { '@copilotkit/react-core': 'copilotkit-react-core-174', '@copilotkit/react-ui': 'copilotkit-react-ui-174' },
    protocol: 'ag-ui',
  },
] as const;

const fake = new FakeOpenAI();
const agent = new FakeAgUiAgent();
const logs: any[] = [];
let gateway: RunningGateway;
let pageServer: Server;
let pageOrigin: string;
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  const appsDir = await installBrowserApps();
  const baseURL = await fake.start();
  const agentUrl = await agent.start();
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  gateway = await startGateway({
    logger,
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0 }),
    actions: [
      {
        name: 'sayHello',
        description: 'Greets someone.',
        handler: ({ message }: { message: string }) => `Hello, ${message}!`,
      },
    ],
    agents: { researcher: agUiAgent({ url: agentUrl, description: 'Researches.' }) },
  });

  const scripts = new Map<string, string>();
  for (const version of VERSIONS) {
    const bundle = await build({
      entryPoints: [`${appsDir}/app.tsx`],
      absWorkingDir: appsDir, // where esbuild resolves an alias's packages from
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      jsx: 'automatic',
      alias: version.alias,
      loader: { '.css': 'empty' },
      define: { 'process.env.NODE_ENV': '"production"' },
      logLevel: 'silent',
    });
    scripts.set(version.name, bundle.outputFiles[0].text);
  }
  // The page is on 127.0.0.1, the gateway on localhost: two origins, so every call is cross-origin.
  const runtimeUrl = gateway.url.replace('127.0.0.1', 'localhost');
  pageServer = createServer((req, res) => {
    const script = req.url?.startsWith('/app-') ? scripts.get(req.url.slice('/app-'.length, -'.js'.length)) : undefined;
    if (script !== undefined) {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(script);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    const query = new URL(req.url ?? '/', 'http://page').searchParams;
    const agentName = query.get('agent');
    const settings =
      `window.RUNTIME_URL=${JSON.stringify(runtimeUrl)};` +
      (agentName ? `window.AGENT=${JSON.stringify(agentName)};` : '') +
      (query.get('suggest') ? 'window.SUGGEST=true;' : '');
    res.end(
      `<!doctype html><html><body><div id="root"></div><script>${settings}</script><script src="/app-${query.get('version')}.js"></script></body></html>`,
    );
  });
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
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
}, 600_000); // npm ci of the apps on first use takes minutes; afterwards, bundling and Chromium take seconds

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await gateway?.close();
  if (pageServer) await new Promise((resolve) => pageServer.close(resolve));
  await fake.stop();
  await agent.stop();
});

/** What each page logged to its console, threw, and loaded, in order (openChat records it). */
const pageEvents = new WeakMap<Page, string[]>();

async function openChat(version: string, agentName?: string, query = ''): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(0); // no bound of its own: the test's timeout ends a wait that never ends
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  // What the page said and did, for a wait that fails (untilShown): its console, its errors, its loads.
  const seen: string[] = [];
  pageEvents.set(page, seen);
  page.on('console', (message) => seen.push(`console.${message.type()}: ${message.text().slice(0, 300)}`));
  page.on('pageerror', (error) => seen.push(`page error: ${error.message.slice(0, 300)}`));
  page.on('framenavigated', (frame) => frame === page.mainFrame() && seen.push(`loaded ${frame.url()}`));
  // 1.74 discovers the runtime first, and drops a message sent before it is ready (copilotKitReady).
  const discovers = VERSIONS.find((entry) => entry.name === version)?.protocol === 'ag-ui';
  const discovered = discovers ? copilotKitReady(page) : undefined;
  await page.goto(`${pageOrigin}/?version=${version}${agentName ? `&agent=${agentName}` : ''}${query}`);
  await page.waitForSelector('textarea');
  await discovered;
  return { page, errors };
}

/** Polls until `check` holds, for what the gateway logs; like the page's waits, bound by the test's timeout. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + TEST_TIMEOUT; // only so that the loop stops once the test has timed out
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Waits until the page shows `text`. Bounded a little under the test's own timeout, so that a wait that never ends
 * fails saying what the page showed and what the gateway logged last, instead of with jest's bare timeout (seen once
 * in CI: a frontend action's follow-up that never showed, and nothing to tell why).
 */
async function untilShown(page: Page, text: string): Promise<void> {
  try {
    await page.waitForFunction((wanted) => document.body.innerText.includes(wanted), text, {
      timeout: TEST_TIMEOUT - 20_000,
    });
  } catch (error) {
    const shown = await page.evaluate(() => document.body.innerText).catch(() => '(the page is gone)');
    const logged = logs
      .slice(-15)
      .map((line) =>
        [line.msg, line.code, line.method, line.path, line.status].filter((part) => part !== undefined).join(' '),
      );
    const said = (pageEvents.get(page) ?? []).slice(-30);
    throw new Error(
      `The page never showed ${JSON.stringify(text)}. It shows:\n${shown.slice(-2000)}\n` +
        `The gateway's last log lines:\n${logged.join('\n')}\n` +
        `The page's console, errors and loads (last 30):\n${said.join('\n')}`,
      { cause: error },
    );
  }
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('textarea', text);
  await page.keyboard.press('Enter');
}

/** The text of the assistant's messages in the chat. */
async function assistantText(page: Page): Promise<string> {
  return (await page.locator('.copilotKitAssistantMessage').allInnerTexts()).join('\n');
}

(available ? describe.each(VERSIONS) : describe.skip.each(VERSIONS))(
  `a CopilotKit $name React app in Chromium${SKIPPED}`,
  ({ name: version, protocol }) => {
    it('streams the model’s reply into the chat across origins, and the run ends cleanly', async () => {
      const { page, errors } = await openChat(version);
      const logsBefore = logs.length;
      await send(page, 'count [tokens=30] [delay=10]');
      await untilShown(page, 'tok29');
      expect(await assistantText(page)).toContain('tok0 tok1 tok2');
      expect(errors).toEqual([]);
      // The page closes the connection right after the last part; that is not a failed run.
      const runs = () =>
        logs
          .slice(logsBefore)
          .filter((line) => line.msg === 'run succeeded' || String(line.msg).startsWith('run failed'));
      await until(() => runs().length > 0);
      expect(runs().map((line) => line.msg)).toEqual(['run succeeded']);
      // 1.10.6 over GraphQL; 1.74 over AG-UI, after discovering the runtime at /info.
      expect(runs()[0].protocol).toBe(protocol);
      const discovered = logs.some(
        (line) => line.msg === 'request completed' && line.path === `${new URL(gateway.url).pathname}/info`,
      );
      expect(discovered).toBe(protocol === 'ag-ui');
      await page.close();
    });

    it('runs a frontend action in the page exactly once and sends its result back to the model verbatim', async () => {
      const { page, errors } = await openChat(version);
      await send(page, 'alert [tool=showAlert] [toolargs={"message":"hi there"}]');
      await untilShown(page, 'Tool result received');
      expect(await page.evaluate(() => (window as unknown as { alerts: string[] }).alerts)).toEqual(['hi there']);
      const followUp = fake.requests.findLast((request) => request.messages.some((m: any) => m.role === 'tool'));
      const tool = followUp.messages.find((m: any) => m.role === 'tool');
      expect(tool.content).toBe('shown: hi there');
      expect(errors).toEqual([]);
      await page.close();
    });

    it('shows a server-side action’s result and the continued answer from one request', async () => {
      const { page, errors } = await openChat(version);
      const before = fake.requests.length;
      await send(page, 'greet [tool=sayHello] [toolargs={"message":"Bob"}]');
      await untilShown(page, 'Tool result received: Hello, Bob!');
      expect(fake.requests.length - before).toBe(2); // the call and its continuation, one gateway run
      expect(errors).toEqual([]);
      if (process.env.SCREENSHOT_DIR)
        await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/chat-${version}.png` });
      await page.close();
    });

    // 1.74 only: 1.10.6 asks for suggestions with an ordinary GraphQL run.
    if (protocol === 'ag-ui')
      it("shows the model's suggestion as a chip, from a run that leaves no thread behind", async () => {
        const logsBefore = logs.length;
        const { page, errors } = await openChat(version, undefined, '&suggest=1');
        await untilShown(page, 'Say hi');
        // Asked statelessly (/info says suggestions: true), with the tool forced.
        const suggest = () =>
          logs
            .slice(logsBefore)
            .find(
              (line) =>
                line.msg === 'request completed' &&
                line.method === 'POST' &&
                /\/agent\/default\/suggest$/.test(line.path),
            );
        await until(() => suggest() !== undefined);
        const run = logs
          .slice(logsBefore)
          .find((line) => line.msg === 'run succeeded' && line.requestId === suggest().requestId);
        expect(run).toBeDefined();
        expect(fake.requests.at(-1).tool_choice).toEqual({ type: 'function', function: { name: 'copilotkitSuggest' } });
        // Nothing of it in the thread store: a connect on its thread finds no events.
        const connect = await fetch(`${gateway.url}/agent/default/connect`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            threadId: run.threadId,
            runId: 'check',
            messages: [],
            tools: [],
            context: [],
            state: {},
            forwardedProps: {},
          }),
        });
        expect((await connect.text()).replace(/: keep-alive\n\n/g, '')).toBe('');
        expect(errors).toEqual([]);
        await page.close();
      });

    it('talks to the agent the app names, showing its text and its state through useCoAgent', async () => {
      const { page, errors } = await openChat(version, 'researcher');
      const before = agent.requests.length;
      await send(page, 'research [state]');
      await untilShown(page, 'State updated.');
      await page.waitForFunction(() => document.getElementById('agent-state')?.textContent === '{"step":2}');
      expect(agent.requests.length - before).toBe(1);
      expect(agent.lastInput.messages.at(-1)).toMatchObject({ role: 'user', content: 'research [state]' });
      expect(errors).toEqual([]);
      if (process.env.SCREENSHOT_DIR)
        await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/agent-${version}.png` });
      await page.close();
    });
  },
);
