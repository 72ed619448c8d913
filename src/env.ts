import type { Logger } from 'pino';
import type { ModelAdapter } from './adapters/adapter.js';
import { agUiAgent } from './ag-ui/agent.js';
import type { AgentDefinition } from './agents/definitions.js';
import { langGraphAgent } from './agents/langgraph.js';
import type { Authenticate } from './auth/authenticate.js';
import { ConfigurationError } from './core/errors.js';
import { EXECUTOR_NAMES, isExecutorName, type ExecutorName } from './graphql/executor-name.js';
import type { GatewayOptions } from './gateway/options.js';
import { isHttpUrl } from './core/urls.js';
import { isOrigin } from './transports/cors.js';
import type { ModelLimitsOptions } from './engine/model-limits.js';
import { REDIS_URL_FORMS, isRedisUrl, type ThreadsOptions } from './threads/options.js';
import type { JwtOptions } from './auth/jwt.js';
import type { RateLimitOptions } from './limits/rate-limiter.js';
import { environmentOf, isGatewayPath } from './gateway/option-values.js';
import {
  readAgents,
  readProvider,
  readTranscription,
  type AgentSettings,
  type ProviderSettings,
} from './gateway/env-upstreams.js';
import type { TranscriptionOptions } from './adapters/transcription.js';
import { countOf, flag, list, milliseconds, optional, wholeNumber } from './gateway/env-values.js';

/**
 * The variable that sets each option whose bounds only `createGateway` checks (its ConfigurationError names the
 * option): `npm start` names the variable too (`forEnvironment`).
 */
const VARIABLE_OF_OPTION: Record<string, string> = {
  'options.trustProxy': 'TRUST_PROXY',
  'options.shutdownGraceMs': 'SHUTDOWN_GRACE_MS',
  'options.shutdownDelayMs': 'SHUTDOWN_DELAY_MS',
  'options.maxBufferedOutputMb': 'MAX_BUFFERED_OUTPUT_MB',
  'options.maxBufferedInputMb': 'MAX_BUFFERED_INPUT_MB',
  'options.maxRunOutputMb': 'MAX_RUN_OUTPUT_MB',
  'options.maxConcurrentRuns': 'MAX_CONCURRENT_RUNS',
  'options.streamWriteIntervalMs': 'STREAM_WRITE_INTERVAL_MS',
  'options.modelFirstTokenTimeoutMs': 'MODEL_FIRST_TOKEN_TIMEOUT_MS',
  'options.modelIdleTimeoutMs': 'MODEL_IDLE_TIMEOUT_MS',
  'options.agentFirstEventTimeoutMs': 'AGENT_FIRST_EVENT_TIMEOUT_MS',
  'options.agentIdleTimeoutMs': 'AGENT_IDLE_TIMEOUT_MS',
  'options.rateLimits.requestsPerMinute': 'RATE_LIMIT_REQUESTS_PER_MINUTE',
  'options.rateLimits.concurrentRuns': 'RATE_LIMIT_CONCURRENT_RUNS',
  'options.threads.ttlSeconds': 'THREAD_TTL_SECONDS',
  'options.threads.leaseMs': 'INSTANCE_LEASE_MS',
  'options.threads.maxThreads': 'MAX_THREADS',
  'options.threads.maxBytes': 'MAX_THREAD_STORE_MB',
  'options.threads.waitReplicas': 'REDIS_WAIT_REPLICAS',
  'options.threads.clusterNodes': 'REDIS_CLUSTER_NODES',
  'options.threads.sentinels': 'REDIS_SENTINELS',
  'options.threads.sentinelName': 'REDIS_SENTINEL_NAME',
};

/**
 * A configuration error's message for `npm start`: an option set from the environment is named by its variable
 * first ("TRUST_PROXY (options.trustProxy) must be …"), so that the one line says what to fix.
 */
