import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { GatewayError } from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import type { RunHandle } from '../engine/run.js';
import type { StoreCensus, ThreadStore } from '../threads/store.js';

export type RunKind = 'model' | 'agent';

/**
 * The gateway's Prometheus metrics (prom-client), in a registry of its own (several gateways may
 * share a process), with Node's default process metrics. Nothing here runs per token: a run's chunks
 * are counted in a local number and added once it ends; its first chunk is timed once.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly runs: Counter<'kind' | 'outcome'>;
  private readonly runDuration: Histogram<'kind'>;
  private readonly firstToken: Histogram<'kind'>;
  private readonly chunks: Counter<'kind'>;
  private readonly upstreamCalls: Counter<'upstream' | 'outcome'>;
  private readonly upstreamRetries: Counter<'upstream' | 'reason'>;
  private readonly storeOperations: Counter<'store' | 'operation' | 'outcome'>;
  private readonly httpStreams: Gauge;
  private readonly sockets: Gauge;
  private readonly slowReaders: Counter;

  /**
   * `inputHeld`: the bytes of input held now (maxBufferedInputMb's budget); `mcpServers`: the MCP servers by source,
   * connected or not (McpServers.census); `storeCensus`: what a thread store in this process keeps (the memory
   * store's census; none for Redis, whose own INFO tells). All read when the metrics are collected.
   */
  constructor(
    activeRuns: () => number,
    inputHeld: () => number,
    mcpServers: () => Record<string, { connected: number; down: number }>,
    storeCensus?: () => StoreCensus,
  ) {
    processRegistry(); // started now, so that event-loop lag is measured from the start
    const registers = [this.registry];
    this.runs = new Counter({
      name: 'copilot_gateway_runs_total',
      help: 'Runs that ended, by kind (model, agent) and outcome (Success, or the error code).',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.runDuration = new Histogram({
      name: 'copilot_gateway_run_duration_seconds',
      help: 'How long runs took, from start to their terminal status.',
      labelNames: ['kind'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.firstToken = new Histogram({
      name: 'copilot_gateway_time_to_first_token_seconds',
      help: "From a run's start to its first streamed chunk of text or action arguments.",
      labelNames: ['kind'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers,
    });
    this.chunks = new Counter({
      name: 'copilot_gateway_tokens_streamed_total',
      help:
        'Chunks of text and action arguments streamed (a chunk is a token or, when tokens arrive together, ' +
        'several), added when each run ends.',
      labelNames: ['kind'],
      registers,
    });
    this.upstreamCalls = new Counter({
      name: 'copilot_gateway_upstream_calls_total',
      help: 'Calls of a run to its model or agent, by upstream and outcome (ok, or the error code).',
      labelNames: ['upstream', 'outcome'],
      registers,
    });
    this.upstreamRetries = new Counter({
      name: 'copilot_gateway_upstream_retries_total',
      help:
        'Upstream HTTP calls retried (models, agents, remote endpoints, discovery, guardrails), by upstream and ' +
        'reason.',
      labelNames: ['upstream', 'reason'],
      registers,
    });
    this.storeOperations = new Counter({
      name: 'copilot_gateway_thread_store_operations_total',
      help:
        'Thread-store operations (claim, open, thread, run, owner, stop), by store and outcome (ok, or the error ' +
        'code).',
      labelNames: ['store', 'operation', 'outcome'],
      registers,
    });
    new Gauge({
      name: 'copilot_gateway_active_runs',
      help: 'Runs going in this process.',
      registers,
      collect() {
        this.set(activeRuns());
      },
    });
    new Gauge({
      name: 'copilot_gateway_input_held_bytes',
      help:
        'Input held now against maxBufferedInputMb: request bodies being read and the input of runs in flight (past ' +
        'the limit, new input is refused OVERLOADED).',
      registers,
      collect() {
        this.set(inputHeld());
      },
    });
    new Gauge({
      name: 'copilot_gateway_mcp_servers',
      help:
        'MCP servers by source (configured; requested: named by requests and kept; retired: pushed out, waiting to ' +
        "be closed) and state (connected, or down: unreachable or not yet connected; a down server's tools are " +
        'not offered).',
      labelNames: ['source', 'state'],
      registers,
      collect() {
        for (const [source, counts] of Object.entries(mcpServers())) {
          this.set({ source, state: 'connected' }, counts.connected);
          this.set({ source, state: 'down' }, counts.down);
        }
      },
    });
    if (storeCensus) registerStoreCensus(storeCensus, registers);
    this.httpStreams = new Gauge({
      name: 'copilot_gateway_active_http_streams',
      help: 'HTTP responses streaming now (multipart, SSE, AG-UI).',
      registers,
    });
    this.slowReaders = new Counter({
      name: 'copilot_gateway_slow_readers_dropped_total',
      help: 'Connections closed because the output held for clients that did not read passed maxBufferedOutputMb.',
      registers,
    });
    this.sockets = new Gauge({
      name: 'copilot_gateway_websocket_connections',
      help: 'WebSocket connections open now.',
      registers,
    });
  }

  /** Follows one run: its first chunk, its chunks, its end. */
  observeRun(run: RunHandle, kind: RunKind): void {
    const started = performance.now();
    let chunks = 0;
    const unsubscribe = run.subscribe((event: SequencedEvent) => {
      if (event.type !== 'TextMessageContent' && event.type !== 'ActionExecutionArgs') return;
      if (chunks++ === 0) this.firstToken.observe({ kind }, (performance.now() - started) / 1000);
    });
    void run.finished.then((status) => {
      unsubscribe();
      this.runs.inc({ kind, outcome: status.code === 'Failed' ? status.details.code : status.code });
      this.runDuration.observe({ kind }, (performance.now() - started) / 1000);
      if (chunks > 0) this.chunks.inc({ kind }, chunks);
    });
  }

  upstreamCall(upstream: string, error: unknown): void {
    this.upstreamCalls.inc({ upstream, outcome: error === undefined ? 'ok' : codeOf(error) });
  }

  upstreamRetry(upstream: string, reason: string): void {
    this.upstreamRetries.inc({ upstream, reason });
  }

  httpStream(delta: 1 | -1): void {
    this.httpStreams.inc(delta);
  }

  slowReadersDropped(count: number): void {
    this.slowReaders.inc(count);
  }

  webSocket(delta: 1 | -1): void {
    this.sockets.inc(delta);
  }

  /** The store, with each of its operations counted (appends are not: they are per event). */
  meteredStore(store: ThreadStore): ThreadStore {
    const count = <T>(operation: string, pending: Promise<T>): Promise<T> =>
      pending.then(
        (value) => {
          this.storeOperations.inc({ store: store.kind, operation, outcome: 'ok' });
          return value;
        },
        (error: unknown) => {
          this.storeOperations.inc({ store: store.kind, operation, outcome: codeOf(error) });
          throw error;
        },
      );
    return {
      get kind() {
        return store.kind;
      },
      get claimTimeoutMs() {
        return store.claimTimeoutMs;
      },
      claim: (...args) => count('claim', store.claim(...args)),
      owner: (threadId) => count('owner', store.owner(threadId)),
      release: (threadId, runId) => store.release(threadId, runId),
      open: (...args) => {
        this.storeOperations.inc({ store: store.kind, operation: 'open', outcome: 'ok' });
        return store.open(...args);
      },
      thread: (threadId, read) => count('thread', store.thread(threadId, read)),
      run: (threadId, runId) => count('run', store.run(threadId, runId)),
      follow: (...args) => store.follow(...args),
      readUpTo: (...args) => count('readUpTo', store.readUpTo(...args)),
      requestStop: (...args) => count('stop', store.requestStop(...args)),
      summary: (threadId) => count('summary', store.summary(threadId)),
      list: (query) => count('list', store.list(query)),
      update: (...args) => count('update', store.update(...args)),
      remove: (...args) => count('remove', store.remove(...args)),
      onStopRequest: (handler) => store.onStopRequest(handler),
      start: store.start ? () => store.start!() : undefined,
      census: store.census?.bind(store),
      healthy: () => store.healthy(),
      close: () => store.close(),
    };
  }

  /** The text Prometheus scrapes: this gateway's metrics, then the process's. */
  async render(): Promise<{ contentType: string; body: string }> {
    const [own, process] = await Promise.all([this.registry.metrics(), processRegistry().metrics()]);
    return { contentType: this.registry.contentType, body: `${own}\n${process}` };
  }
}

/** The memory store's threads and bytes against its bounds, and the threads it let go of. */
function registerStoreCensus(census: () => StoreCensus, registers: Registry[]): void {
  new Gauge({
    name: 'copilot_gateway_thread_store_threads',
    help:
      'Threads the memory thread store keeps now: within maxThreads (MAX_THREADS) but for those a run or a reader ' +
      'holds, which are never let go of.',
    registers,
    collect() {
      this.set(census().threads);
    },
  });
  new Gauge({
    name: 'copilot_gateway_thread_store_bytes',
    help:
      "The memory thread store's size as its byte bound (maxBytes, MAX_THREAD_STORE_MB) counts it: messages, " +
      'events and states.',
    registers,
    collect() {
      this.set(census().bytes);
    },
  });
  new Counter({
    name: 'copilot_gateway_thread_store_dropped_total',
    help:
      'Threads the memory thread store let go of, by reason: bound (the least recently used, to stay within ' +
      'maxThreads and maxBytes) or expired (unused for ttlSeconds). Threads deleted on request are not counted.',
    labelNames: ['reason'],
    registers,
    collect() {
      const { dropped } = census();
      this.reset();
      this.inc({ reason: 'bound' }, dropped.bound);
      this.inc({ reason: 'expired' }, dropped.expired);
    },
  });
}

let processMetrics: Registry | undefined;

/**
 * Node's process metrics (CPU, memory, event-loop lag, GC), collected once per process: prom-client
 * starts an event-loop monitor and a GC observer for them that are never stopped, so each gateway
 * (tests start hundreds) must not start its own.
 */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics, prefix: 'copilot_gateway_' });
  }
  return processMetrics;
}

function codeOf(error: unknown): string {
  const code = (error as GatewayError | undefined)?.code;
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'INTERNAL_SERVER_ERROR';
}
