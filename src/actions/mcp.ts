import type { Logger } from 'pino';
import { BadUserInputError, ConfigurationError } from '../core/errors.js';
import { isHttpUrl } from '../core/urls.js';
import type { ActionSource, ExecutableAction } from './action.js';
import { McpServer, type McpServerOptions } from './mcp-server.js';

export type { McpServerOptions } from './mcp-server.js';

/** How many MCP servers of each source are connected now, and how many are not (down, or not yet connected). */
export type McpCensus = Record<'configured' | 'requested' | 'retired', { connected: number; down: number }>;

/** The most MCP servers one request may name, the most kept connected, and how long an evicted one lives on. */
const MAX_NAMED_SERVERS = 10;
const MAX_KEPT_CLIENT_SERVERS = 50;
const EVICTED_GRACE_MS = 10 * 60_000;

/**
 * The MCP servers of a gateway: the configured ones, connected at start, and, when allowed, those a
 * request names in `properties.mcpServers` (`[{endpoint, apiKey?}]`), kept by address (the last 50)
 * so that each is connected once.
 */
export class McpServers {
  private readonly configured: McpServer[];
  private readonly fromClients = new Map<string, McpServer>();
  private readonly evicted = new Set<McpServer>();

  constructor(
    servers: readonly McpServerOptions[],
    /** Whether requests may name servers: any (`true`), none, or only those on these hosts (`host` or `host:port`). */
    private readonly allowClientServers: boolean | readonly string[],
    private readonly waitMs: number,
    private readonly logger: Logger,
  ) {
    this.configured = servers.map((server) => new McpServer(server, logger));
  }

  /**
   * The servers by where they come from (configured; named by requests and kept; named by requests, pushed out and
   * waiting to be closed) and whether each is connected now: the `copilot_gateway_mcp_servers` gauge.
   */
  census(): McpCensus {
    const count = (servers: Iterable<McpServer>) => {
      const counts = { connected: 0, down: 0 };
      for (const server of servers) counts[server.connected ? 'connected' : 'down']++;
      return counts;
    };
    return {
      configured: count(this.configured),
      requested: count(this.fromClients.values()),
      retired: count(this.evicted),
    };
  }

  /** The configured servers, as action sources (always offered; empty while a server is down). */
  get sources(): readonly ActionSource[] {
    return this.configured;
  }

