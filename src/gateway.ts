import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import { pino, type Logger } from 'pino';
import type { ModelAdapter } from './adapters/adapter.js';
import { DemoAdapter, demoTimeAction } from './adapters/demo.js';
import { McpServers, resolveMcpServers, type McpServerOptions } from './actions/mcp.js';
import { ServerActionRegistry, type ServerAction } from './actions/server-action.js';
import { StaticAgentSource } from './agents/agent.js';
import { CopilotKitEndpoint, type RemoteEndpointOptions } from './agents/copilotkit-endpoint.js';
import type { AgentDefinition, BuiltInAgentDependencies } from './agents/definitions.js';
import { AgentRegistry } from './agents/registry.js';
import { ConfigurationError, GatewayError } from './core/errors.js';
import type { Authenticate } from './auth/authenticate.js';
import { keyMatcher } from './auth/api-keys.js';
import { MemoryRateLimiter, resolveRateLimits, type RateLimiter, type RateLimitOptions, type ResolvedRateLimits } from './limits/rate-limiter.js';
import { RedisRateLimiter } from './limits/redis-rate-limiter.js';
import { GatewayMetrics } from './observability/metrics.js';
import { RunTracing } from './observability/tracing.js';
import type { UpstreamCallObserver } from './engine/drivers/agent.js';
import { AccessControl } from './transports/access.js';
import { Guardrails, type GuardrailsOptions } from './engine/guardrails.js';
import { RunLauncher } from './engine/launcher.js';
import { ThreadService } from './engine/threads.js';
import { createThreadStore, resolveThreadsOptions, type ResolvedThreadsOptions, type ThreadsOptions } from './threads/options.js';
import { RedisThreadStore, redactedUrl } from './threads/redis.js';
import type { ThreadStore } from './threads/store.js';
import { resolveHooks, type RequestHooks } from './engine/hooks.js';
import { ObservedAdapter, resolveObservability, type ObservabilityOptions } from './adapters/observed.js';
import { resolveModelLimits, type ModelLimits, type ModelLimitsOptions } from './engine/model-limits.js';
import type { GatewayContext } from './graphql/context.js';
import { formatGraphQLError } from './graphql/errors.js';
import { fastExecutor, stockExecutor, type ExecutorName } from './graphql/executor.js';
import { KnownDocuments } from './graphql/known-documents.js';
import { errorLoggingPlugin, httpOperationGuardPlugin, refusalPlugin, requestIdPlugin } from './graphql/plugins.js';
import { buildSchema } from './graphql/schema.js';
import { MAX_DOCUMENT_TOKENS, gatewayValidationRules } from './graphql/validation.js';
import { CorsPolicy, isOrigin } from './transports/cors.js';
import { HostPolicy } from './transports/hosts.js';
import { OfflineExplorer } from './transports/explorer.js';
import { createHttpHandler } from './transports/http.js';
import { AgUiTransport } from './transports/ag-ui.js';
import { UpstreamClient } from './upstream/client.js';
import { attachWebSocketTransport } from './transports/ws.js';

