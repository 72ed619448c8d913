#!/usr/bin/env node
// Proves a deployment works end to end through its proxy: health and readiness, a query, a run streamed
// over HTTP (multipart/mixed, as the stock CopilotKit client reads it, and SSE), a run over graphql-ws,
// the AG-UI routes, and thread continuity across instances (a run started through one instance, joined,
// read and continued through the others, every answer agreeing).
//
//   node scripts/cluster-check.mjs [base URL]            default http://localhost:8080
//
// Options (after the URL or instead of it):
//   --path /api/copilotkit     the GraphQL path (GRAPHQL_PATH)
//   --instances 2              how many distinct instances must answer (read from the proxy's X-Upstream
//                              header, deploy/nginx.conf); 0 or 1 to check a single instance
//   --allow-memory             accept instances without Redis (threads then do not cross instances)
//   --timeout 60000            milliseconds each check may take
//
// With authentication on (the shipped compose needs a key), GATEWAY_API_KEY (or the first of GATEWAY_API_KEYS)
// is sent with every request and in graphql-ws's connection_init.
//
// It needs no model: in demo mode (no provider configured) the gateway's replies are scripted. With a real
// provider every check works too, and costs a few short completions. It needs only packages the gateway
// itself depends on (graphql-ws, ws), so it also runs inside the image:
//   docker compose exec gateway-a node scripts/cluster-check.mjs http://nginx:8080
// Prints one PASS or FAIL line per check and exits 1 if any failed.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const apiKey = (process.env.GATEWAY_API_KEY || process.env.GATEWAY_API_KEYS?.split(',')[0] || '').trim();
if (apiKey) {
  const plainFetch = globalThis.fetch;
  globalThis.fetch = (url, init = {}) =>
    plainFetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${apiKey}` } });
}

// ---------------------------------------------------------------------------------------------------
// Options

const options = {
  base: 'http://localhost:8080',
  path: '/api/copilotkit',
  instances: 2,
  allowMemory: false,
  timeoutMs: 60_000,
};
{
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i];
    const value = () => {
      if (i + 1 >= args.length) usage(`${arg} needs a value`);
      return args[++i];
    };
    if (arg === '--path') options.path = value();
    else if (arg === '--instances') options.instances = Number(value());
    else if (arg === '--allow-memory') options.allowMemory = true;
    else if (arg === '--timeout') options.timeoutMs = Number(value());
    else if (arg === '-h' || arg === '--help') usage();
    else if (!arg.startsWith('-')) options.base = arg;
    else usage(`unknown option ${arg}`);
  }
  if (!/^https?:\/\//.test(options.base))
    usage(`the base URL must start with http:// or https:// (got ${options.base})`);
  if (!Number.isInteger(options.instances) || options.instances < 0) usage('--instances must be a whole number');
  if (!Number.isInteger(options.timeoutMs) || options.timeoutMs < 1)
    usage('--timeout must be a whole number of milliseconds');
}

function usage(error) {
  if (error) console.error(`cluster-check: ${error}`);
  console.error(
    'usage: node scripts/cluster-check.mjs [base URL, default http://localhost:8080] [--path /api/copilotkit] [--instances 2] [--allow-memory] [--timeout ms]',
  );
  process.exit(error ? 2 : 0);
}

const base = options.base.replace(/\/+$/, '');
const graphqlUrl = `${base}${options.path}`;
const wsUrl = graphqlUrl.replace(/^http/, 'ws');

// ---------------------------------------------------------------------------------------------------
// Documents

/**
 * The mutation @copilotkit/runtime-client-gql sends, as captured on the wire (test/fixtures/client-mutation.graphql,
 * with the __typename fields urql adds): @stream on messages and content, @defer on statuses.
 */
const STOCK_CLIENT_MUTATION = `mutation generateCopilotResponse($data: GenerateCopilotResponseInput!, $properties: JSONObject) {
  generateCopilotResponse(data: $data, properties: $properties) {
    threadId
    runId
    extensions { openaiAssistantAPI { runId threadId __typename } __typename }
    ... on CopilotResponse @defer {
      status {
        ... on BaseResponseStatus { code __typename }
        ... on FailedResponseStatus { reason details __typename }
        __typename
      }
      __typename
    }
    messages @stream {
      __typename
      ... on BaseMessageOutput { id createdAt __typename }
      ... on BaseMessageOutput @defer {
        status {
          ... on SuccessMessageStatus { code __typename }
          ... on FailedMessageStatus { code reason __typename }
          ... on PendingMessageStatus { code __typename }
          __typename
        }
        __typename
      }
      ... on TextMessageOutput { content @stream role parentMessageId __typename }
      ... on ImageMessageOutput { format bytes role parentMessageId __typename }
      ... on ActionExecutionMessageOutput { name arguments @stream parentMessageId __typename }
      ... on ResultMessageOutput { result actionExecutionId actionName __typename }
      ... on AgentStateMessageOutput { threadId state running agentName nodeName runId active role __typename }
    }
    metaEvents @stream {
      ... on LangGraphInterruptEvent { type name value __typename }
      ... on CopilotKitLangGraphInterruptEvent {
        type
        name
        data {
          messages {
            __typename
            ... on BaseMessageOutput { id createdAt __typename }
            ... on BaseMessageOutput @defer {
              status {
                ... on SuccessMessageStatus { code __typename }
                ... on FailedMessageStatus { code reason __typename }
                ... on PendingMessageStatus { code __typename }
                __typename
              }
              __typename
            }
            ... on TextMessageOutput { content role parentMessageId __typename }
            ... on ActionExecutionMessageOutput { name arguments parentMessageId __typename }
            ... on ResultMessageOutput { result actionExecutionId actionName __typename }
          }
          value
          __typename
        }
        __typename
      }
      __typename
    }
    __typename
  }
}`;

