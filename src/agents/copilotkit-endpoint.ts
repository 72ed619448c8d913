import type { Logger } from 'pino';
import type { ActionSource, ExecutableAction } from '../actions/action.js';
import { ConfigurationError, GatewayError, UpstreamError } from '../core/errors.js';
import type { RunWriter } from '../core/writer.js';
import type { UpstreamClient } from '../upstream/client.js';
import { JsonLinesDecoder } from '../upstream/jsonl.js';
import { retryPolicy, type RetryPolicy } from '../upstream/retry.js';
import type {
  AgentClient,
  AgentEntry,
  AgentRequest,
  AgentSource,
  AgentThreadState,
  LoadStateRequest,
} from './agent.js';
import { toRuntimeMessages, toRuntimeMetaEvents } from './copilotkit-messages.js';
import { namingAgent, who } from './errors.js';
import { UpstreamHttpSettings, type UpstreamHttpOptions } from './http-options.js';
import { LangGraphEventInterpreter } from './langgraph-events.js';
import { RuntimeEventInterpreter } from './runtime-events.js';

/** A CopilotKit remote endpoint (CopilotKit's Python SDK, or anything speaking its protocol). */
export interface RemoteEndpointOptions extends UpstreamHttpOptions {
  /** The endpoint's base URL, such as "http://localhost:8000/copilotkit". */
  url: string;
  /** How long a discovery (`POST {url}/info`) is used before it is refreshed in the background. @default 60000 */
  discoveryTtlMs?: number;
}

/** What `/info` said, checked and converted. */
interface Discovery {
  agents: AgentEntry[];
  actions: ExecutableAction[];
}

type Dialect = 'langgraph' | 'runtime-events';

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * One remote endpoint: its agents (run through `/agents/execute`, JSONL) and its actions (executed
 * through `/actions/execute`), as discovered through `/info`.
 *
 * Discovery is shared by every request and cached for `discoveryTtlMs`, then refreshed in the
 * background while the last answer goes on serving. An endpoint that cannot be reached never
 * breaks a request that does not need it: until it answers, its agents and actions are simply
 * absent (the logs say why), and discovery is tried again with growing pauses.
 */
export class CopilotKitEndpoint implements AgentSource, ActionSource {
  readonly label: string;
  private readonly http: UpstreamHttpSettings;
  private readonly discoveryPolicy: RetryPolicy;
  private readonly ttlMs: number;
  private discovery: Discovery | undefined;
  private fetchedAt = 0;
  private lastAttemptAt = 0;
  private failures = 0;
  private inflight: Promise<void> | undefined;
  private firstAttempt: Promise<void> | undefined;
  /** Set once the first discovery has settled: from then on `ready()` has nothing to wait for. */
  private firstSettled = false;
  private readonly stopped = new AbortController();

  constructor(
    private readonly options: RemoteEndpointOptions,
    index: number,
    private readonly upstream: UpstreamClient,
    private readonly logger: Logger,
  ) {
    const where = `options.remoteEndpoints[${index}]`;
    if (typeof options.url !== 'string' || !/^https?:\/\/[^\s]+$/i.test(options.url)) {
      throw new ConfigurationError(
        `${where}.url must be an http(s) URL such as "http://localhost:8000/copilotkit" (got ` +
          `${JSON.stringify(options.url)}).`,
      );
    }
    const ttl = options.discoveryTtlMs ?? 60_000;
    if (!Number.isInteger(ttl) || ttl < 10 || ttl > 86_400_000) {
      throw new ConfigurationError(
        `${where}.discoveryTtlMs must be a whole number of milliseconds from 10 to 86400000 (got ` +
          `${JSON.stringify(options.discoveryTtlMs)}).`,
      );
    }
    this.ttlMs = ttl;
    this.http = new UpstreamHttpSettings(options, where);
    // Discovery is shared and in the background: fewer, shorter attempts than a run's calls.
    this.discoveryPolicy = retryPolicy(
      {
        maxRetries: Math.min(this.http.policy.maxRetries, 2),
        attemptTimeoutMs: Math.min(this.http.policy.attemptTimeoutMs, 10_000),
        totalTimeoutMs: Math.min(this.http.policy.totalTimeoutMs, 20_000),
      },
      `${where}.retry`,
      this.http.policy,
    );
    this.label = `remote endpoint ${index}`;
  }