export interface GatewayOptions {
  /** The model. @default a DemoAdapter (scripted replies, with the demo `getCurrentTime` action) */
  adapter?: ModelAdapter;
  /** Server-side actions the model (or an agent) may call; the gateway executes them. @default [] */
  actions?: ServerAction<any>[];
  /**
   * Agents by name: `agUiAgent({ url })` for an agent that speaks AG-UI over HTTP,
   * `langGraphAgent({ deploymentUrl, graphId })` for a graph on LangGraph Platform. @default {}
   */
  agents?: Record<string, AgentDefinition>;
  /**
   * CopilotKit remote endpoints (CopilotKit's Python SDK): a URL, or options with headers, an
   * `onBeforeRequest` hook, `forwardAuthorization` and a retry policy. Their agents and actions are
   * discovered through `POST {url}/info`. @default []
   */
  remoteEndpoints?: (string | RemoteEndpointOptions)[];
  /** How long a request waits for remote endpoints that have not answered their first discovery yet. @default 3000 */
  discoveryWaitMs?: number;
  /** Path of the GraphQL endpoint, for HTTP and WebSocket alike. @default "/api/copilotkit" */
  path?: string;
  /** A pino logger. @default pino at level "info" */
  logger?: Logger;
  /** @default "production" when NODE_ENV is "production", else "development" */
  environment?: 'development' | 'production';
  /** Browser origins allowed to call the gateway, such as "https://app.example.com". @default [] */
  corsOrigins?: string[];
  /** Allow localhost, 127.0.0.0/8 and [::1] origins on any port. @default true in development */
  allowLoopbackOrigins?: boolean;
  /** Apollo Sandbox at the endpoint, introspection, and Apollo Studio's origins. @default true in development */
  sandbox?: boolean;
  /** The most model calls in one run; server-side results are followed by another call. @default 5 */
  maxRounds?: number;
  /** A model that sends nothing for this long is cut off and the run fails. @default 60000 */
  modelIdleTimeoutMs?: number;
  /** An agent that sends nothing for this long is cut off and the run fails (UPSTREAM_TIMEOUT). @default 300000 */
  agentIdleTimeoutMs?: number;
  /** A server-side or remote action that takes longer gets an ACTION_TIMEOUT error result. @default 60000 */
  actionTimeoutMs?: number;
  /** Largest accepted request body (and WebSocket message). @default 10485760 (10 MiB) */
  maxBodyBytes?: number;
  /**
   * Host names served in development besides localhost and IP addresses (DNS-rebinding protection).
   * Not checked in production. @default []
   */
  allowedHosts?: string[];
  /** Runs this process serves at once; more are refused with OVERLOADED until one ends. @default 1000 */
  maxConcurrentRuns?: number;
  /**
   * How often a quiet stream shows it is alive: an SSE comment on HTTP streams, a ping on every
   * WebSocket (a socket that has not answered the previous ping is dropped). @default 12000
   */
  keepAliveMs?: number;
  /**
   * What clients may choose and send to the model, checked before any model call (MODEL_NOT_ALLOWED,
   * LIMIT_EXCEEDED): `allowedModels` (default: only the adapter's own model), a `maxTokens` ceiling
   * (also sent when a client asks for none), and the most messages and characters per model call.
   */
  modelLimits?: ModelLimitsOptions;
  /**
   * MCP servers whose tools are offered as server-side actions: URLs (Streamable HTTP, or the older
   * HTTP+SSE transport) or `{url, headers}`. @default []
   */
  mcpServers?: (string | McpServerOptions)[];
  /**
   * Whether a request may name more MCP servers in `properties.mcpServers` (`[{endpoint, apiKey?}]`):
   * `true` for any, or a list of the hosts (`host` or `host:port`) it may name. Off by default: the
   * gateway would connect to any address a client names. @default false
   */
  allowClientMcpServers?: boolean | string[];
  /**
   * Copilot Cloud input guardrails, for requests that set `cloud.guardrails`: the service's `url`
   * (default Copilot Cloud's API) and how long it may take (`timeoutMs`, default 10000).
   */
  guardrails?: GuardrailsOptions;
  /**
   * Request middleware: `onBeforeRequest({threadId, runId, inputMessages, properties, url})` before a
   * run (it may add `context`, or refuse by throwing a GatewayError), `onAfterRequest({…, outputMessages,
   * status})` after it.
   */
  hooks?: RequestHooks;
  /** Observability hooks around each model call (`handleRequest`, `handleResponse`, `handleError`, `progressive`). */
  observability?: ObservabilityOptions;
  /**
   * Where threads are kept (in memory, or in Redis with `redisUrl`, shared by every instance), their
   * bounds and lifetime, and the one-run-per-thread policy. See ThreadsOptions.
   */
  threads?: ThreadsOptions;
  /**
   * Says who is asking, for every HTTP request (GraphQL and AG-UI) and WebSocket connection
   * (`connection_init`): `apiKeyAuthenticator(keys)`, `jwtAuthenticator({jwksUrl | secret, issuer?,
   * audience?})`, `anyOf(…)` of them, or your own. Off by default: everyone is served.
   */
  authenticate?: Authenticate;
  /** Requests per minute and concurrent runs per client (principal, or address); off by default. Shared through Redis when threads are. */
  rateLimits?: RateLimitOptions;
  /** Proxies in front of the gateway whose X-Forwarded-For is believed for the client's address. @default 0 */
  trustProxy?: number;
  /** How long in-flight runs get to finish on `shutdown()` (SIGTERM) before they are ended. @default 25000 */
  shutdownGraceMs?: number;
  /**
   * Prometheus metrics at GET /metrics: `true`, or `{token}` to require `Authorization: Bearer <token>`.
   * @default true
   */
  metrics?: boolean | { token?: string };
  /**
   * OpenTelemetry spans for runs (`copilot.run`) and their model and agent calls (`copilot.upstream`),
   * through `@opentelemetry/api`: register an SDK with an exporter in your process. @default false
   */
  tracing?: boolean;
  /** How long the model may think before its first chunk of each call (then modelIdleTimeoutMs applies). @default 120000 */
  modelFirstTokenTimeoutMs?: number;
  /** How long an agent may take before its first event of each call (then agentIdleTimeoutMs applies). @default 300000 */
  agentFirstEventTimeoutMs?: number;
  /**
   * What runs GraphQL operations: `fast`, the gateway's own paths written for speed (BENCHMARKS.md), or
   * `stock`, Apollo Server's pipeline and @graphql-tools/executor as their authors ship them (the way
   * back if an upgrade breaks a fast path). Both behave the same; the test suites run on both. See
   * graphql/executor.ts. @default "fast"
   */
  executor?: ExecutorName;
}

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

