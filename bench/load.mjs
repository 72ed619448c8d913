// The benchmark's load generator: a process of its own, light enough that the server under test, not the client,
// is what saturates. It also measures the server: CPU time from /proc/<pid>/stat over the measured window, and
// peak RSS from /proc/<pid>/status sampled every 50 ms.
//
// node bench/load.mjs '<json config>'  → one JSON line of results on stdout.
//
// mode "http": `concurrency` clients send the stock client's exact generateCopilotResponse request (keep-alive,
//   its Accept header) back to back for warmupMs + durationMs and drain each multipart body. A request counts as
//   ok when the answer is 200, ends with hasNext:false and carries the run's SuccessResponseStatus.
// mode "ws": `streams` graphql-ws connections opened evenly over rampMs, each subscribing to copilotRun for one
//   run. Tokens carry the moment the upstream wrote them, so each token's delay to this client is measured. The
//   graphql-transport-ws messages are written here by hand (four message types) instead of with graphql-ws's
//   client: 5,000 client instances would cost the load generator more than the server under test.
// With `redisPort` (a gateway on Redis), what Redis did in the measured window too (bench/redis.mjs): its commands
// and bytes, per token where tokens are counted.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { difference, stats, statsOverhead } from './redis.mjs';

const config = JSON.parse(process.argv[2]);
const stock = JSON.parse(readFileSync(new URL('./stock-request.json', import.meta.url), 'utf8'));
const now = () => performance.timeOrigin + performance.now();
const TICK_MS = 1000 / (config.clockTicks ?? 100);

// --- measuring the server --------------------------------------------------------------------------------------

function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime + stime
}

function rssMb(pid) {
  const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return match ? Number(match[1]) / 1024 : 0;
}

function watchRss(pid) {
  const start = rssMb(pid);
  let peak = start;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch {
      clearInterval(timer);
    }
  }, 50);
  return { start, stop: () => (clearInterval(timer), peak) };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// --- requests --------------------------------------------------------------------------------------------------

let counter = 0;
const uuid = () => `00000000-0000-4000-8000-${(++counter).toString(16).padStart(12, '0')}`;

/** The stock client's variables for one new turn: fresh ids and thread, the given prompt, an agent if asked. */
function turnData(prompt) {
  const data = structuredClone(stock.variables.data);
  data.threadId = uuid();
  data.messages[0].id = uuid();
  data.messages[1].id = uuid();
  data.messages[1].textMessage.content = prompt;
  if (config.agent) data.agentSession = { agentName: config.agent };
  return data;
}

const HEADERS = {
  accept:
    'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed',
  'content-type': 'application/json',
  'x-copilotkit-runtime-client-gql-version': '1.74.0',
};

