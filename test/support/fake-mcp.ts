import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake MCP server built with the MCP SDK's own server classes: Streamable HTTP (stateless, or with
 * sessions, at `/mcp`) or the older HTTP+SSE transport (`GET /sse`, `POST /messages`). Its tools:
 *   add {a, b}       the sum, as text
 *   fail {}          an error result (isError) saying "the tool broke"
 *   whoami {}        the Authorization header it was called with
 *   wait {}          never answers (until the client gives up)
 *   files.read {}    a name model providers refuse
 */
export class FakeMcpServer {
  readonly calls: { tool: string; args: unknown }[] = [];
  private readonly server: Server;
  private readonly sseSessions = new Map<string, SSEServerTransport>();
  private lastAuthorization: string | undefined;

  private readonly sessions = new Map<string, StreamableHTTPServerTransport>();

  /** Pages of its tool list read so far (with `endless`). */
  listedPages = 0;

  /** The SDK servers connected now (one per session), told when a tool is added. */
  private readonly live = new Set<McpServer>();
  /** Tools added with addTool, which every server built later has too. */
  private readonly added: string[] = [];

  /**
   * A tool added while the first tools/list is answered: the list answered is the one before it, and the change is
   * said first (over HTTP+SSE both go down the one stream, in that order), as a server whose tools change while a
   * client connects does.
   */
  addOnFirstList: string | undefined;

  /**
   * `endless`: its tool list never ends: every page has 100 tools and names a next one (a server that keeps saying
   * there are more).
   */
  constructor(
    readonly transport: 'streamable' | 'stateful' | 'sse' = 'streamable',
    private readonly endless = false,
  ) {
    this.server = createServer(
      fakeListener((req, res) => {
        this.lastAuthorization = req.headers.authorization;
        return this.handle(req, res);
      }),
    );
  }

  /** The URL to configure: `/mcp` or `/sse`. */
  async start(): Promise<string> {
    const origin = await listen(this.server);
    return `${origin}${this.transport === 'sse' ? '/sse' : '/mcp'}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return close(this.server);
  }

  /**
   * Adds a tool `name` that answers "<name> done". Every connected session is told that its tools changed: the SDK's
   * McpServer sends `notifications/tools/list_changed` when a tool is registered while it is connected.
   */
  addTool(name: string): void {
    this.added.push(name);
    for (const mcp of this.live) this.registerAdded(mcp, name);
  }

  private registerAdded(mcp: McpServer, name: string): void {
    mcp.registerTool(name, { description: `The added tool ${name}.` }, async () => {
      this.calls.push({ tool: name, args: {} });
      return { content: [{ type: 'text', text: `${name} done` }] };
    });
  }

  private build(): McpServer {
    const mcp = new McpServer({ name: 'fake-mcp', version: '1.0.0' });
    for (const name of this.added) this.registerAdded(mcp, name);
    this.live.add(mcp);
    mcp.server.onclose = () => this.live.delete(mcp);
    mcp.registerTool(
      'add',
      { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } },
      async ({ a, b }) => {
        this.calls.push({ tool: 'add', args: { a, b } });
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
    mcp.registerTool('fail', { description: 'Always fails.' }, async () => {
      this.calls.push({ tool: 'fail', args: {} });
      return { content: [{ type: 'text', text: 'the tool broke' }], isError: true };
    });
    mcp.registerTool('whoami', { description: 'Says who is calling.' }, async () => ({
      content: [{ type: 'text', text: this.lastAuthorization ?? 'nobody' }],
    }));
    mcp.registerTool('wait', { description: 'Never answers.' }, () => new Promise(() => {}));
    // A name MCP allows and model providers refuse: never offered to a model.
    mcp.registerTool('files.read', { description: 'Reads a file.' }, async () => ({
      content: [{ type: 'text', text: 'secret' }],
    }));
    if (this.addOnFirstList !== undefined) {
      const adding = this.addOnFirstList;
      mcp.server.removeRequestHandler('tools/list');
      mcp.server.setRequestHandler(ListToolsRequestSchema, async () => {
        const tools = ['add', ...this.added].map((name) => ({ name, inputSchema: { type: 'object' as const } }));
        if (!this.added.includes(adding)) this.addTool(adding);
        return { tools };
      });
    }
    if (this.endless) {
      mcp.server.removeRequestHandler('tools/list');
      mcp.server.setRequestHandler(ListToolsRequestSchema, async (request) => {
        const page = Number(request.params?.cursor ?? 0);
        this.listedPages++;
        const tools = Array.from({ length: 100 }, (_, i) => ({
          name: `t${page}_${i}`,
          inputSchema: { type: 'object' as const },
        }));
        return { tools, nextCursor: String(page + 1) };
      });
    }
    return mcp;
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (this.transport === 'stateful') {
      // Sessions, as most MCP servers keep them: a session id this process does not know is a 404.
      if (url.pathname !== '/mcp') return void res.writeHead(404).end();
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId !== undefined || req.method !== 'POST' || body?.method !== 'initialize') {
          res
            .writeHead(404, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void this.sessions.set(id, transport!),
        });
        await this.build().connect(transport);
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if (this.transport === 'streamable') {
      if (url.pathname !== '/mcp') return void res.writeHead(404).end();
      if (req.method !== 'POST') {
        res
          .writeHead(405, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }));
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const mcp = this.build();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      this.sseSessions.set(transport.sessionId, transport);
      res.on('close', () => this.sseSessions.delete(transport.sessionId));
      await this.build().connect(transport);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const transport = this.sseSessions.get(url.searchParams.get('sessionId') ?? '');
      if (!transport) return void res.writeHead(404).end('no session');
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  }
}