const OPTION_NAMES = new Set([
  'adapter', 'actions', 'agents', 'remoteEndpoints', 'discoveryWaitMs', 'path', 'logger', 'environment', 'corsOrigins', 'allowLoopbackOrigins', 'sandbox',
  'maxRounds', 'modelIdleTimeoutMs', 'agentIdleTimeoutMs', 'actionTimeoutMs', 'maxBodyBytes', 'maxConcurrentRuns', 'allowedHosts', 'keepAliveMs',
  'modelLimits', 'mcpServers', 'allowClientMcpServers', 'guardrails', 'hooks', 'observability', 'threads',
  'authenticate', 'rateLimits', 'trustProxy', 'shutdownGraceMs', 'metrics', 'modelFirstTokenTimeoutMs', 'agentFirstEventTimeoutMs', 'tracing',
  'executor',
]);

/** Apollo Studio and the embedded Sandbox call the endpoint from these origins. */
const APOLLO_STUDIO_ORIGINS = ['https://studio.apollographql.com', 'https://sandbox.embed.apollographql.com'];

/** Builds the gateway. Options are checked here; a mistake throws a ConfigurationError that says what to fix. */
export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = resolveOptions(options);
  const logger = config.logger;
  const schema = buildSchema();
  const executor = config.executor === 'stock' ? stockExecutor() : fastExecutor(schema);
  const metrics = config.metrics ? new GatewayMetrics(() => launcher.activeRuns) : undefined;
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
    // Over HTTP the later payloads go to the transport (src/graphql/incremental.ts).
    legacyExperimentalExecuteIncrementally: executor.execute as any,
    formatError: formatGraphQLError,
    validationRules: gatewayValidationRules(config.sandbox),
    parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS },
    // main.ts owns the process's signals; Apollo re-raising them would change the exit code.
    stopOnTerminationSignals: false,
    logger: apolloLogger(logger),
    // None of these listens to willSendSubsequentPayload or didEncounterSubsequentErrors: over HTTP,
    // later payloads without errors do not pass through Apollo (graphql/incremental.ts).
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
    readiness: () => readiness(state, store, config.threads.onStoreFailure, endpoints),
    access,
    metrics: metrics && { render: () => metrics.render(), token: config.metricsToken === undefined ? undefined : keyMatcher([config.metricsToken]) },
    onStream: metrics && ((delta) => metrics.httpStream(delta)),
    // Apollo installs its usage reporting when APOLLO_KEY is set; it needs every later payload.
    directLaterPayloads: executor.httpFastPaths && !process.env.APOLLO_KEY,
    // With usage reporting, every operation passes through Apollo's pipeline too.
    knownDocuments: executor.httpFastPaths && !process.env.APOLLO_KEY ? new KnownDocuments() : undefined,
    schema,
    apolloServing: () => apolloStarted && state !== 'closed',
    draining: () => state === 'draining',
  }));

  let state: 'created' | 'listening' | 'draining' | 'closed' = 'created';
  let shuttingDown: Promise<void> | undefined;
  const close = async () => {
    if (state === 'closed') return;
    state = 'closed';
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
      if (state !== 'created') throw new Error(`The gateway cannot listen: it is ${state}.`);
      state = 'listening';
      if (!apolloStarted) {
        await apollo.start();
        apolloStarted = true;
      }
      try {
        await startThreadStore(threads, config.threads, logger);
      } catch (error) {
        state = 'created';
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
        state = 'created';
        throw listenError(error, port, host);
      }
      for (const endpoint of endpoints) endpoint.start();
      mcp.start();
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return `http://${shownHost}:${address.port}${config.path}`;
    },
    shutdown(graceMs = config.shutdownGraceMs) {
      shuttingDown ??= (async () => {
        if (state !== 'listening') return close();
        state = 'draining';
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
      return shuttingDown;
    },
    close,
  };
}

