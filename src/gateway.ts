import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import type { Logger } from 'pino';
import { McpServers } from './actions/mcp.js';
import { ServerActionRegistry } from './actions/server-action.js';
import { StaticAgentSource } from './agents/agent.js';
import { CopilotKitEndpoint } from './agents/copilotkit-endpoint.js';
import type { BuiltInAgentDependencies } from './agents/definitions.js';
import { AgentRegistry } from './agents/registry.js';
import { ConfigurationError, GatewayError } from './core/errors.js';
import { keyMatcher } from './auth/api-keys.js';
import { MemoryRateLimiter, type RateLimiter, type ResolvedRateLimits } from './limits/rate-limiter.js';
import { RedisRateLimiter } from './limits/redis-rate-limiter.js';
import { GatewayMetrics } from './observability/metrics.js';
import { RunTracing } from './observability/tracing.js';
import type { UpstreamCallObserver } from './engine/drivers/agent.js';
import { AccessControl } from './transports/access.js';
import { Guardrails } from './engine/guardrails.js';
import { RunLauncher } from './engine/launcher.js';
import { ThreadService } from './engine/thread-service.js';
import { createThreadStore, type ResolvedThreadsOptions } from './threads/options.js';
import { RedisThreadStore, redactedUrl } from './threads/redis.js';
import type { ThreadStore } from './threads/store.js';
import { ObservedAdapter } from './adapters/observed.js';
import type { GatewayContext } from './graphql/context.js';
import { formatGraphQLError } from './graphql/errors.js';
import { fastExecutor, stockExecutor, type ExecutorName } from './graphql/executor.js';
import { errorLoggingPlugin, httpOperationGuardPlugin, refusalPlugin, requestIdPlugin } from './graphql/plugins.js';
import { buildSchema } from './graphql/schema.js';
import { MAX_DOCUMENT_TOKENS, gatewayValidationRules } from './graphql/validation.js';
import { CorsPolicy } from './transports/cors.js';
import { HostPolicy } from './transports/hosts.js';
import { OfflineExplorer } from './transports/explorer.js';
import { createHttpHandler } from './transports/http/handler.js';
import { AgUiTransport } from './ag-ui/serve.js';
import { UpstreamClient } from './upstream/client.js';
import { attachWebSocketTransport } from './transports/ws.js';
import { resolveOptions, type GatewayOptions } from './gateway/options.js';

export type { GatewayOptions };

export interface Gateway {
  /** The node:http server serving HTTP and WebSocket. */
  readonly server: Server;
  readonly path: string;
  /** The adapter's name: "demo", "openai", "empty", … */
  readonly mode: string;
  /** Which executor runs the operations (GatewayOptions.executor). */
  readonly executor: ExecutorName;
  /**
   * Starts listening; resolves with the GraphQL endpoint's URL, on the address it listens on. `host`
   * defaults to 127.0.0.1 (loopback only) in development and 0.0.0.0 (every interface) in production.
   * A port in use (or not allowed, or a host that is not this machine's) is a ConfigurationError.
   */
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Drains, then closes: readiness goes false and new runs are refused (SHUTTING_DOWN) at once;
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

/** Apollo Studio and the embedded Sandbox call the endpoint from these origins. */
const APOLLO_STUDIO_ORIGINS = ['https://studio.apollographql.com', 'https://sandbox.embed.apollographql.com'];

/** Builds the gateway. Options are checked here; a mistake throws a ConfigurationError that says what to fix. */
export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = resolveOptions(options);
  const logger = config.logger;
  const schema = buildSchema();
  // Apollo installs its usage reporting when APOLLO_KEY is set; it needs every later payload, and every
  // operation to pass through Apollo's pipeline.
  const executor = config.executor === 'stock' ? stockExecutor() : fastExecutor(schema, { directHttp: !process.env.APOLLO_KEY });
  const metrics = config.metrics.on ? new GatewayMetrics(() => launcher.activeRuns) : undefined;
  const tracing = config.tracing ? new RunTracing(GATEWAY_VERSION) : undefined;
  // One HTTP client (one connection pool per origin) for every agent, remote action and discovery.
  const upstream = new UpstreamClient({ onRetry: metrics ? (who, reason) => metrics.upstreamRetry(who, reason) : undefined });
  const endpoints = config.remoteEndpoints.map((endpoint, index) => new CopilotKitEndpoint(endpoint, index, upstream, logger));
  // Every definition gets the built-in kinds' dependencies; one of a kind of your own reads only AgentDependencies.
  const agentDependencies: BuiltInAgentDependencies = { upstream, logger };
  const configuredAgents = Object.entries(config.agents).map(([name, definition]) => definition.create(name, agentDependencies, `options.agents.${name}`));
  const agents = new AgentRegistry([new StaticAgentSource(configuredAgents), ...endpoints], config.discoveryWaitMs, logger);
  const mcp = new McpServers(config.mcpServers, config.allowClientMcpServers, config.discoveryWaitMs, logger);
  const store = createThreadStore(config.threads, logger);
  const threads = new ThreadService(metrics ? metrics.meteredStore(store) : store, { ...config.threads, authenticated: config.authenticate !== undefined }, logger);
  const limiter = rateLimiter(config.rateLimits, store, logger);
  const access = new AccessControl(config.authenticate, limiter, config.trustProxy, logger);
  const launcher: RunLauncher = new RunLauncher({
    threads,
    adapter: config.observability ? new ObservedAdapter(config.adapter, config.observability) : config.adapter,
    hooks: config.hooks,
    actionSources: [new ServerActionRegistry(config.actions), ...endpoints, ...mcp.sources],
    mcp,
    guardrails: new Guardrails(upstream, config.guardrails),
    agents,
    maxRounds: config.maxRounds,
    modelIdleTimeoutMs: config.modelIdleTimeoutMs,
    agentIdleTimeoutMs: config.agentIdleTimeoutMs,
    actionTimeoutMs: config.actionTimeoutMs,
    maxConcurrentRuns: config.maxConcurrentRuns,
    modelLimits: config.modelLimits,
    modelFirstTokenTimeoutMs: config.modelFirstTokenTimeoutMs,
    onModelRetry: metrics ? (who, reason) => metrics.upstreamRetry(who, reason) : undefined,
    agentFirstEventTimeoutMs: config.agentFirstEventTimeoutMs,
    limiter,
    onRunStarted: metrics ? (run, kind) => metrics.observeRun(run, kind) : undefined,
    onUpstreamCall: upstreamObserver(metrics, tracing),
    tracing,
  });
  const cors = new CorsPolicy(
    [...config.corsOrigins, ...(config.sandbox ? APOLLO_STUDIO_ORIGINS : [])],
    config.allowLoopbackOrigins,
  );
  const hosts = new HostPolicy(config.development, config.allowedHosts);

