import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  ApolloClient,
  HttpLink,
  InMemoryCache,
  split,
  gql,
  GraphQLWsLink,
  getMainDefinition,
} from './clients/apollo.js';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { possibleTypes } from '../src/index.js';
import { startGateway, type RunningGateway } from './support/harness.js';
import { installBrowserApps } from './support/browser-apps.js';
import { close, listen } from './support/loopback.js';
import { createServer } from 'node:http';
import ts from 'typescript';

// The documents' examples, as written: the README's curl requests (GraphQL and AG-UI) and the answers it
// shows, its graphql-ws subscription, Apollo Client (with the possibleTypes the gateway ships) selecting
// the same fields, its CopilotKit React apps type-checked against both generations, and the thread example
// that DEPLOYMENT.md carries. Each is read from the section it lives in, so a moved or renamed section
// fails here by name rather than as an empty match.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const document = (name: string) => readFileSync(join(ROOT, name), 'utf8');

/**
 * A section of a Markdown document: from its heading to the next heading of the same or a higher level,
 * outside code blocks (where a `#` line is a shell comment).
 */
function section(text: string, heading: string): string {
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`No section "${heading}"`);
  const level = /^#+/.exec(heading)![0].length;
  let fenced = false;
  let end = start + 1;
  for (; end < lines.length; end++) {
    if (lines[end].startsWith('```')) fenced = !fenced;
    else if (!fenced && new RegExp(`^#{1,${level}} `).test(lines[end])) break;
  }
  return lines.slice(start, end).join('\n');
}

