import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chromium, type Browser, type BrowserContext, type Page } from './clients/playwright.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { OfflineExplorer } from '../src/transports/explorer.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, startGateway, type RunningGateway } from './support/harness.js';

// The offline explorer: GraphiQL built from npm (npm run build → dist/explorer/) and served by the
// gateway at <path>/graphiql. In Chromium with every host name unresolvable, as on an air-gapped
// machine, it loads with no request beyond the gateway, runs a query, streams the copilotRun
// subscription over graphql-ws and the streamed mutation over HTTP.

const root = fileURLToPath(new URL('..', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable && process.env.CI === 'true') {
  throw new Error(`Chromium is required in CI at ${CHROMIUM} (.ci/run installs it with apt-get).`);
}

/** `npm run build` bundles the explorer; build it here too when it is missing or older than its source. */
function ensureExplorerBuilt(): void {
  const built = join(root, 'dist/explorer/app.js');
  const source = statSync(join(root, 'explorer/app.tsx')).mtimeMs;
  if (existsSync(built) && statSync(built).mtimeMs >= source) return;
  const result = spawnSync(process.execPath, [join(root, 'scripts/build-explorer.mjs')], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`The explorer build failed: ${result.stderr}`);
}

const { start } = gatewaysPerTest();

beforeAll(() => ensureExplorerBuilt(), 60_000);

describe('the offline explorer over HTTP', () => {
  it('serves a page that loads only its own two files, under a policy that allows nothing else', async () => {
    const { url } = await start();
    const response = await fetch(`${url}/graphiql`, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    const html = await response.text();
    expect(html).toContain('data-endpoint="/api/copilotkit"');
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(
      sources
        .filter((source) => source !== 'data:,')
        .map((source) => source.replace(/\?v=.*/, ''))
        .sort(),
    ).toEqual(['/api/copilotkit/graphiql/app.css', '/api/copilotkit/graphiql/app.js']);
  });

  it('serves its files with an etag (304 when unchanged), gzipped for a client that takes gzip', async () => {
    const { url } = await start();
    const plain = await fetch(`${url}/graphiql/app.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const script = Buffer.from(await plain.arrayBuffer());
    expect(script.length).toBeGreaterThan(100_000);
    const etag = plain.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);

    const again = await fetch(`${url}/graphiql/app.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');

    // undici's fetch would gunzip by itself: read the raw bytes over node:http.
    const { status, headers, body } = await rawGet(`${url}/graphiql/app.css`, { 'accept-encoding': 'gzip, deflate' });
    expect(status).toBe(200);
    expect(headers['content-encoding']).toBe('gzip');
    expect(headers['content-type']).toBe('text/css; charset=utf-8');
    expect(gunzipSync(body).toString('utf8')).toContain('.graphiql-container');
    // gzip refused (q=0, however written) comes plain; `*` takes gzip unless gzip is refused by name.
    for (const [accept, encoding] of [
      ['gzip;q=0', undefined],
      ['gzip; q=0.000, identity', undefined],
      ['GZIP;Q=0.0', undefined],
      ['*', 'gzip'],
      ['*;q=0.5, gzip;q=0', undefined],
      ['br, gzip;q=0.1', 'gzip'],
      ['br', undefined],
    ]) {
      const answer = await rawGet(`${url}/graphiql/app.css`, { 'accept-encoding': accept! });
      expect([accept, answer.headers['content-encoding']]).toEqual([accept, encoding]);
    }
  });

  it('answers HEAD without a body, and 404 for files it does not have', async () => {
    const { url } = await start();
    const head = await fetch(`${url}/graphiql/app.js`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBeGreaterThan(100_000);
    expect(await head.text()).toBe('');
    for (const name of ['app.js.map', '../../package.json', '%2e%2e/package.json', 'app.jsx']) {
      const response = await fetch(`${url}/graphiql/${name}`);
      expect(response.status).toBe(404);
    }
    // Names every object has (inherited, not files): not found either, rather than a failed read and a 500.
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      const response = await fetch(`${url}/graphiql/${name}`);
      expect([name, response.status, (await response.text()).startsWith('Not found.')]).toEqual([name, 404, true]);
    }
    // Only GET and HEAD: anything else there is not the endpoint.
    const post = await fetch(`${url}/graphiql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(post.status).toBe(404);
    expect((await post.json()).errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('follows the configured path', async () => {
    const { url } = await start({ path: '/graphql' });
    expect(url).toMatch(/\/graphql$/);
    const html = await (await fetch(`${url}/graphiql`)).text();
    expect(html).toContain('data-endpoint="/graphql"');
    expect(html).toContain('src="/graphql/graphiql/app.js?v=');
    expect((await fetch(`${url}/graphiql/app.css`)).status).toBe(200);
  });

  it('is off in production, with a page that says how to turn it on', async () => {
    const { url } = await start({ environment: 'production' });
    for (const name of ['', '/app.js']) {
      const response = await fetch(`${url}/graphiql${name}`, { headers: { accept: 'text/html' } });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain('are off');
      expect(html).toContain('<code>sandbox</code>');
      expect(html).not.toContain('app.js?v=');
    }
  });

  it('is on in production when the sandbox option turns it on', async () => {
    const { url } = await start({ environment: 'production', sandbox: true });
    expect((await fetch(`${url}/graphiql`)).status).toBe(200);
  });

  it('is pointed at from Apollo Sandbox’s offline fallback text', async () => {
    const { url } = await start();
    const html = await (await fetch(url, { headers: { accept: 'text/html' } })).text();
    expect(html).toContain('Apollo Sandbox cannot be loaded');
    expect(html).toContain('<a href="/api/copilotkit/graphiql">open the offline explorer</a>');
  });

  it('says how to build it when it is not built', async () => {
    const explorer = new OfflineExplorer('/api/copilotkit', mkdtempSync(join(tmpdir(), 'no-explorer-')));
    const server = createServer((req, res) => explorer.serve(req, res, req.url!));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const response = await fetch(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/copilotkit/graphiql`,
      );
      expect(response.status).toBe(404);
      expect(await response.text()).toContain('run `npm run build`');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

const fake = new FakeOpenAI();
let gateway: RunningGateway;
let browser: Browser;

const SKIPPED = chromiumAvailable
  ? ''
  : ` (skipped: no Chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH)`;

(chromiumAvailable ? describe : describe.skip)(`the offline explorer in Chromium, with no network${SKIPPED}`, () => {
  beforeAll(async () => {
    const baseURL = await fake.start();
    gateway = await startGateway({ adapter: new OpenAIAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0 }) });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        // Air-gapped: no host name resolves, and only loopback is reachable.
        '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await fake.stop();
  });

  interface Explorer {
    context: BrowserContext;
    page: Page;
    /** Every URL the page asked for (HTTP and WebSocket). */
    requests: string[];
    /** The text of every graphql-ws frame the page received. */
    frames: string[];
    errors: string[];
  }

  async function openExplorer(): Promise<Explorer> {
    const context = await browser.newContext();
    const page = await context.newPage();
    // No wait has a bound of its own: the test's timeout is the one bound, so a busy machine is only slower.
    page.setDefaultTimeout(0);
    const explorer: Explorer = { context, page, requests: [], frames: [], errors: [] };
    context.on('request', (request) => explorer.requests.push(request.url()));
    page.on('websocket', (socket) => {
      explorer.requests.push(socket.url());
      socket.on('framereceived', (frame) => explorer.frames.push(String(frame.payload)));
    });
    page.on('pageerror', (error) => explorer.errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') explorer.errors.push(message.text());
    });
    await page.goto(`${gateway.url}/graphiql`);
    await page.waitForSelector('.graphiql-query-editor .CodeMirror');
    // The schema is loaded (by introspection) once the docs know the query type.
    await page.click('[aria-label="Show Documentation Explorer"]');
    await page.waitForSelector('.graphiql-doc-explorer >> text=Query');
    return explorer;
  }

  /** Puts an operation in the editor and waits until GraphiQL has taken it in (it stores it once parsed). */
  async function setOperation(page: Page, operation: string): Promise<void> {
    await page.evaluate(
      (text) => (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror.setValue(text),
      operation,
    );
    await page.waitForFunction((text) => localStorage.getItem('graphiql:query') === text, operation);
  }

  async function run(page: Page, until: string): Promise<any> {
    await page.click('.graphiql-execute-button');
    await page.waitForFunction(
      (text) =>
        ((document.querySelector('.graphiql-response .CodeMirror') as any)?.CodeMirror.getValue() ?? '').includes(text),
      until,
    );
    return JSON.parse(
      await page.evaluate(() =>
        (document.querySelector('.graphiql-response .CodeMirror') as any).CodeMirror.getValue(),
      ),
    );
  }

  function onlyTheGateway(explorer: Explorer): void {
    const origin = new URL(gateway.url).host;
    expect(explorer.requests.length).toBeGreaterThan(0);
    expect(explorer.requests.filter((url) => new URL(url).host !== origin)).toEqual([]);
    expect(explorer.errors).toEqual([]);
  }

  const runInput = (content: string) =>
    `{ metadata: { requestType: Chat } frontend: { actions: [] } messages: [{ id: "u1", createdAt: "2026-01-01T00:00:00Z", textMessage: { role: user, content: ${JSON.stringify(content)} } }] }`;

  it('loads with no request beyond the gateway and runs hello', async () => {
    const explorer = await openExplorer();
    await setOperation(explorer.page, '{ hello }');
    expect(await run(explorer.page, 'hello')).toEqual({ data: { hello: 'Hello World' } });
    onlyTheGateway(explorer);
    await explorer.context.close();
  }, 60_000);

  it('streams a copilotRun subscription over graphql-ws, event by event, to the run’s end, showing every event so far', async () => {
    const explorer = await openExplorer();
    await setOperation(
      explorer.page,
      `subscription Run { copilotRun(data: ${runInput('count [tokens=6] [delay=20]')}) {
        __typename ... on RunEvent { sequence } ... on TextMessageContentEvent { content }
        ... on RunFinishedEvent { status { __typename } } } }`,
    );
    // The response pane shows every event so far (GraphiQL alone would show only the latest): the text too.
    const shown = await run(explorer.page, 'RunFinishedEvent');
    expect(shown.data.copilotRun.map((event: any) => event.sequence)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(shown.data.copilotRun.at(-1)).toEqual({
      __typename: 'RunFinishedEvent',
      sequence: 9,
      status: { __typename: 'SuccessResponseStatus' },
    });
    expect(
      shown.data.copilotRun
        .filter((event: any) => event.__typename === 'TextMessageContentEvent')
        .map((event: any) => event.content)
        .join(''),
    ).toBe('tok0 tok1 tok2 tok3 tok4 tok5 ');

    const events = explorer.frames
      .map((frame) => JSON.parse(frame))
      .filter((message) => message.type === 'next')
      .map((message) => message.payload.data.copilotRun);
    expect(events.map((event) => event.sequence)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(
      events
        .filter((event) => event.__typename === 'TextMessageContentEvent')
        .map((event) => event.content)
        .join(''),
    ).toBe('tok0 tok1 tok2 tok3 tok4 tok5 ');
    expect(explorer.requests).toContain(gateway.wsUrl);
    onlyTheGateway(explorer);
    await explorer.context.close();
  }, 60_000);

  it('streams the generateCopilotResponse mutation over HTTP with @stream and @defer', async () => {
    const explorer = await openExplorer();
    await setOperation(
      explorer.page,
      `mutation Chat { generateCopilotResponse(data: ${runInput('count [tokens=4] [delay=20]')}) {
        threadId ... @defer { status { __typename } }
        messages @stream { __typename ... on TextMessageOutput { content @stream } } } }`,
    );
    const result = await run(explorer.page, 'SuccessResponseStatus');
    expect(result.data.generateCopilotResponse.status).toEqual({ __typename: 'SuccessResponseStatus' });
    expect(result.data.generateCopilotResponse.messages).toEqual([
      { __typename: 'TextMessageOutput', content: ['tok0 ', 'tok1 ', 'tok2 ', 'tok3 '] },
    ]);
    onlyTheGateway(explorer);
    await explorer.context.close();
  }, 60_000);

  it('shows a first-time visitor an example document that the gateway accepts', async () => {
    const explorer = await openExplorer();
    const example = await explorer.page.evaluate(() =>
      (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror.getValue(),
    );
    expect(example).toContain('subscription Run');
    // Both example operations validate and run against the gateway as written.
    for (const operationName of ['Hello', 'Run']) {
      const response = await fetch(gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: example, operationName }),
      });
      const body = await response.json();
      if (operationName === 'Hello') expect(body.data.hello).toBe('Hello World');
      // Over HTTP a subscription is refused for its transport, which means it validated.
      else expect(body.errors[0].message).toMatch(/WebSocket/);
    }
    await explorer.context.close();
  }, 60_000);
});

function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}