export function forEnvironment(message: string): string {
  const option = /^options\.[A-Za-z.]+/.exec(message)?.[0];
  const variable = option !== undefined ? VARIABLE_OF_OPTION[option] : undefined;
  if (option === undefined || variable === undefined) return message;
  // The option counts bytes where the variable counts megabytes.
  const unit = option === 'options.threads.maxBytes' ? ', in bytes' : '';
  return `${variable} (${option}${unit})${message.slice(option.length)}`;
}

/** What `npm start` makes before the gateway's options: the logger, the provider's adapter, the authentication. */
export interface StartParts {
  logger: Logger;
  adapter?: ModelAdapter;
  authenticate?: Authenticate;
}

/** The gateway's options from the environment's settings (and `parts`), as `npm start` creates it. */
export function gatewayOptionsOf(env: EnvironmentSettings, parts: StartParts): GatewayOptions {
  const agents: Record<string, AgentDefinition> = {};
  for (const { name, url } of env.agUiAgents) agents[name] = agUiAgent({ url });
  for (const graphId of env.langGraph?.graphs ?? []) {
    agents[graphId] = langGraphAgent({
      deploymentUrl: env.langGraph!.deploymentUrl,
      graphId,
      apiKey: env.langGraph!.apiKey,
    });
  }
  return {
    agents,
    remoteEndpoints: env.remoteEndpoints,
    ...(env.agentIdleTimeoutMs !== undefined ? { agentIdleTimeoutMs: env.agentIdleTimeoutMs } : {}),
    adapter: parts.adapter,
    path: env.path,
    logger: parts.logger,
    environment: env.environment,
    corsOrigins: env.corsOrigins,
    allowedHosts: env.allowedHosts,
    ...(env.modelIdleTimeoutMs !== undefined ? { modelIdleTimeoutMs: env.modelIdleTimeoutMs } : {}),
    ...(env.maxConcurrentRuns !== undefined ? { maxConcurrentRuns: env.maxConcurrentRuns } : {}),
    modelLimits: env.modelLimits,
    mcpServers: env.mcpServers,
    allowClientMcpServers: env.allowClientMcpServers,
    ...(env.guardrailsUrl ? { guardrails: { url: env.guardrailsUrl } } : {}),
    threads: env.threads,
    authenticate: parts.authenticate,
    rateLimits: env.rateLimits,
    ...(env.trustProxy !== undefined ? { trustProxy: env.trustProxy } : {}),
    ...(env.shutdownGraceMs !== undefined ? { shutdownGraceMs: env.shutdownGraceMs } : {}),
    ...(env.shutdownDelayMs !== undefined ? { shutdownDelayMs: env.shutdownDelayMs } : {}),
    ...(env.maxBufferedOutputMb !== undefined ? { maxBufferedOutputMb: env.maxBufferedOutputMb } : {}),
    ...(env.maxBufferedInputMb !== undefined ? { maxBufferedInputMb: env.maxBufferedInputMb } : {}),
    ...(env.maxRunOutputMb !== undefined ? { maxRunOutputMb: env.maxRunOutputMb } : {}),
    metrics: env.metrics,
    ...(env.tracing !== undefined ? { tracing: env.tracing } : {}),
    ...(env.executor !== undefined ? { executor: env.executor } : {}),
    ...(env.streamWriteIntervalMs !== undefined ? { streamWriteIntervalMs: env.streamWriteIntervalMs } : {}),
    ...(env.modelFirstTokenTimeoutMs !== undefined ? { modelFirstTokenTimeoutMs: env.modelFirstTokenTimeoutMs } : {}),
    ...(env.agentFirstEventTimeoutMs !== undefined ? { agentFirstEventTimeoutMs: env.agentFirstEventTimeoutMs } : {}),
    ...(env.transcription ? { transcription: env.transcription } : {}),
    ...(env.agUiReasoning ? { agUiReasoning: env.agUiReasoning } : {}),
  };
}

