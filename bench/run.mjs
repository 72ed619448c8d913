// npm run bench: the gateway side by side with CopilotKit's own GraphQL runtime (@copilotkit/runtime 1.10.6),
// on loopback, against the same fake upstreams. See BENCHMARKS.md for the method.
//
//   npm run bench                     every scenario, 3 rounds, servers alternated within each round
//   npm run bench -- --rounds 5       more rounds
//   npm run bench -- --only burst20   one scenario (burst20, burst100, paced, first, agent, ws5000, ws1000), or several
//                                     comma-separated (--only burst20,paced)
//   npm run bench -- --smoke          a few seconds: every scenario once, tiny, to prove the benchmark works (CI)
//   npm run bench -- --json out.json  also write the raw figures
//   npm run bench -- --gateway-env METRICS=false   settings for the gateway (comma-separated), for A/B runs
//   npm run bench -- --gateway-node "--max-semi-space-size=8"   extra node flags for the gateway (to try V8 knobs;
//                                     they follow those of package.json config.nodeFlags, which npm start uses)
//   npm run bench -- --baseline ../ab  A/B between builds: the gateway built in another checkout (say a git worktree of
//                                     an earlier commit, with `npm run build` run there) runs in every round too, with
//                                     the same flags and settings, and a second table compares the two (the store
//                                     and growth scenarios run it on Redis too: baseline-redis, tables of its own)
//   npm run bench -- --baseline . --gateway-node "--always-sparkplug" --baseline-node ""   A/B between node flags:
//                                     the baseline's extra flags are --baseline-node's (the same as the gateway's
//                                     when not given); --baseline-env likewise for settings (--gateway-env's)
//   npm run bench -- --without reference,passthrough   leave servers out (for a quicker A/B)
//   npm run bench -- --only sweep     the sweep alone: a grid of clients × tokens per answer, each cell run paced and
//                                     burst; --sweep-clients 10,100 --sweep-tokens 50,500 to choose the grid
//   npm run bench -- --only store     the store's price per token: the paced and WebSocket scenarios on the memory
//                                     store and on Redis (a redis-server of the bench's own, on loopback), side by side
//   npm run bench -- --only store --redis-socket /tmp/bench-redis.sock   the same with the gateway on Redis's Unix
//                                     socket instead of loopback TCP
//   npm run bench -- --only growth    a run on a thread with 0, 1, 100 and 1,000 earlier turns, memory and Redis
//                                     (--growth-sizes 0,1,100,1000 --growth-runs 20 to choose; --growth-settle 30:
//                                     the milliseconds the gateway is left idle before each measured run)
//   npm run bench -- --node 24        every process (the servers, the upstreams, the load) on Node 24 (or 22), the
//                                     release scripts/test-node.mjs uses, installed in .node/24 on first use; the
//                                     Docker image runs Node 24
//
// No figure here is asserted: the table is for people to read and compare.
import { spawn, spawnSync, execFileSync, execSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CopilotRuntimeClient } from '@copilotkit/runtime-client-gql';
import { resetRedis, startRedis, startRedisCluster } from './redis.mjs';
import { buildIsCurrent } from '../scripts/build-state.mjs';
import { RELEASES, nodeBinary } from '../scripts/node-release.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const referenceDir = join(root, 'bench', 'reference');
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
// --node 24: this script again under that release; every process it starts runs on process.execPath, so on it too.
const nodeMajor = option('--node', undefined);
if (nodeMajor !== undefined && process.version !== `v${RELEASES[nodeMajor]}`) {
  if (!RELEASES[nodeMajor]) {
    console.error(`--node ${nodeMajor}: one of ${Object.keys(RELEASES).join(', ')}.`);
    process.exit(2);
  }
  const node = nodeBinary(nodeMajor);
  const result = spawnSync(node, [fileURLToPath(import.meta.url), ...args], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
const smoke = flag('--smoke');
const rounds = Number(option('--rounds', smoke ? 1 : 3));
// --only burst20,paced: the scenarios (or families, such as sweep) named, comma-separated.
const only = option('--only', undefined)?.split(',');
// The gateway runs with the node flags `npm start` gives it (package.json config.nodeFlags), then any extra.
const packageJson = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8'),
);
// --gateway-env "METRICS=false,TRACING=true": settings for the gateway, to measure what one costs (A/B).
const envOption = (name, fallback) =>
  Object.fromEntries(
    (option(name, fallback) ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => pair.split('=')),
  );
const gatewayEnv = envOption('--gateway-env', '');
// --baseline-env: the baseline's settings instead (the same as the gateway's when not given), to A/B settings on one build.
const baselineEnv = envOption('--baseline-env', option('--gateway-env', ''));
const nodeFlags = (extra) =>
  [...(packageJson.config?.nodeFlags ?? '').split(' '), ...(extra ?? '').split(' ')].filter(Boolean);
const gatewayNodeFlags = nodeFlags(option('--gateway-node', ''));
const baselineNodeFlags = nodeFlags(option('--baseline-node', option('--gateway-node', '')));
// --baseline DIR: another checkout's build of the gateway, alternated with this one in every round (A/B).
const baselineRoot = option('--baseline', undefined);
if (baselineRoot && !existsSync(join(baselineRoot, 'dist', 'src', 'main.js'))) {
  console.error(`--baseline ${baselineRoot}: no dist/src/main.js there; run \`npm run build\` in that checkout first.`);
  process.exit(2);
}
const clockTicks = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;

// --- the scenarios ---------------------------------------------------------------------------------------------

const http = (name, title, load, servers = ['gateway', 'reference']) => ({ name, title, kind: 'http', load, servers });
const scenarios = [
  http('burst20', 'burst, 20 clients: 200 tokens as fast as the upstream sends them', {
    concurrency: 20,
    prompt: 'Hello [tokens=200]',
    warmupMs: smoke ? 300 : 2000,
    durationMs: smoke ? 1000 : 8000,
  }),
  http('burst100', 'burst, 100 clients', {
    concurrency: 100,
    prompt: 'Hello [tokens=200]',
    warmupMs: smoke ? 300 : 2000,
    durationMs: smoke ? 1000 : 8000,
  }),
  http('paced', 'paced, 20 clients: 200 tokens 5 ms apart', {
    concurrency: 20,
    prompt: `Hello [tokens=${smoke ? 20 : 200}][pace=5][stamp]`,
    warmupMs: smoke ? 300 : 2500,
    durationMs: smoke ? 1000 : 10000,
  }),
  // Also run on a hand-written pass-through (bench/passthrough.mjs), the floor any server's figure is read against.
  http(
    'first',
    'first token, 1 client: 3 tokens 5 ms apart',
    {
      directPath: '/v1/chat/completions',
      concurrency: 1,
      prompt: 'Hello [tokens=3][pace=5][stamp]',
      warmupMs: smoke ? 300 : 1000,
      durationMs: smoke ? 1000 : 5000,
    },
    ['gateway', 'reference', 'passthrough'],
  ),
  http('agent', 'agent, 20 clients: a CopilotKit remote endpoint (JSONL) streaming 200 tokens', {
    concurrency: 20,
    prompt: 'Hello [tokens=200]',
    agent: 'benchAgent',
    warmupMs: smoke ? 300 : 2000,
    durationMs: smoke ? 1000 : 8000,
  }),
  {
    name: 'ws5000',
    title: `WebSocket: ${smoke ? 50 : 5000} graphql-ws copilotRun streams opened over ${smoke ? 0.5 : 5} s, 1 token/s`,
    kind: 'ws',
    servers: ['gateway'],
    load: {
      streams: smoke ? 50 : 5000,
      rampMs: smoke ? 500 : 5000,
      prompt: `Hello [tokens=${smoke ? 2 : 10}][pace=1000][stamp]`,
    },
  },
  {
    name: 'ws1000',
    title: `WebSocket: ${smoke ? 50 : 1000} streams, 10 tokens/s`,
    kind: 'ws',
    servers: ['gateway'],
    load: {
      streams: smoke ? 50 : 1000,
      rampMs: smoke ? 200 : 2000,
      prompt: `Hello [tokens=${smoke ? 5 : 100}][pace=100][stamp]`,
    },
  },
  ...storeScenarios(),
  ...sweepScenarios(),
].filter((scenario) => !only || only.includes(scenario.name) || only.includes(scenario.family));
// With a baseline, the store and growth scenarios run it on Redis too (baseline-redis), so that the A/B covers both.
if (baselineRoot)
  for (const scenario of scenarios) {
    scenario.servers.splice(1, 0, 'baseline');
    const redisAt = scenario.servers.indexOf('gateway-redis');
    if (redisAt !== -1) scenario.servers.splice(redisAt + 1, 0, 'baseline-redis');
  }
// The Redis side of the store scenarios needs redis-server (CI has it); without it they run on the memory store alone.
if (scenarios.some((s) => s.servers.includes('gateway-redis'))) {
  try {
    execSync('command -v redis-server', { stdio: 'ignore' });
  } catch {
    console.error('== no redis-server on PATH: the store and growth scenarios run on the memory store only');
    for (const scenario of scenarios)
      scenario.servers = scenario.servers.filter(
        (name) => name !== 'gateway-redis' && name !== 'baseline-redis' && name !== 'gateway-cluster',
      );
  }
}
// The Redis Cluster side also needs redis-cli (to make the cluster).
if (scenarios.some((s) => s.servers.includes('gateway-cluster'))) {
  try {
    execSync('command -v redis-cli', { stdio: 'ignore' });
  } catch {
    console.error('== no redis-cli on PATH: the store scenarios run without a Redis Cluster');
    for (const scenario of scenarios) scenario.servers = scenario.servers.filter((name) => name !== 'gateway-cluster');
  }
}
const without = (option('--without', '') ?? '').split(',').filter(Boolean);
for (const scenario of scenarios) scenario.servers = scenario.servers.filter((name) => !without.includes(name));
if (scenarios.length === 0) {
  console.error(
    `No scenario named ${JSON.stringify(only)}: burst20, burst100, paced, first, agent, ws5000, ws1000, sweep, ` +
      'store (store-paced, store-ws1000), growth.',
  );
  process.exit(2);
}

/**
 * The store's price (issue 32): the same gateway with its threads in memory (`gateway`) and in Redis
 * (`gateway-redis`), alternated in every round, on the paced load (tokens counted as they reach the clients, so
 * that CPU, Redis commands and bytes are per token) and the WebSocket load; then the growth scenario
 * (bench/growth.mjs), a run on an old thread against a run on a fresh one.
 */
function storeScenarios() {
  const servers = ['gateway', 'gateway-redis'];
  // The paced and WebSocket loads on a Redis Cluster too (three primaries): what sharding costs per token.
  const withCluster = [...servers, 'gateway-cluster'];
  const growthSizes = option('--growth-sizes', smoke ? '0,1,10' : '0,1,100,1000')
    .split(',')
    .map(Number);
  return [
    {
      ...http('store-paced', 'paced, 20 clients: 200 tokens 5 ms apart', {
        concurrency: 20,
        prompt: `Hello [tokens=${smoke ? 20 : 200}][pace=5][stamp]`,
        countTokens: true,
        warmupMs: smoke ? 300 : 2500,
        durationMs: smoke ? 1000 : 10000,
      }),
      servers: withCluster,
      family: 'store',
    },
    {
      name: 'store-ws1000',
      family: 'store',
      title: `WebSocket: ${smoke ? 50 : 1000} streams, 10 tokens/s`,
      kind: 'ws',
      servers: withCluster,
      load: {
        streams: smoke ? 50 : 1000,
        rampMs: smoke ? 200 : 2000,
        prompt: `Hello [tokens=${smoke ? 5 : 100}][pace=100][stamp]`,
      },
    },
    {
      name: 'growth',
      family: 'growth',
      title: 'a run on a thread with N earlier turns',
      kind: 'growth',
      servers,
      // The thread list is read too: served without authentication here.
      env: { THREAD_LIST_ANONYMOUS: 'true' },
      load: {
        sizes: growthSizes,
        runs: Number(option('--growth-runs', smoke ? 3 : 20)),
        warmup: smoke ? 5 : 30,
        tokens: 5,
        settleMs: Number(option('--growth-settle', 30)),
      },
    },
  ];
}

/**
 * The sweep (issue 29): the targets must hold for other shapes of load than the scenarios above. Every cell of a
 * grid of clients × tokens per answer runs twice, as two scenarios of their own (so the servers alternate as
 * everywhere else): paced (tokens 5 ms apart, as a model sends them: CPU per token) and burst (tokens as fast as
 * the upstream writes them: throughput, CPU per request, peak RSS). The load generator counts the tokens that
 * reach the clients inside the measured window, and the figures are per token (paced) and per answer's worth of
 * tokens (burst), because with few long answers the answers that end inside a short window are a poor count.
 */
function sweepScenarios() {
  const list = (name, fallback) => option(name, fallback).split(',').map(Number);
  const clientsList = list('--sweep-clients', smoke ? '3' : '10,30,100');
  const tokensList = list('--sweep-tokens', smoke ? '10' : '50,150,500');
  const cells = [];
  for (const clients of clientsList) {
    for (const tokens of tokensList) {
      const cell = { family: 'sweep', clients, tokens };
      // Paced: warm up for one whole answer and more, so the window sees answers at every stage.
      cells.push({
        ...http(
          `sweep-c${clients}-t${tokens}-paced`,
          `sweep, ${clients} clients, ${tokens} tokens 5 ms apart`,
          {
            concurrency: clients,
            prompt: `Hello [tokens=${tokens}][pace=5][stamp]`,
            countTokens: true,
            warmupMs: smoke ? 300 : 1500 + tokens * 5,
            durationMs: smoke ? 700 : 5000,
          },
          ['gateway', 'reference', 'passthrough'],
        ),
        ...cell,
        mode: 'paced',
      });
      cells.push({
        ...http(`sweep-c${clients}-t${tokens}-burst`, `sweep, ${clients} clients, ${tokens} tokens as fast as sent`, {
          concurrency: clients,
          prompt: `Hello [tokens=${tokens}]`,
          countTokens: true,
          warmupMs: smoke ? 300 : 1500,
          durationMs: smoke ? 700 : 5000,
        }),
        ...cell,
        mode: 'burst',
      });
    }
  }
  return cells;
}

// --- processes -------------------------------------------------------------------------------------------------

const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
process.on('SIGINT', () => process.exit(130));

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

/** Starts a process (with a raised open-file limit, for the WebSocket scenarios). */
function start(command, argv, options) {
  const child = spawn('bash', ['-c', 'ulimit -n 65536 2>/dev/null || true; exec "$@"', 'bash', command, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options,
  });
  children.add(child);
  let output = '';
  child.stdout.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  child.stderr.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  child.on('exit', () => children.delete(child));
  return { child, output: () => output };
}

async function stop(proc) {
  if (proc.child.exitCode !== null) return;
  const exited = new Promise((resolve) => proc.child.once('exit', resolve));
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

async function waitForGraphQL(url, proc) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`the server exited (${proc.child.exitCode}):\n${proc.output()}`);
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ hello }"}',
      });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the server at ${url} did not answer in 30 s:\n${proc.output()}`);
}

async function startUpstream() {
  const proc = start(process.execPath, [join(root, 'bench', 'upstream.mjs')], {});
  const port = await new Promise((resolve, reject) => {
    proc.child.stdout.once('data', (chunk) => resolve(JSON.parse(chunk.toString().split('\n')[0]).port));
    proc.child.once('exit', (code) => reject(new Error(`the fake upstream exited (${code}): ${proc.output()}`)));
  });
  return { proc, origin: `http://127.0.0.1:${port}` };
}