  private get url(): string {
    return this.options.url.replace(/\/+$/, '');
  }

  /** Starts the first discovery (called when the gateway starts listening). */
  start(): void {
    this.refresh();
  }

  /** Stops background discovery (the gateway is closing). */
  stop(): void {
    this.stopped.abort();
  }

  get unreachable(): boolean {
    return this.discovery === undefined && this.failures > 0;
  }

  agents(): readonly AgentEntry[] {
    this.maybeRefresh();
    return this.discovery?.agents ?? [];
  }

  actions(): readonly ExecutableAction[] {
    this.maybeRefresh();
    return this.discovery?.actions ?? [];
  }

  async ready(timeoutMs: number): Promise<void> {
    this.maybeRefresh();
    // Every run asks (the registry's readiness); once the first discovery is over, no race and no timer.
    if (!this.firstAttempt || this.firstSettled) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstAttempt, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  // --- discovery ------------------------------------------------------------

  private maybeRefresh(): void {
    if (this.inflight || this.stopped.signal.aborted) return;
    const now = Date.now();
    if (this.discovery && this.failures === 0) {
      if (now - this.fetchedAt >= this.ttlMs) this.refresh();
      return;
    }
    // Never discovered, or failing: try again after a pause that grows with each failure (from
    // 250 ms to the TTL, and never less than 250 ms, so a dead endpoint is not hammered).
    const pause = this.failures === 0 ? 0 : Math.max(250, Math.min(this.ttlMs, 250 * 2 ** (this.failures - 1)));
    if (now - this.lastAttemptAt >= pause) this.refresh();
  }

  private refresh(): void {
    if (this.inflight || this.stopped.signal.aborted) return;
    this.lastAttemptAt = Date.now();
    this.inflight = this.discover().finally(() => {
      this.inflight = undefined;
    });
    if (!this.firstAttempt) {
      this.firstAttempt = this.inflight;
      const settled = () => {
        this.firstSettled = true;
      };
      void this.firstAttempt.then(settled, settled);
    }
  }

  private async discover(): Promise<void> {
    try {
      const properties = {};
      const info = await this.upstream.json<unknown>({
        url: `${this.url}/info`,
        json: { properties },
        headers: await this.http.headersFor({ properties, call: 'info' }),
        who: `the ${this.label}`,
        policy: this.discoveryPolicy,
        signal: this.stopped.signal,
        logger: this.logger,
      });
      const discovery = this.parseInfo(info);
      const changed =
        JSON.stringify(summary(discovery)) !== JSON.stringify(this.discovery ? summary(this.discovery) : null);
      if (changed || this.failures > 0) {
        this.logger.info({ endpoint: this.label, url: this.url, ...summary(discovery) }, 'remote endpoint discovered');
      }
      this.discovery = discovery;
      this.fetchedAt = Date.now();
      this.failures = 0;
    } catch (error) {
      if (this.stopped.signal.aborted) return;
      this.failures++;
      const gatewayError = error instanceof GatewayError ? error : undefined;
      this.logger.warn(
        {
          endpoint: this.label,
          url: this.url,
          code: gatewayError?.code,
          failures: this.failures,
          serving: this.discovery ? 'the last discovery' : 'nothing from this endpoint',
          err: gatewayError ? undefined : error,
        },
        `remote endpoint discovery failed: ${gatewayError?.message ?? 'unexpected error'}`,
      );
    }
  }

  private parseInfo(info: unknown): Discovery {
    if (info === null || typeof info !== 'object') {
      throw new UpstreamError(
        'UPSTREAM_BAD_RESPONSE',
        `The ${this.label} answered /info with something other than an object.`,
      );
    }
    const record = info as { actions?: unknown; agents?: unknown };
    const actions: ExecutableAction[] = [];
    for (const entry of Array.isArray(record.actions) ? record.actions : []) {
      if (!entry || typeof entry.name !== 'string' || !NAME.test(entry.name)) {
        this.logger.warn(
          { endpoint: this.label, action: entry?.name },
          'remote action skipped: its name is not a valid tool name',
        );
        continue;
      }
      actions.push(
        this.remoteAction(
          entry.name,
          typeof entry.description === 'string' ? entry.description : '',
          parametersToJsonSchema(entry.parameters),
        ),
      );
    }
    const agents: AgentEntry[] = [];
    for (const entry of Array.isArray(record.agents) ? record.agents : []) {
      if (!entry || typeof entry.name !== 'string' || !NAME.test(entry.name)) {
        this.logger.warn(
          { endpoint: this.label, agent: entry?.name },
          'remote agent skipped: its name is not a valid name',
        );
        continue;
      }
      const dialect: Dialect = entry.type === 'langgraph' ? 'langgraph' : 'runtime-events';
      agents.push({
        name: entry.name,
        description: typeof entry.description === 'string' ? entry.description : '',
        kind: 'copilotkit',
        client: new CopilotKitAgentClient(this, dialect),
      });
    }
    return { agents, actions };
  }

  private remoteAction(name: string, description: string, parameters: Record<string, unknown>): ExecutableAction {
    return {
      name,
      description,
      parameters,
      source: this.label,
      execute: async (args, context) => {
        const answer = await this.upstream.json<unknown>({
          url: `${this.url}/actions/execute`,
          json: { name, arguments: args, properties: this.http.bodyProperties(context.properties) },
          headers: await this.http.headersFor({
            properties: context.properties,
            call: 'actions/execute',
            principal: context.principal,
          }),
          who: `the remote endpoint of action "${name}"`,
          policy: this.http.policy,
          signal: context.signal,
          logger: context.logger,
        });
        if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
          throw new UpstreamError(
            'UPSTREAM_BAD_RESPONSE',
            `The remote endpoint of action "${name}" answered with something other than {"result": …}.`,
          );
        }
        // Any JSON value; the executor sends a string as it is and anything else as JSON.
        return (answer as { result?: unknown }).result;
      },
    };
  }

