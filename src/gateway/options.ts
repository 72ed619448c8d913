import { getHeapStatistics } from 'node:v8';
import { pino, type Logger } from 'pino';
import type { ModelAdapter } from '../adapters/adapter.js';
import { DemoAdapter, demoTimeAction } from '../adapters/demo.js';
import { resolveObservability, type ObservabilityOptions } from '../adapters/observed.js';
import {
  MULTIPART_OVERHEAD_BYTES,
  resolveTranscription,
  type TranscriptionOptions,
} from '../adapters/transcription.js';
import { resolveMcpServers, type McpServerOptions } from '../actions/mcp.js';
import type { ServerAction } from '../actions/server-action.js';
import type { RemoteEndpointOptions } from '../agents/copilotkit-endpoint.js';
import type { AgentDefinition } from '../agents/definitions.js';
import type { Authenticate } from '../auth/authenticate.js';
import { ConfigurationError } from '../core/errors.js';
import type { GuardrailsOptions } from '../engine/guardrails.js';
import { resolveHooks, type RequestHooks } from '../engine/hooks.js';
import { resolveModelLimits, type ModelLimitsOptions } from '../engine/model-limits.js';
import { EXECUTOR_NAMES, isExecutorName, type ExecutorName } from '../graphql/executor-name.js';
import { resolveRateLimits, type RateLimitOptions } from '../limits/rate-limiter.js';
import { resolveThreadsOptions, type ThreadsOptions } from '../threads/options.js';
import { isOrigin } from '../transports/cors.js';
import {
  booleanOption,
  environmentOf,
  integerOption,
  isGatewayPath,
  resolveAgents,
  resolveAuthenticate,
  resolveEndpoints,
  resolveGuardrails,
  resolveMetricsToken,
} from './option-values.js';

