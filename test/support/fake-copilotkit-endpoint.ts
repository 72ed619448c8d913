import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake CopilotKit remote endpoint (what CopilotKit's Python SDK serves), on loopback:
 * `POST /info`, `/actions/execute`, `/agents/execute` (JSON Lines) and `/agents/state`, with the
 * bodies and line formats of CopilotKit's runtime 1.10.6 and its Python SDK.
 *
 * Agents: "crewAgent" (type crewai: runtime-event lines) and "graphAgent" (type langgraph:
 * astream_events lines). What an agent answers is read from directives in the last user message
 * (see upstreams.ts for the shared ones) plus these, for the line reader:
 *   [say=TEXT]          say TEXT, a word per chunk
 *   [split=N]           write the output in N-byte pieces (splitting lines and characters)
 *   [crlf]              end lines with CRLF, with blank lines between them
 *   [no-final-newline]  leave the newline off the last line
 *   [malformed]         send a line that is not JSON after the first token
 *   [cut]               close the connection after the first token
 *   [server-tool=NAME]  call the gateway's server-side action NAME with [toolargs]
 *   [own-tool]          call a tool of its own and report its result itself
 *   [open-call]         with [server-tool]: leave the call without its end
 *   [plain-interrupt]   an on_interrupt line (langgraph dialect)
 *   [manual]            CopilotKit's manually emitted message and tool call (langgraph dialect)
 *   [hidden]            output marked copilotkit:emit-messages / emit-tool-calls false (langgraph dialect)
 * When the last message is a result, the agent answers "Tool result received: <result>"; when
 * the request carries an interrupt answer, "Resumed with: <response>".
 * Actions: remoteAdd (returns a number), remoteObject, remoteNull, remoteText, remoteBool, remoteFail (HTTP 500).
 * /agents/state answers 404 for the thread "thread-404".
 */
export class FakeCopilotKitEndpoint {
  readonly requests: { path: string; body: any; headers: IncomingMessage['headers'] }[] = [];
  /** Requests whose client closed the connection before the answer was complete. */
  abortedRequests = 0;
  /** Answers to give, in order, before the normal one, per path: a status, a reset, or nothing at all. */
  readonly plans = new Map<
    string,
    ({ status: number; headers?: Record<string, string>; body?: string } | 'reset' | 'hang')[]
  >();
  agents = [
    { name: 'crewAgent', description: 'A crew of agents.', type: 'crewai' },
    { name: 'graphAgent', description: 'A LangGraph agent.', type: 'langgraph' },
  ];
  actions: unknown[] = [
    {
      name: 'remoteAdd',
      description: 'Adds two numbers.',
      parameters: [
        { name: 'a', type: 'number' },
        { name: 'b', type: 'number' },
      ],
    },
    { name: 'remoteObject', description: 'Returns an object.', parameters: [] },
    { name: 'remoteNull', description: 'Returns null.', parameters: [] },
    {
      name: 'remoteText',
      description: 'Returns text.',
      parameters: [{ name: 'text', type: 'string', required: false }],
    },
    { name: 'remoteFail', description: 'Always fails.', parameters: [] },
    { name: 'remoteBool', description: 'Returns a boolean.', parameters: [] },
  ];
  /** Saved thread states for /agents/state. */
  readonly threads = new Map<string, { state: Record<string, unknown>; messages: unknown[] }>();
  private server: Server;
  url = '';

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
  }

  async start(): Promise<string> {
    this.url = `${await listen(this.server)}/copilotkit`;
    return this.url;
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  calls(path: string): number {
    return this.requests.filter((request) => request.path === path).length;
  }

  lastBody(path: string): any {
    return [...this.requests].reverse().find((request) => request.path === path)?.body;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? '').replace(/^\/copilotkit/, '');
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text ? JSON.parse(text) : undefined;
    this.requests.push({ path, body, headers: req.headers });

    const planned = this.plans.get(path)?.shift();
    if (planned === 'reset') return void req.socket.destroy();
    if (planned === 'hang') return;
    if (planned) {
      res.writeHead(planned.status, { 'content-type': 'application/json', ...planned.headers });
      res.end(planned.body ?? JSON.stringify({ error: `planned ${planned.status}` }));
      return;
    }

    if (req.method !== 'POST') return void res.writeHead(405).end();
    switch (path) {
      case '/info':
        return json(res, { actions: this.actions, agents: this.agents, sdkVersion: '0.1.70' });
      case '/actions/execute':
        return this.executeAction(body, res);
      case '/agents/state': {
        if (body.threadId === 'thread-404')
          return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Thread not found"}');
        const thread = this.threads.get(body.threadId);
        return json(res, {
          threadId: body.threadId,
          threadExists: !!thread,
          state: thread?.state ?? {},
          messages: thread?.messages ?? [],
        });
      }
      case '/agents/execute':
        return this.executeAgent(body, res);
      default:
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
    }
  }

  private executeAction(body: any, res: ServerResponse): void {
    const args = body.arguments ?? {};
    switch (body.name) {
      case 'remoteAdd':
        return json(res, { result: args.a + args.b });
      case 'remoteObject':
        return json(res, { result: { ok: true, tenant: body.properties?.tenant ?? null } });
      case 'remoteNull':
        return json(res, { result: null });
      case 'remoteBool':
        return json(res, { result: true });
      case 'remoteText':
        return json(res, { result: `text: ${args.text ?? ''}` });
      case 'remoteFail':
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end('{"error":"Traceback (most recent call last): secret internals"}');
        return;
      default:
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: `Action ${body.name} not found` }));
    }
  }

  private async executeAgent(body: any, res: ServerResponse): Promise<void> {
    const agent = this.agents.find((a) => a.name === body.name);
    if (!agent) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: `Agent ${body.name} not found` }));
      return;
    }
    const messages: any[] = body.messages ?? [];
    const last = messages[messages.length - 1];
    const lastUser = [...messages].reverse().find((m) => m.type === 'TextMessage' && m.role === 'user');
    const prompt: string = lastUser?.content ?? '';
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const has = (name: string) => prompt.includes(`[${name}]`);

    const fail = directive('fail');
    if (fail && last?.type !== 'ResultMessage') {
      res
        .writeHead(Number(fail), { 'content-type': 'application/json' })
        .end(JSON.stringify({ detail: `fake failure ${fail}` }));
      return;
    }

    let finished = false;
    res.on('close', () => {
      if (!finished) this.abortedRequests++;
    });
    res.writeHead(200, { 'content-type': 'application/jsonl' });
    const split = Number(directive('split') ?? 0);
    const newline = has('crlf') ? '\r\n\r\n' : '\n';
    const lines: string[] = [];
    const dialect = agent.type === 'langgraph' ? langGraphLines(body) : runtimeEventLines(body);
    const resume = (body.metaEvents ?? []).find((event: any) => event.response != null);

    if (last?.type === 'ResultMessage') dialect.text(`Tool result received: ${last.result}`, lines);
    else if (resume && !directive('server-tool')) dialect.text(`Resumed with: ${resume.response}`, lines);
    else if (has('stall') || has('cut') || has('malformed')) {
      dialect.text('tok0 ', lines, { open: true });
      await write(
        res,
        lines
          .splice(0)
          .map((line) => line + newline)
          .join(''),
        split,
      );
      if (has('malformed')) {
        res.write('{"type": "TextMessageContent", oops\n');
        finished = true;
        res.end();
      } else if (has('cut')) {
        finished = true;
        setTimeout(() => res.socket?.destroy(), 20);
      }
      return; // [stall]: nothing more until the gateway goes away
    } else if (has('agent-error')) {
      dialect.text('Working on it. ', lines);
      dialect.error('The agent broke down.', lines);
    } else if (has('interrupt')) {
      dialect.interrupt('approve?', lines);
    } else if (has('plain-interrupt')) {
      lines.push(JSON.stringify({ event: 'on_interrupt', value: 'plain approve?' }));
    } else if (has('manual')) {
      lines.push(
        JSON.stringify({
          event: 'on_custom_event',
          name: 'copilotkit_manually_emit_message',
          data: { message_id: 'manual-1', message: 'Emitted by hand.' },
        }),
      );
      lines.push(
        JSON.stringify({
          event: 'on_custom_event',
          name: 'copilotkit_manually_emit_tool_call',
          data: { id: 'manual-call', name: 'showAlert', args: { message: 'hand' } },
        }),
      );
    } else if (has('hidden')) {
      const stream = (id: string, content: string, metadata: Record<string, unknown>) =>
        JSON.stringify({
          event: 'on_chat_model_stream',
          metadata: { langgraph_node: 'chat_node', ...metadata },
          data: { chunk: { id, content, tool_call_chunks: [], response_metadata: {} } },
        });
      lines.push(stream('hidden-1', 'internal reasoning', { 'copilotkit:emit-messages': false }));
      lines.push(
        JSON.stringify({
          event: 'on_chat_model_stream',
          metadata: { 'copilotkit:emit-tool-calls': false },
          data: {
            chunk: {
              id: 'hidden-2',
              content: '',
              tool_call_chunks: [{ name: 'secretTool', args: '{}', id: 'hidden-call', index: 0 }],
            },
          },
        }),
      );
      lines.push(stream('shown-1', 'Visible answer.', {}));
      lines.push(JSON.stringify({ event: 'on_chat_model_end', metadata: {}, data: {} }));
    } else if (has('state')) {
      dialect.state({ step: 1 }, lines);
      dialect.text('State updated. ', lines);
      dialect.state({ step: 2 }, lines);
    } else if (directive('server-tool')) {
      dialect.call(directive('server-tool')!, directive('toolargs') ?? '{}', lines);
      // [open-call]: the call is never ended (the gateway ends it when the answer is over).
      if (has('open-call')) lines.pop();
    } else if (directive('tool')) {
      dialect.call(directive('tool')!, directive('toolargs') ?? '{}', lines);
    } else if (has('own-tool')) {
      dialect.call('ownSearch', '{"q":"x"}', lines);
      dialect.result('ownSearch', 'found it', lines);
    } else if (directive('say')) {
      dialect.tokens(directive('say')!.match(/\S+\s*/gu) ?? [], lines);
    } else {
      const count = Number(directive('tokens') ?? 5);
      dialect.tokens(
        Array.from({ length: count }, (_, i) => `tok${i} `),
        lines,
      );
    }
    let output = lines.map((line) => line + newline).join('');
    if (has('no-final-newline')) output = output.replace(/(\r?\n)+$/, '');
    try {
      await write(res, output, split);
      finished = true;
      res.end();
    } catch {
      // the gateway went away
    }
  }
}

