// What a kept thread costs the in-memory thread store: heap, memory outside the heap, RSS, and what the store's own
// byte count (MAX_THREAD_STORE_MB's bound) says, per thread, and the time it takes to store them. Runs on the built
// store (`npm run build` first):
//
//   node --expose-gc scripts/store-footprint.mjs                  10,000 threads, one finished run of 200 tokens each
//   node --expose-gc scripts/store-footprint.mjs --tokens 0       the same, runs that produced nothing
//   node --expose-gc scripts/store-footprint.mjs --threads 5000   fewer threads
//   node --expose-gc scripts/store-footprint.mjs --dist ../other/dist   another build (an A/B between checkouts)
//
// Each thread is what one request makes: a new thread, a user message as its input, a run of one assistant text of
// `--tokens` chunks (a word each, as a model streams them), then RunFinished. No figure is asserted.
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    threads: { type: 'string', default: '10000' },
    tokens: { type: 'string', default: '200' },
    dist: { type: 'string', default: new URL('../dist', import.meta.url).pathname },
  },
});
const threads = Number(values.threads);
const tokens = Number(values.tokens);
if (typeof globalThis.gc !== 'function') {
  console.error('Run it with node --expose-gc.');
  process.exit(1);
}

const { MemoryThreadStore } = await import(pathToFileURL(resolve(values.dist, 'src/threads/memory.js')).href);

const WORDS = ['the', 'gateway', 'streams', 'tokens', 'to', 'a', 'client', 'while', 'it', 'keeps', 'threads', 'of'];

function measure() {
  globalThis.gc();
  globalThis.gc();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, outside: usage.external + usage.arrayBuffers, rss: usage.rss };
}

const store = new MemoryThreadStore({
  ttlSeconds: 3600,
  maxRunsPerThread: 20,
  maxThreads: threads,
  maxBytes: 2 ** 40,
  claimTimeoutMs: 60_000,
});
const before = measure();
const cpuStart = process.cpuUsage();
const wallStart = process.hrtime.bigint();
for (let t = 0; t < threads; t++) {
  const threadId = randomUUID();
  const user = { kind: 'text', id: randomUUID(), role: 'user', content: `Tell me about thread number ${t}, please.` };
  const { runId } = await store.claim(threadId, randomUUID(), randomUUID());
  const log = store.open(threadId, runId, { messages: [user], newMessages: [user] });
  const messageId = randomUUID();
  let sequence = 0;
  log.append({ type: 'RunStarted', threadId, runId, sequence: sequence++ });
  log.append({ type: 'TextMessageStart', messageId, parentMessageId: null, role: 'assistant', sequence: sequence++ });
  for (let i = 0; i < tokens; i++) {
    // A fresh string per chunk, as a parsed upstream chunk is.
    const content = ` ${WORDS[(t + i) % WORDS.length]}${i % 7 === 0 ? ',' : ''}`;
    log.append({ type: 'TextMessageContent', messageId, content, sequence: sequence++ });
  }
  log.append({ type: 'TextMessageEnd', messageId, status: { code: 'Success' }, sequence: sequence++ });
  log.append({ type: 'RunFinished', status: { code: 'Success' }, sequence });
}
const wallMs = Number(process.hrtime.bigint() - wallStart) / 1e6;
const cpu = process.cpuUsage(cpuStart);
const after = measure();
if (store.size.threads !== threads) throw new Error(`Only ${store.size.threads} threads kept.`);

const per = (bytes) => `${(bytes / threads).toFixed(0).padStart(6)} B`;
console.log(`${threads} threads, one finished run of ${tokens} tokens each (${values.dist})`);
console.log(`  heap used            ${per(after.heap - before.heap)} per thread`);
console.log(`  external + buffers   ${per(after.outside - before.outside)} per thread`);
console.log(`  RSS growth           ${per(after.rss - before.rss)} per thread`);
console.log(`  store's byte count   ${per(store.size.bytes)} per thread`);
console.log(
  `  storing took         ${wallMs.toFixed(0)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU ` +
    `(${((wallMs * 1000) / threads).toFixed(1)} µs per thread)`,
);
await store.close();