/** The headers the stock client sends. */
const STOCK_CLIENT_HEADERS = {
  accept:
    'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed',
  'content-type': 'application/json',
  'x-copilotkit-runtime-client-gql-version': '1.74.0',
};

/** The README's streamed mutation (curl with accept: text/event-stream). */
const STREAMED_MUTATION = `mutation($data: GenerateCopilotResponseInput!) {
  generateCopilotResponse(data: $data) {
    threadId
    messages @stream { id ... on TextMessageOutput { content @stream } }
    ... @defer { status { ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } }
  }
}`;

/** The whole answer as one JSON result. */
const PLAIN_MUTATION = `mutation($data: GenerateCopilotResponseInput!) {
  generateCopilotResponse(data: $data) {
    threadId
    runId
    status { __typename ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } }
    messages { __typename id ... on TextMessageOutput { role content } }
  }
}`;

/** Every field of an event that the checks compare (test/support/documents.ts WS_RUN, plus the join). */
const EVENT_FIELDS = `
  __typename
  ... on RunEvent { sequence }
  ... on RunStartedEvent { threadId runId }
  ... on TextMessageStartEvent { messageId role }
  ... on TextMessageContentEvent { messageId content }
  ... on TextMessageEndEvent { messageId messageStatus { __typename ... on FailedMessageStatus { reason } } }
  ... on ActionExecutionStartEvent { actionExecutionId actionName }
  ... on ActionExecutionArgsEvent { actionExecutionId args }
  ... on ActionExecutionEndEvent { actionExecutionId messageStatus { __typename } }
  ... on ActionExecutionResultEvent { messageId actionExecutionId actionName result }
  ... on RunFinishedEvent { status { __typename ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } }
`;

const RUN_SUBSCRIPTION = `subscription Run($data: GenerateCopilotResponseInput!, $onDisconnect: RunDisconnectPolicy) {
  copilotRun(data: $data, onDisconnect: $onDisconnect) { ${EVENT_FIELDS} }
}`;

const JOIN_SUBSCRIPTION = `subscription Join($threadId: ID!, $runId: ID, $afterSequence: Int) {
  joinCopilotRun(threadId: $threadId, runId: $runId, afterSequence: $afterSequence) { ${EVENT_FIELDS} }
}`;

const THREAD_QUERY = `query Thread($threadId: ID!) {
  copilotThread(threadId: $threadId) {
    threadId
    messages {
      __typename
      id
      createdAt
      status { __typename }
      ... on TextMessageOutput { role content }
      ... on ActionExecutionMessageOutput { name arguments }
      ... on ResultMessageOutput { actionExecutionId actionName result }
    }
    agentStates { agentName nodeName state running active runId }
    runs {
      runId
      lastSequence
      startedAt
      finishedAt
      status { __typename ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } }
    }
  }
}`;

// ---------------------------------------------------------------------------------------------------
// The checks

/** Which instances answered (the proxy's X-Upstream header), for the balancing check. */
const upstreamsSeen = new Set();
let upstreamHeaderSeen = false;

function noteUpstream(value) {
  if (typeof value !== 'string' || !value) return undefined;
  upstreamHeaderSeen = true;
  // "10.0.0.2:4000" or, after a retry, "10.0.0.2:4000, 10.0.0.3:4000" (a refused connection) or
  // "10.0.0.2:4000 : 10.0.0.3:4000" (a draining instance's refusal sent on): the last one answered.
  const last = value
    .split(/, | : /)
    .pop()
    .trim();
  upstreamsSeen.add(last);
  return last;
}

const results = [];