interface Dialect {
  text(text: string, lines: string[], options?: { open?: boolean }): void;
  tokens(tokens: string[], lines: string[]): void;
  call(name: string, args: string, lines: string[]): void;
  result(name: string, result: string, lines: string[]): void;
  state(state: Record<string, unknown>, lines: string[]): void;
  interrupt(value: string, lines: string[]): void;
  error(message: string, lines: string[]): void;
}

let counter = 0;
const nextId = (prefix: string) => `${prefix}-${++counter}`;

/** Lines of the crewai (and generic) dialect: CopilotKit runtime events. */
function runtimeEventLines(body: any): Dialect {
  const event = (value: Record<string, unknown>) => JSON.stringify(value);
  return {
    text(text, lines, options = {}) {
      this.tokens([text], lines);
      if (options.open) lines.pop();
    },
    tokens(tokens, lines) {
      const messageId = nextId('crew-msg');
      lines.push(event({ type: 'TextMessageStart', messageId }));
      for (const content of tokens) lines.push(event({ type: 'TextMessageContent', messageId, content }));
      lines.push(event({ type: 'TextMessageEnd', messageId }));
    },
    call(name, args, lines) {
      const actionExecutionId = nextId('crew-call');
      lines.push(
        event({
          type: 'ActionExecutionStart',
          actionExecutionId,
          actionName: name,
          parentMessageId: nextId('crew-parent'),
        }),
      );
      for (const part of args.match(/.{1,4}/gs) ?? [])
        lines.push(event({ type: 'ActionExecutionArgs', actionExecutionId, args: part }));
      lines.push(event({ type: 'ActionExecutionEnd', actionExecutionId }));
    },
    result(name, result, lines) {
      const start = JSON.parse(lines.find((line) => line.includes('ActionExecutionStart'))!);
      lines.push(
        event({ type: 'ActionExecutionResult', actionExecutionId: start.actionExecutionId, actionName: name, result }),
      );
    },
    state(state, lines) {
      lines.push(
        event({
          type: 'AgentStateMessage',
          threadId: body.threadId,
          agentName: body.name,
          nodeName: 'crew',
          runId: 'crew-run',
          active: true,
          role: 'assistant',
          state: JSON.stringify(state),
          running: true,
        }),
      );
    },
    interrupt(value, lines) {
      lines.push(event({ type: 'MetaEvent', name: 'LangGraphInterruptEvent', value }));
    },
    error(message, lines) {
      lines.push(event({ type: 'RunError', message }));
    },
  };
}

