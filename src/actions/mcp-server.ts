import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Logger } from 'pino';
import { ActionFailedError, UpstreamError } from '../core/errors.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import type { ActionContext, ActionSource, ExecutableAction } from './action.js';

/** An MCP server's address, and headers for it (an API key, say). */
export interface McpServerOptions {
  url: string;
  headers?: Record<string, string>;
  /** How often the connected server is pinged; one that does not answer has its tools withdrawn. @default 30000 */
  pingIntervalMs?: number;
}

type McpSdk = {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StreamableHTTPClientTransport: StreamableHttpModule['StreamableHTTPClientTransport'];
  SSEClientTransport: typeof import('@modelcontextprotocol/sdk/client/sse.js').SSEClientTransport;
  ToolListChangedNotificationSchema: McpTypesModule['ToolListChangedNotificationSchema'];
  McpError: McpTypesModule['McpError'];
};
type StreamableHttpModule = typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
type McpTypesModule = typeof import('@modelcontextprotocol/sdk/types.js');
/** The MCP SDK, loaded when the first MCP server is: most gateways have none. */
const loadSdk = loadOnFirstUse(async (): Promise<McpSdk> => {
  // One module after the other: the modules share dependencies, and some loaders (jest's) do not
  // link a shared module imported twice at once.
  const client = await import('@modelcontextprotocol/sdk/client/index.js');
  const streamable = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const sse = await import('@modelcontextprotocol/sdk/client/sse.js');
  const types = await import('@modelcontextprotocol/sdk/types.js');
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: streamable.StreamableHTTPClientTransport,
    SSEClientTransport: sse.SSEClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    McpError: types.McpError,
  };
});

/** The shortest wait before reconnecting to a server that is down; it doubles up to a minute. */
const RECONNECT_MIN_MS = 1_000;
const RECONNECT_MAX_MS = 60_000;
/** How long connecting and listing the tools may take, both transports together. */
const CONNECT_TIMEOUT_MS = 15_000;
/** How often a connected server is pinged, so that one that died has its tools withdrawn before a call finds out. */
const PING_INTERVAL_MS = 30_000;
/** Tool names every provider takes (OpenAI's and Anthropic's rule); others are not offered. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/**
 * The most tools taken from one server, and the most pages of its list read for them. A server that always says
 * there are more (found from outside: one ended the process out of memory in 37 s, and a client could name it) is
 * read that far, within CONNECT_TIMEOUT_MS, and the tools read are offered. Model providers take far fewer tools in
 * one call (OpenAI 128).
 */
const MAX_TOOLS = 1_000;
const MAX_TOOL_PAGES = 100;

/**
 * One MCP server as a source of server-side actions: its tools, with their JSON schemas, executed
 * through `tools/call`. The connection (Streamable HTTP, or the older HTTP+SSE transport for servers
 * that answer Streamable HTTP with an error) is opened once and kept; when it drops, or the server
 * cannot be reached, its tools are withdrawn (one log line) and it is tried again after a backoff,
 * without ever failing a request that does not use it. A tool that reports an error (`isError`)
 * fails as ACTION_FAILED with its text, and the run goes on.
 */