const readme = document('README.md');
const curlBlock = section(readme, '### Try it with curl');
const bodies = [...curlBlock.matchAll(/ -d '([\s\S]*?)'/g)].map((match) => JSON.parse(match[1]));
const wsBlock = section(readme, '### Stream a run over WebSocket (graphql-ws)');
const subscription = wsBlock.match(/query: `([\s\S]*?)`/)![1];
const [queryBody, mutationBody, streamedBody] = bodies;
const agUiBlock = section(readme, '### Run an agent over AG-UI with curl');
const agUiCurl = agUiBlock.match(/curl -sN http:\/\/127\.0\.0\.1:4000(\S+) [\s\S]*? -d '([\s\S]*?)'/)!;
const [agUiPath, agUiBody] = [agUiCurl[1], JSON.parse(agUiCurl[2])];

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

  it('answers the query with the answer the README shows', async () => {
    const shown = JSON.parse(curlBlock.match(/The first answers `([^`]*)`/)![1]);
    expect(shown).toEqual({ data: { hello: 'Hello World', availableAgents: { agents: [] } } });
    expect(await (await post(demo.url, queryBody)).json()).toEqual(shown);
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

/** The AG-UI events of an SSE answer, parsed from its `data:` lines. */
async function agUiEvents(response: Response): Promise<any[]> {
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await response.text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]));
}

/** The event types of the README's sample output after the AG-UI curl, in order. */
const shownAgUiTypes = [...agUiBlock.match(/```text\n([\s\S]*?)```/)![1].matchAll(/"type":"(\w+)"/g)].map((m) => m[1]);

/** Whether `shown` appears in `actual` in the same order (other events may come between). */
function inOrder(shown: string[], actual: string[]): boolean {
  let at = 0;
  for (const type of actual) if (type === shown[at]) at += 1;
  return at === shown.length;
}

describe("the README's AG-UI curl, as written", () => {
  it('is a RunAgentInput posted to the default agent under the GraphQL path', () => {
    expect(agUiPath).toBe('/api/copilotkit/agent/default/run');
    expect(agUiBody).toMatchObject({ threadId: expect.any(String), runId: expect.any(String), messages: [{}] });
  });

  it('streams the run as AG-UI events: the action, the reply, the end, in the order the README shows', async () => {
    // The README's body, with a thread of its own so that no other test's run on the same thread interferes.
    const body = { ...agUiBody, threadId: 'readme-ag-ui' };
    const events = await agUiEvents(await post(`${new URL(demo.url).origin}${agUiPath}`, body, 'text/event-stream'));
    const types = events.map((event) => event.type);
    expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: 'readme-ag-ui', runId: agUiBody.runId });
    expect(events.find((event) => event.type === 'TOOL_CALL_START')).toMatchObject({ toolCallName: 'getCurrentTime' });
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ role: 'tool' });
    const text = events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => event.delta);
    expect(text.join('')).toContain('[demo mode]');
    expect(events.at(-1)).toEqual({ type: 'RUN_FINISHED', threadId: 'readme-ag-ui', runId: agUiBody.runId });
    expect(shownAgUiTypes.length).toBeGreaterThan(3);
    expect(inOrder(shownAgUiTypes, types)).toBe(true);
  });

  it('runs the same input through the single-route envelope the README shows', async () => {
    const shown = agUiBlock.match(/`(\{"method":"agent\/run".*?\})`/)![1];
    const envelope = JSON.parse(shown.replace('{…}', JSON.stringify({ ...agUiBody, threadId: 'readme-ag-ui-single' })));
    const events = await agUiEvents(await post(demo.url, envelope, 'text/event-stream'));
    expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: 'readme-ag-ui-single' });
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', threadId: 'readme-ag-ui-single' });
  });

  it('lists the model as the agent default at /info, as the README says', async () => {
    const info = await (await fetch(`${demo.url}/info`)).json();
    expect(Object.keys(info.agents)).toEqual(['default']);
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

describe("DEPLOYMENT.md's thread example", () => {
  const threadsBlock = section(document('DEPLOYMENT.md'), '## Threads: restore a chat, resume a run, stop it');
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

// The React apps: each `tsx` block of the README type-checked (props, hooks, imports) against the
// CopilotKit generation it names, from the packages the browser test runs in Chromium (test/browser,
// installed there on first use). Checked in memory: the block is a virtual file beside the tests, and
// nothing is written.
const COPILOTKIT = {
  '1.10.6': {
    '@copilotkit/react-core': 'test/browser/node_modules/@copilotkit/react-core',
    '@copilotkit/react-ui': 'test/browser/node_modules/@copilotkit/react-ui',
  },
  '1.74.0': {
    '@copilotkit/react-core': 'test/browser/node_modules/copilotkit-react-core-174',
    '@copilotkit/react-ui': 'test/browser/node_modules/copilotkit-react-ui-174',
  },
} as const;
type Generation = keyof typeof COPILOTKIT;
const reactBlock = section(readme, '### Point a CopilotKit React app at it');
const apps = [...reactBlock.matchAll(/```tsx\n([\s\S]*?)```/g)].map((match) => match[1]);

/** The type errors of a React app's source, its CopilotKit imports resolved to one generation. */
function typeErrors(source: string, generation: Generation): string[] {
  const file = join(ROOT, 'test', 'readme-app.tsx');
  const options: ts.CompilerOptions = {
    jsx: ts.JsxEmit.ReactJSX,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    baseUrl: ROOT,
    paths: Object.fromEntries(Object.entries(COPILOTKIT[generation]).map(([name, dir]) => [name, [dir]])),
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === file ? ts.createSourceFile(name, source, language) : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

/** The stylesheet the app imports, which TypeScript does not resolve: it must be one the package exports. */
function exportsStylesheet(source: string, generation: Generation): boolean {
  const imported = source.match(/import '@copilotkit\/react-ui\/(.+)';/)?.[1];
  const manifest = JSON.parse(
    readFileSync(join(ROOT, COPILOTKIT[generation]['@copilotkit/react-ui'], 'package.json'), 'utf8'),
  );
  return imported !== undefined && manifest.exports?.[`./${imported}`] !== undefined;
}

describe("the README's CopilotKit React apps", () => {
  // The compatibility apps live apart from the gateway's own packages, installed on first use.
  beforeAll(() => installBrowserApps(), 600_000);

  it('are two, a 1.10 app and a ≥1.50 app', () => {
    expect(apps).toHaveLength(2);
    expect(apps[0]).toContain('@copilotkit/react-core@1.10.6');
    expect(apps[1]).toContain('@copilotkit/react-core@1.74.0');
  });

  it('type-check against the CopilotKit each installs: 1.10.6 and 1.74', () => {
    expect(typeErrors(apps[0], '1.10.6')).toEqual([]);
    expect(typeErrors(apps[1], '1.74.0')).toEqual([]);
    expect(exportsStylesheet(apps[0], '1.10.6')).toBe(true);
    expect(exportsStylesheet(apps[1], '1.74.0')).toBe(true);
  }, 120_000);

  it("are checked against each generation's own types, which tell a mistake apart", () => {
    // useSingleEndpoint (which the README names) exists from 1.50 on: known to 1.74's types, not to 1.10.6's.
    const singleEndpoint = apps[1].replace(' agent="researcher">', ' agent="researcher" useSingleEndpoint>');
    expect(typeErrors(singleEndpoint, '1.74.0')).toEqual([]);
    expect(typeErrors(singleEndpoint, '1.10.6').join('\n')).toContain('useSingleEndpoint');
  }, 120_000);
});