async function check(name, body) {
  const started = performance.now();
  let timer;
  try {
    const detail = await Promise.race([
      body(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
      }),
    ]);
    const ms = Math.round(performance.now() - started);
    results.push({ name, ok: true });
    console.log(`PASS ${name} (${ms} ms)${detail ? `: ${detail}` : ''}`);
    return true;
  } catch (error) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${error instanceof Error ? error.message : String(error)}`);
    if (process.env.CLUSTER_CHECK_DEBUG && error instanceof Error) console.error(error.stack);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(typeof message === 'function' ? message() : message);
}

const short = (value, max = 300) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

// ---------------------------------------------------------------------------------------------------
// HTTP

async function getJson(path) {
  const response = await fetch(`${base}${path}`, {
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  const upstream = noteUpstream(response.headers.get('x-upstream'));
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`GET ${path}: ${response.status}, not JSON: ${short(text)}`);
  }
  return { status: response.status, body, upstream };
}

/** A GraphQL operation answered with one JSON result. */
async function graphql(query, variables = {}) {
  const response = await fetch(graphqlUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  const upstream = noteUpstream(response.headers.get('x-upstream'));
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`POST ${options.path}: ${response.status}, not JSON: ${short(text)}`);
  }
  if (response.status !== 200 || body.errors?.length)
    throw new Error(`POST ${options.path}: ${response.status} ${short(body.errors ?? body)}`);
  return { data: body.data, upstream };
}

/**
 * Reads a streamed response as it arrives: `onPart(text, at)` for each complete multipart part or SSE
 * frame, with the time it arrived.
 */
async function readStream(response, split, onPart) {
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = response.body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const at = performance.now();
    let taken;
    ({ parts: taken, rest: buffer } = split(buffer));
    for (const part of taken) onPart(part, at);
  }
  buffer += decoder.decode();
  const { parts, rest } = split(buffer, true);
  const at = performance.now();
  for (const part of parts) onPart(part, at);
  return rest;
}

/** multipart/mixed; boundary="-" (PROTOCOL.md §2.2): `\r\n---\r\n<headers>\r\n\r\n<json>\r\n---…`, closed by `\r\n-----\r\n`. */
function splitMultipart(buffer) {
  const parts = [];
  for (;;) {
    const headersEnd = buffer.indexOf('\r\n\r\n');
    if (headersEnd === -1) break;
    const end = buffer.indexOf('\r\n---', headersEnd + 4);
    if (end === -1) break;
    parts.push(buffer.slice(headersEnd + 4, end));
    buffer = buffer.slice(end + 5);
  }
  return { parts, rest: buffer };
}

/** text/event-stream: frames separated by a blank line. */
function splitSse(buffer) {
  const frames = buffer.split(/\r?\n\r?\n/);
  const rest = frames.pop();
  return { parts: frames.filter((frame) => frame.length > 0), rest };
}

function sseFrame(frame) {
  const lines = frame.split(/\r?\n/);
  const event = lines
    .find((line) => line.startsWith('event:'))
    ?.slice(6)
    .trim();
  const data = lines
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''))
    .join('\n');
  const comment = lines.every((line) => line.startsWith(':'));
  return { event, data, comment };
}

/**
 * Folds GraphQL incremental payloads (deferSpec=20220824, PROTOCOL.md §2.1) into what the checks need: the
 * run's status, and each text message's content joined.
 */
function foldIncremental(payloads, field = 'generateCopilotResponse') {
  let threadId;
  let runId;
  let status;
  const messages = [];
  const contents = new Map(); // message index -> chunks
  const push = (index, chunks) => contents.set(index, [...(contents.get(index) ?? []), ...chunks]);
  for (const payload of payloads) {
    if (payload.errors?.length) throw new Error(`errors in the stream: ${short(payload.errors)}`);
    const root = payload.data?.[field];
    if (root) {
      threadId = root.threadId ?? threadId;
      runId = root.runId ?? runId;
      if (root.status) status = root.status;
      for (const message of root.messages ?? []) {
        messages.push(message);
        if (Array.isArray(message.content)) push(messages.length - 1, message.content);
      }
    }
    for (const entry of payload.incremental ?? []) {
      if (entry.errors?.length) throw new Error(`errors in the stream: ${short(entry.errors)}`);
      const path = entry.path ?? [];
      if (entry.items) {
        if (path.length === 3 && path[1] === 'messages') {
          for (const [offset, message] of entry.items.entries()) {
            const index = Number(path[2]) + offset;
            messages[index] = message;
            if (Array.isArray(message?.content)) push(index, message.content);
          }
        } else if (path.length === 5 && path[1] === 'messages' && path[3] === 'content') {
          push(Number(path[2]), entry.items);
        }
      } else if (entry.data) {
        if (path.length === 1 && entry.data.status) status = entry.data.status;
      }
    }
  }
  const texts = [...contents.entries()].sort(([a], [b]) => a - b).map(([, chunks]) => chunks.join(''));
  return { threadId, runId, status, messages, text: texts.join('\n') };
}

function userMessage(content) {
  return { id: randomUUID(), createdAt: new Date().toISOString(), textMessage: { role: 'user', content } };
}

function runInput(threadId, content) {
  return { threadId, metadata: { requestType: 'Chat' }, frontend: { actions: [] }, messages: [userMessage(content)] };
}

// ---------------------------------------------------------------------------------------------------
// graphql-ws

/** A WebSocket that remembers which instance accepted it (the proxy's X-Upstream on the 101 answer). */
class TrackedWebSocket extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.upstream = undefined;
    this.on('upgrade', (response) => {
      this.upstream = noteUpstream(response.headers['x-upstream']);
    });
  }
}

/** A graphql-ws client on its own connection, resolved once the server acknowledged it. */
async function connect() {
  let socket;
  const client = createClient({
    url: wsUrl,
    webSocketImpl: TrackedWebSocket,
    ...(apiKey ? { connectionParams: { authorization: `Bearer ${apiKey}` } } : {}),
    lazy: false,
    retryAttempts: 0,
    on: { connected: (connected) => (socket = connected) },
  });
  const connected = await new Promise((resolve, reject) => {
    const offConnected = client.on('connected', (value) => {
      offConnected();
      offClosed();
      resolve(value);
    });
    const offClosed = client.on('closed', (event) => {
      offConnected();
      offClosed();
      reject(
        new Error(
          `WebSocket to ${wsUrl} closed before graphql-ws was acknowledged (${event?.code ?? ''} ${event?.reason ?? ''})`,
        ),
      );
    });
  });
  socket = connected;
  return { client, upstream: socket.upstream, close: () => client.dispose() };
}

/** A connection served by another instance than `avoid` (when the proxy says which), trying a few times. */
async function connectAvoiding(avoid) {
  // A proxy that picks an instance at random sends all of 6 tries to the one avoided 1 time in 64; of 30, 1 in a billion.
  for (let attempt = 0; ; attempt += 1) {
    const connection = await connect();
    if (!avoid || !connection.upstream || connection.upstream !== avoid || attempt >= 29 || options.instances < 2)
      return connection;
    await connection.close();
  }
}

/** Runs one subscription to its end; `onEvent(event)` sees each event as it comes. */
function subscribe(client, query, variables, field, onEvent = () => {}) {
  return new Promise((resolve, reject) => {
    const events = [];
    client.subscribe(
      { query, variables },
      {
        next: (result) => {
          if (result.errors?.length) {
            reject(new Error(`${field}: ${short(result.errors)}`));
            return;
          }
          const event = result.data?.[field];
          if (event) {
            events.push(event);
            try {
              onEvent(event);
            } catch (error) {
              reject(error);
            }
          }
        },
        error: (error) =>
          reject(error instanceof Error ? error : new Error(`${field}: ${short(error?.message ?? error)}`)),
        complete: () => resolve(events),
      },
    );
  });
}

/** What two streams of one run must agree on, whatever merging a join did (PROTOCOL.md §7.3). */
function summarize(events) {
  assert(events.length > 0, 'no events');
  const first = events[0];
  const last = events.at(-1);
  assert(first.__typename === 'RunStartedEvent', () => `the first event is ${first.__typename}, not RunStartedEvent`);
  assert(last.__typename === 'RunFinishedEvent', () => `the last event is ${last.__typename}, not RunFinishedEvent`);
  for (let i = 1; i < events.length; i += 1) {
    assert(
      events[i].sequence > events[i - 1].sequence,
      () => `sequences do not rise: ${events[i - 1].sequence} then ${events[i].sequence}`,
    );
  }
  const texts = new Map();
  const actions = new Map();
  for (const event of events) {
    if (event.__typename === 'TextMessageContentEvent')
      texts.set(event.messageId, (texts.get(event.messageId) ?? '') + event.content);
    if (event.__typename === 'ActionExecutionArgsEvent')
      actions.set(event.actionExecutionId, (actions.get(event.actionExecutionId) ?? '') + event.args);
  }
  return {
    threadId: first.threadId,
    runId: first.runId,
    lastSequence: last.sequence,
    status: last.status,
    texts: Object.fromEntries(texts),
    actions: Object.fromEntries(actions),
    kinds: [...new Set(events.map((event) => event.__typename))].sort(),
  };
}

// ---------------------------------------------------------------------------------------------------
// AG-UI (CopilotKit ≥1.50)

async function agUiSse(route, input) {
  const response = await fetch(`${graphqlUrl}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(input),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  const upstream = noteUpstream(response.headers.get('x-upstream'));
  if (response.status !== 200)
    throw new Error(`POST ${options.path}${route}: ${response.status} ${short(await response.text())}`);
  assert(
    /text\/event-stream/.test(response.headers.get('content-type') ?? ''),
    () => `content-type ${response.headers.get('content-type')}`,
  );
  const events = [];
  await readStream(response, splitSse, (frame) => {
    const { data, comment } = sseFrame(frame);
    if (!comment && data) events.push(JSON.parse(data));
  });
  return { events, upstream };
}