/** The settings `npm start` reads from the environment (see the table in CONFIGURATION.md). */
export interface EnvironmentSettings extends AgentSettings {
  port: number;
  host: string;
  path: string;
  environment: 'development' | 'production';
  logLevel: string;
  corsOrigins: string[];
  allowedHosts: string[];
  modelIdleTimeoutMs?: number;
  /** MAX_CONCURRENT_RUNS: runs served at once before OVERLOADED. */
  maxConcurrentRuns?: number;
  /**
   * The model provider: COPILOT_PROVIDER, or the one provider whose key or base URL is set. None:
   * demo mode.
   */
  provider?: ProviderSettings;
  agentIdleTimeoutMs?: number;
  /** ALLOWED_MODELS, MAX_TOKENS, MAX_INPUT_MESSAGES, MAX_INPUT_CHARS: what clients may choose and send. */
  modelLimits: ModelLimitsOptions;
  /** MCP_SERVERS: MCP servers whose tools are offered. */
  mcpServers: string[];
  /**
   * MCP_ALLOW_CLIENT_SERVERS: `true` (any), or hosts, comma-separated: requests may name MCP servers in
   * properties.mcpServers.
   */
  allowClientMcpServers: boolean | string[];
  /** GUARDRAILS_URL: the guardrails service (default Copilot Cloud's API). */
  guardrailsUrl?: string;
  /**
   * REDIS_URL, THREAD_TTL_SECONDS, MAX_THREADS, MAX_THREAD_STORE_MB, INSTANCE_LEASE_MS,
   * THREAD_BUSY_POLICY, STORE_FAILURE_POLICY: where threads are kept and how.
   */
  threads: ThreadsOptions;
  /** GATEWAY_API_KEYS, JWT_JWKS_URL or JWT_SECRET, JWT_ISSUER, JWT_AUDIENCE: who may call. None: everyone. */
  auth: { apiKeys: string[]; jwt?: JwtOptions };
  /**
   * ALLOW_UNAUTHENTICATED: whether running with no authentication is a choice. Unset: allowed, with a
   * warning at every start in production; `true`: allowed, no warning (a proxy in front authenticates,
   * say); `false`: refused (no start without GATEWAY_API_KEYS or a JWT setting).
   */
  allowUnauthenticated?: boolean;
  /** LOG_FORMAT: `json` or `pretty`; unset: pretty on a terminal outside production, JSON otherwise. */
  logFormat?: 'json' | 'pretty';
  /** RATE_LIMIT_REQUESTS_PER_MINUTE, RATE_LIMIT_CONCURRENT_RUNS: per client. */
  rateLimits: RateLimitOptions;
  /** TRUST_PROXY: proxies in front whose X-Forwarded-For is believed. */
  trustProxy?: number;
  /** SHUTDOWN_GRACE_MS: how long runs get to finish on SIGTERM. */
  shutdownGraceMs?: number;
  /** SHUTDOWN_DELAY_MS: how long SIGTERM keeps serving, not ready, before the drain. */
  shutdownDelayMs?: number;
  /** MAX_BUFFERED_OUTPUT_MB: the most output held for clients that do not read. */
  maxBufferedOutputMb?: number;
  /** MAX_BUFFERED_INPUT_MB: the most input held at once (bodies being read, runs in flight). */
  maxBufferedInputMb?: number;
  /** MAX_RUN_OUTPUT_MB: the most output one run may produce. */
  maxRunOutputMb?: number;
  /** METRICS (on unless "false"), METRICS_TOKEN. */
  metrics: boolean | { token: string };
  /** TRACING: OpenTelemetry spans through @opentelemetry/api (with an SDK the process registers). */
  tracing?: boolean;
  /** MODEL_FIRST_TOKEN_TIMEOUT_MS, AGENT_FIRST_EVENT_TIMEOUT_MS. */
  modelFirstTokenTimeoutMs?: number;
  agentFirstEventTimeoutMs?: number;
  /** GATEWAY_EXECUTOR: `fast` or `stock` (GatewayOptions.executor). */
  executor?: ExecutorName;
  /** STREAM_WRITE_INTERVAL_MS (GatewayOptions.streamWriteIntervalMs; 0 writes every part at once). */
  streamWriteIntervalMs?: number;
  /**
   * TRANSCRIPTION_BASE_URL (on when set), TRANSCRIPTION_MODEL, TRANSCRIPTION_API_KEY (default OPENAI_API_KEY),
   * TRANSCRIPTION_MAX_MB: voice input (GatewayOptions.transcription).
   */
  transcription?: TranscriptionOptions;
  /** AG_UI_REASONING: `declared` or `always` (GatewayOptions.agUiReasoning). */
  agUiReasoning?: 'declared' | 'always';
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function readEnvironment(env: NodeJS.ProcessEnv): EnvironmentSettings {
  const environment = environmentOf(env.NODE_ENV);
  const port = env.PORT === undefined || env.PORT === '' ? 4000 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigurationError(`PORT must be a whole number from 0 to 65535 (got ${JSON.stringify(env.PORT)}).`);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigurationError(
      `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevel)}).`,
    );
  }
  const modelIdleTimeoutMs = milliseconds(env, 'MODEL_IDLE_TIMEOUT_MS');
  const agentIdleTimeoutMs = milliseconds(env, 'AGENT_IDLE_TIMEOUT_MS');
  const maxConcurrentRuns = wholeNumber(env, 'MAX_CONCURRENT_RUNS', 'runs');
  const provider = readProvider(env);
  return {
    port,
    // Loopback only while developing; every interface in production (containers, load balancers).
    host: env.HOST || (environment === 'production' ? '0.0.0.0' : '127.0.0.1'),
    path: readPath(env),
    environment,
    logLevel,
    corsOrigins: origins(env.CORS_ORIGINS),
    allowedHosts: hosts(env.ALLOWED_HOSTS),
    ...(modelIdleTimeoutMs !== undefined ? { modelIdleTimeoutMs } : {}),
    ...(agentIdleTimeoutMs !== undefined ? { agentIdleTimeoutMs } : {}),
    ...(maxConcurrentRuns !== undefined ? { maxConcurrentRuns } : {}),
    ...(provider ? { provider } : {}),
    ...readAgents(env),
    modelLimits: readModelLimits(env),
    mcpServers: readMcpServers(env),
    allowClientMcpServers: clientMcpServers(env),
    ...readGuardrailsUrl(env),
    threads: readThreads(env),
    ...readAuthentication(env),
    ...readLogFormat(env),
    rateLimits: {
      requestsPerMinute: wholeNumber(env, 'RATE_LIMIT_REQUESTS_PER_MINUTE', 'requests') ?? 0,
      concurrentRuns: wholeNumber(env, 'RATE_LIMIT_CONCURRENT_RUNS', 'runs') ?? 0,
    },
    ...optional('trustProxy', countOf(env, 'TRUST_PROXY')),
    ...optional('shutdownGraceMs', countOf(env, 'SHUTDOWN_GRACE_MS')),
    ...optional('shutdownDelayMs', countOf(env, 'SHUTDOWN_DELAY_MS')),
    ...optional('maxBufferedOutputMb', countOf(env, 'MAX_BUFFERED_OUTPUT_MB')),
    ...optional('maxBufferedInputMb', countOf(env, 'MAX_BUFFERED_INPUT_MB')),
    ...optional('maxRunOutputMb', countOf(env, 'MAX_RUN_OUTPUT_MB')),
    metrics: readMetrics(env),
    ...readTracing(env),
    ...optional('modelFirstTokenTimeoutMs', milliseconds(env, 'MODEL_FIRST_TOKEN_TIMEOUT_MS')),
    ...optional('agentFirstEventTimeoutMs', milliseconds(env, 'AGENT_FIRST_EVENT_TIMEOUT_MS')),
    ...readExecutor(env),
    ...optional('streamWriteIntervalMs', countOf(env, 'STREAM_WRITE_INTERVAL_MS')),
    ...readTranscription(env),
    ...readAgUiReasoning(env),
  };
}