  // --- agent calls ------------------------------------------------------------

  /** Runs one agent (`POST {url}/agents/execute`) and writes its JSONL into the run. */
  async runAgent(dialect: Dialect, request: AgentRequest, out: RunWriter, signal: AbortSignal): Promise<void> {
    const name = request.agentName;
    const body = {
      name,
      threadId: request.threadId,
      ...(request.nodeName ? { nodeName: request.nodeName } : {}),
      messages: toRuntimeMessages(request.messages),
      state: request.state,
      config: request.config,
      properties: this.http.bodyProperties(request.properties),
      actions: request.tools.map(({ name: toolName, description, parameters }) => ({
        name: toolName,
        description,
        parameters,
      })),
      metaEvents: toRuntimeMetaEvents(request.metaEvents),
    };
    const interpreter =
      dialect === 'langgraph'
        ? new LangGraphEventInterpreter(out, name, request.logger)
        : new RuntimeEventInterpreter(out, name, request.logger);
    // Lines are handed to the interpreter synchronously as each read arrives: no await per line.
    const lines = new JsonLinesDecoder(who(name), (value, line) => interpreter.handle(value, line));
    await this.upstream.stream(
      {
        url: `${this.url}/agents/execute`,
        json: body,
        headers: await this.http.headersFor({
          properties: request.properties,
          call: 'agents/execute',
          agentName: name,
          threadId: request.threadId,
          principal: request.principal,
        }),
        who: who(name),
        policy: this.http.policy,
        signal,
        logger: request.logger,
      },
      (chunk) => lines.feed(chunk),
    );
    lines.end();
    if (interpreter instanceof LangGraphEventInterpreter) interpreter.finish();
  }

