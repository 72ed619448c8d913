// The growth scenario (issue 32): what one more run costs the gateway on a thread with N earlier turns, against a
// run on a fresh thread. A process of its own, like load.mjs, driving a gateway started by run.mjs.
//
// node bench/growth.mjs '<json config>'  → one JSON line of results on stdout.
//
// Config: url (the GraphQL endpoint), pid (the gateway's), redisPort (when the gateway keeps threads in Redis),
// sizes (earlier turns, e.g. [0, 1, 100, 1000]), runs (measured runs per size), tokens (per answer).
//
// The thread is built through the gateway, turn after turn, as a client that sends only its new message does
// (the gateway completes the conversation from its store: withHistory): every earlier turn is a real run, stored as
// the store stores any. Each measured run is then one more such turn, one at a time, and for each:
// - the gateway's CPU: the sum over its threads of /proc/<pid>/task/<tid>/schedstat's first field (nanoseconds on
//   a CPU), read before the request and once its answer has ended;
// - what Redis did meanwhile (bench/redis.mjs): bytes it sent (the gateway's reads), bytes it took, commands;
// - time to first token: from sending the request to the first token's arrival (tokens are stamped, no pace).
// Each measured run is made twice over: as a client that sends only its new message ("new only", the store gives the
// rest) and as the stock client does, the whole conversation with the thread's own message ids ("whole", read with
// copilotThread before the run, unmeasured).
// The model is sent the whole conversation, whatever the store: that cost grows with the thread on any gateway. To
// tell it from the store's, each size is also run as a *control*: a fresh thread whose request carries a
// conversation of the same N turns (same sizes), so that the gateway parses and sends the same history but its
// store has nothing of the thread. "Store's share" = the old thread's run less the control's.
// At sizes up to 10, each measured run is on a thread of its own built to N turns (so that N stays N); above, the
// runs follow each other on one thread (N to N + runs - 1; the thread grown for one size is grown on to the next).
// `copilotThread` and a `/threads` page are timed at each size too (median of 5, sequential), and on Redis the memory
// the thread read takes there (MEMORY USAGE of its keys).
import http from 'node:http';
import { readFileSync, readdirSync } from 'node:fs';
import { command, difference, stats, statsOverhead } from './redis.mjs';