async function runHttp() {
  const url = new URL(config.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: config.concurrency });
  const results = {
    ok: 0,
    errors: 0,
    errorSamples: [],
    latencies: [],
    firstTokens: [],
    tokenAges: [],
    tokensInWindow: 0,
    tokensPerAnswer: [],
  };
  // countTokens (the sweep): count the model's tokens as they reach the client ("tok ", or " t<stamp>" with
  // [stamp]), those inside the measured window apart, so that figures per token and per answer do not depend on
  // which answers happen to end inside the window (clients that start together finish together).
  const tokenPattern = config.prompt.includes('[stamp]') ? / t\d{13}\.\d/g : /tok /g;
  let measuring = false;
  let stopping = false;

  const once = () =>
    new Promise((resolve) => {
      const body = JSON.stringify({
        operationName: stock.operationName,
        query: stock.query,
        variables: { data: turnData(config.prompt), properties: {} },
      });
      const sent = now();
      let tail = '';
      let done = false;
      let success = false;
      let firstToken;
      let carry = '';
      let tokens = 0;
      const fail = (why) => {
        if (measuring && results.errorSamples.length < 5) results.errorSamples.push(why);
        resolve({ ok: false, sent });
      };
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: { ...HEADERS, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (chunk) => {
            if (config.countTokens) {
              const scan = carry + chunk;
              let count = 0;
              let end = 0;
              tokenPattern.lastIndex = 0;
              while (tokenPattern.exec(scan) !== null) {
                count++;
                end = tokenPattern.lastIndex;
              }
              // Keep what could be the start of a token cut by the chunk's end, never a token already counted.
              carry = scan.slice(Math.max(end, scan.length - 20));
              tokens += count;
              if (measuring && !stopping) results.tokensInWindow += count;
            }
            const text = tail + chunk;
            if (firstToken === undefined) {
              const match = text.match(/ t(\d{13}\.\d)/);
              if (match) firstToken = { at: now(), stamp: Number(match[1]) };
            }
            if (!success && text.includes('SuccessResponseStatus')) success = true;
            if (text.includes('"hasNext":false')) done = true;
            tail = text.slice(-64);
          });
          res.on('end', () => {
            if (res.statusCode !== 200) return fail(`HTTP ${res.statusCode}`);
            if (!done || !success) return fail(`unfinished or failed run: ...${tail}`);
            resolve({ ok: true, sent, end: now(), firstToken, tokens });
          });
          res.on('error', (error) => fail(error.message));
        },
      );
      req.on('error', (error) => fail(error.message));
      req.end(body);
    });

  const client = async () => {
    while (!stopping) {
      const result = await once();
      if (!measuring || stopping) continue;
      if (!result.ok) {
        results.errors++;
        continue;
      }
      results.ok++;
      results.latencies.push(result.end - result.sent);
      if (config.countTokens) results.tokensPerAnswer.push(result.tokens);
      if (result.firstToken) {
        results.firstTokens.push(result.firstToken.at - result.sent);
        results.tokenAges.push(result.firstToken.at - result.firstToken.stamp);
      }
    }
  };

  // The upstream's own time to first token, asked by this same client code (keep-alive, same parsing).
  let directFirstTokenP50 = null;
  if (config.directUrl) {
    const times = [];
    for (let i = 0; i < 30; i++) times.push(await directFirstToken(new URL(config.directUrl), agent));
    directFirstTokenP50 = percentile(
      times.sort((a, b) => a - b),
      50,
    );
  }

  const rss = watchRss(config.pid);
  const clients = Array.from({ length: config.concurrency }, client);
  await new Promise((resolve) => setTimeout(resolve, config.warmupMs));
  measuring = true;
  const redis = await redisWindow();
  const cpuStart = cpuMs(config.pid);
  // The harness's own CPU in the window too (this process, the fake upstream): it shares the cores with the server.
  const harnessStart = { self: process.cpuUsage(), upstream: config.upstreamPid ? cpuMs(config.upstreamPid) : null };
  const windowStart = now();
  await new Promise((resolve) => setTimeout(resolve, config.durationMs));
  const cpu = cpuMs(config.pid) - cpuStart;
  const selfUsage = process.cpuUsage(harnessStart.self);
  const loadCpuMs = (selfUsage.user + selfUsage.system) / 1000;
  const upstreamCpuMs = config.upstreamPid ? cpuMs(config.upstreamPid) - harnessStart.upstream : null;
  const seconds = (now() - windowStart) / 1000;
  stopping = true;
  const tokensInWindow = results.tokensInWindow;
  const okInWindow = results.ok;
  const redisFigures = await redis.end(tokensInWindow);
  await Promise.all(clients);
  agent.destroy();
  const latencies = results.latencies.sort((a, b) => a - b);
  const firstTokens = results.firstTokens.sort((a, b) => a - b);
  return {
    requests: okInWindow,
    errors: results.errors,
    errorSamples: results.errorSamples,
    throughput: okInWindow / seconds,
    latencyP50: percentile(latencies, 50),
    latencyP95: percentile(latencies, 95),
    firstTokenP50: percentile(firstTokens, 50),
    directFirstTokenP50,
    cpuMsPerRequest: okInWindow ? cpu / okInWindow : null,
    cpuMsTotal: cpu,
    cpuCores: cpu / 1000 / seconds,
    peakRssMb: rss.stop(),
    startRssMb: rss.start,
    loadCpuCores: loadCpuMs / 1000 / seconds,
    upstreamCpuCores: upstreamCpuMs == null ? null : upstreamCpuMs / 1000 / seconds,
    ...(config.countTokens
      ? {
          tokensInWindow,
          tokensPerAnswer: percentile(
            results.tokensPerAnswer.sort((a, b) => a - b),
            50,
          ),
          tokensPerSecond: tokensInWindow / seconds,
          cpuMsPerToken: tokensInWindow ? cpu / tokensInWindow : null,
        }
      : {}),
    ...redisFigures,
  };
}

/**
 * Redis's counters from now to `end(tokens)` (nothing without redisPort): commands, script calls and bytes in the
 * window, and each per token. The stats are read between a window's two CPU readings: a few hundred microseconds.
 */
async function redisWindow() {
  if (!config.redisPort) return { end: async () => ({}) };
  const overhead = await statsOverhead(config.redisPort);
  const before = await stats(config.redisPort);
  return {
    end: async (tokens) => {
      const d = difference(before, await stats(config.redisPort), overhead);
      const per = (value) => (tokens ? value / tokens : null);
      return {
        redis: d,
        redisCommandsPerToken: per(d.commands),
        redisScriptsPerToken: per(d.scripts),
        redisBytesPerToken: per(d.readBytes + d.writtenBytes),
        redisReadBytesPerToken: per(d.readBytes),
        redisCpuMsPerToken: per(d.cpuMs),
      };
    },
  };
}