function readAgUiReasoning(env: NodeJS.ProcessEnv): { agUiReasoning?: 'declared' | 'always' } {
  const value = env.AG_UI_REASONING?.trim().toLowerCase();
  if (!value) return {};
  if (value !== 'declared' && value !== 'always')
    throw new ConfigurationError(
      `AG_UI_REASONING must be declared or always (got ${JSON.stringify(env.AG_UI_REASONING)}).`,
    );
  return { agUiReasoning: value };
}

function readExecutor(env: NodeJS.ProcessEnv): { executor?: ExecutorName } {
  const value = env.GATEWAY_EXECUTOR?.trim().toLowerCase();
  if (!value) return {};
  if (!isExecutorName(value))
    throw new ConfigurationError(
      `GATEWAY_EXECUTOR must be ${EXECUTOR_NAMES.join(' or ')} (got ${JSON.stringify(env.GATEWAY_EXECUTOR)}).`,
    );
  return { executor: value };
}

function readPath(env: NodeJS.ProcessEnv): string {
  const path = env.GRAPHQL_PATH?.trim() || '/api/copilotkit';
  if (!isGatewayPath(path)) {
    throw new ConfigurationError(
      `GRAPHQL_PATH must be a URL path starting with "/", such as "/api/copilotkit", other than /health and ` +
        `/ready (got ${JSON.stringify(env.GRAPHQL_PATH)}).`,
    );
  }
  return path;
}