/** Our gateway as `npm start` runs it in production: the built JS, configured from the environment. */
async function startGateway(
  upstream,
  extraEnv = {},
  gatewayRoot = root,
  flags = gatewayNodeFlags,
  settings = gatewayEnv,
) {
  const port = await freePort();
  const proc = start(process.execPath, [...flags, join(gatewayRoot, 'dist', 'src', 'main.js')], {
    cwd: gatewayRoot,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: `${upstream.origin}/v1`,
      COPILOT_REMOTE_ENDPOINTS: `${upstream.origin}/copilotkit`,
      MAX_CONCURRENT_RUNS: '20000',
      ...settings,
      ...extraEnv,
    },
  });
  const url = `http://127.0.0.1:${port}/api/copilotkit`;
  await waitForGraphQL(url, proc);
  return { proc, url, pid: proc.child.pid };
}

/** A hand-written pass-through with no GraphQL: the floor for the first-token figures. */
async function startPassthrough(upstream) {
  const port = await freePort();
  const proc = start(process.execPath, [join(root, 'bench', 'passthrough.mjs'), upstream.origin, String(port)], {
    cwd: root,
  });
  const url = `http://127.0.0.1:${port}/api/copilotkit`;
  await waitForGraphQL(url, proc);
  return { proc, url, pid: proc.child.pid };
}