/** Milliseconds from sending a streaming Chat Completions request straight to the fake model to its first token. */
function directFirstToken(url, agent) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({
      model: 'gpt-4o-mini',
      stream: true,
      messages: [{ role: 'user', content: config.prompt }],
    });
    const sent = now();
    let tail = '';
    let first;
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          const text = tail + chunk;
          if (first === undefined && / t\d{13}\.\d/.test(text)) first = now() - sent;
          tail = text.slice(-64);
        });
        res.on('end', () => (first === undefined ? reject(new Error('no token from the upstream')) : resolve(first)));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// --- WebSocket streams -----------------------------------------------------------------------------------------

const SUBSCRIPTION = `subscription Run($data: GenerateCopilotResponseInput!) {
  copilotRun(data: $data) {
    __typename
    ... on RunEvent { sequence }
    ... on TextMessageContentEvent { content }
    ... on RunFinishedEvent { status { ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } }
  }
}`;

async function runWs() {
  const url = config.url.replace(/^http/, 'ws');
  const delays = [];
  const state = { opened: 0, finished: 0, errors: 0, errorSamples: [], tokens: 0, peakOpen: 0, open: 0 };
  const error = (why) => {
    state.errors++;
    if (state.errorSamples.length < 5) state.errorSamples.push(why);
  };
  const rss = watchRss(config.pid);
  const redis = await redisWindow();
  const cpuStart = cpuMs(config.pid);
  const started = now();

  const stream = () =>
    new Promise((resolve) => {
      const socket = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
      let finished = false;
      socket.on('open', () => {
        state.open++;
        state.peakOpen = Math.max(state.peakOpen, state.open);
        socket.send('{"type":"connection_init"}');
      });
      socket.on('message', (raw) => {
        const message = JSON.parse(raw.toString());
        if (message.type === 'connection_ack') {
          const data = turnData(config.prompt);
          socket.send(
            JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { data } } }),
          );
        } else if (message.type === 'next') {
          const event = message.payload.data?.copilotRun;
          if (!event) return error(`no data: ${JSON.stringify(message.payload).slice(0, 200)}`);
          if (event.__typename === 'TextMessageContentEvent') {
            const at = now();
            for (const match of event.content.matchAll(/ t(\d{13}\.\d)/g)) {
              delays.push(at - Number(match[1]));
              state.tokens++;
            }
          } else if (event.__typename === 'RunFinishedEvent') {
            if (event.status.code !== 'Success')
              error(`run ${event.status.code}: ${event.status.reason} ${JSON.stringify(event.status.details)}`);
            else finished = true;
          }
        } else if (message.type === 'error') {
          error(`error: ${JSON.stringify(message.payload).slice(0, 200)}`);
          socket.close(1000);
        } else if (message.type === 'complete') {
          socket.close(1000);
        }
      });
      socket.on('error', (err) => error(`socket: ${err.message}`));
      socket.on('close', (code) => {
        clearTimeout(deadline);
        state.open--;
        if (finished) state.finished++;
        else error(`closed ${code} before the run finished`);
        resolve();
      });
      // A stream that has not finished long after it should have is an error, not a hung benchmark.
      const deadline = setTimeout(() => socket.terminate(), config.streamTimeoutMs ?? 120_000);
    });

  const all = [];
  const interval = config.rampMs / config.streams;
  for (let i = 0; i < config.streams; i++) {
    all.push(stream());
    state.opened++;
    // Open in small batches so timers stay coarse; the ramp still spreads evenly over rampMs.
    if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, interval * 10));
  }
  await Promise.all(all);
  const seconds = (now() - started) / 1000;
  const cpu = cpuMs(config.pid) - cpuStart;
  const redisFigures = await redis.end(state.tokens);
  delays.sort((a, b) => a - b);
  return {
    streams: config.streams,
    finished: state.finished,
    errors: state.errors,
    errorSamples: state.errorSamples,
    peakOpen: state.peakOpen,
    tokens: state.tokens,
    delayP50: percentile(delays, 50),
    delayP99: percentile(delays, 99),
    cpuMsPerToken: state.tokens ? cpu / state.tokens : null,
    cpuCores: cpu / 1000 / seconds,
    peakRssMb: rss.stop(),
    ...redisFigures,
  };
}

const result = config.mode === 'ws' ? await runWs() : await runHttp();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