  /** What the agent knows of a thread (`POST {url}/agents/state`). */
  async loadState(request: LoadStateRequest, signal: AbortSignal): Promise<AgentThreadState> {
    let answer: unknown;
    try {
      answer = await this.upstream.json<unknown>({
        url: `${this.url}/agents/state`,
        json: {
          properties: this.http.bodyProperties(request.properties),
          threadId: request.threadId,
          name: request.agentName,
        },
        headers: await this.http.headersFor({
          properties: request.properties,
          call: 'agents/state',
          agentName: request.agentName,
          threadId: request.threadId,
          principal: request.principal,
        }),
        who: who(request.agentName),
        policy: this.http.policy,
        signal,
        logger: request.logger,
      });
    } catch (error) {
      if (error instanceof GatewayError && error.details?.upstreamStatus === 404) {
        request.logger.debug(
          { agent: request.agentName, threadId: request.threadId },
          'the agent does not know the thread',
        );
        return { threadExists: false, state: {}, messages: [] };
      }
      throw error;
    }
    const record = (answer ?? {}) as { threadExists?: unknown; state?: unknown; messages?: unknown };
    const state =
      record.state !== null && typeof record.state === 'object' && !Array.isArray(record.state)
        ? (record.state as Record<string, unknown>)
        : {};
    const messages = Array.isArray(record.messages) ? record.messages : [];
    return { threadExists: record.threadExists === true, state, messages };
  }
}

/** The AgentClient of one of an endpoint's agents. */
class CopilotKitAgentClient implements AgentClient {
  constructor(
    private readonly endpoint: CopilotKitEndpoint,
    private readonly dialect: Dialect,
  ) {}

  async run(request: AgentRequest, out: RunWriter, signal: AbortSignal): Promise<void> {
    try {
      await this.endpoint.runAgent(this.dialect, request, out, signal);
    } catch (error) {
      throw namingAgent(error, request.agentName);
    }
  }

  async loadState(request: LoadStateRequest, signal: AbortSignal): Promise<AgentThreadState> {
    try {
      return await this.endpoint.loadState(request, signal);
    } catch (error) {
      throw namingAgent(error, request.agentName);
    }
  }
}

function summary(discovery: Discovery): { agents: string[]; actions: string[] } {
  return {
    agents: discovery.agents.map((agent) => agent.name),
    actions: discovery.actions.map((action) => action.name),
  };
}

/** CopilotKit's `Parameter[]` (name, type, description, required, enum, attributes) as a JSON Schema object. */
function parametersToJsonSchema(parameters: unknown): Record<string, unknown> {
  const list = Array.isArray(parameters) ? parameters.filter((p) => p && typeof p.name === 'string') : [];
  const properties: Record<string, unknown> = {};
  for (const parameter of list) properties[parameter.name] = attributeSchema(parameter);
  return { type: 'object', properties, required: list.filter((p) => p.required !== false).map((p) => p.name) };
}

function attributeSchema(parameter: Record<string, any>): Record<string, unknown> {
  const description = typeof parameter.description === 'string' ? { description: parameter.description } : {};
  const type: string | undefined = typeof parameter.type === 'string' ? parameter.type : undefined;
  switch (type) {
    case 'string':
      return { type: 'string', ...description, ...(Array.isArray(parameter.enum) ? { enum: parameter.enum } : {}) };
    case 'number':
    case 'boolean':
      return { type, ...description };
    case 'object':
    case 'object[]': {
      const attributes: Record<string, any>[] = Array.isArray(parameter.attributes)
        ? parameter.attributes.filter((a: any) => a && typeof a.name === 'string')
        : [];
      const properties = Object.fromEntries(
        attributes.map((attribute) => [attribute.name, attributeSchema(attribute)]),
      );
      const required = attributes
        .filter((attribute) => attribute.required !== false)
        .map((attribute) => attribute.name);
      const object = {
        type: 'object',
        ...(attributes.length ? { properties } : {}),
        ...(required.length ? { required } : {}),
      };
      return type === 'object[]' ? { type: 'array', items: object, ...description } : { ...object, ...description };
    }
    default:
      if (type?.endsWith('[]')) return { type: 'array', items: { type: type.slice(0, -2) }, ...description };
      return { type: 'string', ...description };
  }
}