export class McpServer implements ActionSource {
  readonly url: string;
  private readonly label: string;
  private tools: readonly ExecutableAction[] = [];
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private down = false;
  private failures = 0;
  /**
   * The listing being read after a client's server said its tools changed, and whether it said so again meanwhile
   * (kept per client: a connection that replaced it lists on its own).
   */
  private relisting: { client: Client; again: boolean } | undefined;
  /** Retired (retire): never pinged again. */
  private retired = false;
  private retryAt = 0;
  private closed = false;
  /** Whether a first connection attempt has settled (succeeded or failed). */
  private tried = false;
  private sdk: McpSdk | undefined;
  private pinger: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: McpServerOptions,
    private readonly logger: Logger,
  ) {
    this.url = options.url;
    this.label = labelOf(options.url);
  }

  /** The tools known now; never waits. A server that is down and due for a retry is reconnected in the background. */
  actions(): readonly ExecutableAction[] {
    if (!this.client && !this.connecting && !this.closed && Date.now() >= this.retryAt) void this.connect();
    return this.tools;
  }

  /** Whether the server is connected now (its tools offered). */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /** Whether a first connection attempt has settled: a request waits only for servers still on it. */
  get settled(): boolean {
    return this.tried;
  }

  /**
   * Connects (if not connected, and not waiting out a backoff) and lists the tools; resolves when
   * that has succeeded or failed, within CONNECT_TIMEOUT_MS.
   */
  connect(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    if (this.connecting) return this.connecting;
    if (Date.now() < this.retryAt) return Promise.resolve();
    this.connecting = this.open().finally(() => {
      this.connecting = undefined;
      this.tried = true;
    });
    return this.connecting;
  }

  /**
   * No longer pinged (a server a request named, pushed out of the kept ones): runs that still hold it may call its
   * tools until it is closed, but it is not watched meanwhile (found from outside: a client naming new servers again
   * and again made the gateway ping hundreds of them a second).
   */
  retire(): void {
    this.retired = true;
    clearInterval(this.pinger);
    this.pinger = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.pinger);
    const client = this.client;
    this.client = undefined;
    this.tools = [];
    await client?.close().catch(() => {});
  }

  private async open(): Promise<void> {
    let sdk: McpSdk;
    try {
      sdk = await loadSdk();
    } catch (error) {
      this.lose(`the MCP SDK could not be loaded: ${describe(error)}`);
      return;
    }
    this.sdk = sdk;
    const url = new URL(this.url);
    const requestInit = { headers: this.options.headers ?? {} };
    // The client of the attempt in progress (the handshake replaces it when it falls back to SSE).
    let current: Client | undefined;
    // Whether the server said its tools changed before the connection was taken (while its first listing was read).
    let changedWhileOpening = false;
    const use = (attempt: Client) => {
      current = attempt;
      // Set before the handshake, so that a change said during the first listing is not missed.
      attempt.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
        if (this.client === attempt) this.listAgain(attempt);
        else if (current === attempt) changedWhileOpening = true;
      });
    };
    // A server that accepts the connection and never answers must not hold every request that waits for it.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    });
    timeout.catch(() => {});
    const handshake = this.handshake(sdk, url, requestInit, use);
    try {
      const tools = await Promise.race([handshake, timeout]);
      clearTimeout(timer);
      const client = current!;
      if (this.closed) {
        await client.close().catch(() => {});
        return;
      }
      client.onclose = () => {
        if (this.client === client) this.lose('the connection closed');
      };
      this.client = client;
      this.tools = tools;
      this.watch(client);
      if (changedWhileOpening) this.listAgain(client);
      this.failures = 0;
      if (this.down)
        this.logger.info(
          { mcpServer: this.label, tools: tools.length },
          'MCP server reachable again; its tools are offered',
        );
      else this.logger.info({ mcpServer: this.label, tools: tools.map((tool) => tool.name) }, 'MCP server connected');
      this.down = false;
    } catch (error) {
      clearTimeout(timer);
      await (current as Client | undefined)?.close().catch(() => {});
      // Given up on (the timeout), the handshake may still go on, to its SSE fallback: whatever client it ends with is
      // closed, not left connected with no one to use it.
      const closeLast = () => void (current as Client | undefined)?.close().catch(() => {});
      void handshake.then(closeLast, closeLast);
      this.lose(describe(error));
    }
  }

  /** Connects over Streamable HTTP, or over HTTP+SSE when the server refuses it, and lists the tools. */
  private async handshake(
    sdk: McpSdk,
    url: URL,
    requestInit: RequestInit,
    use: (client: Client) => void,
  ): Promise<ExecutableAction[]> {
    let client = new sdk.Client({ name: 'copilot-gateway', version: '1' });
    use(client);
    try {
      await client.connect(new sdk.StreamableHTTPClientTransport(url, { requestInit }));
    } catch (streamableError) {
      // A server of the older HTTP+SSE transport refuses the Streamable HTTP POST.
      await client.close().catch(() => {});
      client = new sdk.Client({ name: 'copilot-gateway', version: '1' });
      use(client);
      try {
        await client.connect(new sdk.SSEClientTransport(url, { requestInit }));
      } catch {
        throw streamableError;
      }
    }
    return this.list(client);
  }

  /**
   * The server says its tools changed: they are listed again, one listing at a time (a server that says so again and
   * again while one is read gets one more listing after it, not one each).
   */
  private listAgain(client: Client): void {
    if (this.relisting?.client === client) {
      this.relisting.again = true;
      return;
    }
    const relisting = { client, again: false };
    this.relisting = relisting;
    void this.list(client)
      .then(
        (listed) => {
          if (this.client === client) this.tools = listed;
        },
        (error: unknown) =>
          this.logger.warn({ mcpServer: this.label, err: error }, "could not list the MCP server's tools again"),
      )
      .finally(() => {
        if (this.relisting === relisting) this.relisting = undefined;
        if (relisting.again && this.client === client) this.listAgain(client);
      });
  }

  /** The server's tools, up to MAX_TOOLS over at most MAX_TOOL_PAGES pages, read within CONNECT_TIMEOUT_MS. */
  private async list(client: Client): Promise<ExecutableAction[]> {
    const actions: ExecutableAction[] = [];
    const deadline = Date.now() + CONNECT_TIMEOUT_MS;
    let cursor: string | undefined;
    let pages = 0;
    let listed = 0;
    do {
      if (pages >= MAX_TOOL_PAGES || listed >= MAX_TOOLS) break;
      pages++;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`its tools were not listed within ${CONNECT_TIMEOUT_MS} ms`);
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: left });
      const tools = page.tools.slice(0, MAX_TOOLS - listed);
      listed += page.tools.length;
      for (const tool of tools) {
        if (!TOOL_NAME.test(tool.name)) {
          // Model providers refuse such a name, and one of them would fail every model call.
          this.logger.warn(
            { mcpServer: this.label, tool: tool.name.slice(0, 100) },
            'MCP tool not offered: its name is not 1 to 64 letters, digits, "_" or "-"',
          );
          continue;
        }
        actions.push({
          name: tool.name,
          description: tool.description ?? tool.title ?? '',
          parameters: (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
          source: `mcp:${this.label}`,
          execute: (args, context) => this.call(tool.name, args, context),
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    if (cursor || listed > MAX_TOOLS) {
      this.logger.warn(
        { mcpServer: this.label, tools: actions.length, pages },
        `MCP server lists more tools than are read (${MAX_TOOLS} tools, ${MAX_TOOL_PAGES} pages): the rest left out`,
      );
    }
    return actions;
  }

  /** Pings the server now and then; one that does not answer is lost (its tools withdrawn) at once. */
  private watch(client: Client): void {
    clearInterval(this.pinger);
    if (this.retired) return;
    this.pinger = setInterval(() => {
      if (this.client !== client) return clearInterval(this.pinger);
      client.ping({ timeout: 10_000 }).catch((error: unknown) => {
        if (this.client === client) this.lose(`no answer to a ping: ${describe(error)}`);
      });
    }, this.options.pingIntervalMs ?? PING_INTERVAL_MS);
    this.pinger.unref();
  }

  /** The server is unreachable (or went away): its tools are withdrawn until it is back. */
  private lose(reason: string): void {
    clearInterval(this.pinger);
    this.pinger = undefined;
    const client = this.client;
    this.client = undefined;
    this.tools = [];
    void client?.close().catch(() => {});
    if (this.closed) return;
    this.failures++;
    this.retryAt = Date.now() + Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** (this.failures - 1));
    if (!this.down)
      this.logger.warn(
        { mcpServer: this.label, reason },
        'MCP server unreachable; its tools are withdrawn until it is back',
      );
    this.down = true;
  }

  private async call(name: string, args: Record<string, unknown>, context: ActionContext): Promise<string> {
    let result: Awaited<ReturnType<Client['callTool']>> | undefined;
    // A second attempt on a fresh connection when the first one's transport failed: a server that
    // restarted answers the old session with 404 and serves a new one.
    for (let attempt = 1; result === undefined; attempt++) {
      await this.connect();
      const client = this.client;
      if (!client)
        throw new UpstreamError('UPSTREAM_UNREACHABLE', `The MCP server of the tool "${name}" cannot be reached.`);
      try {
        result = await client.callTool({ name, arguments: args }, undefined, { signal: context.signal });
      } catch (error) {
        if (context.signal.aborted) throw context.signal.reason;
        if (this.sdk && error instanceof this.sdk.McpError) {
          throw new ActionFailedError(`The MCP tool "${name}" failed: ${error.message}`);
        }
        this.lose(describe(error));
        if (attempt === 1) {
          this.retryAt = 0;
          continue;
        }
        throw new UpstreamError('UPSTREAM_UNREACHABLE', `The MCP server of the tool "${name}" could not be reached.`, {
          cause: error,
        });
      }
    }
    const text = resultText(result);
    if (result.isError) throw new ActionFailedError(`The MCP tool "${name}" failed: ${text || 'no reason given'}`);
    return text;
  }
}

function resultText(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = Array.isArray(result.content) ? result.content : [];
  const texts = content.flatMap((part) => (part?.type === 'text' && typeof part.text === 'string' ? [part.text] : []));
  if (texts.length) return texts.join('\n');
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  if ('toolResult' in result && result.toolResult !== undefined)
    return typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult);
  return content.length ? JSON.stringify(content) : '';
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/https?:\/\/\S+/g, '<url>').slice(0, 200);
}

/** Host and port of a server, for logs (never its path, which may carry a key). */
function labelOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'mcp';
  }
}
