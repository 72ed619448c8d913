import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { close, fakeListener, listen } from './loopback.js';

/**
 * One loopback server that stands for the three kinds of upstream a run streams from, and misbehaves
 * on request, for the fault tests (test/faults.test.ts):
 *   POST /v1/chat/completions   an OpenAI-compatible model (Chat Completions, SSE)
 *   POST /ck/info               a CopilotKit remote endpoint's discovery: one agent, "faultCrew" (crewai)
 *   POST /ck/agents/execute     that agent's run: CopilotKit runtime events as JSON Lines
 *   POST /agui                  an AG-UI agent (SSE, AG-UI events)
 * Each answer is read from directives in the last user message:
 *   [id=X]           the test's marker: every exchange is recorded under it (attempts, closes)
 *   [tokens=N]       N tokens, `tokenText(i)` each (multi-byte characters in every one); default 5
 *   [delay=MS]       a pause between tokens
 *   [first-delay=MS] a pause before the first token (after the headers and the answer's start)
 *   [pad=K]          each token K characters longer (`x`s), for answers of megabytes
 *   [trickle]        the whole HTTP answer (status line, headers, chunked framing, body) written one
 *                    byte per write, the event loop turning between bytes and a 1 ms pause every 64
 *   [cut=N]          N tokens, then the connection closed (FIN) once they are on the wire: no end
 *   [rst=N]          N tokens, then the connection reset (RST)
 *   [stall]          headers and one token, then nothing until the client goes away
 *   [hang]           no answer at all (not even headers) until the client goes away
 *   [fail=S]         every attempt answered with HTTP status S (and `retry-after: 0`)
 *   [reset-first]    the first attempt's connection reset before any byte of an answer
 *   [tail-stall]     with [tokens=N]: after the tokens, nothing more (the answer never ends)
 * A token is `tokenText(i)`; the answer's text is `fullText(N)`.
 */
export const tokenText = (i: number, pad = 0) => `t${i}·Grüße·東京·👋${'x'.repeat(pad)} `;
export const fullText = (n: number, pad = 0) => Array.from({ length: n }, (_, i) => tokenText(i, pad)).join('');

export interface Exchange {
  id: string;
  path: string;
  attempt: number;
  /** The upstream's answer was written to its end (or deliberately cut by the fake). */
  finished: boolean;
  /** The client (the gateway) closed the connection before the answer was finished. */
  abortedByClient: boolean;
  /** Tokens written so far. */
  tokensWritten: number;
  /** Resolves when the exchange's connection or response has closed, whoever closed it. */
  closed: Promise<void>;
}

type Kind = 'model' | 'crew' | 'agui';

export class FaultUpstream {
  readonly exchanges: Exchange[] = [];
  private server: Server;
  private sockets = new Set<Socket>();
  private waiters: (() => void)[] = [];
  origin = '';

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  async start(): Promise<{ modelBaseURL: string; endpointUrl: string; aguiUrl: string }> {
    this.origin = await listen(this.server);
    return { modelBaseURL: `${this.origin}/v1`, endpointUrl: `${this.origin}/ck`, aguiUrl: `${this.origin}/agui` };
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  /** Connections to this server still open (the gateway's pool included). */
  get openSockets(): number {
    return this.sockets.size;
  }

  /** The exchanges recorded under a marker. */
  of(id: string): Exchange[] {
    return this.exchanges.filter((exchange) => exchange.id === id);
  }

  /** Resolves once `check` holds (checked on every change an exchange goes through); rejects after `timeoutMs`. */
  async until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for the upstream: ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private changed(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text ? JSON.parse(text) : {};
    const path = req.url ?? '';
    if (req.method === 'POST' && path === '/ck/info') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          actions: [],
          agents: [{ name: 'faultCrew', description: 'A crew that misbehaves on request.', type: 'crewai' }],
          sdkVersion: '0.1.70',
        }),
      );
      return;
    }
    const kind: Kind | undefined =
      path === '/v1/chat/completions'
        ? 'model'
        : path === '/ck/agents/execute'
          ? 'crew'
          : path === '/agui'
            ? 'agui'
            : undefined;
    if (req.method !== 'POST' || !kind) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      return;
    }
    const prompt = lastUserText(kind, body);
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const has = (name: string) => prompt.includes(`[${name}]`);
    const id = directive('id') ?? '';

    let settle!: () => void;
    const exchange: Exchange = {
      id,
      path,
      attempt: this.of(id).length + 1,
      finished: false,
      abortedByClient: false,
      tokensWritten: 0,
      closed: new Promise<void>((resolve) => (settle = resolve)),
    };
    this.exchanges.push(exchange);
    const socket = req.socket;
    const onClose = () => {
      if (!exchange.finished) exchange.abortedByClient = true;
      settle();
      this.changed();
    };
    // Emitted however the exchange ends: answered, or its connection closed (also while trickling
    // straight to the socket, the response never ended).
    res.once('close', onClose);
    this.changed();

    if (has('reset-first') && exchange.attempt === 1) {
      exchange.finished = true;
      socket.resetAndDestroy();
      return;
    }
    if (has('hang')) return; // until the client goes away
    const fail = directive('fail');
    if (fail) {
      exchange.finished = true;
      res.writeHead(Number(fail), { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(
        JSON.stringify(
          kind === 'model'
            ? { error: { message: `fault ${fail}`, type: 'server_error', param: null, code: null } }
            : { detail: `fault ${fail}` },
        ),
      );
      return;
    }

    const wire = new Wire(socket, res, has('trickle'));
    const format = formats[kind](body);
    const cut = directive('cut');
    const rst = directive('rst');
    const count = has('stall') ? 1 : Number(cut ?? rst ?? directive('tokens') ?? 5);
    const delay = Number(directive('delay') ?? 0);
    const pad = Number(directive('pad') ?? 0);
    try {
      await wire.head(format.contentType);
      await wire.piece(format.start());
      const firstDelay = Number(directive('first-delay') ?? 0);
      if (firstDelay > 0) await new Promise((resolve) => setTimeout(resolve, firstDelay));
      for (let i = 0; i < count; i++) {
        await wire.piece(format.token(i, pad));
        exchange.tokensWritten++;
        if (i === count - 1) this.changed();
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      }
      if (has('stall') || has('tail-stall')) return; // nothing more, until the client goes away
      if (cut !== undefined || rst !== undefined) {
        exchange.finished = true;
        await wire.flushed();
        if (rst !== undefined) socket.resetAndDestroy();
        else socket.destroy();
        return;
      }
      await wire.piece(format.end());
      exchange.finished = true;
      await wire.end();
    } catch {
      // the client went away mid-answer: onClose has recorded it
    }
  }
}

