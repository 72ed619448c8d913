// The soak: the built gateway under a steady mixed load for a while, its memory sampled, to see that nothing
// grows without bound (a leak shows as a slope that does not flatten). A script to run by hand, not a CI test;
// RELIABILITY.md has the method and the figures.
//
//   node scripts/soak.mjs                      10 minutes, 24 clients
//   node scripts/soak.mjs --minutes 3          shorter
//   node scripts/soak.mjs --concurrency 50     more clients at once
//   node scripts/soak.mjs --threshold 20       the slope (MB per hour) under which the verdict is "flat" (RSS, and the
//                                              heap's floor when the gateway serves /metrics)
//   node scripts/soak.mjs --sample 2           seconds between memory samples
//   node scripts/soak.mjs --json soak.json     also write every sample and count
//   node scripts/soak.mjs --store-defaults     keep the thread store's default bounds (see below)
//
// It starts, on loopback: a fake upstream of its own (an OpenAI-compatible model streaming SSE, a CopilotKit
// remote endpoint agent streaming JSON Lines, an AG-UI agent streaming SSE; each streams N tokens a few ms apart,
// or fails when asked), and the gateway as `npm start` runs it (`node <config.nodeFlags> scripts/start.mjs`,
// production, provider mode with OPENAI_BASE_URL at the fake), building it first if dist/ is missing.
// Then `--concurrency` clients loop until the time is up, each run one of:
//   multipart   the stock client's exact request (bench/stock-request.json), multipart/mixed, keep-alive
//   graphql-ws  a copilotRun subscription, on a socket the client keeps for several runs
//   ag-ui       POST {path}/agent/{id}/run, SSE
// against the model or one of the agents, sometimes a second turn on the same thread; and some of them:
//   vanish      the client destroys its socket after the first text (the run must be cancelled or, over
//               AG-UI, go on to its end)
//   fail        the upstream answers 503 to every attempt (UPSTREAM_UNAVAILABLE after the retries)
//   cut         the upstream's stream breaks off after a few tokens (UPSTREAM_STREAM_INTERRUPTED)
// Every finished run's text is checked token by token: a lost or doubled event is an error; so is a vanished
// GraphQL client whose upstream answer was not closed early (each is marked and followed to the upstream).
// The gateway's RSS is read from /proc/<pid>/status every few seconds (and its heap from GET /metrics when the
// gateway serves Prometheus metrics). At the end: the samples' first and last thirds, least-squares slopes in
// MB per hour over the second half (RSS; the heap's floor, the least of each 15 s, since the heap swings by tens
// of MB between collections), what is left open 10 s after the load (runs, HTTP streams, WebSockets, from the
// metrics), the SIGTERM exit, the outcomes by kind, and the verdict.
//
// The thread store is in memory: by default it keeps up to 10,000 threads and 64 MB, which a fast soak fills in a
// few minutes, so the RSS climbs until the store is full and is flat only after. To measure leaks rather than
// the store filling, the soak bounds it lower (MAX_THREADS=2000, MAX_THREAD_STORE_MB=16), reached in the first
// minute; `--store-defaults` keeps the defaults.
import { spawn, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const flag = (name) => args.includes(name);
const minutes = Number(option('--minutes', 10));
const concurrency = Number(option('--concurrency', 24));
const threshold = Number(option('--threshold', 20));
const sampleSeconds = Number(option('--sample', 3));
const jsonOut = option('--json', undefined);
const TOKENS = Number(option('--tokens', 40));
const PACE_MS = Number(option('--pace', 5));
if (![minutes, concurrency, threshold, sampleSeconds, TOKENS, PACE_MS].every((n) => Number.isFinite(n) && n > 0)) {
  console.error(
    'Usage: node scripts/soak.mjs [--minutes 10] [--concurrency 24] [--threshold 20] [--sample 3] [--tokens 40] [--pace 5] [--json out.json] [--store-defaults]',
  );
  process.exit(2);
}
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const nodeFlags = (packageJson.config?.nodeFlags ?? '').split(' ').filter(Boolean);
const stock = JSON.parse(readFileSync(join(root, 'bench', 'stock-request.json'), 'utf8'));

const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));
const log = (message) => console.error(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}`);

// --- the fake upstream ---------------------------------------------------------------------------------------------

/** Token i of an answer: numbered, so a lost, doubled or reordered token is seen; multi-byte characters in it. */
const token = (i) => `t${i}·ü `;
const fullText = (n) => Array.from({ length: n }, (_, i) => token(i)).join('');

function directives(prompt) {
  const number = (name) => Number(prompt.match(new RegExp(`\\[${name}=(\\d+)\\]`))?.[1] ?? NaN);
  return {
    tokens: number('tokens') || TOKENS,
    fail: number('fail') || undefined,
    cut: number('cut') || undefined,
    mark: prompt.match(/\[v=([\w-]+)\]/)?.[1],
  };
}

const upstreamStats = { requests: 0, closedEarly: 0 };
/** How each marked upstream answer ended (`[v=ID]` in the prompt): `early` (closed by the gateway) or `end`. */
const answerEnds = new Map();

/** Streams `pieces(i)` for i < count, PACE_MS apart, then `end`; or cuts the connection after `cut` pieces. */
function stream(res, { tokens, cut, mark }, start, piece, end) {
  let i = 0;
  let timer;
  let finished = false;
  res.on('close', () => {
    clearTimeout(timer);
    if (!finished) upstreamStats.closedEarly++;
    if (mark) answerEnds.set(mark, finished ? 'end' : 'early');
  });
  res.write(start);
  const next = () => {
    if (res.destroyed) return;
    if (cut !== undefined && i === cut) {
      finished = true;
      res.socket?.destroy();
      return;
    }
    if (i === tokens) {
      finished = true;
      res.end(end);
      return;
    }
    res.write(piece(i++));
    timer = setTimeout(next, PACE_MS);
  };
  next();
}

function startUpstream() {
  let answers = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      upstreamStats.requests++;
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      const id = ++answers;
      if (req.url === '/ck/info') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({
            actions: [],
            agents: [{ name: 'soakCrew', description: 'Streams tokens.', type: 'crewai' }],
            sdkVersion: '0.1.70',
          }),
        );
      }
      const messages = body.messages ?? [];
      const user = [...messages]
        .reverse()
        .find((m) => m.role === 'user' && (m.type === undefined || m.type === 'TextMessage'));
      const options = directives(typeof user?.content === 'string' ? user.content : '');
      if (options.fail) {
        res.writeHead(options.fail, { 'content-type': 'application/json', 'retry-after': '0' });
        return void res.end(
          JSON.stringify({ error: { message: `soak failure ${options.fail}`, type: 'server_error' } }),
        );
      }
      switch (req.url) {
        case '/v1/chat/completions': {
          const chunk = (delta, finish = null) =>
            `data: ${JSON.stringify({ id: `chatcmpl-soak${id}`, object: 'chat.completion.chunk', created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          return stream(
            res,
            options,
            chunk({ role: 'assistant', content: '' }),
            (i) => chunk({ content: token(i) }),
            `${chunk({}, 'stop')}data: [DONE]\n\n`,
          );
        }
        case '/ck/agents/execute': {
          const messageId = `soak-crew-${id}`;
          const line = (value) => `${JSON.stringify(value)}\n`;
          res.writeHead(200, { 'content-type': 'application/jsonl' });
          return stream(
            res,
            options,
            line({ type: 'TextMessageStart', messageId }),
            (i) => line({ type: 'TextMessageContent', messageId, content: token(i) }),
            line({ type: 'TextMessageEnd', messageId }),
          );
        }
        case '/agui': {
          const messageId = `soak-agui-${id}`;
          const event = (value) => `data: ${JSON.stringify(value)}\n\n`;
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          return stream(
            res,
            options,
            event({ type: 'RUN_STARTED', threadId: body.threadId, runId: body.runId }) +
              event({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' }),
            (i) => event({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta: token(i) }),
            event({ type: 'TEXT_MESSAGE_END', messageId }) +
              event({ type: 'RUN_FINISHED', threadId: body.threadId, runId: body.runId }),
          );
        }
        default:
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, origin: `http://127.0.0.1:${server.address().port}` })),
  );
}

