import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, listen } from './loopback.js';

/**
 * One scripted upstream answer, written byte for byte: a status and content type, then `chunks` one
 * after another (each its own write, a turn of the event loop apart, so a chunk boundary can fall
 * anywhere: inside a line, a JSON string or a UTF-8 character), then the connection is ended
 * cleanly or destroyed (a stream that breaks off).
 */
export interface ScriptedAnswer {
  status: number;
  contentType: string;
  chunks: Uint8Array[];
  ending: 'end' | 'destroy';
}

/** The marker a request carries (in its last user message) to get a scripted answer. */
export const planMarker = (id: string) => `[plan=${id}]`;
const PLAN = /\[plan=([A-Za-z0-9_-]+)\]/;

/**
 * A raw loopback server standing in for every upstream the fuzz tests need, on one port:
 *   POST /v1/chat/completions   an OpenAI-compatible model (Chat Completions, SSE)
 *   POST /ck/info               a CopilotKit remote endpoint's discovery: agents fuzzCrew (crewai,
 *                               runtime-event JSONL) and fuzzGraph (langgraph JSONL), action remoteEcho
 *   POST /ck/agents/execute     that endpoint's agents (JSON Lines)
 *   POST /ck/agents/state       no saved state
 *   POST /ck/actions/execute    remoteEcho: {"result": "echo"}
 *   POST /agui                  an AG-UI agent (SSE)
 * A request whose body contains `[plan=ID]` gets the answer registered under ID, whatever it is; any
 * other gets a short well-formed answer in the route's format (so the same gateway still has a
 * working model and working agents). The server never throws: a mistake of its own is recorded in
 * `faults` (and answered 599), so it cannot be mistaken for the gateway's.
 */
export class ScriptedUpstream {
  readonly plans = new Map<string, ScriptedAnswer>();
  readonly faults: unknown[] = [];
  /** Requests per route, for the record. */
  readonly counts = new Map<string, number>();
  private readonly server: Server;
  origin = '';

  constructor() {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error) => {
        this.faults.push(error);
        if (!res.headersSent) res.writeHead(599).end();
        else res.destroy();
      });
    });
  }

  async start(): Promise<string> {
    this.origin = await listen(this.server);
    return this.origin;
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const route = (req.url ?? '').split('?')[0];
    this.counts.set(route, (this.counts.get(route) ?? 0) + 1);

    if (route === '/ck/info') return json(res, DISCOVERY);
    if (route === '/ck/agents/state') return json(res, { threadId: 'x', threadExists: false, state: {}, messages: [] });
    if (route === '/ck/actions/execute') return json(res, { result: 'echo' });

    const planId = PLAN.exec(text)?.[1];
    const planned = planId === undefined ? undefined : this.plans.get(planId);
    if (planned) return write(res, planned);

    const body = text ? JSON.parse(text) : {};
    switch (route) {
      case '/v1/chat/completions':
        return write(res, sse(wellFormedCompletion(), 'text/event-stream'));
      case '/ck/agents/execute':
        return write(res, {
          status: 200,
          contentType: 'application/jsonl',
          chunks: [Buffer.from(wellFormedJsonl(body.name === 'fuzzGraph' ? 'langgraph' : 'crewai').join('\n') + '\n')],
          ending: 'end',
        });
      case '/agui':
        return write(res, sse(wellFormedAgUi(String(body.threadId), String(body.runId)), 'text/event-stream'));
      default:
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
    }
  }
}

export const DISCOVERY = {
  agents: [
    { name: 'fuzzCrew', description: 'A crew (runtime-event JSON Lines).', type: 'crewai' },
    { name: 'fuzzGraph', description: 'A graph (LangGraph JSON Lines).', type: 'langgraph' },
  ],
  actions: [
    { name: 'remoteEcho', description: 'Echoes.', parameters: [{ name: 'text', type: 'string', required: false }] },
  ],
  sdkVersion: '0.1.70',
};

/** `data: <json>\n\n` frames of the given events, as one scripted answer. */
export function sse(events: unknown[], contentType: string): ScriptedAnswer {
  return {
    status: 200,
    contentType,
    chunks: [
      Buffer.from(
        events.map((event) => `data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`).join(''),
      ),
    ],
    ending: 'end',
  };
}

/** A complete, well-formed Chat Completions stream: a few text tokens, a finish reason, [DONE]. */
export function wellFormedCompletion(): unknown[] {
  const chunk = (delta: unknown, finish: string | null = null) => ({
    id: 'chatcmpl-ok',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return [
    chunk({ role: 'assistant', content: '' }),
    chunk({ content: 'Hello ' }),
    chunk({ content: 'from the scripted model.' }),
    chunk({}, 'stop'),
    '[DONE]',
  ];
}

/** A complete, well-formed JSON Lines answer of a remote endpoint's agent, in its dialect. */
export function wellFormedJsonl(dialect: 'crewai' | 'langgraph'): string[] {
  if (dialect === 'crewai') {
    return [
      { type: 'TextMessageStart', messageId: 'crew-ok' },
      { type: 'TextMessageContent', messageId: 'crew-ok', content: 'Hello from the crew.' },
      { type: 'TextMessageEnd', messageId: 'crew-ok' },
    ].map((line) => JSON.stringify(line));
  }
  const stream = (content: string, finish?: string) =>
    JSON.stringify({
      event: 'on_chat_model_stream',
      name: 'ChatOpenAI',
      run_id: 'lg',
      metadata: { langgraph_node: 'chat_node' },
      data: {
        chunk: {
          id: 'lg-ok',
          content,
          tool_call_chunks: [],
          response_metadata: finish ? { finish_reason: finish } : {},
        },
      },
    });
  return [stream('Hello from the graph.'), stream('', 'stop')];
}

/** A complete, well-formed AG-UI run. */
export function wellFormedAgUi(threadId: string, runId: string): unknown[] {
  return [
    { type: 'RUN_STARTED', threadId, runId },
    { type: 'TEXT_MESSAGE_START', messageId: `agui-ok-${runId}`, role: 'assistant' },
    { type: 'TEXT_MESSAGE_CONTENT', messageId: `agui-ok-${runId}`, delta: 'Hello from the AG-UI agent.' },
    { type: 'TEXT_MESSAGE_END', messageId: `agui-ok-${runId}` },
    { type: 'RUN_FINISHED', threadId, runId },
  ];
}

function json(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

async function write(res: ServerResponse, answer: ScriptedAnswer): Promise<void> {
  res.writeHead(answer.status, { 'content-type': answer.contentType, 'cache-control': 'no-cache' });
  res.flushHeaders();
  for (const chunk of answer.chunks) {
    if (res.destroyed) return;
    if (chunk.length > 0) res.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (res.destroyed) return;
  if (answer.ending === 'end') {
    res.end();
  } else {
    // Let what was written reach the gateway, then break the connection (no clean end of the body).
    await new Promise((resolve) => setTimeout(resolve, 5));
    res.destroy();
  }
}