/** The reference: @copilotkit/runtime 1.10.6 from bench/reference, installed there with npm ci on first use. */
async function startReference(upstream) {
  const port = await freePort();
  const proc = start(process.execPath, [join(referenceDir, 'server.mjs')], {
    cwd: referenceDir,
    env: { PATH: process.env.PATH, NODE_ENV: 'production', PORT: String(port), UPSTREAM: upstream.origin },
  });
  const url = `http://127.0.0.1:${port}/api/copilotkit`;
  await waitForGraphQL(url, proc);
  return { proc, url, pid: proc.child.pid };
}

function ensureBuilt() {
  if (buildIsCurrent(root)) return;
  console.error('== building the gateway (npm run build)');
  execFileSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}

function ensureReference() {
  if (existsSync(join(referenceDir, 'node_modules', '@copilotkit', 'runtime', 'package.json'))) return;
  console.error('== installing the reference runtime in bench/reference (npm ci, first use only)');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts'], {
    cwd: referenceDir,
    stdio: 'inherit',
  });
}

function runLoad(config) {
  return new Promise((resolve, reject) => {
    const proc = start(
      process.execPath,
      [join(root, 'bench', 'load.mjs'), JSON.stringify({ ...config, clockTicks })],
      {},
    );
    let stdout = '';
    proc.child.stdout.on('data', (chunk) => (stdout += chunk));
    proc.child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`the load generator failed (${code}): ${proc.output()}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()));
    });
  });
}

/** The growth scenario's own driver (bench/growth.mjs), one process per server and round. */
function runGrowth(config) {
  return new Promise((resolve, reject) => {
    const proc = start(process.execPath, [join(root, 'bench', 'growth.mjs'), JSON.stringify(config)], {});
    let stdout = '';
    proc.child.stdout.on('data', (chunk) => (stdout += chunk));
    proc.child.stderr.on('data', (chunk) => process.stderr.write(chunk));
    proc.child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`the growth driver failed (${code}): ${proc.output()}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()));
    });
  });
}