function lastUserText(kind: Kind, body: any): string {
  const messages: any[] = body.messages ?? [];
  const user = [...messages]
    .reverse()
    .find((m) => (kind === 'crew' ? m.type === 'TextMessage' && m.role === 'user' : m.role === 'user'));
  return typeof user?.content === 'string' ? user.content : '';
}

interface Format {
  contentType: string;
  start(): string;
  token(i: number, pad: number): string;
  end(): string;
}

let answers = 0;

const formats: Record<Kind, (body: any) => Format> = {
  model(body) {
    const id = `chatcmpl-fault${++answers}`;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: body.model ?? 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
    return {
      contentType: 'text/event-stream',
      start: () => chunk({ role: 'assistant', content: '' }),
      token: (i, pad) => chunk({ content: tokenText(i, pad) }),
      end: () => `${chunk({}, 'stop')}data: [DONE]\n\n`,
    };
  },
  crew() {
    const messageId = `crew-fault${++answers}`;
    const line = (value: Record<string, unknown>) => `${JSON.stringify(value)}\n`;
    return {
      contentType: 'application/jsonl',
      start: () => line({ type: 'TextMessageStart', messageId }),
      token: (i, pad) => line({ type: 'TextMessageContent', messageId, content: tokenText(i, pad) }),
      end: () => line({ type: 'TextMessageEnd', messageId }),
    };
  },
  agui(body) {
    const messageId = `agui-fault${++answers}`;
    const event = (value: Record<string, unknown>) => `data: ${JSON.stringify(value)}\n\n`;
    return {
      contentType: 'text/event-stream',
      start: () =>
        event({ type: 'RUN_STARTED', threadId: body.threadId, runId: body.runId }) +
        event({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' }),
      token: (i, pad) => event({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta: tokenText(i, pad) }),
      end: () =>
        event({ type: 'TEXT_MESSAGE_END', messageId }) +
        event({ type: 'RUN_FINISHED', threadId: body.threadId, runId: body.runId }),
    };
  },
};

/**
 * Writes an answer: normally through the ServerResponse (headers at once, a write per piece);
 * trickling, straight to the socket, byte by byte, as HTTP/1.1 with chunked framing and
 * `connection: close` (the connection is not reused afterwards).
 */
class Wire {
  private bytesWritten = 0;

  constructor(
    private readonly socket: Socket,
    private readonly res: ServerResponse,
    private readonly trickle: boolean,
  ) {}

  async head(contentType: string): Promise<void> {
    if (!this.trickle) {
      this.res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
      this.res.flushHeaders();
      return;
    }
    await this.bytes(
      Buffer.from(
        `HTTP/1.1 200 OK\r\ncontent-type: ${contentType}\r\ncache-control: no-cache\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n`,
        'latin1',
      ),
    );
  }

  async piece(text: string): Promise<void> {
    const data = Buffer.from(text, 'utf8');
    if (!this.trickle) {
      if (this.res.destroyed) throw new Error('gone');
      this.res.write(data);
      return;
    }
    await this.bytes(
      Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`, 'latin1'), data, Buffer.from('\r\n', 'latin1')]),
    );
  }

  async end(): Promise<void> {
    if (!this.trickle) {
      this.res.end();
      return;
    }
    await this.bytes(Buffer.from('0\r\n\r\n', 'latin1'));
    await this.flushed();
    this.socket.destroy();
  }

  /** Resolves once everything written so far has been handed to the system. */
  async flushed(): Promise<void> {
    while (this.socket.writableLength > 0 && !this.socket.destroyed)
      await new Promise((resolve) => setImmediate(resolve));
  }

  private async bytes(data: Buffer): Promise<void> {
    for (let at = 0; at < data.length; at++) {
      if (this.socket.destroyed) throw new Error('gone');
      this.socket.write(data.subarray(at, at + 1));
      this.bytesWritten++;
      await new Promise((resolve) => (this.bytesWritten % 64 === 0 ? setTimeout(resolve, 1) : setImmediate(resolve)));
    }
  }
}