/** What `createGateway` takes; every option is optional, checked when the gateway is built. */
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
   * The most output, in MiB, the process holds for clients that do not read what it sends: while the output waiting
   * for every connection (with what the views of a connection that took nothing for five seconds hold: its runs'
   * output, the events waiting for it) adds up to more, the connections holding the most that took none of it for
   * five seconds (or read too slowly to take what they hold within a minute) are closed (a long thread's replay sent
   * to a client that never reads would otherwise stay in memory as long as the connection); reads of a whole thread
   * are refused OVERLOADED meanwhile. @default 256, or a sixteenth of the V8 heap limit if that is less (96 with
   * `npm start`'s), at least 16
   */
  maxBufferedOutputMb?: number;
  /**
   * The most input, in MiB, held at once: request bodies while they are read, and what runs in flight were sent
   * (their messages, tools, context and state, from each run's start to its end). A body or a run that would pass it
   * is refused OVERLOADED. A run holds its input until its model
   * answers, and outlives its client, so large requests to a slow model would otherwise fill the heap. @default 256,
   * or an eighth of the V8 heap limit if that is less (192 with `npm start`'s), at least 32
   */
  maxBufferedInputMb?: number;
  /**
   * Host names served in development besides localhost and IP addresses (DNS-rebinding protection).
   * Not checked in production. @default []
   */
  allowedHosts?: string[];
  /**
   * The most output, in MiB, one run may produce (its text, action arguments and results, reasoning, agent states and
   * meta events, with a few dozen bytes for each event): a run past it fails with LIMIT_EXCEEDED, its upstream call
   * ended. Everything a run produces is held while it runs (its record, and each client's view of it), so an upstream
   * that never stops would otherwise fill the heap. As much as one agent call's state work may come to (64 MiB), so
   * that an agent's states fail that bound first. @default 64
   */
  maxRunOutputMb?: number;
  /** Runs this process serves at once; more are refused with OVERLOADED until one ends. @default 1000 */
  maxConcurrentRuns?: number;
  /**
   * How often a quiet stream shows it is alive: an SSE comment on HTTP streams, a ping on every
   * WebSocket (a socket that has not answered the previous ping is dropped). @default 12000
   */
  keepAliveMs?: number;
  /**
   * A streamed HTTP answer's later parts (a model's tokens) leave at most once per this many milliseconds: the first
   * at once, then whatever came during the interval in one write, byte for byte what separate writes would send.
   * Writing to a socket is the largest cost of a streamed token (measured: 32 ms costs a tenth less CPU per token
   * than 16 at a hundred fast streams); 32 ms is 30 updates a second, faster than a reader reads and than most
   * models write. 0 writes each turn of the event loop's parts at once. @default 32
   */
  streamWriteIntervalMs?: number;
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
  /**
   * Requests per minute and concurrent runs per client (principal, or address); off by default. Shared through Redis
   * when threads are.
   */
  rateLimits?: RateLimitOptions;
  /** Proxies in front of the gateway whose X-Forwarded-For is believed for the client's address. @default 0 */
  trustProxy?: number;
  /** How long in-flight runs get to finish on `shutdown()` (SIGTERM) before they are ended. @default 25000 */
  shutdownGraceMs?: number;
  /**
   * How long `shutdown()` (SIGTERM) keeps serving everything as before, with GET /ready answering 503, before it
   * drains: time for a load balancer that reads /ready, or a platform that takes a stopping instance out of
   * rotation (Kubernetes' endpoints), to stop sending it requests, so that none is refused. @default 0
   */
  shutdownDelayMs?: number;
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
  /**
   * How long the model may think before its first chunk of each call (then modelIdleTimeoutMs applies). @default 120000
   */
  modelFirstTokenTimeoutMs?: number;
  /**
   * How long an agent may take before its first event of each call (then agentIdleTimeoutMs applies). @default 300000
   */
  agentFirstEventTimeoutMs?: number;
  /**
   * What runs GraphQL operations: `fast`, the gateway's own paths written for speed (BENCHMARKS.md), or
   * `stock`, Apollo Server's pipeline and @graphql-tools/executor as their authors ship them (the way
   * back if an upgrade breaks a fast path). Both behave the same; the test suites run on both. See
   * graphql/executor.ts. @default "fast"
   */
  executor?: ExecutorName;
  /**
   * Whether Apollo Server reports usage to Apollo Studio (its usage reporting, which it installs by itself when
   * APOLLO_KEY is set): it must see every request and every later payload, so the fast executor then leaves HTTP
   * requests to Apollo's pipeline (its other paths stay). False keeps it off, APOLLO_KEY or not. @default true when
   * APOLLO_KEY is set, else false
   */
  apolloUsageReporting?: boolean;
  /**
   * Voice input for AG-UI clients (`POST {path}/transcribe`): an OpenAI-compatible speech-to-text service,
   * `{baseURL, apiKey?, model? (default "whisper-1"), maxBytes? (default 25 MiB)}`. Off by default: /info says
   * `audioFileTranscriptionEnabled: false` and /transcribe answers `service_not_configured`.
   */
  transcription?: TranscriptionOptions;
  /**
   * Which AG-UI clients are sent the model's reasoning (REASONING_* events): `declared`, those that declare AG-UI 1.0
   * (`protocolVersion`); `always`, every one, as CopilotKit's own runtime sends it. Clients on @ag-ui/client 0.0.45 or
   * later take these events (CopilotKit 1.74 pins 0.0.59 and shows reasoning); older ones fail a run that has them.
   * @default "declared"
   */
  agUiReasoning?: 'declared' | 'always';
}

/** What every option's reader gets besides its own value: the options, and what is settled before any reader runs. */
interface Settled {
  options: GatewayOptions;
  development: boolean;
  adapter: ModelAdapter;
}

/**
 * Every option, once: how it is read from what the caller gave (checked, with its default). The
 * option names, the resolved options' type and the order of the checks all come from this table;
 * `satisfies` holds it to GatewayOptions, so an option declared there and not read here (or the
 * other way round) does not compile.
 */