// --- correctness before timing ---------------------------------------------------------------------------------

/** The stock client (@copilotkit/runtime-client-gql) streams one answer from the server; the text must be whole. */
async function correctnessPass(name, url, agent) {
  const client = new CopilotRuntimeClient({ url });
  const data = {
    threadId: `bench-check-${name}`,
    frontend: { actions: [], url: 'http://localhost/' },
    messages: [
      {
        id: 'check-system',
        createdAt: new Date().toISOString(),
        textMessage: { content: 'You are a helpful assistant.', role: 'system' },
      },
      {
        id: 'check-user',
        createdAt: new Date().toISOString(),
        textMessage: { content: 'Hello [tokens=25]', role: 'user' },
      },
    ],
    metadata: { requestType: 'Chat' },
    ...(agent ? { agentSession: { agentName: agent } } : {}),
  };
  const reader = client.asStream(client.generateCopilotResponse({ data })).getReader();
  let last;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    last = value;
  }
  const response = last?.generateCopilotResponse;
  const text = (response?.messages ?? [])
    .filter((m) => m.__typename === 'TextMessageOutput')
    .map((m) => m.content.join(''))
    .join('');
  if (response?.status?.code !== 'Success' || text !== 'tok '.repeat(25)) {
    throw new Error(
      `correctness pass failed for ${name}${agent ? ` (agent ${agent})` : ''}: status ${JSON.stringify(response?.status)}, text ${JSON.stringify(text.slice(0, 120))}`,
    );
  }
}

