import type { Logger } from 'pino';
import { McpServers } from '../actions/mcp.js';
import { ServerActionRegistry } from '../actions/server-action.js';
import { ObservedAdapter } from '../adapters/observed.js';
import { StaticAgentSource } from '../agents/agent.js';
import { CopilotKitEndpoint } from '../agents/copilotkit-endpoint.js';
import type { BuiltInAgentDependencies } from '../agents/definitions.js';
import { AgentRegistry } from '../agents/registry.js';
import type { UpstreamCallObserver } from '../engine/drivers/agent.js';
import { Guardrails } from '../engine/guardrails.js';
import { RunLauncher } from '../engine/launcher.js';
import { ThreadService } from '../engine/thread-service.js';
import { MemoryRateLimiter, type RateLimiter, type ResolvedRateLimits } from '../limits/rate-limiter.js';
import { RedisRateLimiter } from '../limits/redis-rate-limiter.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { RunTracing } from '../observability/tracing.js';
import { createThreadStore } from '../threads/options.js';
import { RedisThreadStore } from '../threads/redis/store.js';
import type { ThreadStore } from '../threads/store.js';
import { AccessControl } from '../transports/access.js';
import { CorsPolicy } from '../transports/cors.js';
import { HostPolicy } from '../transports/hosts.js';
import { UpstreamClient } from '../upstream/client.js';
import type { ResolvedOptions } from './options.js';
import { GATEWAY_VERSION } from './version.js';
import { InputBudget } from '../core/input-budget.js';

/**
 * What one gateway is made of, built from its options: everything below the transports, and the transports' policies
 * (access, CORS, hosts), which the HTTP and WebSocket transports share.
 */
export interface Collaborators {
  /** One HTTP client (one connection pool per origin) for every agent, remote action and discovery. */
  upstream: UpstreamClient;
  endpoints: CopilotKitEndpoint[];
  mcp: McpServers;
  store: ThreadStore;
  threads: ThreadService;
  limiter: RateLimiter | undefined;
  access: AccessControl;
  launcher: RunLauncher;
  cors: CorsPolicy;
  hosts: HostPolicy;
  metrics: GatewayMetrics | undefined;
  /** The input held at once (maxBufferedInputMb): bodies being read and runs in flight. */
  inputBudget: InputBudget;
}

/** Apollo Studio and the embedded Sandbox call the endpoint from these origins. */
const APOLLO_STUDIO_ORIGINS = ['https://studio.apollographql.com', 'https://sandbox.embed.apollographql.com'];

/** Builds the collaborators, each given the ones it needs; nothing starts or listens here (see gateway.ts). */
export function wireGateway(config: ResolvedOptions): Collaborators {
  const logger = config.logger;
  const store = createThreadStore(config.threads, logger);
  const metrics = config.metrics.on
    ? new GatewayMetrics(
        () => launcher.activeRuns,
        () => inputBudget.heldBytes,
        () => mcp.census(),
        store.census?.bind(store),
      )
    : undefined;
  const tracing = config.tracing ? new RunTracing(GATEWAY_VERSION) : undefined;
  const upstream = new UpstreamClient({
    onRetry: metrics ? (who, reason) => metrics.upstreamRetry(who, reason) : undefined,
  });
  const endpoints = config.remoteEndpoints.map(
    (endpoint, index) => new CopilotKitEndpoint(endpoint, index, upstream, logger),
  );
  // Every definition gets the built-in kinds' dependencies; one of a kind of your own reads only AgentDependencies.
  const agentDependencies: BuiltInAgentDependencies = { upstream, logger };
  const configuredAgents = Object.entries(config.agents).map(([name, definition]) =>
    definition.create(name, agentDependencies, `options.agents.${name}`),
  );
  const agents = new AgentRegistry(
    [new StaticAgentSource(configuredAgents), ...endpoints],
    config.discoveryWaitMs,
    logger,
  );
  const mcp = new McpServers(config.mcpServers, config.allowClientMcpServers, config.discoveryWaitMs, logger);
  const threads = new ThreadService(
    metrics ? metrics.meteredStore(store) : store,
    { ...config.threads, authenticated: config.authenticate !== undefined },
    logger,
  );
  const limiter = rateLimiter(config.rateLimits, store, logger);
  const access = new AccessControl(config.authenticate, limiter, config.trustProxy, logger);
  // One budget for the input held at once: bodies being read, and runs in flight (maxBufferedInputMb).
  const inputBudget = new InputBudget(config.maxBufferedInputMb * 1024 * 1024);
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
    maxRunOutputBytes: config.maxRunOutputMb * 1024 * 1024,
    inputBudget,
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
  return { upstream, endpoints, mcp, store, threads, limiter, access, launcher, cors, hosts, metrics, inputBudget };
}

/** What watches each call of a model or an agent: the metrics, the tracing, both, or nothing. */
function upstreamObserver(
  metrics: GatewayMetrics | undefined,
  tracing: RunTracing | undefined,
): UpstreamCallObserver | undefined {
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
  if (store instanceof RedisThreadStore) {
    return new RedisRateLimiter(limits, () => store.commands, store.keyPrefix, logger);
  }
  return new MemoryRateLimiter(limits);
}
