import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake LangGraph Platform (LangGraph Server API) on loopback, enough for the calls
 * @langchain/langgraph-sdk makes for the gateway: `POST /assistants/search`, `POST /threads`,
 * `GET /threads/{id}/state`, `POST /threads/{id}/runs/stream` (SSE with `metadata`, `events`,
 * `values`, `updates`, `error` and `end` events, as the Python server sends them, some values
 * pretty-printed over several `data:` lines as the JS server does) and
 * `POST /threads/{id}/runs/{run_id}/cancel`. Graph "chat" answers the shared directives (see
 * upstreams.ts) plus [copilotkit-interrupt] (an interrupt made with CopilotKit's Python SDK), [cut] (the
 * connection cut after a token), [bad-event] (an event the gateway cannot read, then silence) and [node-hops=N] (a
 * 1 MiB state, then N small events from two nodes in turn, each of which the gateway passes on with the whole state) and
 * [reused-id] (two answers with one message id, then a tool call in a chunk of that id).
 * A run resumed with `command.resume` answers "Resumed with: <resume>" (JSON unless a string); a tool message
 * last, "Tool result received: <content>".
 */
export class FakeLangGraph {
  readonly threads = new Map<string, { values: Record<string, any>; interrupts: { value: unknown; id: string }[] }>();
  readonly runs: { threadId: string; body: any; headers: IncomingMessage['headers'] }[] = [];
  readonly cancelled: { threadId: string; runId: string }[] = [];
  readonly calls: string[] = [];
  abortedRequests = 0;
  /** How long assistant lookups take. */
  searchDelayMs = 0;
  private server: Server;
  url = '';

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
  }

  async start(): Promise<string> {
    this.url = `${await listen(this.server)}`;
    return this.url;
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text ? JSON.parse(text) : undefined;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    this.calls.push(`${req.method} ${path}`);
    let match: RegExpMatchArray | null;

    if (req.method === 'POST' && path === '/assistants/search') {
      if (this.searchDelayMs) await new Promise((resolve) => setTimeout(resolve, this.searchDelayMs));
      return json(
        res,
        body.graph_id === 'chat'
          ? [{ assistant_id: 'asst-chat', graph_id: 'chat', name: 'chat', config: {}, metadata: {}, version: 1 }]
          : [],
      );
    }
    if (req.method === 'POST' && path === '/threads') {
      // As LangGraph Server: creating a thread that exists is a conflict unless if_exists says otherwise.
      if (this.threads.has(body.thread_id) && body.if_exists !== 'do_nothing')
        return json(res, { detail: 'Thread already exists' }, 409);
      if (!this.threads.has(body.thread_id)) this.threads.set(body.thread_id, { values: {}, interrupts: [] });
      return json(res, {
        thread_id: body.thread_id,
        status: 'idle',
        metadata: body.metadata ?? {},
        values: this.threads.get(body.thread_id)!.values,
      });
    }
    if (req.method === 'GET' && (match = path.match(/^\/threads\/([^/]+)\/state$/))) {
      const thread = this.threads.get(match[1]);
      if (!thread) return json(res, { detail: `Thread ${match[1]} not found` }, 404);
      const interrupted = thread.interrupts.length > 0;
      return json(res, {
        values: thread.values,
        next: interrupted ? ['human_review'] : [],
        tasks: interrupted ? [{ id: 'task-1', name: 'human_review', interrupts: thread.interrupts }] : [],
        metadata: {},
        checkpoint: { thread_id: match[1], checkpoint_id: randomUUID() },
      });
    }
    if (req.method === 'POST' && (match = path.match(/^\/threads\/([^/]+)\/runs\/([^/]+)\/cancel$/))) {
      this.cancelled.push({ threadId: match[1], runId: match[2] });
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && (match = path.match(/^\/threads\/([^/]+)\/runs\/stream$/))) {
      return this.stream(match[1], body, req, res);
    }
    json(res, { detail: 'Not Found' }, 404);
  }

  private async stream(threadId: string, body: any, req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.runs.push({ threadId, body, headers: req.headers });
    const thread = this.threads.get(threadId);
    if (!thread) return json(res, { detail: 'Thread not found' }, 404);
    const input = body.input ?? {};
    const messages: any[] = [
      ...(thread.values.messages ?? []),
      ...(Array.isArray(input.messages) ? input.messages : []),
    ];
    const lastHuman = [...messages].reverse().find((m) => m.type === 'human');
    const prompt: string = typeof lastHuman?.content === 'string' ? lastHuman.content : '';
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const has = (name: string) => prompt.includes(`[${name}]`);
    const resume = body.command?.resume;

    const fail = directive('fail');
    if (fail && resume === undefined && messages.at(-1)?.type !== 'tool') {
      return json(res, { detail: `fake failure ${fail}, see https://internal.example:8123/docs` }, Number(fail));
    }

    const runId = randomUUID();
    let finished = false;
    res.on('close', () => {
      if (!finished) this.abortedRequests++;
    });
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'content-location': `/threads/${threadId}/runs/${runId}`,
      'cache-control': 'no-cache',
    });
    const send = (event: string, data: unknown, pretty = false) => {
      if (res.destroyed) return;
      const payload = pretty ? JSON.stringify(data, null, 2) : JSON.stringify(data);
      res.write(
        `event: ${event}\n${payload
          .split('\n')
          .map((line) => `data: ${line}`)
          .join('\n')}\n\n`,
      );
    };
    const metadata = { langgraph_node: 'chat_node', thread_id: threadId, run_id: runId };
    const values: Record<string, any> = {
      ...thread.values,
      ...Object.fromEntries(Object.entries(input).filter(([key]) => key !== 'messages' && key !== 'copilotkit')),
      messages,
    };
    let counter = 0;
    const aiText = (content: string, parts: string[] = [content], open = false, id = `lg-ai-${runId}-${++counter}`) => {
      for (const part of parts)
        send('events', {
          event: 'on_chat_model_stream',
          name: 'ChatOpenAI',
          run_id: runId,
          metadata,
          data: { chunk: { type: 'AIMessageChunk', id, content: part, tool_call_chunks: [], response_metadata: {} } },
        });
      if (open) return;
      send('events', {
        event: 'on_chat_model_stream',
        name: 'ChatOpenAI',
        run_id: runId,
        metadata,
        data: {
          chunk: {
            type: 'AIMessageChunk',
            id,
            content: '',
            tool_call_chunks: [],
            response_metadata: { finish_reason: 'stop' },
          },
        },
      });
      send('events', {
        event: 'on_chat_model_end',
        name: 'ChatOpenAI',
        run_id: runId,
        metadata,
        data: { output: { content } },
      });
      values.messages = [...values.messages, { type: 'ai', id, content, tool_calls: [] }];
    };
    /** An AIMessageChunk of tool-call chunks only, with a finish reason when given. */
    const toolChunks = (id: string, chunks: unknown[], finishReason?: string) =>
      send('events', {
        event: 'on_chat_model_stream',
        metadata,
        data: {
          chunk: {
            type: 'AIMessageChunk',
            id,
            content: '',
            tool_call_chunks: chunks,
            ...(finishReason ? { response_metadata: { finish_reason: finishReason } } : {}),
          },
        },
      });
    const end = () => {
      thread.values = values;
      send('values', values, true);
      send('end', null);
      finished = true;
      res.end();
    };

    send('metadata', { run_id: runId, attempt: 1 });
    send('values', values, true);
    if (resume !== undefined) {
      thread.interrupts = [];
      aiText(`Resumed with: ${typeof resume === 'string' ? resume : JSON.stringify(resume)}`);
    } else if (messages.at(-1)?.type === 'tool') {
      aiText(`Tool result received: ${messages.at(-1).content}`);
    } else if (has('stall')) {
      aiText('tok0 ', ['tok0 '], true);
      return;
    } else if (has('cut')) {
      aiText('tok0 ', ['tok0 '], true);
      finished = true;
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    } else if (has('bad-event')) {
      aiText('tok0 ', ['tok0 '], true);
      // A tool call emitted without a name: the gateway cannot read it, and the graph goes on running.
      send('events', {
        event: 'on_custom_event',
        name: 'copilotkit_manually_emit_tool_call',
        metadata,
        data: { id: 'x', args: {} },
      });
      return;
    } else if (directive('node-hops')) {
      values.notes = 'n'.repeat(1024 * 1024);
      send('values', values);
      for (let i = 0; i < Number(directive('node-hops')); i++) {
        const node = i % 2 === 0 ? 'plan' : 'act';
        send('events', {
          event: 'on_chain_stream',
          name: node,
          run_id: runId,
          metadata: { ...metadata, langgraph_node: node },
          data: {},
        });
      }
    } else if (has('agent-error')) {
      aiText('Working on it. ');
      send('error', { error: 'ValueError', message: 'The agent broke down.' });
      finished = true;
      res.end();
      return;
    } else if (has('interrupt') || has('copilotkit-interrupt')) {
      const value = has('interrupt')
        ? 'approve?'
        : {
            __copilotkit_interrupt_value__: { question: 'approve?' },
            __copilotkit_messages__: [{ type: 'ai', id: 'int-msg', content: 'Please approve.' }],
          };
      thread.interrupts = [{ value, id: 'int-lg-1' }];
      send('updates', {
        __interrupt__: [{ value, id: 'int-lg-1', resumable: true, ns: ['human_review:1'], when: 'during' }],
      });
      thread.values = values;
      send('end', null);
      finished = true;
      res.end();
      return;
    } else if (has('state')) {
      values.step = 1;
      send('values', values, true);
      aiText('State updated. ');
      values.step = 2;
      send('values', values, true);
    } else if (has('reused-id')) {
      // Two answers with one message id, then a tool call in a chunk of that id.
      aiText('First. ', undefined, false, 'lg-reused');
      aiText('Second.', undefined, false, 'lg-reused');
      toolChunks('lg-reused', [{ name: 'lookup', args: '{}', id: `lg-call-${runId}-reused`, index: 0 }], 'tool_calls');
    } else if (directive('tool') || directive('server-tool')) {
      const name = directive('tool') ?? directive('server-tool')!;
      const args = directive('toolargs') ?? '{}';
      const id = `lg-ai-${runId}-${++counter}`;
      const callId = `lg-call-${runId}`;
      toolChunks(id, [{ name, args: '', id: callId, index: 0 }]);
      for (const part of args.match(/.{1,4}/gs) ?? []) toolChunks(id, [{ name: null, args: part, id: null, index: 0 }]);
      toolChunks(id, [], 'tool_calls');
      values.messages = [
        ...values.messages,
        { type: 'ai', id, content: '', tool_calls: [{ id: callId, name, args: JSON.parse(args) }] },
      ];
    } else {
      const count = Number(directive('tokens') ?? 5);
      const tokens = Array.from({ length: count }, (_, i) => `tok${i} `);
      aiText(tokens.join(''), tokens);
    }
    end();
  }
}

function json(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}
