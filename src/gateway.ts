import { createServer, type IncomingMessage, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { AgUiTransport } from './ag-ui/serve.js';
import { OpenAITranscriber } from './adapters/transcription.js';
import { createApollo } from './graphql/apollo.js';
import { gatewayErrorFormatter } from './graphql/error-answers.js';
import type { ExecutorName } from './graphql/executor.js';
import { fastExecutor } from './graphql/fast/index.js';
import { stockExecutor } from './graphql/stock.js';
import { buildSchema } from './graphql/schema.js';
import { keyMatcher } from './auth/api-keys.js';
import { OfflineExplorer } from './transports/explorer.js';
import { createHttpHandler } from './transports/http/handler.js';
import { onCheckContinue } from './transports/http/continue.js';
import { attachWebSocketTransport } from './transports/ws/server.js';
import { SlowReaderGuard } from './transports/slow-readers.js';
import {
  LISTEN_BACKLOG,
  followsEndedError,
  listenError,
  listenerCloser,
  apolloStartedIn,
  readiness,
  shutdownError,
  startThreadStore,
  type GatewayState,
} from './gateway/lifecycle.js';
import { resolveOptions, type GatewayOptions } from './gateway/options.js';
import { GATEWAY_VERSION } from './gateway/version.js';
import { wireGateway } from './gateway/wiring.js';

export type { GatewayOptions };

export interface Gateway {
  /** The node:http server serving HTTP and WebSocket. */
  readonly server: Server;
  readonly path: string;
  /** The adapter's name: "demo", "openai", "empty", … */
  readonly mode: string;
  /** Which executor runs the operations (GatewayOptions.executor). */
  readonly executor: ExecutorName;
  /** Whether Apollo's usage reporting is on, every HTTP request then passing through Apollo's pipeline. */
  readonly apolloUsageReporting: boolean;
  /**
   * Starts listening; resolves with the GraphQL endpoint's URL, on the address it listens on. `host`
   * defaults to 127.0.0.1 (loopback only) in development and 0.0.0.0 (every interface) in production.
   * A port in use (or not allowed, or a host that is not this machine's) is a ConfigurationError.
   */
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Drains, then closes: readiness goes false at once; after shutdownDelayMs (default 0), during which
   * everything is served as before, new runs are refused (SHUTTING_DOWN);
   * runs in flight get `graceMs` (default shutdownGraceMs) to finish; those still going are ended
   * with a Failed status (SHUTTING_DOWN), their records completed in the thread store; then
   * WebSocket clients are closed with 1001 and everything is released.
   */
  shutdown(graceMs?: number): Promise<void>;
  /**
   * Stops accepting work, ends the runs still going (SHUTTING_DOWN, recorded), ends open connections
   * and releases the port, at once: `shutdown` lets runs finish first.
   */
  close(): Promise<void>;
}

/** Builds the gateway. Options are checked here; a mistake throws a ConfigurationError that says what to fix. */
export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = resolveOptions(options);
  const logger = config.logger;
  const schema = buildSchema();
  // Errors are shaped by one formatter, in Apollo's pipeline and in the answers the fast executor makes itself.
  const formatError = gatewayErrorFormatter(config.sandbox);
  // Apollo's usage reporting needs every later payload, and every operation to pass through Apollo's pipeline.
  const executor =
    config.executor === 'stock'
      ? stockExecutor()
      : fastExecutor(schema, { directHttp: !config.apolloUsageReporting, formatError });
  const { upstream, endpoints, mcp, store, threads, limiter, access, launcher, cors, hosts, metrics, inputBudget } =
    wireGateway(config);
  // A body or WebSocket message larger than all the input held at once could never be read: it is refused as too
  // large (413, 1009), a final answer, instead of OVERLOADED, which asks the client to send it again.
  const bodyLimit = Math.min(config.maxBodyBytes, inputBudget.limitBytes);

  const server = createServer({
    noDelay: true,
    keepAliveTimeout: 65_000,
    // Where Node offers it (24, for one), a request with an Upgrade header for another protocol than WebSocket (`curl
    // --http2` offers h2c) is served as the request it is; without it, every such request goes to the WebSocket
    // server, which refuses it (an outside check found `/health` answered 400 that way).
    ...({ shouldUpgradeCallback: isWebSocketUpgrade } as object),
  });
  const closeListener = listenerCloser(server);
  const slowReaders = new SlowReaderGuard(server, {
    budgetBytes: config.maxBufferedOutputMb * 1024 * 1024,
    logger,
    onDropped: metrics ? (count) => metrics.slowReadersDropped(count) : undefined,
  });
  threads.limitReads(() => slowReaders.admit());
  const ws = attachWebSocketTransport({
    server,
    schema,
    executor,
    launcher,
    path: config.path,
    cors,
    hosts,
    logger,
    maxPayloadBytes: bodyLimit,
    keepAliveMs: config.keepAliveMs,
    introspection: config.sandbox,
    access,
    onConnection: metrics ? (delta) => metrics.webSocket(delta) : undefined,
    holdOutput: (socket) => slowReaders.output(socket),
    draining: () => state.phase === 'draining',
    inputBudget,
  });
  const apollo = createApollo({
    schema,
    executor,
    server,
    drainWebSocket: ws.dispose,
    sandbox: config.sandbox,
    formatError,
    logger,
    usageReporting: config.apolloUsageReporting,
  });
  const handleRequest = createHttpHandler({
    apollo,
    launcher,
    path: config.path,
    cors,
    hosts,
    logger,
    maxBodyBytes: bodyLimit,
    inputBudget,
    keepAliveMs: config.keepAliveMs,
    streamWriteIntervalMs: config.streamWriteIntervalMs,
    sandbox: config.sandbox,
    explorer: new OfflineExplorer(config.path),
    agUi: new AgUiTransport({
      launcher,
      path: config.path,
      keepAliveMs: config.keepAliveMs,
      version: GATEWAY_VERSION,
      onStream: metrics && ((delta) => metrics.httpStream(delta)),
      transcriber: config.transcription && new OpenAITranscriber(config.transcription, upstream),
      inputBudget,
      reasoning: config.agUiReasoning,
      keepOutput: (res, bytes) => slowReaders.keep(res, bytes),
      holdOutput: (res) => slowReaders.holding(res),
    }),
    readiness: () => readiness(state.phase, store, config.threads.onStoreFailure, endpoints),
    access,
    metrics: metrics && {
      render: () => metrics.render(),
      token: config.metrics.token === undefined ? undefined : keyMatcher([config.metrics.token]),
    },
    onStream: metrics && ((delta) => metrics.httpStream(delta)),
    executor,
    holdOutput: (socket) => slowReaders.output(socket),
    apolloServing: () => state.phase !== 'closed' && apolloStartedIn(state),
    shuttingDown: () => state.phase === 'leaving' || state.phase === 'draining',
  });
  server.on('request', handleRequest);
  // `Expect: 100-continue` is answered by the body reader, once it reads (transports/http/continue.ts).
  server.on('checkContinue', onCheckContinue(server));

  let state: GatewayState = { phase: 'created', apolloStarted: false };
  /** Closes once: a second call gets the first one's promise, settled when everything is released. */
  const close = (): Promise<void> => {
    if (state.phase === 'closed') return state.closed;
    if (state.phase === 'leaving') state.endDelay?.();
    const closing: Extract<GatewayState, { phase: 'closed' }> = {
      phase: 'closed',
      closed: Promise.resolve(),
      apolloStarted: apolloStartedIn(state),
    };
    state = closing;
    closing.closed = release();
    return closing.closed;
  };
  const release = async (): Promise<void> => {
    // Runs still going (those that outlive their clients too) end now, their records completed in the
    // store before it closes: nothing is left running, or Pending in Redis, after close().
    await launcher.abortAll(shutdownError());
    // Joins and AG-UI connects following runs of other instances end too (told SHUTTING_DOWN), so that
    // nothing holds the HTTP server's drain.
    threads.endFollows(followsEndedError());
    for (const endpoint of endpoints) endpoint.stop();
    slowReaders.stop();
    if (state.phase === 'closed' && state.apolloStarted) await apollo.stop();
    await mcp.close();
    await limiter?.close();
    await threads.close();
    await upstream.close();
    await config.adapter.close?.();
  };
  return {
    server,
    path: config.path,
    mode: config.adapter.name,
    executor: executor.name,
    apolloUsageReporting: config.apolloUsageReporting,
    async listen(port = 4000, host = config.development ? '127.0.0.1' : '0.0.0.0') {
      if (state.phase !== 'created') throw new Error(`The gateway cannot listen: it is ${state.phase}.`);
      const starting: Extract<GatewayState, { phase: 'starting' }> = {
        phase: 'starting',
        apolloStarted: state.apolloStarted,
      };
      state = starting;
      if (!starting.apolloStarted) {
        try {
          await apollo.start();
        } catch (error) {
          if (state === starting) state = { phase: 'created', apolloStarted: false };
          throw error;
        }
        starting.apolloStarted = true;
      }
      await stillStarting(starting);
      try {
        await startThreadStore(threads, config.threads, logger);
      } catch (error) {
        if (state === starting) state = { phase: 'created', apolloStarted: true };
        throw error;
      }
      await stillStarting(starting);
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          // The longest queue of connections not yet accepted the system allows (see LISTEN_BACKLOG).
          server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
            server.off('error', reject);
            resolve();
          });
        });
      } catch (error) {
        if (state === starting) state = { phase: 'created', apolloStarted: true };
        throw listenError(error, port, host);
      }
      if (state !== starting) server.close();
      await stillStarting(starting);
      state = { phase: 'listening' };
      for (const endpoint of endpoints) endpoint.start();
      mcp.start();
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return `http://${shownHost}:${address.port}${config.path}`;
    },
    shutdown(graceMs = config.shutdownGraceMs) {
      if (state.phase === 'leaving' || state.phase === 'draining') return state.drained;
      if (state.phase !== 'listening') return close();
      let settle!: { resolve: () => void; reject: (error: unknown) => void };
      const drained = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      state = { phase: 'leaving', drained };
      leave(drained, graceMs).then(settle.resolve, settle.reject);
      return drained;
    },
    close,
  };

  /**
   * Throws if the gateway was closed while `listen` waited (it stays closed, and serves nothing): Apollo, if its
   * start ended after the close, is stopped here, once the close has released the rest.
   */
  async function stillStarting(starting: Extract<GatewayState, { phase: 'starting' }>): Promise<void> {
    if (state === starting) return;
    if (state.phase === 'closed' && starting.apolloStarted && !state.apolloStarted) {
      await state.closed;
      await apollo.stop();
    }
    throw new Error('The gateway was closed while it was starting.');
  }

  /** shutdown(): the delay (served as before, not ready), the drain, the listener's end, close(). */
  async function leave(drained: Promise<void>, graceMs: number): Promise<void> {
    const delayMs = config.shutdownDelayMs;
    if (delayMs > 0) {
      // Served as before, but not ready: a load balancer that reads /ready (or a platform taking the instance
      // out of rotation) stops sending before anything is refused. close() meanwhile ends the wait.
      logger.info({ delayMs }, 'shutting down: not ready; still serving everything for shutdownDelayMs');
      const waited = new AbortController();
      if (state.phase === 'leaving') state.endDelay = () => waited.abort();
      await sleep(delayMs, undefined, { signal: waited.signal }).catch(() => undefined);
      if (state.phase !== 'leaving') return close();
    }
    state = { phase: 'draining', drained };
    const started = Date.now();
    logger.info({ activeRuns: launcher.activeRuns, graceMs }, 'draining: no new runs; waiting for the runs in flight');
    // Connections that are idle now are closed; busy ones get "Connection: close" on their next answer.
    // WebSockets close as soon as they have no operation under way.
    server.closeIdleConnections();
    ws.drain();
    const grace = AbortSignal.timeout(graceMs);
    await launcher.drain(grace);
    const left = launcher.activeRuns;
    if (left > 0) {
      logger.warn({ runs: left, graceMs }, 'the grace period is over: ending the runs still going');
      await launcher.abortAll(shutdownError());
    }
    logger.info({ drainedInMs: Date.now() - started, ended: left }, 'drained; closing');
    // No new connections; the requests already on their way to this instance are answered (refused).
    await closeListener(1_000);
    await close();
  }
}

/** Whether a request asks to become a WebSocket (the only upgrade the gateway serves). */
function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return req.headers.upgrade?.toLowerCase() === 'websocket';
}