function readLogFormat(env: NodeJS.ProcessEnv): { logFormat?: 'json' | 'pretty' } {
  const value = env.LOG_FORMAT?.trim().toLowerCase();
  if (!value) return {};
  if (value !== 'json' && value !== 'pretty')
    throw new ConfigurationError(`LOG_FORMAT must be json or pretty (got ${JSON.stringify(env.LOG_FORMAT)}).`);
  return { logFormat: value };
}

/** The authentication, and whether none is a choice (ALLOW_UNAUTHENTICATED). */
function readAuthentication(env: NodeJS.ProcessEnv): Pick<EnvironmentSettings, 'auth' | 'allowUnauthenticated'> {
  const auth = readAuth(env);
  const allow = env.ALLOW_UNAUTHENTICATED?.trim() ? flag(env, 'ALLOW_UNAUTHENTICATED') : undefined;
  if (allow === false && auth.apiKeys.length === 0 && !auth.jwt) {
    throw new ConfigurationError(
      'ALLOW_UNAUTHENTICATED=false and no authentication is configured: set GATEWAY_API_KEYS (keys of 16 ' +
        'characters or more, comma-separated) or JWT_JWKS_URL or JWT_SECRET, or ALLOW_UNAUTHENTICATED=true to ' +
        'serve everyone.',
    );
  }
  return { auth, ...(allow !== undefined ? { allowUnauthenticated: allow } : {}) };
}

function readAuth(env: NodeJS.ProcessEnv): EnvironmentSettings['auth'] {
  const apiKeys = list(env.GATEWAY_API_KEYS);
  // Checked here as well as by apiKeyAuthenticator, to name the variable; the key itself is not shown.
  apiKeys.forEach((key, index) => {
    if (key.length < 16 || /\s/.test(key)) {
      throw new ConfigurationError(
        `GATEWAY_API_KEYS: key number ${index + 1} has ${key.length} characters; each key needs at least 16, ` +
          `without spaces, keys separated by commas (make one with "openssl rand -hex 32").`,
      );
    }
  });
  const jwksUrl = env.JWT_JWKS_URL?.trim() || undefined;
  const secret = env.JWT_SECRET?.trim() || undefined;
  const issuer = env.JWT_ISSUER?.trim() || undefined;
  const audience = env.JWT_AUDIENCE?.trim() || undefined;
  if (!jwksUrl && !secret) {
    if (issuer || audience)
      throw new ConfigurationError('JWT_ISSUER and JWT_AUDIENCE need JWT_JWKS_URL or JWT_SECRET.');
    return { apiKeys };
  }
  return {
    apiKeys,
    jwt: {
      ...(jwksUrl ? { jwksUrl } : {}),
      ...(secret ? { secret } : {}),
      ...(issuer ? { issuer } : {}),
      ...(audience ? { audience } : {}),
    },
  };
}