function agUiInput(threadId, messages) {
  return { threadId, runId: randomUUID(), state: {}, messages, tools: [], context: [], forwardedProps: {} };
}

// ---------------------------------------------------------------------------------------------------
// Run

console.log(`cluster-check: ${base} (GraphQL ${graphqlUrl}, WebSocket ${wsUrl})`);

await check('health', async () => {
  const answers = [];
  for (let i = 0; i < 4; i += 1) answers.push(await getJson('/health'));
  for (const { status, body } of answers)
    assert(status === 200 && body.status === 'ok', () => `GET /health: ${status} ${short(body)}`);
  return `GET /health 200 {"status":"ok"} x${answers.length}`;
});

await check('ready', async () => {
  const answers = [];
  for (let i = 0; i < 4; i += 1) answers.push(await getJson('/ready'));
  const kinds = new Set();
  for (const { status, body, upstream } of answers) {
    assert(status === 200 && body.status === 'ready', () => `GET /ready: ${status} ${short(body)}`);
    const store = body.checks?.threadStore;
    kinds.add(store?.kind);
    assert(
      options.allowMemory || store?.kind === 'redis',
      () =>
        `instance ${upstream ?? '?'} keeps threads in ${store?.kind ?? 'an unknown store'}, not Redis: set REDIS_URL on every instance (or pass --allow-memory)`,
    );
    assert(
      store?.reachable !== false,
      () => `instance ${upstream ?? '?'}: the thread store is unreachable (${short(store)})`,
    );
  }
  return `GET /ready 200 x${answers.length}, thread store ${[...kinds].join(', ')}, reachable`;
});