  const server = createServer({ noDelay: true, keepAliveTimeout: 65_000 });
  const ws = attachWebSocketTransport({
    server,
    schema,
    executor,
    launcher,
    path: config.path,
    cors,
    hosts,
    logger,
    maxPayloadBytes: config.maxBodyBytes,
    keepAliveMs: config.keepAliveMs,
    introspection: config.sandbox,
    access,
    onConnection: metrics ? (delta) => metrics.webSocket(delta) : undefined,
  });
  const apollo = new ApolloServer<GatewayContext>({
    schema,
    // Introspection is refused by the gateway's own rule (in its words), not Apollo's.
    introspection: true,
    // Automatic persisted queries: off. No CopilotKit client sends them, and their cache would be one
    // more thing to bound and share across instances.
    persistedQueries: false,
    // Where introspection is off, "Did you mean …" suggestions would reveal the schema anyway.
    hideSchemaDetailsFromClientErrors: !config.sandbox,
    includeStacktraceInErrorResponses: false,
    // Runs @defer/@stream (and async-iterable lists) on the tools executor; see STACK notes in PROTOCOL.md.
    // Over HTTP the later payloads go to the transport (src/graphql/fast/incremental.ts).
    legacyExperimentalExecuteIncrementally: executor.execute as any,
    formatError: formatGraphQLError,
    validationRules: gatewayValidationRules(config.sandbox),
    parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS },
    // main.ts owns the process's signals; Apollo re-raising them would change the exit code.
    stopOnTerminationSignals: false,
    logger: apolloLogger(logger),
    // None of these listens to willSendSubsequentPayload or didEncounterSubsequentErrors: over HTTP,
    // later payloads without errors do not pass through Apollo (graphql/fast/incremental.ts).
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: server }),
      // Apollo installs these by default. Cache hints: nothing here is cacheable, and the plugin wraps
      // every field's resolver, which runs for every streamed item. Inline traces: for subgraphs only.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      { async serverWillStart() { return { drainServer: ws.dispose }; } },
      errorLoggingPlugin(),
      requestIdPlugin(),
      refusalPlugin(),
      httpOperationGuardPlugin(),
      config.sandbox
        ? ApolloServerPluginLandingPageLocalDefault({ embed: { runTelemetry: false }, includeCookies: true })
        : ApolloServerPluginLandingPageDisabled(),
    ],
  });
  server.on('request', createHttpHandler({
    apollo,
    launcher,
    path: config.path,
    cors,
    hosts,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    keepAliveMs: config.keepAliveMs,
    sandbox: config.sandbox,
    explorer: new OfflineExplorer(config.path),
    agUi: new AgUiTransport({ launcher, path: config.path, keepAliveMs: config.keepAliveMs, version: GATEWAY_VERSION, onStream: metrics && ((delta) => metrics.httpStream(delta)) }),
    readiness: () => readiness(state.phase, store, config.threads.onStoreFailure, endpoints),
    access,
    metrics: metrics && { render: () => metrics.render(), token: config.metrics.token === undefined ? undefined : keyMatcher([config.metrics.token]) },
    onStream: metrics && ((delta) => metrics.httpStream(delta)),
    executor,
    apolloServing: () => apolloStarted && state.phase !== 'closed',
    draining: () => state.phase === 'draining',
  }));

  let state: GatewayState = { phase: 'created' };
  /** Closes once: a second call gets the first one's promise, settled when everything is released. */
  const close = (): Promise<void> => {
    if (state.phase === 'closed') return state.closed;
    const closing: Extract<GatewayState, { phase: 'closed' }> = { phase: 'closed', closed: Promise.resolve() };
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
    threads.endFollows(new GatewayError('SHUTTING_DOWN', 'This gateway instance is shutting down: follow the run again through another one (joinCopilotRun with afterSequence, or connect).'));
    for (const endpoint of endpoints) endpoint.stop();
    if (apolloStarted) await apollo.stop();
    await mcp.close();
    await limiter?.close();
    await threads.close();
    await upstream.close();
    await config.adapter.close?.();
  };
  let apolloStarted = false;
  return {
    server,
    path: config.path,
    mode: config.adapter.name,
    executor: executor.name,
    async listen(port = 4000, host = config.development ? '127.0.0.1' : '0.0.0.0') {
      if (state.phase !== 'created') throw new Error(`The gateway cannot listen: it is ${state.phase}.`);
      state = { phase: 'starting' };
      if (!apolloStarted) {
        await apollo.start();
        apolloStarted = true;
      }
      try {
        await startThreadStore(threads, config.threads, logger);
      } catch (error) {
        if (state.phase === 'starting') state = { phase: 'created' };
        throw error;
      }
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          // A queue of connections not yet accepted as long as the system allows (Linux caps it at
          // net.core.somaxconn, 4096 by default): Node's default of 511 drops connections when
          // thousands of clients reconnect at once (a deploy, a network blip) and the event loop is busy.
          server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
            server.off('error', reject);
            resolve();
          });
        });
      } catch (error) {
        if (state.phase === 'starting') state = { phase: 'created' };
        throw listenError(error, port, host);
      }
      // Closed while starting: it stays closed.
      if (state.phase === 'starting') state = { phase: 'listening' };
      for (const endpoint of endpoints) endpoint.start();
      mcp.start();
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return `http://${shownHost}:${address.port}${config.path}`;
    },
    shutdown(graceMs = config.shutdownGraceMs) {
      if (state.phase === 'draining') return state.drained;
      if (state.phase !== 'listening') return close();
      const draining: Extract<GatewayState, { phase: 'draining' }> = { phase: 'draining', drained: Promise.resolve() };
      state = draining;
      draining.drained = (async () => {
        const started = Date.now();
        logger.info({ activeRuns: launcher.activeRuns, graceMs }, 'draining: no new runs; waiting for the runs in flight');
        // Connections that are idle now are closed; busy ones get "Connection: close" on their next answer.
        server.closeIdleConnections();
        const grace = AbortSignal.timeout(graceMs);
        await launcher.drain(grace);
        const left = launcher.activeRuns;
        if (left > 0) {
          logger.warn({ runs: left, graceMs }, 'the grace period is over: ending the runs still going');
          await launcher.abortAll(shutdownError());
        }
        logger.info({ drainedInMs: Date.now() - started, ended: left }, 'drained; closing');
        await close();
      })();
      return draining.drained;
    },
    close,
  };
}