const config = JSON.parse(process.argv[2]);
const stock = JSON.parse(readFileSync(new URL('./stock-request.json', import.meta.url), 'utf8'));
const url = new URL(config.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const now = () => performance.now();
const tokens = config.tokens ?? 5;

/** The gateway's CPU so far, in milliseconds, at nanosecond resolution: every thread's time on a CPU. */
function cpuMs() {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${config.pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${config.pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return ns / 1e6;
}

let counter = 0;
const id = (kind) => `growth-${kind}-${process.pid}-${++counter}`;
const createdAt = new Date().toISOString();
const text = (role, content) => ({ id: id(role), createdAt, textMessage: { role, content } });
const prompt = (turn) => `Turn ${turn}: tell me more [tokens=${tokens}][stamp]`;
/** An answer as the fake model gives one: `tokens` stamps (" t<epoch ms>"), the same length as the real ones. */
const answer = () => ' t1764379000000.0'.repeat(tokens);

function post(body, path = url.pathname) {
  return new Promise((resolve, reject) => {
    const sent = now();
    let first;
    let tail = '';
    let bytes = 0;
    const chunks = [];
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        agent,
        headers: {
          accept: 'multipart/mixed, application/json',
          'content-type': 'application/json',
          ...(body === undefined ? {} : { 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          bytes += chunk.length;
          if (first === undefined && / t\d{13}\.\d/.test(tail + chunk)) first = now() - sent;
          tail = (tail + chunk).slice(-64);
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            ms: now() - sent,
            firstTokenMs: first,
            tail,
            bytes,
            body: chunks.join(''),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One turn: a run of the thread with these messages; rejects unless it streamed and ended with Success. */
async function turn(threadId, messages) {
  const data = structuredClone(stock.variables.data);
  data.threadId = threadId;
  data.messages = messages;
  const body = JSON.stringify({ operationName: stock.operationName, query: stock.query, variables: { data } });
  const result = await post(body);
  if (result.status !== 200 || !result.tail.includes('"hasNext":false') || result.firstTokenMs === undefined)
    throw new Error(`a run on ${threadId} failed (HTTP ${result.status}): ...${result.tail}`);
  return result;
}

/** The next turn of a thread built through the gateway: the new user message only (the store has the rest). */
const turns = new Map();
function nextTurn(threadId) {
  const n = (turns.get(threadId) ?? 0) + 1;
  turns.set(threadId, n);
  return turn(threadId, [text('user', prompt(n))]);
}

async function grow(threadId, size) {
  while ((turns.get(threadId) ?? 0) < size) await nextTurn(threadId);
}

/** A turn as the stock client sends it: the thread's transcript (read back, as after a reload), then a new message. */
async function wholeTurn(threadId) {
  const read = await readThread(threadId);
  const transcript = JSON.parse(read.body).data.copilotThread.messages;
  const n = (turns.get(threadId) ?? 0) + 1;
  turns.set(threadId, n);
  const messages = transcript.map((m) => ({
    id: m.id,
    createdAt: m.createdAt,
    textMessage: { role: m.role, content: Array.isArray(m.content) ? m.content.join('') : m.content },
  }));
  messages.push(text('user', prompt(n)));
  return () => turn(threadId, messages);
}

/** A conversation of `size` turns as a client would hold it, with the run's new message last (the control). */
function conversation(size) {
  const messages = [];
  for (let i = 1; i <= size; i++) messages.push(text('user', prompt(i)), text('assistant', answer()));
  messages.push(text('user', prompt(size + 1)));
  return messages;
}

const overhead = config.redisPort ? await statsOverhead(config.redisPort) : undefined;

/**
 * Runs `run` and measures it: the gateway's CPU, Redis's counters, the time to first token. The gateway is first left
 * idle a moment, so that what it still does for the request before (a run's last write, the garbage of a 300 KB
 * thread read) is not counted in this one.
 */
async function measured(run) {
  await new Promise((resolve) => setTimeout(resolve, config.settleMs ?? 30));
  const before = config.redisPort ? await stats(config.redisPort) : undefined;
  const cpu = cpuMs();
  const result = await run();
  const cpuUsed = cpuMs() - cpu;
  const redis = before ? difference(before, await stats(config.redisPort), overhead) : undefined;
  return { cpuMs: cpuUsed, firstTokenMs: result.firstTokenMs, ms: result.ms, redis };
}

const median = (values) => {
  const sorted = values.filter((v) => v != null && Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function summarize(samples) {
  return {
    cpuMs: median(samples.map((s) => s.cpuMs)),
    firstTokenMs: median(samples.map((s) => s.firstTokenMs)),
    latencyMs: median(samples.map((s) => s.ms)),
    ...(samples[0].redis
      ? {
          redisReadBytes: median(samples.map((s) => s.redis.readBytes)),
          redisWrittenBytes: median(samples.map((s) => s.redis.writtenBytes)),
          redisCommands: median(samples.map((s) => s.redis.commands)),
          redisScripts: median(samples.map((s) => s.redis.scripts)),
          redisCpuMs: median(samples.map((s) => s.redis.cpuMs)),
        }
      : {}),
  };
}

/** Median time (ms) of 5 sequential reads, and the size of the last answer. */
async function timeRead(read) {
  const times = [];
  let bytes = 0;
  for (let i = 0; i < 5; i++) {
    const result = await read();
    if (result.status !== 200) throw new Error(`a read failed (HTTP ${result.status}): ${result.body.slice(0, 300)}`);
    times.push(result.ms);
    bytes = result.bytes;
  }
  return { ms: median(times), bytes };
}

const THREAD_QUERY = `query Thread($threadId: ID!) {
  copilotThread(threadId: $threadId) { threadId messages { __typename id createdAt ... on TextMessageOutput { content role } } runs { runId status { ... on BaseResponseStatus { code } } } }
}`;
const readThread = (threadId) =>
  post(JSON.stringify({ query: THREAD_QUERY, variables: { threadId } })).then((r) => {
    if (!r.body.includes(`"threadId":"${threadId}"`)) r.status = 500;
    return r;
  });
const readPage = () => post(undefined, `${url.pathname}/threads?agentId=default&limit=20`);

// Warm up (JIT, connections, the store's first writes): runs on fresh threads and a short thread, not measured.
for (let i = 0; i < (config.warmup ?? 30); i++) await turn(id('warm'), [text('user', prompt(1))]);
await grow(id('warmthread'), 10);

const results = [];
const grown = id('thread');
const startedAt = now();
for (const size of config.sizes) {
  const old = [];
  const whole = [];
  let threadForReads;
  if (size === 0) {
    // A fresh thread: its first run, the new message alone.
    for (let i = 0; i < config.runs; i++) {
      const threadId = id('fresh');
      old.push(await measured(() => turn(threadId, [text('user', prompt(1))])));
      whole.push(old[old.length - 1]);
      threadForReads = threadId;
    }
  } else if (size <= 10) {
    for (let i = 0; i < config.runs; i++) {
      const threadId = id('small');
      await grow(threadId, size);
      old.push(await measured(() => nextTurn(threadId)));
      const other = id('small');
      await grow(other, size);
      whole.push(await measured(await wholeTurn(other)));
      threadForReads = threadId;
    }
  } else {
    const buildStart = now();
    await grow(grown, size);
    const buildMs = now() - buildStart;
    console.error(`   grew a thread to ${size} turns in ${(buildMs / 1000).toFixed(1)} s`);
    for (let i = 0; i < config.runs; i++) old.push(await measured(() => nextTurn(grown)));
    for (let i = 0; i < config.runs; i++) whole.push(await measured(await wholeTurn(grown)));
    threadForReads = grown;
  }
  // The control: fresh threads sent the same N turns in the request.
  const control = [];
  for (let i = 0; i < config.runs; i++) {
    const messages = conversation(size);
    control.push(await measured(() => turn(id('control'), messages)));
  }
  const thread = await timeRead(() => readThread(threadForReads));
  const page = await timeRead(readPage);
  // What the thread takes in Redis: MEMORY USAGE of each of its keys (its record, its runs' records and logs), every
  // value counted (SAMPLES 0: by default Redis extrapolates a hash from 5 of its fields, which counts a transcript
  // field about twice over).
  const redisThreadBytes =
    typeof config.redisPort === 'number'
      ? Number(
          await command(
            config.redisPort,
            'EVAL',
            "local total = 0 for _, key in ipairs(redis.call('KEYS', ARGV[1])) do " +
              "total = total + (redis.call('MEMORY', 'USAGE', key, 'SAMPLES', 0) or 0) end return total",
            '0',
            `cg:{${threadForReads}}:*`,
          ),
        )
      : undefined;
  results.push({
    size,
    old: summarize(old),
    whole: summarize(whole),
    control: summarize(control),
    copilotThreadMs: thread.ms,
    copilotThreadBytes: thread.bytes,
    threadsPageMs: page.ms,
    redisThreadBytes,
  });
}
agent.destroy();
process.stdout.write(`${JSON.stringify({ sizes: results, seconds: (now() - startedAt) / 1000 })}\n`);
process.exit(0);