await check('hello query', async () => {
  const { data } = await graphql('{ hello }');
  assert(typeof data?.hello === 'string' && data.hello.length > 0, () => `hello: ${short(data)}`);
  return JSON.stringify(data.hello);
});

await check('HTTP multipart run (stock client document)', async () => {
  const response = await fetch(graphqlUrl, {
    method: 'POST',
    headers: STOCK_CLIENT_HEADERS,
    body: JSON.stringify({
      operationName: 'generateCopilotResponse',
      query: STOCK_CLIENT_MUTATION,
      variables: {
        data: runInput(
          randomUUID(),
          'Hello from cluster-check over HTTP multipart. Please stream a reply word by word.',
        ),
        properties: {},
      },
    }),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  noteUpstream(response.headers.get('x-upstream'));
  const contentType = response.headers.get('content-type') ?? '';
  if (response.status !== 200 || !contentType.startsWith('multipart/mixed')) {
    throw new Error(`${response.status} ${contentType}: ${short(await response.text())}`);
  }
  const started = performance.now();
  const payloads = [];
  const arrivals = [];
  const rest = await readStream(response, splitMultipart, (part, at) => {
    payloads.push(JSON.parse(part));
    arrivals.push(at);
  });
  assert(/^--\s*$/.test(rest), () => `the stream did not end with the closing boundary (left: ${short(rest)})`);
  assert(payloads.length >= 3, () => `only ${payloads.length} parts`);
  assert(payloads.at(-1).hasNext === false, 'the last part does not say hasNext: false');
  const run = foldIncremental(payloads);
  assert(run.status?.code === 'Success', () => `status ${short(run.status)}`);
  assert(run.text.length > 0, 'no text streamed');
  // Parts must reach the client as they are written: a buffering proxy delivers them all at the end.
  const spreadMs = Math.round(arrivals.at(-1) - arrivals[0]);
  const textParts = payloads.filter((p) => p.incremental?.some((e) => e.path?.includes('content'))).length;
  if (textParts >= 10)
    assert(
      spreadMs >= 50,
      () => `all ${payloads.length} parts arrived within ${spreadMs} ms: is the proxy buffering? (proxy_buffering off)`,
    );
  return `${payloads.length} parts over ${spreadMs} ms (first after ${Math.round(arrivals[0] - started)} ms), status Success, ${run.text.length} characters: ${short(run.text, 60)}`;
});

await check('HTTP SSE run', async () => {
  const response = await fetch(graphqlUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      query: STREAMED_MUTATION,
      variables: { data: runInput(randomUUID(), 'Hello from cluster-check over server-sent events.') },
    }),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  noteUpstream(response.headers.get('x-upstream'));
  const contentType = response.headers.get('content-type') ?? '';
  if (response.status !== 200 || !contentType.startsWith('text/event-stream'))
    throw new Error(`${response.status} ${contentType}: ${short(await response.text())}`);
  const payloads = [];
  let completed = false;
  let comments = 0;
  const arrivals = [];
  await readStream(response, splitSse, (frame, at) => {
    const { event, data, comment } = sseFrame(frame);
    if (comment) comments += 1;
    else if (event === 'complete') completed = true;
    else if (event === 'next') {
      payloads.push(JSON.parse(data));
      arrivals.push(at);
    }
  });
  assert(completed, 'no "event: complete"');
  const run = foldIncremental(payloads);
  assert(run.status?.code === 'Success', () => `status ${short(run.status)}`);
  assert(run.text.length > 0, 'no text streamed');
  const spreadMs = Math.round(arrivals.at(-1) - arrivals[0]);
  if (payloads.length >= 10)
    assert(
      spreadMs >= 50,
      () => `all ${payloads.length} events arrived within ${spreadMs} ms: is the proxy buffering?`,
    );
  return `${payloads.length} events over ${spreadMs} ms, ${comments} keep-alive comment(s), status Success`;
});

await check('graphql-ws copilotRun subscription', async () => {
  const connection = await connect();
  try {
    const events = await subscribe(
      connection.client,
      RUN_SUBSCRIPTION,
      { data: runInput(randomUUID(), 'Hello from cluster-check over graphql-ws.') },
      'copilotRun',
    );
    const run = summarize(events);
    assert(run.status?.code === 'Success', () => `status ${short(run.status)}`);
    assert(Object.values(run.texts).join('').length > 0, 'no text');
    assert(events[0].sequence === 0, () => `RunStartedEvent has sequence ${events[0].sequence}`);
    return `${events.length} events, sequences 0..${run.lastSequence}, status Success${connection.upstream ? `, via ${connection.upstream}` : ''}`;
  } finally {
    await connection.close();
  }
});

await check('graphql-ws query and server-side action', async () => {
  const connection = await connect();
  try {
    const hello = await subscribe(connection.client, '{ hello }', {}, 'hello');
    assert(typeof hello[0] === 'string', () => `hello over WebSocket: ${short(hello)}`);
    // Demo mode calls its server-side action getCurrentTime when asked for the time; a real model may or may not.
    const events = await subscribe(
      connection.client,
      RUN_SUBSCRIPTION,
      { data: runInput(randomUUID(), 'What time is it?') },
      'copilotRun',
    );
    const run = summarize(events);
    assert(run.status?.code === 'Success', () => `status ${short(run.status)}`);
    const result = events.find((event) => event.__typename === 'ActionExecutionResultEvent');
    return result
      ? `hello, then a run with the server-side action ${result.actionName} and the answer after it`
      : 'hello, then a run (the model called no server-side action)';
  } finally {
    await connection.close();
  }
});

await check("same-origin browser requests (Origin: the proxy's own)", async () => {
  // A page served from the proxy's own origin: its WebSocket handshake and AG-UI POSTs carry that Origin,
  // which the gateway accepts when it matches the Host header, so the proxy must pass Host on unchanged
  // (with its port; nginx: $http_host, not $host).
  const origin = new URL(base).origin;
  const accepted = await new Promise((resolve) => {
    const socket = new WebSocket(wsUrl, 'graphql-transport-ws', { origin });
    socket.on('upgrade', (response) => noteUpstream(response.headers['x-upstream']));
    socket.on('open', () => {
      socket.close();
      resolve('accepted');
    });
    socket.on('unexpected-response', (_request, response) => {
      resolve(`refused with HTTP ${response.statusCode}`);
      response.resume();
    });
    socket.on('error', (error) => resolve(`failed: ${error.message}`));
  });
  assert(
    accepted === 'accepted',
    () =>
      `a WebSocket handshake with Origin ${origin} was ${accepted}: does the proxy pass the Host header with its port?`,
  );
  const response = await fetch(
    `${graphqlUrl}/agent/default/stop/${encodeURIComponent(`cluster-check-${randomUUID()}`)}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: '{}',
      signal: AbortSignal.timeout(options.timeoutMs),
    },
  );
  noteUpstream(response.headers.get('x-upstream'));
  const body = await response.text();
  assert(
    response.status === 200 && JSON.parse(body).stopped === false,
    () => `POST …/agent/default/stop with Origin ${origin}: ${response.status} ${short(body)}`,
  );
  return `WebSocket handshake and AG-UI POST with Origin ${origin} accepted`;
});

await check('AG-UI info and run (CopilotKit >=1.50)', async () => {
  const { status, body } = await getJson(`${options.path}/info`);
  assert(status === 200 && body.agents, () => `GET ${options.path}/info: ${status} ${short(body)}`);
  const agents = Array.isArray(body.agents)
    ? body.agents.map((agent) => agent.name ?? agent)
    : Object.keys(body.agents);
  assert(agents.includes('default'), () => `no agent "default" in ${short(body.agents)}`);
  const { events } = await agUiSse(
    '/agent/default/run',
    agUiInput(randomUUID(), [{ id: randomUUID(), role: 'user', content: 'Hello from cluster-check over AG-UI.' }]),
  );
  const types = events.map((event) => event.type);
  assert(types[0] === 'RUN_STARTED', () => `first event ${types[0]}`);
  assert(types.at(-1) === 'RUN_FINISHED', () => `last event ${types.at(-1)}: ${short(events.at(-1))}`);
  assert(types.includes('TEXT_MESSAGE_CONTENT'), 'no TEXT_MESSAGE_CONTENT');
  return `agents ${agents.join(', ')}; run: ${events.length} events, RUN_STARTED … RUN_FINISHED`;
});

// Thread continuity: one thread, served by every instance in turn.
const threadId = `cluster-check-${randomUUID()}`;
const question = `Thread continuity check ${threadId}: this message is long enough that the scripted reply streams for a while, so the join below attaches while the run is still going on.`;
let original; // the run as its own subscriber saw it
let live; // the same run as a join through another instance saw it
let runUpstream;

await check('thread run with a live join from another instance', async () => {
  const runner = await connect();
  runUpstream = runner.upstream;
  let joiner;
  try {
    const midRunReads = [];
    let resolveStarted;
    const started = new Promise((resolve) => (resolveStarted = resolve));
    const running = subscribe(
      runner.client,
      RUN_SUBSCRIPTION,
      { data: runInput(threadId, question), onDisconnect: 'CONTINUE' },
      'copilotRun',
      (event) => {
        if (event.__typename === 'RunStartedEvent') resolveStarted(event);
      },
    );
    const startedEvent = await Promise.race([started, running.then(() => undefined)]);
    assert(startedEvent, 'the run ended before its RunStartedEvent');
    // While it runs: a join through another instance (same run, replayed then followed live) and reads.
    joiner = await connectAvoiding(runUpstream);
    const joined = subscribe(joiner.client, JOIN_SUBSCRIPTION, { threadId }, 'joinCopilotRun');
    for (let i = 0; i < 2; i += 1) midRunReads.push(await graphql(THREAD_QUERY, { threadId }));
    const [runEvents, joinEvents] = await Promise.all([running, joined]);
    original = summarize(runEvents);
    live = summarize(joinEvents);
    assert(original.status?.code === 'Success', () => `the run's status ${short(original.status)}`);
    assert(
      isDeepStrictEqual(live, original),
      () => `the join differs from the run:\n  run:  ${short(original, 600)}\n  join: ${short(live, 600)}`,
    );
    for (const { data, upstream } of midRunReads) {
      const thread = data.copilotThread;
      assert(thread, () => `copilotThread through ${upstream ?? '?'} during the run: null`);
      assert(
        thread.runs.some((run) => run.runId === original.runId),
        () =>
          `copilotThread through ${upstream ?? '?'} during the run does not list run ${original.runId}: ${short(thread.runs)}`,
      );
    }
    const where = runUpstream && joiner.upstream ? ` (run via ${runUpstream}, join via ${joiner.upstream})` : '';
    assert(
      options.instances < 2 || !runUpstream || joiner.upstream !== runUpstream,
      () => `the join reached the run's own instance ${runUpstream} every time: is the proxy balancing?`,
    );
    return `${runEvents.length} events; join got ${joinEvents.length} (merged chunks), same text, last sequence ${live.lastSequence} and status${where}; ${midRunReads.length} reads during the run list it`;
  } finally {
    await runner.close();
    await joiner?.close();
  }
});

await check('copilotThread agrees on every instance', async () => {
  assert(original, 'no run to read (the previous check failed)');
  const reads = [];
  const upstreams = new Set();
  // At least 4 reads, and until two instances have answered: with a proxy that picks one at random (deploy/nginx.conf
  // does), 8 reads all went to one instance once in CI (1 in 128); 32 leave 1 in 2 billion.
  for (
    let i = 0;
    i < 32 && (reads.length < 4 || (upstreamHeaderSeen && upstreams.size < Math.min(options.instances, 2)));
    i += 1
  ) {
    const read = await graphql(THREAD_QUERY, { threadId });
    reads.push(read);
    if (read.upstream) upstreams.add(read.upstream);
  }
  const first = reads[0].data.copilotThread;
  assert(first, 'copilotThread: null');
  for (const { data, upstream } of reads.slice(1)) {
    assert(
      isDeepStrictEqual(data.copilotThread, first),
      () =>
        `copilotThread through ${upstream ?? '?'} differs from the first read:\n  ${short(first, 500)}\n  ${short(data.copilotThread, 500)}`,
    );
  }
  assert(first.threadId === threadId, () => `threadId ${first.threadId}`);
  const run = first.runs.at(-1);
  assert(run?.runId === original.runId, () => `latest run ${run?.runId}, expected ${original.runId}`);
  assert(
    run.status.code === 'Success' && run.finishedAt,
    () => `run status ${short(run.status)}, finishedAt ${run.finishedAt}`,
  );
  assert(
    run.lastSequence === original.lastSequence,
    () => `lastSequence ${run.lastSequence}, the stream ended at ${original.lastSequence}`,
  );
  const user = first.messages.find((message) => message.role === 'user');
  assert(
    user && user.content.join('') === question,
    () => `the user's message is not in the thread: ${short(first.messages)}`,
  );
  const replies = first.messages
    .filter((message) => message.role === 'assistant')
    .map((message) => message.content.join(''));
  for (const text of Object.values(original.texts))
    assert(
      replies.includes(text),
      () => `the streamed reply is not in the thread: ${short(text)} vs ${short(replies)}`,
    );
  assert(
    !upstreamHeaderSeen || upstreams.size >= Math.min(options.instances, 2),
    () => `all ${reads.length} reads were served by ${[...upstreams].join(', ')}`,
  );
  return `${reads.length} identical reads${upstreams.size ? ` from ${[...upstreams].join(' and ')}` : ''}: ${first.messages.length} messages, run ${run.runId} Success at sequence ${run.lastSequence}`;
});

await check('joinCopilotRun replays the finished run on every instance', async () => {
  assert(original, 'no run to join (the previous check failed)');
  const summaries = [];
  const upstreams = new Set();
  let previous;
  for (let i = 0; i < Math.max(2, options.instances); i += 1) {
    const connection = await connectAvoiding(previous);
    previous = connection.upstream;
    if (connection.upstream) upstreams.add(connection.upstream);
    try {
      const events = await subscribe(
        connection.client,
        JOIN_SUBSCRIPTION,
        { threadId, runId: original.runId },
        'joinCopilotRun',
      );
      summaries.push(summarize(events));
      // Everything after the RunStartedEvent: the replay starts after afterSequence.
      const tail = await subscribe(
        connection.client,
        JOIN_SUBSCRIPTION,
        { threadId, afterSequence: 0 },
        'joinCopilotRun',
      );
      assert(
        tail.length > 0 && tail[0].sequence > 0 && tail.at(-1).sequence === original.lastSequence,
        () => `join with afterSequence 0: ${short(tail)}`,
      );
    } finally {
      await connection.close();
    }
  }
  for (const summary of summaries)
    assert(
      isDeepStrictEqual(summary, original),
      () => `a replay differs from the run:\n  run:    ${short(original, 500)}\n  replay: ${short(summary, 500)}`,
    );
  return `${summaries.length} replays identical to the run${upstreams.size ? ` (via ${[...upstreams].join(' and ')})` : ''}`;
});

await check('thread continues on another instance with only the new message', async () => {
  assert(original, 'no thread to continue (the previous checks failed)');
  const followUp = 'And a second question on the same thread, sent alone.';
  const { data, upstream } = await graphql(PLAIN_MUTATION, { data: runInput(threadId, followUp) });
  const response = data.generateCopilotResponse;
  assert(response.status.code === 'Success', () => `status ${short(response.status)}`);
  assert(response.threadId === threadId, () => `threadId ${response.threadId}`);
  const reads = [];
  for (let i = 0; i < Math.max(2, options.instances); i += 1) reads.push(await graphql(THREAD_QUERY, { threadId }));
  const thread = reads[0].data.copilotThread;
  for (const read of reads.slice(1))
    assert(
      isDeepStrictEqual(read.data.copilotThread, thread),
      () => `reads differ after the second run (${read.upstream ?? '?'})`,
    );
  assert(thread.runs.length === 2, () => `${thread.runs.length} runs: ${short(thread.runs)}`);
  assert(
    thread.runs[0].runId === original.runId && thread.runs[1].runId === response.runId,
    () => `runs ${short(thread.runs.map((run) => run.runId))}`,
  );
  const users = thread.messages.filter((message) => message.role === 'user').map((message) => message.content.join(''));
  assert(isDeepStrictEqual(users, [question, followUp]), () => `user messages ${short(users)}`);
  const assistants = thread.messages.filter((message) => message.role === 'assistant');
  assert(assistants.length >= 2, () => `${assistants.length} assistant messages`);
  // AG-UI connect (what CopilotKit >=1.50 does after a reload) replays both runs, from any instance.
  const { events } = await agUiSse('/agent/default/connect', agUiInput(threadId, []));
  const startedRuns = events.filter((event) => event.type === 'RUN_STARTED').map((event) => event.runId);
  assert(
    isDeepStrictEqual(
      startedRuns,
      thread.runs.map((run) => run.runId),
    ),
    () =>
      `AG-UI connect replayed runs ${short(startedRuns)}, the thread has ${short(thread.runs.map((run) => run.runId))}`,
  );
  return `second run via ${upstream ?? 'the proxy'} got the stored conversation; thread: 2 runs, ${thread.messages.length} messages, same on every read; AG-UI connect replays both runs`;
});

await check('balanced across instances', async () => {
  if (options.instances < 2) return `not required (--instances ${options.instances})`;
  assert(
    upstreamHeaderSeen,
    'the proxy sends no X-Upstream header, so which instance answered is unknown (deploy/nginx.conf adds it)',
  );
  assert(
    upstreamsSeen.size >= options.instances,
    () =>
      `only ${upstreamsSeen.size} instance(s) answered (${[...upstreamsSeen].join(', ')}), expected ${options.instances}`,
  );
  return `${upstreamsSeen.size} instances answered: ${[...upstreamsSeen].sort().join(', ')}`;
});

const failed = results.filter((result) => !result.ok);
console.log(
  failed.length
    ? `cluster-check: ${failed.length} of ${results.length} checks FAILED`
    : `cluster-check: all ${results.length} checks passed`,
);
process.exit(failed.length ? 1 : 0);