interface ResolvedOptions {
  adapter: ModelAdapter;
  actions: ServerAction[];
  agents: Record<string, AgentDefinition>;
  remoteEndpoints: RemoteEndpointOptions[];
  path: string;
  logger: Logger;
  corsOrigins: string[];
  allowLoopbackOrigins: boolean;
  sandbox: boolean;
  maxRounds: number;
  modelIdleTimeoutMs: number;
  agentIdleTimeoutMs: number;
  actionTimeoutMs: number;
  discoveryWaitMs: number;
  maxBodyBytes: number;
  maxConcurrentRuns: number;
  keepAliveMs: number;
  development: boolean;
  allowedHosts: string[];
  modelLimits: ModelLimits;
  mcpServers: McpServerOptions[];
  allowClientMcpServers: boolean | string[];
  guardrails: GuardrailsOptions;
  hooks: RequestHooks;
  observability: ObservabilityOptions | undefined;
  threads: ResolvedThreadsOptions;
  authenticate: Authenticate | undefined;
  rateLimits: ResolvedRateLimits;
  trustProxy: number;
  shutdownGraceMs: number;
  metrics: boolean;
  metricsToken: string | undefined;
  tracing: boolean;
  modelFirstTokenTimeoutMs: number;
  agentFirstEventTimeoutMs: number;
  executor: ExecutorName;
}