/**
 * The gateway's states (as Apollo Server's ServerState), each with what the next one needs:
 * created → starting (listen) → listening → draining (shutdown) → closed (close). A start that fails
 * goes back to created; close() from any state goes to closed, and shutdown() outside listening closes.
 */
type GatewayState =
  | { phase: 'created' }
  | { phase: 'starting' }
  | { phase: 'listening' }
  /** Runs finishing (no new ones); `drained` settles once closed. */
  | { phase: 'draining'; drained: Promise<void> }
  /** Releasing or released; `closed` settles once everything is. */
  | { phase: 'closed'; closed: Promise<void> };

/** What watches each call of a model or an agent: the metrics, the tracing, both, or nothing. */
function upstreamObserver(metrics: GatewayMetrics | undefined, tracing: RunTracing | undefined): UpstreamCallObserver | undefined {
  if (!metrics && !tracing) return undefined;
  return (call) => {
    const traced = tracing?.upstreamCall(call);
    return (error) => {
      metrics?.upstreamCall(call.upstream, error);
      traced?.(error);
    };
  };
}

/**
 * The rate limiter: none when no limit is set; shared through the thread store's Redis connection
 * when threads are kept in Redis; in memory otherwise.
 */
function rateLimiter(limits: ResolvedRateLimits, store: ThreadStore, logger: Logger): RateLimiter | undefined {
  if (limits.requestsPerMinute === 0 && limits.concurrentRuns === 0) return undefined;
  if (store instanceof RedisThreadStore) return new RedisRateLimiter(limits, () => store.commands, store.keyPrefix, logger);
  return new MemoryRateLimiter(limits);
}