  start(): void {
    for (const server of this.configured) void server.connect();
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.configured, ...this.fromClients.values(), ...this.evicted].map((server) => server.close()),
    );
    this.fromClients.clear();
    this.evicted.clear();
  }

  /**
   * What a run adds to the configured servers: those the request names (when allowed). Waits up to
   * `waitMs` for servers on their first connection, so their tools are offered.
   */
  async forRequest(properties: Record<string, unknown>): Promise<ActionSource[]> {
    const named = this.allowClientServers === false ? [] : this.named(properties);
    // Only servers on their first attempt are waited for; the others are offered as they are now
    // (a server that is down is retried in the background, after its backoff).
    const pending = [...this.configured, ...named]
      .filter((server) => !server.settled)
      .map((server) => server.connect());
    if (pending.length) await waitAtMost(Promise.all(pending), this.waitMs);
    return named;
  }

  private named(properties: Record<string, unknown>): McpServer[] {
    const list = properties.mcpServers;
    if (list === undefined || list === null) return [];
    if (!Array.isArray(list)) {
      throw new BadUserInputError('properties.mcpServers must be a list of {endpoint, apiKey?}.', {
        field: 'properties.mcpServers',
      });
    }
    if (list.length > MAX_NAMED_SERVERS) {
      throw new BadUserInputError(
        `properties.mcpServers may name at most ${MAX_NAMED_SERVERS} servers (got ${list.length}).`,
        { field: 'properties.mcpServers' },
      );
    }
    return list.map((entry, index) => {
      const endpoint = (entry as { endpoint?: unknown })?.endpoint;
      const apiKey = (entry as { apiKey?: unknown })?.apiKey;
      if (
        typeof endpoint !== 'string' ||
        !isHttpUrl(endpoint) ||
        (apiKey !== undefined && typeof apiKey !== 'string')
      ) {
        throw new BadUserInputError(
          `properties.mcpServers[${index}] must be {endpoint: an http(s) URL, apiKey?: a string}.`,
          { field: `properties.mcpServers[${index}]` },
        );
      }
      if (Array.isArray(this.allowClientServers)) {
        const { host, hostname } = new URL(endpoint);
        if (!this.allowClientServers.includes(host) && !this.allowClientServers.includes(hostname)) {
          throw new BadUserInputError(
            `properties.mcpServers[${index}]: the host ${hostname} is not one this gateway may connect to.`,
            { field: `properties.mcpServers[${index}]` },
          );
        }
      }
      const key = `${endpoint}\n${apiKey ?? ''}`;
      let server = this.fromClients.get(key);
      if (server) {
        this.fromClients.delete(key);
      } else {
        server = new McpServer(
          { url: endpoint, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} },
          this.logger,
        );
      }
      this.fromClients.set(key, server);
      if (this.fromClients.size > MAX_KEPT_CLIENT_SERVERS) {
        const [oldestKey, oldest] = this.fromClients.entries().next().value as [string, McpServer];
        this.fromClients.delete(oldestKey);
        // Another run may still be calling its tools: closed once such a run would have ended, or sooner when as
        // many more have been pushed out since (no more than MAX_KEPT_CLIENT_SERVERS wait so), and not pinged
        // meanwhile.
        oldest.retire();
        this.evicted.add(oldest);
        if (this.evicted.size > MAX_KEPT_CLIENT_SERVERS) {
          const first = this.evicted.values().next().value as McpServer;
          this.evicted.delete(first);
          void first.close();
        }
        setTimeout(() => {
          if (this.evicted.delete(oldest)) void oldest.close();
        }, EVICTED_GRACE_MS).unref();
      }
      return server;
    });
  }
}

/** Checks `mcpServers` options (a mistake is a ConfigurationError). */
export function resolveMcpServers(value: unknown): McpServerOptions[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new ConfigurationError('options.mcpServers must be an array of URLs or {url, headers}.');
  return value.map((entry, index) => {
    const server = typeof entry === 'string' ? { url: entry } : (entry as McpServerOptions);
    if (typeof server?.url !== 'string' || !isHttpUrl(server.url)) {
      throw new ConfigurationError(
        `options.mcpServers[${index}] must be an http(s) URL such as "http://localhost:8931/mcp", or {url, headers}.`,
      );
    }
    const ping = server.pingIntervalMs;
    if (ping !== undefined && (!Number.isSafeInteger(ping) || ping < 10)) {
      throw new ConfigurationError(
        `options.mcpServers[${index}].pingIntervalMs must be a whole number of milliseconds, 10 or more.`,
      );
    }
    return { url: server.url, headers: server.headers ?? {}, ...(ping !== undefined ? { pingIntervalMs: ping } : {}) };
  });
}

/**
 * The system message that tells the model about the MCP tools of a run: which tools come from MCP
 * servers, what each does and what it needs, placed after the conversation's leading system messages.
 */
export function mcpInstructions(actions: readonly ExecutableAction[]): string | undefined {
  const tools = actions.filter((action) => action.source.startsWith('mcp:'));
  if (tools.length === 0) return undefined;
  const lines = tools.map((tool) => {
    const required = Array.isArray(tool.parameters.required) ? (tool.parameters.required as string[]) : [];
    const properties = Object.keys((tool.parameters.properties as Record<string, unknown> | undefined) ?? {});
    const params = properties.length
      ? ` Parameters: ${properties.map((name) => (required.includes(name) ? `${name} (required)` : name)).join(', ')}.`
      : '';
    return `- ${tool.name}: ${tool.description || 'no description.'}${params}`;
  });
  return (
    `These tools come from external services (Model Context Protocol servers). Call one when it helps answer ` +
    `the user, with arguments that match its schema, and use its result in your answer:\n${lines.join('\n')}`
  );
}

async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