// --- the gateway ---------------------------------------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startGateway(origin) {
  if (!existsSync(join(root, 'dist', 'src', 'main.js'))) {
    log('dist/ is missing: npm run build');
    execFileSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const port = await freePort();
  const storeBounds = flag('--store-defaults') ? {} : { MAX_THREADS: '2000', MAX_THREAD_STORE_MB: '16' };
  // `npm start`'s command: node with package.json's config.nodeFlags, scripts/start.mjs (which builds if dist/
  // is older than the sources, then runs dist/src/main.js in this same process: its pid is the gateway's).
  const child = spawn(
    'bash',
    [
      '-c',
      'ulimit -n 65536 2>/dev/null || true; exec "$@"',
      'bash',
      process.execPath,
      ...nodeFlags,
      join(root, 'scripts', 'start.mjs'),
    ],
    {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        OPENAI_API_KEY: 'soak',
        OPENAI_BASE_URL: `${origin}/v1`,
        COPILOT_REMOTE_ENDPOINTS: `${origin}/ck`,
        AGUI_AGENTS: `soakAgent=${origin}/agui`,
        MAX_CONCURRENT_RUNS: '10000',
        ...storeBounds,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.add(child);
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.on('exit', () => children.delete(child));
  const url = `http://127.0.0.1:${port}/api/copilotkit`;
  const deadline = Date.now() + 120_000; // a build, if start.mjs finds dist/ stale, takes a while
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}):\n${output}`);
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ hello }"}',
      });
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the gateway did not answer in 120 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { child, url, pid: child.pid, output: () => output, storeBounds };
}

// --- memory samples ------------------------------------------------------------------------------------------------

function procStatus(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(status.match(new RegExp(`${field}:\\s+(\\d+) kB`))?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, anonMb: kb('RssAnon') / 1024, fds: NaN };
}

/** A metric's value from Prometheus text (any prefix before the name: the gateway's is copilot_gateway_). */
function metric(text, name) {
  const value = text.match(new RegExp(`^[a-z_]*${name}(?:\\{[^}]*\\})? ([-\\d.e+]+)$`, 'm'))?.[1];
  return value === undefined ? undefined : Number(value);
}

async function metrics(metricsUrl) {
  if (!metricsUrl) return undefined;
  try {
    return await (await fetch(metricsUrl)).text();
  } catch {
    return undefined;
  }
}

async function heapMb(metricsUrl) {
  const text = await metrics(metricsUrl);
  const bytes = text && metric(text, 'nodejs_heap_size_used_bytes');
  return bytes === undefined ? undefined : bytes / 2 ** 20;
}

/** The least-squares slope of y over x. */
function slope(points) {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxy = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return sxx ? sxy / sxx : NaN;
}

// --- the clients ---------------------------------------------------------------------------------------------------

const TARGETS = [
  { kind: 'model', agentId: 'default', agentName: undefined },
  { kind: 'crew', agentId: 'soakCrew', agentName: 'soakCrew' },
  { kind: 'agui-agent', agentId: 'soakAgent', agentName: 'soakAgent' },
];

/** Outcome counts, by what was asked and what happened. */
const counts = new Map();
const samples = { errors: [] };
const count = (key) => counts.set(key, (counts.get(key) ?? 0) + 1);
/** Runs whose client vanished: over GraphQL their upstream answer must have been closed early. */
const vanishedRuns = [];
const error = (key, detail) => {
  count(`ERROR ${key}`);
  if (samples.errors.length < 20) samples.errors.push(`${key}: ${String(detail).slice(0, 300)}`);
};

const pick = (weights) => {
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  let r = Math.random() * total;
  for (const [key, weight] of Object.entries(weights)) if ((r -= weight) < 0) return key;
  return Object.keys(weights)[0];
};

/** The stock client's variables for a turn on `threadId`: its history and a new user message. */
function stockData(threadId, history, prompt, target) {
  const data = structuredClone(stock.variables.data);
  data.threadId = threadId;
  data.messages = [
    data.messages[0],
    ...history,
    { id: randomUUID(), createdAt: new Date().toISOString(), textMessage: { role: 'user', content: prompt } },
  ];
  data.messages[0] = { ...data.messages[0], id: `sys-${threadId}` };
  if (target.agentName) data.agentSession = { agentName: target.agentName };
  else delete data.agentSession;
  return data;
}

const SUBSCRIPTION = `subscription Run($data: GenerateCopilotResponseInput!) {
  copilotRun(data: $data) {
    __typename
    ... on TextMessageContentEvent { content }
    ... on RunFinishedEvent { status { ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } }
  }
}`;

/** The text and the status code of a multipart answer to the stock document. */
function parseMultipart(raw) {
  const messages = [];
  let status;
  for (const part of raw.split(/\r\n---/)) {
    const json = part.slice(part.indexOf('\r\n\r\n') + 4).trim();
    if (!json.startsWith('{')) continue;
    let payload;
    try {
      payload = JSON.parse(json);
    } catch {
      continue;
    }
    for (const message of payload.data?.generateCopilotResponse?.messages ?? [])
      messages.push([...(message.content ?? [])]);
    if (payload.data?.generateCopilotResponse?.status) status = payload.data.generateCopilotResponse.status;
    for (const increment of payload.incremental ?? []) {
      const path = increment.path ?? [];
      // The response's status (path [generateCopilotResponse]), not a message's (…, messages, i).
      if (increment.data?.status && path.length === 1) status = increment.data.status;
      if (!increment.items) continue;
      const at = path.indexOf('messages');
      if (at < 0) continue;
      if (path.length === at + 2) for (const message of increment.items) messages.push([...(message?.content ?? [])]);
      else if (path[at + 2] === 'content') (messages[path[at + 1]] ??= []).push(...increment.items);
    }
  }
  return {
    text: messages.map((content) => content.join('')).join(''),
    code: status?.code,
    detail: status?.details?.code,
  };
}

function parseAgUi(raw) {
  let text = '';
  let code;
  let detail;
  for (const frame of raw.split('\n\n')) {
    if (!frame.startsWith('data: ')) continue;
    let event;
    try {
      event = JSON.parse(frame.slice(6));
    } catch {
      continue;
    }
    if (event.type === 'TEXT_MESSAGE_CONTENT') text += event.delta;
    if (event.type === 'RUN_FINISHED') code = 'Success';
    if (event.type === 'RUN_ERROR') {
      code = 'Failed';
      detail = event.code;
    }
  }
  return { text, code, detail };
}

const TEXT_MARK = /t\d+·/u;

/** One HTTP run (multipart or AG-UI); resolves with {text, code, detail} or {vanished} or {broken}. */
function httpRun(agent, url, body, accept, vanish, parse) {
  return new Promise((resolve) => {
    const target = new URL(url);
    const payload = JSON.stringify(body);
    let raw = '';
    let settled = false;
    const settle = (value) => {
      if (!settled) {
        settled = true;
        resolve(value);
      }
    };
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent: vanish ? false : agent, // a vanishing client's socket is destroyed: not a pooled one
        headers: {
          'content-type': 'application/json',
          accept,
          'content-length': Buffer.byteLength(payload),
          'x-copilotkit-runtime-client-gql-version': '1.10.6',
        },
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          raw += chunk;
          if (vanish && TEXT_MARK.test(raw)) {
            settle({ vanished: true });
            req.destroy();
          }
        });
        res.on('end', () =>
          settle(res.statusCode === 200 ? parse(raw) : { broken: `HTTP ${res.statusCode}: ${raw.slice(0, 200)}` }),
        );
        res.on('error', (e) => settle({ broken: e.message }));
        res.on('aborted', () => settle({ broken: 'aborted' }));
      },
    );
    req.on('error', (e) => settle({ broken: e.message })); // after a vanish, already settled
    req.setTimeout(120_000, () => {
      settle({ broken: 'no answer in 120 s' });
      req.destroy();
    });
    req.end(payload);
  });
}

/** A client's graphql-ws connection, kept for several runs (one at a time). */
class WsConnection {
  constructor(wsUrl) {
    this.socket = new WebSocket(wsUrl, 'graphql-transport-ws', { perMessageDeflate: false });
    this.ids = 0;
    this.current = undefined;
    this.ready = new Promise((resolve, reject) => {
      this.socket.on('open', () => this.socket.send('{"type":"connection_init"}'));
      this.socket.on('error', (e) => reject(e));
      this.socket.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') return resolve();
        if (message.type === 'ping') return this.socket.send('{"type":"pong"}');
        const run = this.current;
        if (!run || message.id !== run.id) return;
        if (message.type === 'next') {
          const event = message.payload.data?.copilotRun;
          if (!event) return run.finish({ broken: `no data: ${JSON.stringify(message.payload).slice(0, 200)}` });
          if (event.__typename === 'TextMessageContentEvent') run.text += event.content;
          if (event.__typename === 'RunFinishedEvent') {
            run.code = event.status.code;
            run.detail = event.status.details?.code;
          }
        } else if (message.type === 'error')
          run.finish({ broken: `error ${JSON.stringify(message.payload).slice(0, 200)}` });
        else if (message.type === 'complete') run.finish({ text: run.text, code: run.code, detail: run.detail });
      });
    });
    this.closed = new Promise((resolve) =>
      this.socket.on('close', (code) => {
        this.current?.finish({ broken: `socket closed ${code}` });
        resolve();
      }),
    );
  }

  run(data) {
    return new Promise((resolve) => {
      const id = String(++this.ids);
      const run = {
        id,
        text: '',
        finish: (value) => {
          if (this.current === run) this.current = undefined;
          clearTimeout(timer);
          resolve(value);
        },
      };
      const timer = setTimeout(() => run.finish({ broken: 'no end in 120 s' }), 120_000);
      this.current = run;
      this.socket.send(
        JSON.stringify({ id, type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { data } } }),
      );
    });
  }

  close() {
    this.socket.close(1000);
    return this.closed;
  }
}

/** A run on a connection of its own that is terminated after the first text (no complete, no close frame). */
function wsVanish(wsUrl, data) {
  return new Promise((resolve) => {
    const socket = new WebSocket(wsUrl, 'graphql-transport-ws', { perMessageDeflate: false });
    const timer = setTimeout(() => socket.terminate(), 120_000);
    let vanished = false;
    socket.on('open', () => socket.send('{"type":"connection_init"}'));
    socket.on('error', () => {});
    socket.on('message', (raw) => {
      const message = JSON.parse(String(raw));
      if (message.type === 'connection_ack')
        socket.send(
          JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { data } } }),
        );
      if (message.type === 'next' && message.payload.data?.copilotRun?.__typename === 'TextMessageContentEvent') {
        vanished = true;
        socket.terminate();
      }
    });
    socket.on('close', (code) => {
      clearTimeout(timer);
      resolve(vanished ? { vanished: true } : { broken: `closed ${code} before any text` });
    });
  });
}

/** One client: runs one after another until `stopAt`. */
async function client(url, stopAt) {
  const wsUrl = url.replace(/^http/, 'ws');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let ws;
  let wsRuns = 0;
  let thread = { id: randomUUID(), history: [], turns: 0 };
  let followUp = false; // whether the last run ended whole, so its thread may take a next turn
  while (Date.now() < stopAt) {
    const via = pick({ multipart: 40, 'graphql-ws': 35, 'ag-ui': 25 });
    const target = TARGETS[Math.floor(Math.random() * TARGETS.length)];
    const mode = pick({ whole: 84, vanish: 8, fail: 4, cut: 4 });
    // A next turn on the same thread now and then (the stock client sends the whole history), only after a run
    // that ended whole: a vanished client's AG-UI run is still going (its thread busy), by design.
    if (!followUp || mode !== 'whole' || thread.turns >= (Math.random() < 0.3 ? 3 : 1))
      thread = { id: randomUUID(), history: [], turns: 0 };
    followUp = false;
    const cut = 3 + Math.floor(Math.random() * 5);
    const mark = mode === 'vanish' ? randomUUID() : undefined;
    const prompt = `[tokens=${TOKENS}]${mode === 'fail' ? ' [fail=503]' : ''}${mode === 'cut' ? ` [cut=${cut}]` : ''}${mark ? ` [v=${mark}]` : ''}`;
    const key = `${via} ${target.kind} ${mode}`;
    let result;
    try {
      if (via === 'multipart') {
        const body = {
          operationName: stock.operationName,
          query: stock.query,
          variables: { data: stockData(thread.id, thread.history, prompt, target), properties: {} },
        };
        result = await httpRun(
          agent,
          url,
          body,
          'multipart/mixed, application/json',
          mode === 'vanish',
          parseMultipart,
        );
      } else if (via === 'ag-ui') {
        const body = {
          threadId: thread.id,
          runId: randomUUID(),
          messages: [...thread.history.map(agUiMessage), { id: randomUUID(), role: 'user', content: prompt }],
          tools: [],
          context: [],
          state: {},
          forwardedProps: {},
        };
        result = await httpRun(
          agent,
          `${url}/agent/${target.agentId}/run`,
          body,
          'text/event-stream',
          mode === 'vanish',
          parseAgUi,
        );
      } else if (mode === 'vanish') {
        result = await wsVanish(wsUrl, stockData(thread.id, thread.history, prompt, target));
      } else {
        if (!ws || wsRuns >= 20) {
          await ws?.close();
          ws = new WsConnection(wsUrl);
          wsRuns = 0;
          await ws.ready;
        }
        wsRuns++;
        result = await ws.run(stockData(thread.id, thread.history, prompt, target));
      }
    } catch (e) {
      result = { broken: e.message };
      ws = undefined;
    }
    if (result.broken) {
      error(`${key}: broken`, result.broken);
      continue;
    }
    if (result.vanished) {
      count(`${key} → vanished`);
      vanishedRuns.push({ key, mark, graphql: via !== 'ag-ui' });
      continue;
    }
    const expected = {
      whole: ['Success', undefined, fullText(TOKENS)],
      fail: ['Failed', 'UPSTREAM_UNAVAILABLE', ''],
      cut: ['Failed', 'UPSTREAM_STREAM_INTERRUPTED', fullText(cut)],
    }[mode];
    if (result.code !== expected[0] || (expected[1] && result.detail !== expected[1])) {
      error(
        `${key}: ${result.code ?? 'no status'} ${result.detail ?? ''}`.trim(),
        JSON.stringify(result).slice(0, 300),
      );
      continue;
    }
    if (result.text !== expected[2]) {
      error(
        `${key}: text lost or doubled`,
        `expected ${expected[2].length} chars, got ${result.text.length}: ${result.text.slice(0, 120)}`,
      );
      continue;
    }
    count(`${key} → ${result.code}${result.detail ? ` ${result.detail}` : ''}`);
    if (mode === 'whole') {
      followUp = true;
      const at = new Date().toISOString();
      thread.history.push(
        { id: randomUUID(), createdAt: at, textMessage: { role: 'user', content: prompt } },
        { id: randomUUID(), createdAt: at, textMessage: { role: 'assistant', content: result.text } },
      );
      thread.turns++;
    }
  }
  await ws?.close();
  agent.destroy();
}

function agUiMessage(message) {
  return { id: message.id, role: message.textMessage.role, content: message.textMessage.content };
}

// --- the soak ------------------------------------------------------------------------------------------------------

async function main() {
  const upstream = await startUpstream();
  const gateway = await startGateway(upstream.origin);
  const metricsUrl = await (async () => {
    const candidate = `${new URL(gateway.url).origin}/metrics`;
    try {
      const response = await fetch(candidate);
      return response.ok && metric(await response.text(), 'nodejs_heap_size_used_bytes') !== undefined
        ? candidate
        : undefined;
    } catch {
      return undefined;
    }
  })();
  log(
    `gateway pid ${gateway.pid} at ${gateway.url} (node ${nodeFlags.join(' ')}; store bounds ${JSON.stringify(gateway.storeBounds)}); heap ${metricsUrl ? `from ${metricsUrl}` : 'not exposed (no /metrics)'}`,
  );
  log(`load: ${concurrency} clients for ${minutes} min, ${TOKENS} tokens ${PACE_MS} ms apart per answer`);

  const started = Date.now();
  const stopAt = started + minutes * 60_000;
  const memory = [];
  const sample = async () => {
    try {
      const { rssMb, anonMb } = procStatus(gateway.pid);
      memory.push({
        t: (Date.now() - started) / 1000,
        rssMb,
        anonMb,
        heapMb: await heapMb(metricsUrl),
        runs: [...counts.values()].reduce((a, b) => a + b, 0),
      });
    } catch {
      // the gateway is gone: the clients will say so
    }
  };
  await sample();
  const sampler = setInterval(sample, sampleSeconds * 1000);
  const progress = setInterval(() => {
    const last = memory.at(-1);
    log(
      `${Math.round(last.t)} s: RSS ${last.rssMb.toFixed(1)} MB, ${last.runs} runs, ${[...counts].filter(([k]) => k.startsWith('ERROR')).reduce((a, [, n]) => a + n, 0)} errors`,
    );
  }, 30_000);
  await Promise.all(Array.from({ length: concurrency }, () => client(gateway.url, stopAt)));
  clearInterval(progress);
  clearInterval(sampler);
  await sample();

  // Idle: what the gateway holds once the load is gone (and, with metrics, that nothing is left open).
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  const idle = { ...procStatus(gateway.pid), heapMb: await heapMb(metricsUrl) };
  const idleText = await metrics(metricsUrl);
  if (idleText) {
    idle.gauges = Object.fromEntries(
      ['active_runs', 'active_http_streams', 'websocket_connections'].map((name) => [name, metric(idleText, name)]),
    );
    idle.runsTotal = [...idleText.matchAll(/^[a-z_]*runs_total\{[^}]*\} ([\d.e+]+)$/gm)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
  }

  // And it still stops cleanly.
  const stopStarted = Date.now();
  const exited = new Promise((resolve) => gateway.child.once('exit', (code) => resolve(code)));
  gateway.child.kill('SIGTERM');
  const exitCode = await Promise.race([
    exited,
    new Promise((resolve) => setTimeout(() => resolve('no exit in 30 s'), 30_000)),
  ]);
  const stopMs = Date.now() - stopStarted;
  upstream.server.close();

  report({ memory, idle, exitCode, stopMs, metricsUrl });
  process.exit(0);
}

function report({ memory, idle, exitCode, stopMs, metricsUrl }) {
  const stats = (list, field) => {
    const values = list.map((s) => s[field]).filter(Number.isFinite);
    if (!values.length) return 'n/a';
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    return `mean ${mean.toFixed(1)}, min ${Math.min(...values).toFixed(1)}, max ${Math.max(...values).toFixed(1)} MB`;
  };
  const third = Math.max(1, Math.floor(memory.length / 3));
  const duration = memory.at(-1).t;
  const secondHalf = memory.filter((s) => s.t >= duration / 2);
  const rssSlope = slope(secondHalf.map((s) => ({ x: s.t / 3600, y: s.rssMb })));
  // The heap used swings with every collection (a sawtooth of tens of MB under load): its floor, the least of
  // each 15 s window (what survived the collections in it), is what a leak raises.
  const heapFloors = [];
  for (const sample of secondHalf.filter((s) => Number.isFinite(s.heapMb))) {
    const window = Math.floor(sample.t / 15);
    const last = heapFloors.at(-1);
    if (last?.window === window) {
      last.y = Math.min(last.y, sample.heapMb);
      last.n++;
    } else heapFloors.push({ window, x: sample.t / 3600, y: sample.heapMb, n: 1 });
  }
  // A window with fewer than 3 samples (the last, cut short) has no floor to speak of.
  heapFloors.splice(0, heapFloors.length, ...heapFloors.filter((floor) => floor.n >= 3));
  const heapSlope = metricsUrl ? slope(heapFloors) : NaN;
  const runs = [...counts].filter(([key]) => !key.startsWith('ERROR')).reduce((a, [, n]) => a + n, 0);
  const graphqlVanished = vanishedRuns.filter((run) => run.graphql);
  const notClosed = graphqlVanished.filter((run) => answerEnds.get(run.mark) !== 'early');
  const agUiVanished = vanishedRuns.filter((run) => !run.graphql);
  const errors =
    [...counts].filter(([key]) => key.startsWith('ERROR')).reduce((a, [, n]) => a + n, 0) + notClosed.length;
  // Growth is what matters: a falling slope is flat. Under ~10 minutes the process is still settling (V8 and the
  // allocator reach their working sizes over the first minutes), which shows as a small rise in RSS.
  const flat = rssSlope < threshold && (!Number.isFinite(heapSlope) || heapSlope < threshold);

  const lines = [];
  lines.push('');
  lines.push(
    `== soak: ${(duration / 60).toFixed(1)} min, ${concurrency} clients, ${runs + errors} runs (${(runs / duration).toFixed(0)} ok/s), ${memory.length} samples every ${sampleSeconds} s`,
  );
  lines.push(`RSS, first third:  ${stats(memory.slice(0, third), 'rssMb')}`);
  lines.push(`RSS, last third:   ${stats(memory.slice(-third), 'rssMb')}`);
  lines.push(
    `RssAnon, first third: ${stats(memory.slice(0, third), 'anonMb')}; last third: ${stats(memory.slice(-third), 'anonMb')}`,
  );
  if (metricsUrl)
    lines.push(
      `heap used, first third: ${stats(memory.slice(0, third), 'heapMb')}; last third: ${stats(memory.slice(-third), 'heapMb')}`,
    );
  else lines.push('heap: not exposed by the gateway (no /metrics); RSS only');
  lines.push(
    `slope over the second half (${secondHalf.length} samples): RSS ${rssSlope.toFixed(1)} MB/h` +
      (Number.isFinite(heapSlope)
        ? `, heap floor (least per 15 s, ${heapFloors.length} windows: ${heapFloors.map((f) => f.y.toFixed(0)).join(' ')} MB) ${heapSlope.toFixed(1)} MB/h`
        : ''),
  );
  lines.push(
    `idle 10 s after the load: RSS ${idle.rssMb.toFixed(1)} MB (RssAnon ${idle.anonMb.toFixed(1)} MB)` +
      (Number.isFinite(idle.heapMb) ? `, heap used ${idle.heapMb.toFixed(1)} MB` : '') +
      (idle.gauges
        ? `; still open: ${Object.entries(idle.gauges)
            .map(([name, n]) => `${name} ${n}`)
            .join(', ')}; runs counted by the gateway ${idle.runsTotal}`
        : ''),
  );
  lines.push(`SIGTERM: exit ${exitCode} after ${stopMs} ms`);
  lines.push(
    `upstream: ${upstreamStats.requests} requests, ${upstreamStats.closedEarly} closed by the gateway before their end; ` +
      `GraphQL clients that vanished: ${graphqlVanished.length}, their upstream answer closed early: ${graphqlVanished.length - notClosed.length}` +
      (notClosed.length
        ? ` (NOT: ${notClosed
            .slice(0, 5)
            .map((run) => `${run.key} [v=${run.mark}] ${answerEnds.get(run.mark) ?? 'no answer seen'}`)
            .join('; ')})`
        : '') +
      `; AG-UI clients that vanished: ${agUiVanished.length}, their run went on to its end: ${agUiVanished.filter((run) => answerEnds.get(run.mark) === 'end').length}`,
  );
  const every = Math.max(1, Math.round(30 / sampleSeconds));
  lines.push(
    `RSS every ~30 s (MB): ${memory
      .filter((_, i) => i % every === 0 || i === memory.length - 1)
      .map((s) => `${Math.round(s.t)}s ${s.rssMb.toFixed(1)}`)
      .join(', ')}`,
  );
  lines.push('outcomes:');
  for (const [key, n] of [...counts].sort(([a], [b]) => a.localeCompare(b)))
    lines.push(`  ${String(n).padStart(7)}  ${key}`);
  lines.push(`errors: ${errors}`);
  for (const sampleError of samples.errors) lines.push(`  e.g. ${sampleError}`);
  const leftOpen = idle.gauges ? Object.entries(idle.gauges).filter(([, n]) => n > 0) : [];
  lines.push(
    `verdict: ${flat ? 'flat' : 'GROWING'} (${[
      ['RSS', rssSlope],
      ['heap floor', heapSlope],
    ]
      .filter(([, value]) => Number.isFinite(value))
      .map(([name, value]) => `${name} ${value.toFixed(1)} MB/h ${value < threshold ? '<' : '>='} ${threshold}`)
      .join(', ')}` +
      `${duration < 540 ? '; a run this short mostly shows the process settling: 10 minutes or more to judge' : ''})` +
      (errors ? `, but ${errors} errors` : '') +
      (leftOpen.length ? `, but left open at idle: ${leftOpen.map(([name, n]) => `${name} ${n}`).join(', ')}` : ''),
  );
  console.log(lines.join('\n'));
  if (jsonOut) {
    writeFileSync(
      jsonOut,
      JSON.stringify(
        {
          minutes,
          concurrency,
          tokens: TOKENS,
          paceMs: PACE_MS,
          memory,
          idle,
          exitCode,
          stopMs,
          rssSlope,
          heapSlope,
          heapFloors,
          counts: Object.fromEntries(counts),
          errorSamples: samples.errors,
          upstream: upstreamStats,
          verdict: flat ? 'flat' : 'growing',
        },
        null,
        2,
      ),
    );
    console.log(`(written to ${jsonOut})`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