const LISTEN_BACKLOG = 4096;

function shutdownError(): GatewayError {
  return new GatewayError('SHUTTING_DOWN', 'The server is shutting down: the run was ended before it finished. Its events so far are kept; start it again.');
}

/**
 * Whether this instance should get traffic. Not while it is not listening (starting, or closed). With
 * Redis unreachable it still is when new runs are served regardless (onStoreFailure "serve": taking
 * every instance out of rotation at once would turn a degraded service into an outage), not when they
 * are refused ("fail").
 */
function readiness(
  state: GatewayState['phase'],
  store: ThreadStore,
  onStoreFailure: 'serve' | 'fail',
  endpoints: readonly CopilotKitEndpoint[],
): { ready: boolean; checks: Record<string, unknown> } {
  const storeHealthy = store.healthy();
  const listening = state === 'listening' || state === 'draining';
  const draining = state === 'draining';
  const ready = state === 'listening' && (storeHealthy || onStoreFailure === 'serve');
  return {
    ready,
    checks: {
      listening,
      draining,
      threadStore: { kind: store.kind, reachable: storeHealthy, ...(storeHealthy ? {} : { onStoreFailure }) },
      // Reported, not required: one unreachable endpoint must not take every instance out of rotation.
      ...(endpoints.length ? { remoteEndpoints: endpoints.map((endpoint) => ({ endpoint: endpoint.label, reachable: !endpoint.unreachable })) } : {}),
    },
  };
}

/** The gateway's version, as AG-UI's /info reports it: from the package.json above this file (src/ or dist/src/). */
const GATEWAY_VERSION: string = (() => {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'copilot-gateway' && manifest.version) return manifest.version;
    } catch {
      // not there: the next one
    }
  }
  return '0.0.0';
})();

/**
 * Connects the thread store (Redis). Unreachable at start: with onStoreFailure "serve" the gateway
 * serves (runs unrecorded until Redis answers, logged); with "fail" it does not start.
 */
async function startThreadStore(threads: ThreadService, options: ResolvedThreadsOptions, logger: Logger): Promise<void> {
  try {
    await threads.store.start?.();
    if (options.redisUrl) logger.info({ redis: redactedUrl(options.redisUrl) }, 'threads are kept in Redis');
  } catch (error) {
    if (options.onStoreFailure === 'fail') throw new ConfigurationError((error as Error).message);
    logger.warn({ err: error }, 'the thread store cannot be reached at start: runs are served unrecorded until it can (threads.onStoreFailure "serve")');
  }
}

/** A failed listen, said in one line with what to do. */
function listenError(error: unknown, port: number, host: string): ConfigurationError | unknown {
  const code = (error as { code?: string })?.code;
  const where = `port ${port} on ${host}`;
  if (code === 'EADDRINUSE') return new ConfigurationError(`The ${where} is already in use: stop the process that holds it, or choose another port (PORT).`);
  if (code === 'EACCES') return new ConfigurationError(`Not allowed to listen on ${where}: choose a port above 1023 (PORT), or run with the permission to bind it.`);
  if (code === 'EADDRNOTAVAIL') return new ConfigurationError(`${host} is not an address of this machine (HOST): use 127.0.0.1, 0.0.0.0 or one of its addresses.`);
  return error;
}

function apolloLogger(logger: Logger) {
  const apollo = logger.child({ component: 'apollo' });
  return {
    debug: (message: string) => apollo.debug(message),
    info: (message: string) => apollo.info(message),
    warn: (message: string) => apollo.warn(message),
    error: (message: string) => apollo.error(message),
  };
}