function readTracing(env: NodeJS.ProcessEnv): { tracing?: boolean } {
  const value = env.TRACING?.trim().toLowerCase();
  if (!value) return {};
  if (value !== 'true' && value !== 'false')
    throw new ConfigurationError(`TRACING must be true or false (got ${JSON.stringify(env.TRACING)}).`);
  return { tracing: value === 'true' };
}

function readMetrics(env: NodeJS.ProcessEnv): boolean | { token: string } {
  const switched = env.METRICS?.trim().toLowerCase();
  if (switched && switched !== 'true' && switched !== 'false')
    throw new ConfigurationError(`METRICS must be true or false (got ${JSON.stringify(env.METRICS)}).`);
  if (switched === 'false') return false;
  const token = env.METRICS_TOKEN?.trim();
  if (!token) return true;
  if (token.length < 16) throw new ConfigurationError('METRICS_TOKEN must be at least 16 characters.');
  return { token };
}

function readThreads(env: NodeJS.ProcessEnv): ThreadsOptions {
  const redisUrl = env.REDIS_URL?.trim();
  if (redisUrl && !isRedisUrl(redisUrl)) throw new ConfigurationError(`REDIS_URL ${REDIS_URL_FORMS}.`);
  // Redis behind Sentinels: their addresses and the primary's name (and passwords), instead of REDIS_URL.
  const sentinels = list(env.REDIS_SENTINELS);
  const sentinelName = env.REDIS_SENTINEL_NAME?.trim();
  // A Redis Cluster: some of its nodes.
  const clusterNodes = list(env.REDIS_CLUSTER_NODES);
  if ([redisUrl, sentinels.length, clusterNodes.length].filter(Boolean).length > 1)
    throw new ConfigurationError(
      'Set one of REDIS_URL, REDIS_SENTINELS (with REDIS_SENTINEL_NAME) and REDIS_CLUSTER_NODES, not several.',
    );
  if (sentinels.length && !sentinelName)
    throw new ConfigurationError("REDIS_SENTINELS needs REDIS_SENTINEL_NAME: the primary's name in the Sentinels.");
  if (!sentinels.length && (sentinelName || env.REDIS_SENTINEL_PASSWORD?.trim()))
    throw new ConfigurationError('REDIS_SENTINEL_NAME and REDIS_SENTINEL_PASSWORD go with REDIS_SENTINELS.');
  if (!sentinels.length && !clusterNodes.length && env.REDIS_PASSWORD?.trim())
    throw new ConfigurationError(
      'REDIS_PASSWORD goes with REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL, put the password in the URL).',
    );
  const waitReplicas =
    env.REDIS_WAIT_REPLICAS?.trim() === '0' ? 0 : wholeNumber(env, 'REDIS_WAIT_REPLICAS', 'replicas');
  const redisPassword = env.REDIS_PASSWORD?.trim();
  const sentinelPassword = env.REDIS_SENTINEL_PASSWORD?.trim();
  const ttlSeconds = wholeNumber(env, 'THREAD_TTL_SECONDS', 'seconds');
  const maxThreads = wholeNumber(env, 'MAX_THREADS', 'threads');
  const maxMegabytes = wholeNumber(env, 'MAX_THREAD_STORE_MB', 'megabytes');
  const leaseMs = milliseconds(env, 'INSTANCE_LEASE_MS');
  const choice = <T extends string>(name: string, allowed: readonly T[]): T | undefined => {
    const value = env[name]?.trim();
    if (!value) return undefined;
    if (!allowed.includes(value as T))
      throw new ConfigurationError(`${name} must be ${allowed.join(' or ')} (got ${JSON.stringify(value)}).`);
    return value as T;
  };
  const onBusy = choice('THREAD_BUSY_POLICY', ['refuse', 'interrupt'] as const);
  const onStoreFailure = choice('STORE_FAILURE_POLICY', ['serve', 'fail'] as const);
  const listAnonymous = choice('THREAD_LIST_ANONYMOUS', ['true', 'false'] as const);
  return {
    ...(redisUrl ? { redisUrl } : {}),
    ...(sentinels.length ? { sentinels, sentinelName } : {}),
    ...(clusterNodes.length ? { clusterNodes } : {}),
    ...(redisPassword ? { redisPassword } : {}),
    ...(waitReplicas !== undefined ? { waitReplicas } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
    ...(maxThreads !== undefined ? { maxThreads } : {}),
    ...(maxMegabytes !== undefined ? { maxBytes: maxMegabytes * 1024 * 1024 } : {}),
    ...(leaseMs !== undefined ? { leaseMs } : {}),
    ...(onBusy ? { onBusy } : {}),
    ...(onStoreFailure ? { onStoreFailure } : {}),
    ...(listAnonymous ? { listAnonymous: listAnonymous === 'true' } : {}),
  };
}

function readGuardrailsUrl(env: NodeJS.ProcessEnv): { guardrailsUrl?: string } {
  const url = env.GUARDRAILS_URL?.trim();
  if (!url) return {};
  if (!isHttpUrl(url))
    throw new ConfigurationError(
      `GUARDRAILS_URL must be a URL such as "https://api.cloud.copilotkit.ai" (got ${JSON.stringify(url)}).`,
    );
  return { guardrailsUrl: url };
}

function readMcpServers(env: NodeJS.ProcessEnv): string[] {
  const servers = list(env.MCP_SERVERS);
  for (const url of servers) {
    if (!isHttpUrl(url))
      throw new ConfigurationError(
        `MCP_SERVERS must list http(s) URLs, comma-separated, such as "http://localhost:8931/mcp" (got ` +
          `${JSON.stringify(url)}).`,
      );
  }
  return servers;
}

/** MCP_ALLOW_CLIENT_SERVERS: true, false, or the hosts requests may name. */
function clientMcpServers(env: NodeJS.ProcessEnv): boolean | string[] {
  const value = env.MCP_ALLOW_CLIENT_SERVERS?.trim();
  if (value && !/^(true|false|1|0)$/i.test(value)) {
    const hostList = list(value);
    for (const host of hostList) {
      if (!/^[\w.-]+(:\d+)?$/.test(host)) {
        throw new ConfigurationError(
          `MCP_ALLOW_CLIENT_SERVERS must be true, false, or host names, comma-separated, such as "tools.example.com" ` +
            `(got ${JSON.stringify(host)}).`,
        );
      }
    }
    return hostList;
  }
  return flag(env, 'MCP_ALLOW_CLIENT_SERVERS');
}

/** The cost controls; unset variables keep the gateway's defaults (only the configured model, no ceilings). */
function readModelLimits(env: NodeJS.ProcessEnv): ModelLimitsOptions {
  const models = env.ALLOWED_MODELS?.trim();
  const maxTokens = wholeNumber(env, 'MAX_TOKENS', 'tokens');
  const maxMessages = wholeNumber(env, 'MAX_INPUT_MESSAGES', 'messages');
  const maxInputChars = wholeNumber(env, 'MAX_INPUT_CHARS', 'characters');
  return {
    ...(models ? { allowedModels: models === '*' ? '*' : list(models) } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(maxMessages !== undefined ? { maxMessages } : {}),
    ...(maxInputChars !== undefined ? { maxInputChars } : {}),
  };
}

function origins(value: string | undefined): string[] {
  const entries = list(value);
  for (const origin of entries) {
    if (!isOrigin(origin)) {
      throw new ConfigurationError(
        `CORS_ORIGINS must list origins, comma-separated, each just a scheme, host and optional port such as ` +
          `"https://app.example.com" (got ${JSON.stringify(origin)}).`,
      );
    }
  }
  return entries;
}

function hosts(value: string | undefined): string[] {
  const entries = list(value);
  for (const host of entries) {
    if (!/^[\w.-]+$/.test(host)) {
      throw new ConfigurationError(
        `ALLOWED_HOSTS must list host names, comma-separated, without scheme or port, such as "dev.example.test" ` +
          `(got ${JSON.stringify(host)}).`,
      );
    }
  }
  return entries;
}