function resolveOptions(options: GatewayOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('createGateway options must be an object.');
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.has(key)) {
      throw new ConfigurationError(`Unknown option "${key}". Known options: ${[...OPTION_NAMES].join(', ')}.`);
    }
  }
  const environment = options.environment ?? (process.env.NODE_ENV === 'production' ? 'production' : 'development');
  if (environment !== 'development' && environment !== 'production') {
    throw new ConfigurationError(`options.environment must be "development" or "production" (got ${JSON.stringify(environment)}).`);
  }
  const development = environment === 'development';

  const adapter: ModelAdapter = options.adapter ?? new DemoAdapter();
  if (typeof adapter !== 'object' || typeof adapter.stream !== 'function' || typeof adapter.name !== 'string') {
    throw new ConfigurationError('options.adapter must be a model adapter (an object with a name and a stream method).');
  }
  if (options.actions !== undefined && !Array.isArray(options.actions)) {
    throw new ConfigurationError('options.actions must be an array of server-side actions.');
  }
  const actions = [...(options.actions ?? [])];
  // Demo mode is explorable offline: its scripted model can call the demo action.
  if (!options.adapter && !actions.some((action) => action?.name === demoTimeAction.name)) actions.push(demoTimeAction);

  const path = options.path ?? '/api/copilotkit';
  if (typeof path !== 'string' || !/^\/[\w\-./~]*$/.test(path) || path === '/health' || path === '/ready') {
    throw new ConfigurationError(`options.path must be a URL path starting with "/", other than /health and /ready (got ${JSON.stringify(path)}).`);
  }
  if (options.corsOrigins !== undefined && (!Array.isArray(options.corsOrigins) || options.corsOrigins.some((o) => typeof o !== 'string'))) {
    throw new ConfigurationError('options.corsOrigins must be an array of origins such as "https://app.example.com".');
  }
  for (const origin of options.corsOrigins ?? []) {
    if (!isOrigin(origin)) {
      throw new ConfigurationError(`options.corsOrigins: ${JSON.stringify(origin)} is not an origin; give just a scheme, host and optional port, such as "https://app.example.com".`);
    }
  }
  if (options.allowedHosts !== undefined && (!Array.isArray(options.allowedHosts) || options.allowedHosts.some((h) => typeof h !== 'string' || !/^[\w.-]+$/.test(h)))) {
    throw new ConfigurationError('options.allowedHosts must be an array of host names such as "dev.example.test" (no scheme or port).');
  }
  const clientMcp = options.allowClientMcpServers;
  if (clientMcp !== undefined && typeof clientMcp !== 'boolean' && (!Array.isArray(clientMcp) || clientMcp.some((host) => typeof host !== 'string' || !/^[\w.-]+(:\d+)?$/.test(host)))) {
    throw new ConfigurationError('options.allowClientMcpServers must be true, false, or a list of host names (with an optional port), such as ["tools.example.com"].');
  }
  for (const [name, value] of [['allowLoopbackOrigins', options.allowLoopbackOrigins], ['sandbox', options.sandbox]] as const) {
    if (value !== undefined && typeof value !== 'boolean') throw new ConfigurationError(`options.${name} must be true or false.`);
  }
  const logger = options.logger ?? pino({ level: 'info' });
  if (typeof logger?.child !== 'function') throw new ConfigurationError('options.logger must be a pino logger.');

  return {
    adapter,
    actions,
    agents: resolveAgents(options.agents),
    remoteEndpoints: resolveEndpoints(options.remoteEndpoints),
    path,
    logger,
    corsOrigins: options.corsOrigins ?? [],
    allowLoopbackOrigins: options.allowLoopbackOrigins ?? development,
    sandbox: options.sandbox ?? development,
    maxRounds: integerOption('maxRounds', options.maxRounds, 5, 1, 100),
    modelIdleTimeoutMs: integerOption('modelIdleTimeoutMs', options.modelIdleTimeoutMs, 60_000, 1, 3_600_000),
    agentIdleTimeoutMs: integerOption('agentIdleTimeoutMs', options.agentIdleTimeoutMs, 300_000, 1, 3_600_000),
    actionTimeoutMs: integerOption('actionTimeoutMs', options.actionTimeoutMs, 60_000, 1, 3_600_000),
    discoveryWaitMs: integerOption('discoveryWaitMs', options.discoveryWaitMs, 3_000, 0, 60_000),
    maxBodyBytes: integerOption('maxBodyBytes', options.maxBodyBytes, 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxConcurrentRuns: integerOption('maxConcurrentRuns', options.maxConcurrentRuns, 1000, 1, 1_000_000),
    keepAliveMs: integerOption('keepAliveMs', options.keepAliveMs, 12_000, 10, 3_600_000),
    development,
    allowedHosts: options.allowedHosts ?? [],
    modelLimits: resolveModelLimits(options.modelLimits, adapter.model),
    mcpServers: resolveMcpServers(options.mcpServers),
    allowClientMcpServers: options.allowClientMcpServers ?? false,
    guardrails: resolveGuardrails(options.guardrails),
    hooks: resolveHooks(options.hooks),
    observability: resolveObservability(options.observability),
    threads: resolveThreadsOptions(options.threads),
    authenticate: resolveAuthenticate(options.authenticate),
    rateLimits: resolveRateLimits(options.rateLimits),
    trustProxy: integerOption('trustProxy', options.trustProxy, 0, 0, 10),
    shutdownGraceMs: integerOption('shutdownGraceMs', options.shutdownGraceMs, 25_000, 0, 3_600_000),
    metrics: options.metrics === undefined ? true : options.metrics !== false,
    metricsToken: resolveMetricsToken(options.metrics),
    tracing: booleanOption('tracing', options.tracing, false),
    modelFirstTokenTimeoutMs: integerOption('modelFirstTokenTimeoutMs', options.modelFirstTokenTimeoutMs, 120_000, 1, 3_600_000),
    agentFirstEventTimeoutMs: integerOption('agentFirstEventTimeoutMs', options.agentFirstEventTimeoutMs, 300_000, 1, 3_600_000),
    executor: executorOption(options.executor),
  };
}