const READERS = {
  adapter: (_value, { adapter }) => adapter,
  actions: (value, { options }) => {
    if (value !== undefined && !Array.isArray(value))
      throw new ConfigurationError('options.actions must be an array of server-side actions.');
    const actions = [...(value ?? [])];
    // Demo mode is explorable offline: its scripted model can call the demo action.
    if (!options.adapter && !actions.some((action) => action?.name === demoTimeAction.name))
      actions.push(demoTimeAction);
    return actions;
  },
  agents: (value) => resolveAgents(value),
  remoteEndpoints: (value) => resolveEndpoints(value),
  discoveryWaitMs: (value) => integerOption('discoveryWaitMs', value, 3_000, 0, 60_000),
  path: (value) => {
    const path = value ?? '/api/copilotkit';
    if (!isGatewayPath(path)) {
      throw new ConfigurationError(
        `options.path must be a URL path starting with "/", other than /health and /ready (got ` +
          `${JSON.stringify(path)}).`,
      );
    }
    return path;
  },
  logger: (value): Logger => {
    const logger = value ?? pino({ level: 'info' });
    if (typeof logger?.child !== 'function') throw new ConfigurationError('options.logger must be a pino logger.');
    return logger;
  },
  environment: (_value, { development }) => (development ? 'development' : 'production'),
  corsOrigins: (value) => {
    if (value !== undefined && (!Array.isArray(value) || value.some((o) => typeof o !== 'string'))) {
      throw new ConfigurationError(
        'options.corsOrigins must be an array of origins such as "https://app.example.com".',
      );
    }
    for (const origin of value ?? []) {
      if (!isOrigin(origin)) {
        throw new ConfigurationError(
          `options.corsOrigins: ${JSON.stringify(origin)} is not an origin; give just a scheme, host and optional ` +
            `port, such as "https://app.example.com".`,
        );
      }
    }
    return value ?? [];
  },
  allowLoopbackOrigins: (value, { development }) => booleanOption('allowLoopbackOrigins', value, development),
  sandbox: (value, { development }) => booleanOption('sandbox', value, development),
  maxRounds: (value) => integerOption('maxRounds', value, 5, 1, 100),
  modelIdleTimeoutMs: (value) => integerOption('modelIdleTimeoutMs', value, 60_000, 1, 3_600_000),
  agentIdleTimeoutMs: (value) => integerOption('agentIdleTimeoutMs', value, 300_000, 1, 3_600_000),
  actionTimeoutMs: (value) => integerOption('actionTimeoutMs', value, 60_000, 1, 3_600_000),
  maxBodyBytes: (value) => integerOption('maxBodyBytes', value, 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  maxBufferedOutputMb: (value) =>
    integerOption(
      'maxBufferedOutputMb',
      value,
      // The output held counts about a third of what such a client costs (its answer's text, and the thread its
      // request read, stay in the heap beside it).
      Math.max(16, Math.min(256, Math.floor(getHeapStatistics().heap_size_limit / 16 / 1024 / 1024))),
      1,
      1024 * 1024,
    ),
  maxRunOutputMb: (value) => integerOption('maxRunOutputMb', value, 64, 1, 1024 * 1024),
  maxBufferedInputMb: (value) =>
    integerOption(
      'maxBufferedInputMb',
      value,
      // A run's input costs about three times its size in memory (its parsed request, the messages made from it, the
      // provider's request body).
      Math.max(32, Math.min(256, Math.floor(getHeapStatistics().heap_size_limit / 8 / 1024 / 1024))),
      1,
      1024 * 1024,
    ),
  maxConcurrentRuns: (value) => integerOption('maxConcurrentRuns', value, 1000, 1, 1_000_000),
  allowedHosts: (value) => {
    if (
      value !== undefined &&
      (!Array.isArray(value) || value.some((h) => typeof h !== 'string' || !/^[\w.-]+$/.test(h)))
    ) {
      throw new ConfigurationError(
        'options.allowedHosts must be an array of host names such as "dev.example.test" (no scheme or port).',
      );
    }
    return value ?? [];
  },
  keepAliveMs: (value) => integerOption('keepAliveMs', value, 12_000, 10, 3_600_000),
  streamWriteIntervalMs: (value) => integerOption('streamWriteIntervalMs', value, 32, 0, 60_000),
  modelLimits: (value, { adapter }) => resolveModelLimits(value, adapter.model),
  mcpServers: (value) => resolveMcpServers(value),
  allowClientMcpServers: (value): boolean | string[] => {
    if (
      value !== undefined &&
      typeof value !== 'boolean' &&
      (!Array.isArray(value) || value.some((host) => typeof host !== 'string' || !/^[\w.-]+(:\d+)?$/.test(host)))
    ) {
      throw new ConfigurationError(
        'options.allowClientMcpServers must be true, false, or a list of host names (with an optional port), such as ' +
          '["tools.example.com"].',
      );
    }
    return value ?? false;
  },
  guardrails: (value) => resolveGuardrails(value),
  hooks: (value) => resolveHooks(value),
  observability: (value) => resolveObservability(value),
  threads: (value) => resolveThreadsOptions(value),
  authenticate: (value) => resolveAuthenticate(value),
  rateLimits: (value) => resolveRateLimits(value),
  trustProxy: (value) => integerOption('trustProxy', value, 0, 0, 10),
  shutdownGraceMs: (value) => integerOption('shutdownGraceMs', value, 25_000, 0, 3_600_000),
  shutdownDelayMs: (value) => integerOption('shutdownDelayMs', value, 0, 0, 300_000),
  metrics: (value) => ({ on: value === undefined ? true : value !== false, token: resolveMetricsToken(value) }),
  tracing: (value) => booleanOption('tracing', value, false),
  modelFirstTokenTimeoutMs: (value) => integerOption('modelFirstTokenTimeoutMs', value, 120_000, 1, 3_600_000),
  agentFirstEventTimeoutMs: (value) => integerOption('agentFirstEventTimeoutMs', value, 300_000, 1, 3_600_000),
  executor: (value): ExecutorName => {
    if (value === undefined) return EXECUTOR_NAMES[0];
    if (!isExecutorName(value)) {
      const names = EXECUTOR_NAMES.map((name) => JSON.stringify(name)).join(' or ');
      throw new ConfigurationError(`options.executor must be ${names} (got ${JSON.stringify(value)}).`);
    }
    return value;
  },
  apolloUsageReporting: (value) => booleanOption('apolloUsageReporting', value, Boolean(process.env.APOLLO_KEY)),
  transcription: (value) => resolveTranscription(value),
  agUiReasoning: (value): 'declared' | 'always' => {
    if (value === undefined) return 'declared';
    if (value !== 'declared' && value !== 'always')
      throw new ConfigurationError(
        `options.agUiReasoning must be "declared" or "always" (got ${JSON.stringify(value)}).`,
      );
    return value;
  },
} satisfies { [K in keyof Required<GatewayOptions>]: (value: GatewayOptions[K], settled: Settled) => unknown };

const OPTION_NAMES: readonly string[] = Object.keys(READERS);

/** The options as the gateway uses them: each one read (checked, defaulted) by its reader. */
export type ResolvedOptions = { [K in keyof typeof READERS]: ReturnType<(typeof READERS)[K]> } & {
  /** The environment is development (not production). */
  development: boolean;
};

/** Reads every option (ConfigurationError for the first one that is wrong, naming it). */
export function resolveOptions(options: GatewayOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError('createGateway options must be an object.');
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.includes(key)) {
      throw new ConfigurationError(`Unknown option "${key}". Known options: ${OPTION_NAMES.join(', ')}.`);
    }
  }
  const environment = options.environment ?? environmentOf(process.env.NODE_ENV);
  if (environment !== 'development' && environment !== 'production') {
    throw new ConfigurationError(
      `options.environment must be "development" or "production" (got ${JSON.stringify(environment)}).`,
    );
  }
  const adapter: ModelAdapter = options.adapter ?? new DemoAdapter();
  if (typeof adapter !== 'object' || typeof adapter.stream !== 'function' || typeof adapter.name !== 'string') {
    throw new ConfigurationError(
      'options.adapter must be a model adapter (an object with a name and a stream method).',
    );
  }
  const settled: Settled = { options, development: environment === 'development', adapter };
  const resolved: Record<string, unknown> = { development: settled.development };
  for (const name of OPTION_NAMES) {
    const read = READERS[name as keyof typeof READERS] as (value: unknown, settled: Settled) => unknown;
    resolved[name] = read(options[name as keyof GatewayOptions], settled);
  }
  checkTranscriptionFits(resolved as ResolvedOptions);
  return resolved as ResolvedOptions;
}

/**
 * An upload is read whole and counts in the input held at once while it arrives: a largest recording over that
 * budget could never be taken, and each would be refused OVERLOADED, as if sending it again could help.
 */
function checkTranscriptionFits({ transcription, maxBufferedInputMb }: ResolvedOptions): void {
  if (!transcription) return;
  const upload = transcription.maxBytes + MULTIPART_OVERHEAD_BYTES;
  if (upload <= maxBufferedInputMb * 1024 * 1024) return;
  throw new ConfigurationError(
    `options.transcription.maxBytes (TRANSCRIPTION_MAX_MB) is ${transcription.maxBytes} bytes, and an upload of ` +
      `that recording (${upload} bytes with its form) would not fit in all the input held at once, ` +
      `maxBufferedInputMb (MAX_BUFFERED_INPUT_MB) ${maxBufferedInputMb} MiB: ` +
      "raise that, or lower the recordings' limit.",
  );
}