// --- the run ---------------------------------------------------------------------------------------------------

const median = (values) => {
  const sorted = values.filter((v) => v != null && Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main() {
  ensureBuilt();
  const needsReference = scenarios.some((s) => s.servers.includes('reference'));
  if (needsReference) ensureReference();
  const upstream = await startUpstream();
  // Redis for the gateway-redis server: one redis-server for the whole run, emptied before each server starts.
  const needsRedis = scenarios.some((s) => s.servers.includes('gateway-redis'));
  const redisPort = needsRedis ? await freePort() : undefined;
  // Absolute: redis-server runs in a folder of its own.
  const socketOption = option('--redis-socket', undefined);
  const redisSocket = socketOption && resolve(socketOption);
  const redis = needsRedis
    ? await startRedis(
        redisPort,
        (command, argv) => start(command, argv, {}),
        redisSocket ? ['--unixsocket', redisSocket, '--unixsocketperm', '700'] : [],
      )
    : undefined;
  // And a Redis Cluster of three primaries for the gateway-cluster server, the same way.
  const needsCluster = scenarios.some((s) => s.servers.includes('gateway-cluster'));
  const clusterPorts = needsCluster ? [await freePort(), await freePort(), await freePort()] : undefined;
  const cluster = needsCluster
    ? await startRedisCluster(clusterPorts, (command, argv) => start(command, argv, {}))
    : undefined;
  const redisUrl = redisSocket ? `unix://${redisSocket}` : `redis://127.0.0.1:${redisPort}`;
  const starters = {
    gateway: (extra) => startGateway(upstream, extra),
    'gateway-redis': (extra) => startGateway(upstream, { ...extra, REDIS_URL: redisUrl }),
    'gateway-cluster': (extra) =>
      startGateway(upstream, {
        ...extra,
        REDIS_CLUSTER_NODES: clusterPorts.map((port) => `127.0.0.1:${port}`).join(','),
      }),
    baseline: (extra) => startGateway(upstream, extra, baselineRoot, baselineNodeFlags, baselineEnv),
    'baseline-redis': (extra) =>
      startGateway(upstream, { ...extra, REDIS_URL: redisUrl }, baselineRoot, baselineNodeFlags, baselineEnv),
    reference: () => startReference(upstream),
    passthrough: () => startPassthrough(upstream),
  };

  console.error('== correctness pass with the stock CopilotRuntimeClient');
  for (const name of [
    ...(needsReference ? ['gateway', 'reference'] : ['gateway']),
    ...(baselineRoot ? ['baseline'] : []),
    ...(needsRedis ? ['gateway-redis'] : []),
    ...(needsRedis && baselineRoot ? ['baseline-redis'] : []),
    ...(needsCluster ? ['gateway-cluster'] : []),
  ]) {
    const server = await starters[name]();
    try {
      await correctnessPass(name, server.url);
      await correctnessPass(name, server.url, 'benchAgent');
    } finally {
      await stop(server.proc);
    }
  }

  const results = {};
  for (const scenario of scenarios) {
    results[scenario.name] = {};
    for (let round = 1; round <= rounds; round++) {
      // Alternate which server goes first, so neither always gets the warmer machine.
      const order = round % 2 ? scenario.servers : [...scenario.servers].reverse();
      for (const name of order) {
        console.error(`== ${scenario.name}, round ${round}/${rounds}: ${name}`);
        if (redis) await resetRedis(redisPort);
        if (cluster) await resetRedis(clusterPorts);
        const server = await starters[name](scenario.env);
        try {
          const directUrl = scenario.load.directPath ? upstream.origin + scenario.load.directPath : undefined;
          const config = {
            mode: scenario.kind,
            url: server.url,
            pid: server.pid,
            upstreamPid: upstream.proc.child.pid,
            directUrl,
            ...(name === 'gateway-redis' || name === 'baseline-redis' ? { redisPort } : {}),
            // On a cluster, Redis's counters are the sums of its nodes'.
            ...(name === 'gateway-cluster' ? { redisPort: clusterPorts } : {}),
            ...scenario.load,
          };
          const result = await (scenario.kind === 'growth' ? runGrowth(config) : runLoad(config));
          if (result.errors) console.error(`   ${result.errors} error(s), e.g. ${JSON.stringify(result.errorSamples)}`);
          (results[scenario.name][name] ??= []).push(result);
        } finally {
          await stop(server.proc);
        }
      }
    }
  }
  await stop(upstream.proc);
  if (redis) await stop(redis);
  for (const node of cluster ?? []) await stop(node);

  const table = report(results);
  console.log(table);
  const jsonPath = option('--json', undefined);
  if (jsonPath)
    writeFileSync(jsonPath, `${JSON.stringify({ date: new Date().toISOString(), rounds, smoke, results }, null, 2)}\n`);
  // Errors are facts, not timings: in the smoke run (CI) a failed request or stream fails the run.
  const failed = Object.entries(results).filter(([, byServer]) =>
    Object.values(byServer)
      .flat()
      .some((x) => x.errors > 0),
  );
  if (smoke && failed.length) {
    console.error(`errors in: ${failed.map(([name]) => name).join(', ')}`);
    process.exitCode = 1;
  }
}

// --- the table -------------------------------------------------------------------------------------------------

const fmt = (value, digits = 1) => (value == null ? '–' : value >= 100 ? value.toFixed(0) : value.toFixed(digits));

function report(results) {
  const lines = [];
  lines.push(
    `Copilot Gateway vs @copilotkit/runtime 1.10.6: median of ${rounds} round(s)${smoke ? ' (SMOKE: tiny loads, figures meaningless)' : ''}`,
  );
  lines.push(
    `machine: ${execSync('nproc').toString().trim()} cores, node ${process.version}; ratio = gateway / reference`,
  );
  lines.push('');
  if (scenarios.some((s) => !s.family)) table(results, 'reference', lines);
  if (scenarios.some((s) => s.family === 'sweep')) sweepTable(results, 'reference', lines);
  if (scenarios.some((s) => s.family === 'store')) storeTable(results, lines);
  if (scenarios.some((s) => s.family === 'growth')) growthTable(results, lines);
  const floor = results.first?.passthrough;
  if (floor) {
    const added = median(
      floor.map((x) =>
        x.firstTokenP50 == null || x.directFirstTokenP50 == null ? null : x.firstTokenP50 - x.directFirstTokenP50,
      ),
    );
    lines.push(
      '',
      `first token: a hand-written pass-through with no GraphQL (bench/passthrough.mjs) adds ${fmt(added, 2)} ms, the floor on this machine.`,
    );
  }
  if (baselineRoot) {
    lines.push(
      '',
      `A/B: this build against the baseline build in ${baselineRoot}, alternated in the same rounds; ratio = gateway / baseline`,
      '',
    );
    if (scenarios.some((s) => !s.family)) table(results, 'baseline', lines);
    if (scenarios.some((s) => s.family === 'sweep')) sweepTable(results, 'baseline', lines);
    if (scenarios.some((s) => s.family === 'store')) storeTable(results, lines, ['baseline', 'baseline-redis']);
  }
  return lines.join('\n');
}

/** One table of every scenario: the gateway's figures beside `other`'s (the reference, or the baseline build). */
function table(results, other, lines) {
  const row = (cells) => lines.push(`| ${cells.join(' | ')} |`);
  row(['scenario', 'figure', 'gateway', other, 'ratio']);
  row(['---', '---', '---:', '---:', '---:']);
  for (const scenario of scenarios.filter((s) => !s.family)) {
    const r = results[scenario.name];
    const m = (server, key) => median((r[server] ?? []).map((x) => x[key]));
    const figures =
      scenario.kind === 'http'
        ? [
            ['throughput (req/s)', 'throughput', 0],
            ['latency p50 (ms)', 'latencyP50', 1],
            ['latency p95 (ms)', 'latencyP95', 1],
            ['server CPU per request (ms)', 'cpuMsPerRequest', 2],
            ['server CPU (cores)', 'cpuCores', 2],
            ['peak RSS (MB)', 'peakRssMb', 0],
            ['errors', 'errors', 0],
          ]
        : [
            ['streams finished', 'finished', 0],
            ['errors', 'errors', 0],
            ['token delay p50 (ms)', 'delayP50', 1],
            ['token delay p99 (ms)', 'delayP99', 1],
            ['server CPU per token (ms)', 'cpuMsPerToken', 3],
            ['peak RSS (MB)', 'peakRssMb', 0],
          ];
    if (scenario.name === 'paced') {
      figures.splice(4, 0, ['server CPU per streamed token (ms)', 'cpuMsPerToken', 4]);
      for (const server of ['gateway', other]) {
        for (const x of r[server] ?? [])
          x.cpuMsPerToken = x.cpuMsPerRequest == null ? null : x.cpuMsPerRequest / (smoke ? 20 : 200);
      }
    }
    if (scenario.name === 'first') {
      figures.splice(
        0,
        figures.length,
        ['time to first token (ms)', 'firstTokenP50', 2],
        ["the upstream's own, asked directly (ms)", 'directFirstTokenP50', 2],
        ["added to the upstream's own (ms)", 'addedFirstToken', 2],
        ['errors', 'errors', 0],
      );
      for (const server of ['gateway', other]) {
        for (const x of r[server] ?? []) {
          x.addedFirstToken =
            x.firstTokenP50 == null || x.directFirstTokenP50 == null ? null : x.firstTokenP50 - x.directFirstTokenP50;
        }
      }
    }
    let first = true;
    for (const [label, key, digits] of figures) {
      const g = m('gateway', key);
      const ref = scenario.servers.includes(other) ? m(other, key) : null;
      const ratio = g != null && ref ? `${(g / ref).toFixed(2)}x` : '';
      row([
        first ? scenario.title : '',
        label,
        fmt(g, digits),
        scenario.servers.includes(other) ? fmt(ref, digits) : 'n/a',
        ratio,
      ]);
      first = false;
    }
  }
}

/**
 * The store's table: each scenario on the memory store, on Redis and on a Redis Cluster, side by side; ratios to
 * memory.
 */
function storeTable(results, lines, [memoryServer, redisServer] = ['gateway', 'gateway-redis']) {
  lines.push(
    '',
    memoryServer === 'gateway'
      ? "the store's price: the same gateway with its threads in memory, in Redis and in a Redis Cluster (three " +
          'primaries); ratios = Redis / memory and Cluster / memory'
      : "the baseline build's store price, the same way (no Redis Cluster)",
    '',
  );
  const row = (cells) => lines.push(`| ${cells.join(' | ')} |`);
  row(['scenario', 'figure', 'memory', 'Redis', 'ratio', 'Cluster', 'ratio']);
  row(['---', '---', '---:', '---:', '---:', '---:', '---:']);
  for (const scenario of scenarios.filter((s) => s.family === 'store')) {
    const r = results[scenario.name];
    const m = (server, key) => median((r[server] ?? []).map((x) => x[key]));
    const figures = [
      ...(scenario.kind === 'http'
        ? [
            ['tokens/s delivered', 'tokensPerSecond', 0],
            ['latency p50 (ms)', 'latencyP50', 1],
          ]
        : [
            ['streams finished', 'finished', 0],
            ['token delay p50 (ms)', 'delayP50', 1],
            ['token delay p99 (ms)', 'delayP99', 1],
          ]),
      ['server CPU per token (ms)', 'cpuMsPerToken', 4],
      ['Redis script calls (round trips) per token', 'redisScriptsPerToken', 3],
      ['Redis commands per token (those scripts run included)', 'redisCommandsPerToken', 2],
      ['Redis bytes per token (both ways)', 'redisBytesPerToken', 0],
      ["Redis's own CPU per token (ms)", 'redisCpuMsPerToken', 4],
      ['peak RSS (MB)', 'peakRssMb', 0],
      ['errors', 'errors', 0],
    ];
    figures.forEach(([label, key, digits], i) => {
      const memory = m(memoryServer, key);
      const redis = m(redisServer, key);
      const cluster = m('gateway-cluster', key);
      const ratio = (value) =>
        memory && value != null && !key.startsWith('redis') ? `${(value / memory).toFixed(2)}x` : '';
      row([
        i === 0 ? scenario.title : '',
        label,
        fmt(memory, digits),
        fmt(redis, digits),
        ratio(redis),
        fmt(cluster, digits),
        ratio(cluster),
      ]);
    });
  }
}

/**
 * The growth tables, one per store: per size (earlier turns), the run on the old thread sent the new message only,
 * sent the whole conversation (as the stock client), and the control (a fresh thread sent the same conversation).
 * Medians over rounds of medians over runs.
 */
function growthTable(results, lines) {
  const r = results.growth;
  if (!r) return;
  const runs = scenarios.find((s) => s.name === 'growth').load.runs;
  lines.push(
    '',
    `growth: one more run on a thread with N earlier turns, median of ${runs} runs then of ${rounds} round(s). ` +
      'Each figure is "new only / whole / control": the old thread sent its new message only (the store completes ' +
      'the conversation), the old thread sent the whole conversation with its ids (the stock client), and a fresh ' +
      "thread sent the same conversation (the model gets the same history in all three). CPU is the gateway's.",
  );
  const at = (server, size, pick) =>
    median((r[server] ?? []).map((round) => pick(round.sizes.find((x) => x.size === size) ?? {})));
  for (const [label, server] of [
    ['memory', 'gateway'],
    ['Redis', 'gateway-redis'],
    ['memory, the baseline build', 'baseline'],
    ['Redis, the baseline build', 'baseline-redis'],
  ]) {
    if (!r[server]) continue;
    const sizes = r[server][0].sizes.map((x) => x.size);
    const redis = server.endsWith('-redis');
    const row = (cells) => lines.push(`| ${cells.join(' | ')} |`);
    lines.push('', `${label}:`, '');
    row([
      'earlier turns',
      'CPU per run (ms)',
      'first token (ms)',
      'copilotThread (ms)',
      '/threads page (ms)',
      ...(redis
        ? [
            'Redis bytes read per run',
            'Redis bytes written per run',
            'Redis commands per run',
            "Redis's CPU per run (ms)",
            "the thread's Redis memory (KB)",
          ]
        : []),
    ]);
    row(['---:', '---:', '---:', '---:', '---:', ...(redis ? ['---:', '---:', '---:', '---:', '---:'] : [])]);
    for (const size of sizes) {
      const three = (key, digits) =>
        ['old', 'whole', 'control']
          .map((kind) =>
            fmt(
              at(server, size, (x) => x[kind]?.[key]),
              digits,
            ),
          )
          .join(' / ');
      row([
        size,
        three('cpuMs', 2),
        three('firstTokenMs', 2),
        fmt(
          at(server, size, (x) => x.copilotThreadMs),
          2,
        ),
        fmt(
          at(server, size, (x) => x.threadsPageMs),
          2,
        ),
        ...(redis
          ? [
              three('redisReadBytes', 0),
              three('redisWrittenBytes', 0),
              three('redisCommands', 0),
              three('redisCpuMs', 3),
              fmt(
                at(server, size, (x) => (x.redisThreadBytes == null ? null : x.redisThreadBytes / 1024)),
                0,
              ),
            ]
          : []),
      ]);
    }
  }
}

/**
 * The sweep's table: one row per cell, each figure as "ratio (gateway / other)", then the worst cell of each figure
 * against issue 29's target. Burst throughput and CPU per request are counted in answers' worth of tokens.
 */
function sweepTable(results, other, lines) {
  // One row per cell, whether one of its two scenarios was run (--only sweep-c100-t50-burst) or both.
  const cells = scenarios.filter(
    (s) =>
      s.family === 'sweep' &&
      !(s.mode === 'burst' && scenarios.some((p) => p.name === s.name.replace(/burst$/, 'paced'))),
  );
  const m = (name, server, key) => median((results[name]?.[server] ?? []).map((x) => x[key]));
  const perAnswer = (tokens) => (x) => {
    x.answersPerSecond = x.tokensPerSecond == null ? null : x.tokensPerSecond / tokens;
    x.cpuMsPerAnswer = x.tokensInWindow ? x.cpuMsTotal / (x.tokensInWindow / tokens) : null;
  };
  const figures = [
    // label, mode, key, digits, target: [compare, bound]
    ['paced CPU per token (ms)', 'paced', 'cpuMsPerToken', 4, ['<=', 0.4]],
    ['burst throughput (answers/s)', 'burst', 'answersPerSecond', 0, ['>=', 5]],
    ['burst CPU per answer (ms)', 'burst', 'cpuMsPerAnswer', 2, ['<=', 0.2]],
    ['burst peak RSS (MB)', 'burst', 'peakRssMb', 0, ['<=', 0.5]],
  ];
  const extras = [
    // A server that falls behind the pace (offered: clients × 200 tokens/s) reads several tokens at a time and
    // spends less per token: compare CPU per token only where both delivered about the same.
    ['paced tokens/s', 'paced', 'tokensPerSecond', 0],
    ['paced server cores', 'paced', 'cpuCores', 2],
    ['paced peak RSS (MB)', 'paced', 'peakRssMb', 0],
    ['burst server cores', 'burst', 'cpuCores', 2],
  ];
  lines.push('', `sweep: each cell paced (5 ms between tokens) and burst; "ratio (gateway / ${other})"`, '');
  const row = (cells) => lines.push(`| ${cells.join(' | ')} |`);
  // The floor: the hand-written pass-through (bench/passthrough.mjs), one write per upstream read, no GraphQL.
  const floor = cells.some((cell) => results[`sweep-c${cell.clients}-t${cell.tokens}-paced`]?.passthrough);
  row([
    'clients',
    'tokens',
    ...figures.map(([label]) => label),
    ...extras.map(([label]) => label),
    ...(floor ? ['paced CPU per token, pass-through (ms)'] : []),
    'errors',
  ]);
  row(['---:', '---:', ...figures.map(() => '---:'), ...extras.map(() => '---:'), ...(floor ? ['---:'] : []), '---:']);
  const worst = figures.map(() => null);
  for (const cell of cells) {
    const name = (mode) => `sweep-c${cell.clients}-t${cell.tokens}-${mode}`;
    for (const server of ['gateway', other])
      for (const x of results[name('burst')]?.[server] ?? []) perAnswer(cell.tokens)(x);
    const ratioCell = ([, mode, key, digits], i) => {
      const g = m(name(mode), 'gateway', key);
      const o = m(name(mode), other, key);
      const ratio = g != null && o ? g / o : null;
      if (i != null && ratio != null) {
        const [compare] = figures[i][4];
        const worse = worst[i] == null || (compare === '<=' ? ratio > worst[i].ratio : ratio < worst[i].ratio);
        if (worse) worst[i] = { ratio, cell };
      }
      return `${ratio == null ? '–' : `${ratio.toFixed(2)}x`} (${fmt(g, digits)} / ${fmt(o, digits)})`;
    };
    const errors = ['paced', 'burst']
      .flatMap((mode) => Object.values(results[name(mode)] ?? {}).flat())
      .reduce((sum, x) => sum + (x.errors ?? 0), 0);
    const floorCell = floor
      ? [
          `${fmt(m(name('paced'), 'passthrough', 'cpuMsPerToken'), 4)} (${fmt(m(name('paced'), 'passthrough', 'tokensPerSecond'), 0)}/s)`,
        ]
      : [];
    row([
      cell.clients,
      cell.tokens,
      ...figures.map((f, i) => ratioCell(f, i)),
      ...extras.map((f) => ratioCell(f)),
      ...floorCell,
      errors,
    ]);
  }
  // The targets are against the reference; an A/B table (against the baseline build) has none, nor has a smoke run.
  if (other !== 'reference' || smoke) return;
  lines.push('');
  figures.forEach(([label, , , , [compare, bound]], i) => {
    const w = worst[i];
    if (!w) return lines.push(`worst ${label}: –`);
    const met = compare === '<=' ? w.ratio <= bound : w.ratio >= bound;
    lines.push(
      `worst ${label}: ${w.ratio.toFixed(2)}x at ${w.cell.clients} clients × ${w.cell.tokens} tokens; target ${compare} ${bound}x: ${met ? 'met' : 'MISSED'}`,
    );
  });
}

await main();
process.exit(process.exitCode ?? 0);