function executorOption(value: unknown): ExecutorName {
  if (value === undefined) return 'fast';
  if (value !== 'fast' && value !== 'stock') throw new ConfigurationError(`options.executor must be "fast" or "stock" (got ${JSON.stringify(value)}).`);
  return value;
}

function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new ConfigurationError(`options.${name} must be true or false.`);
  return value;
}

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

function resolveAuthenticate(authenticate: unknown): Authenticate | undefined {
  if (authenticate === undefined) return undefined;
  if (typeof authenticate !== 'function') {
    throw new ConfigurationError('options.authenticate must be a function (request) => principal | null, such as apiKeyAuthenticator([...]) or jwtAuthenticator({...}).');
  }
  return authenticate as Authenticate;
}

function resolveMetricsToken(metrics: unknown): string | undefined {
  if (metrics === undefined || typeof metrics === 'boolean') return undefined;
  if (metrics === null || typeof metrics !== 'object') throw new ConfigurationError('options.metrics must be true, false or {token}.');
  const token = (metrics as { token?: unknown }).token;
  if (token !== undefined && (typeof token !== 'string' || token.length < 16)) throw new ConfigurationError('options.metrics.token must be at least 16 characters.');
  return token as string | undefined;
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
  state: 'created' | 'listening' | 'draining' | 'closed',
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

function resolveGuardrails(options: GuardrailsOptions | undefined): GuardrailsOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options.guardrails must be an object: {url?, timeoutMs?}.');
  if (options.url !== undefined && (typeof options.url !== 'string' || !/^https?:\/\//.test(options.url))) {
    throw new ConfigurationError(`options.guardrails.url must be an http(s) URL (got ${JSON.stringify(options.url)}).`);
  }
  return { ...(options.url ? { url: options.url } : {}), timeoutMs: integerOption('guardrails.timeoutMs', options.timeoutMs, 10_000, 100, 600_000) };
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

function resolveAgents(agents: unknown): Record<string, AgentDefinition> {
  if (agents === undefined) return {};
  if (agents === null || typeof agents !== 'object' || Array.isArray(agents)) {
    throw new ConfigurationError('options.agents must be an object of agent names to agUiAgent(…) or langGraphAgent(…).');
  }
  for (const [name, definition] of Object.entries(agents)) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw new ConfigurationError(`options.agents: the name ${JSON.stringify(name)} must be 1 to 64 letters, digits, "_" or "-".`);
    }
    if (!definition || typeof (definition as AgentDefinition).create !== 'function') {
      throw new ConfigurationError(`options.agents.${name} must be made with agUiAgent(…) or langGraphAgent(…).`);
    }
  }
  return agents as Record<string, AgentDefinition>;
}

function resolveEndpoints(endpoints: unknown): RemoteEndpointOptions[] {
  if (endpoints === undefined) return [];
  if (!Array.isArray(endpoints)) throw new ConfigurationError('options.remoteEndpoints must be an array of URLs or endpoint options.');
  const seen = new Set<string>();
  const resolved: RemoteEndpointOptions[] = [];
  endpoints.forEach((endpoint, index) => {
    const options: RemoteEndpointOptions = typeof endpoint === 'string' ? { url: endpoint } : endpoint;
    if (options === null || typeof options !== 'object') throw new ConfigurationError(`options.remoteEndpoints[${index}] must be a URL or an object with a url.`);
    const key = String(options.url).replace(/\/+$/, '');
    if (seen.has(key)) return; // the same endpoint twice is one endpoint
    seen.add(key);
    resolved.push(options);
  });
  return resolved;
}

function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(`options.${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)}).`);
  }
  return value;
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