/** Lines of the langgraph dialect: LangGraph astream_events, plus CopilotKit's own events. */
function langGraphLines(body: any): Dialect {
  const metadata = { langgraph_node: 'chat_node', thread_id: body.threadId };
  const stream = (chunk: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      event: 'on_chat_model_stream',
      name: 'ChatOpenAI',
      run_id: 'lg-run',
      metadata: { ...metadata, ...extra },
      data: { chunk },
    });
  return {
    text(text, lines, options = {}) {
      const id = nextId('run');
      lines.push(stream({ id, content: text, tool_call_chunks: [], response_metadata: {} }));
      if (!options.open)
        lines.push(stream({ id, content: '', tool_call_chunks: [], response_metadata: { finish_reason: 'stop' } }));
    },
    tokens(tokens, lines) {
      const id = nextId('run');
      for (const content of tokens) lines.push(stream({ id, content, tool_call_chunks: [], response_metadata: {} }));
      lines.push(JSON.stringify({ event: 'on_chain_start', name: 'unrelated', metadata }));
      lines.push(stream({ id, content: '', tool_call_chunks: [], response_metadata: { finish_reason: 'stop' } }));
    },
    call(name, args, lines) {
      const id = nextId('run');
      const callId = nextId('lg-call');
      // LangChain's chunk format as LangGraph Platform sends it: the fields under kwargs.
      lines.push(
        stream({
          lc: 1,
          type: 'constructor',
          id: ['langchain', 'AIMessageChunk'],
          kwargs: { id, content: '', tool_call_chunks: [{ name, args: '', id: callId, index: 0 }] },
        }),
      );
      for (const part of args.match(/.{1,4}/gs) ?? []) {
        lines.push(
          stream({
            lc: 1,
            type: 'constructor',
            id: ['langchain', 'AIMessageChunk'],
            kwargs: { id, content: '', tool_call_chunks: [{ name: null, args: part, id: null, index: 0 }] },
          }),
        );
      }
      lines.push(stream({ id, content: '', tool_call_chunks: [], response_metadata: { finish_reason: 'tool_calls' } }));
    },
    result(name, result, lines) {
      // LangGraph agents report their own tool results as state; the runtime shows them through state sync.
      lines.push(JSON.stringify({ event: 'on_tool_end', name, data: { output: result }, metadata }));
    },
    state(state, lines) {
      lines.push(
        JSON.stringify({
          event: 'on_copilotkit_state_sync',
          thread_id: body.threadId,
          run_id: 'lg-run',
          agent_name: body.name,
          node_name: 'chat_node',
          active: true,
          state,
          running: true,
          role: 'assistant',
        }),
      );
    },
    interrupt(value, lines) {
      lines.push(
        JSON.stringify({
          event: 'on_copilotkit_interrupt',
          data: { value, messages: [{ id: 'interrupt-msg', role: 'assistant', content: 'Please approve.' }] },
        }),
      );
    },
    error(message, lines) {
      lines.push(
        JSON.stringify({
          event: 'on_copilotkit_error',
          data: { error: { message, type: 'AgentError', agent_name: body.name } },
        }),
      );
    },
  };
}

function json(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

/** Writes `text` in pieces of `size` bytes (whole when 0), letting each piece go out on its own. */
async function write(res: ServerResponse, text: string, size: number): Promise<void> {
  const bytes = Buffer.from(text, 'utf8');
  if (size <= 0) {
    res.write(bytes);
    return;
  }
  for (let at = 0; at < bytes.length; at += size) {
    if (res.destroyed) throw new Error('gone');
    res.write(bytes.subarray(at, at + size));
    await new Promise((resolve) => setImmediate(resolve));
  }
}
