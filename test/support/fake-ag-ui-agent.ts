import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { EventType, type BaseEvent, type RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { AGUI_MEDIA_TYPE, EventEncoder } from '@ag-ui/encoder';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake AG-UI agent on loopback: it takes a RunAgentInput by POST (checked against @ag-ui/core's
 * schema, so a gateway that sends a bad one gets a 422) and answers with AG-UI events encoded by
 * @ag-ui/encoder, AG-UI's own encoder. It answers the directives shared by every fake (see
 * upstreams.ts) plus:
 *   [chunks]            text as TEXT_MESSAGE_CHUNK events
 *   [crlf]              SSE with CRLF line ends
 *   [no-finish]         end the stream without RUN_FINISHED
 *   [cut]               cut the connection in the middle of an event
 *   [bad-event]         a TEXT_MESSAGE_CONTENT without its delta, then silence
 *   [delta]             a state snapshot, then a JSON Patch touching part of it
 *   [steps]             a step with a state snapshot in it
 *   [state-steps=N]     a 1 MiB state snapshot, then N steps started (each passed on as the whole state)
 *   [bad-deltas=N]      a 1 MiB state snapshot, then N state deltas that do not apply
 *   [thinking]          reasoning events, RAW and an unknown CUSTOM event, then text
 *   [usage]             token usage on RUN_FINISHED
 *   [thinking-0.0]      a 0.0.x agent's thinking events (THINKING_*, retired by AG-UI 1.0: no message ids), then text
 *   [snapshot]          a MESSAGES_SNAPSHOT with an assistant message that was never streamed
 *   [ag-ui-interrupt]   a RUN_FINISHED with an interrupt outcome (after a STATE_SNAPSHOT, with [with-state])
 *   [predict]           CopilotKit's PredictState, then a tool call whose arguments become state
 *   [own-tool]          a tool call of its own with its TOOL_CALL_RESULT
 *   [reused-id]         two text messages with one message id, then a tool call whose parentMessageId is that id
 *   [server-tool=NAME]  a call of the gateway's server-side action NAME with [toolargs]
 *   [proto]             the answer in AG-UI's protobuf framing, whatever the request accepted
 *   [content-type=T]    the answer as SSE, with content type T
 *   [huge]              after RUN_STARTED, an event that never ends: over 16 MiB of one SSE line, or (with [proto])
 *                       a frame that declares 16 MiB and sends it; then nothing more
 * When the last message is a tool result, it answers "Tool result received: <content>"; when
 * `forwardedProps.command.resume` is set, "Resumed with: <resume>".
 */
export class FakeAgUiAgent {
  readonly requests: { input: RunAgentInput; headers: IncomingMessage['headers'] }[] = [];
  abortedRequests = 0;
  private server: Server;
  url = '';

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
  }

  async start(): Promise<string> {
    this.url = `${await listen(this.server)}/agent`;
    return this.url;
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  get lastInput(): RunAgentInput {
    return this.requests[this.requests.length - 1].input;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const parsed = RunAgentInputSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    if (!parsed.success) {
      res.writeHead(422, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: parsed.error.message }));
      return;
    }
    const input = parsed.data as RunAgentInput;
    this.requests.push({ input, headers: req.headers });

    const last = input.messages[input.messages.length - 1];
    const lastUser = [...input.messages].reverse().find((m) => m.role === 'user');
    const prompt = typeof lastUser?.content === 'string' ? lastUser.content : '';
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const has = (name: string) => prompt.includes(`[${name}]`);

    const fail = directive('fail');
    if (fail && last?.role !== 'tool') {
      res
        .writeHead(Number(fail), { 'content-type': 'application/json' })
        .end(JSON.stringify({ detail: `fake failure ${fail}` }));
      return;
    }

    const encoder = new EventEncoder({ accept: has('proto') ? AGUI_MEDIA_TYPE : req.headers.accept });
    const contentType = directive('content-type') ?? encoder.getContentType();
    let finished = false;
    res.on('close', () => {
      if (!finished) this.abortedRequests++;
    });
    res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
    const send = (event: Record<string, unknown>) => {
      // encode() always writes SSE; encodeBinary() frames protobuf when the encoder was asked for it.
      const encoded = has('proto')
        ? encoder.encodeBinary(event as unknown as BaseEvent)
        : encoder.encode(event as unknown as BaseEvent);
      // [crlf]: SSE with CRLF line ends, as servers built on sse-starlette write it.
      if (!res.destroyed)
        res.write(has('crlf') && typeof encoded === 'string' ? encoded.replace(/\n/g, '\r\n') : encoded);
    };
    const end = () => {
      finished = true;
      res.end();
    };
    const started = { type: EventType.RUN_STARTED, threadId: input.threadId, runId: input.runId };
    const runFinished = {
      type: EventType.RUN_FINISHED,
      threadId: input.threadId,
      runId: input.runId,
      // [usage]: AG-UI 1.0's token usage, one entry per model (the second without a provider).
      ...(has('usage')
        ? {
            usage: [
              { provider: 'anthropic', model: 'claude-x', inputTokens: 5, outputTokens: 3 },
              { model: 'local-llm', totalTokens: 9 },
            ],
          }
        : {}),
    };
    let counter = 0;
    const text = (content: string | string[], options: { chunks?: boolean; open?: boolean } = {}) => {
      const messageId = `agui-msg-${input.runId}-${++counter}`;
      const parts = Array.isArray(content) ? content : [content];
      if (options.chunks) {
        for (const delta of parts) send({ type: EventType.TEXT_MESSAGE_CHUNK, messageId, role: 'assistant', delta });
        return;
      }
      send({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
      for (const delta of parts) send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta });
      if (!options.open) send({ type: EventType.TEXT_MESSAGE_END, messageId });
    };
    const call = (name: string, args: string) => {
      const toolCallId = `agui-call-${input.runId}-${++counter}`;
      send({
        type: EventType.TOOL_CALL_START,
        toolCallId,
        toolCallName: name,
        parentMessageId: `agui-parent-${counter}`,
      });
      for (const delta of args.match(/.{1,4}/gs) ?? []) send({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta });
      send({ type: EventType.TOOL_CALL_END, toolCallId });
      return toolCallId;
    };

    send(started);
    const resume = (input.forwardedProps as { command?: { resume?: unknown } } | undefined)?.command?.resume;
    if (resume !== undefined) {
      text(`Resumed with: ${typeof resume === 'string' ? resume : JSON.stringify(resume)}`);
    } else if (last?.role === 'tool') {
      text(`Tool result received: ${last.content}`);
    } else if (has('huge')) {
      const frame = 16 * 1024 * 1024;
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      if (has('proto')) {
        const header = Buffer.alloc(4);
        header.writeUInt32BE(frame);
        res.write(header);
      } else {
        res.write('data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"');
      }
      let written = 0;
      const more = () => {
        // 2 MiB past the frame, then silence: only the gateway can end this stream.
        while (written < frame + 2 * chunk.length && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
      };
      more();
      return;
    } else if (has('stall')) {
      text('tok0 ', { open: true });
      return; // nothing more until the gateway goes away
    } else if (has('cut')) {
      text('tok0 ', { open: true });
      res.write('data: {"type":"TEXT_MESSAGE_CONT');
      finished = true;
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    } else if (has('no-finish')) {
      text('tok0 ');
      return end();
    } else if (has('bad-event')) {
      text('tok0 ', { open: true });
      send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: `agui-msg-${input.runId}-${counter}` });
      return; // and nothing more: only the gateway can end this stream
    } else if (has('reused-id')) {
      for (const delta of ['First. ', 'Second.']) {
        send({ type: EventType.TEXT_MESSAGE_START, messageId: 'agui-reused', role: 'assistant' });
        send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'agui-reused', delta });
        send({ type: EventType.TEXT_MESSAGE_END, messageId: 'agui-reused' });
      }
      const toolCallId = `agui-call-${input.runId}-reused`;
      send({ type: EventType.TOOL_CALL_START, toolCallId, toolCallName: 'lookup', parentMessageId: 'agui-reused' });
      send({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: '{}' });
      send({ type: EventType.TOOL_CALL_END, toolCallId });
    } else if (has('delta')) {
      send({ type: EventType.STATE_SNAPSHOT, snapshot: { step: 1, topic: 'ai' } });
      send({
        type: EventType.STATE_DELTA,
        delta: [
          { op: 'replace', path: '/step', value: 2 },
          { op: 'add', path: '/notes', value: ['a'] },
        ],
      });
    } else if (directive('bad-deltas')) {
      send({ type: EventType.STATE_SNAPSHOT, snapshot: { notes: 'n'.repeat(1024 * 1024) } });
      const patch = [{ op: 'remove' as const, path: '/nope' }];
      for (let i = 0; i < Number(directive('bad-deltas')); i++) send({ type: EventType.STATE_DELTA, delta: patch });
    } else if (directive('state-steps')) {
      send({ type: EventType.STATE_SNAPSHOT, snapshot: { notes: 'n'.repeat(1024 * 1024) } });
      for (let i = 0; i < Number(directive('state-steps')); i++) send({ type: EventType.STEP_STARTED, stepName: 's' });
    } else if (has('steps')) {
      send({ type: EventType.STEP_STARTED, stepName: 'planning' });
      send({ type: EventType.STATE_SNAPSHOT, snapshot: { step: 1 } });
      send({ type: EventType.STEP_FINISHED, stepName: 'planning' });
    } else if (has('agent-error')) {
      text('Working on it. ');
      send({ type: EventType.RUN_ERROR, message: 'The agent broke down.', code: 'BROKEN' });
      return end();
    } else if (has('interrupt')) {
      send({ type: EventType.CUSTOM, name: 'on_interrupt', value: 'approve?' });
    } else if (has('ag-ui-interrupt')) {
      if (has('with-state')) send({ type: EventType.STATE_SNAPSHOT, snapshot: { step: 1 } });
      send({
        ...runFinished,
        outcome: { type: 'interrupt', interrupts: [{ id: 'int-1', reason: 'approval', message: 'Approve the plan?' }] },
      });
      return end();
    } else if (has('state')) {
      send({ type: EventType.STATE_SNAPSHOT, snapshot: { step: 1 } });
      text('State updated. ');
      send({ type: EventType.STATE_DELTA, delta: [{ op: 'replace', path: '/step', value: 2 }] });
    } else if (has('thinking-0.0')) {
      send({ type: 'THINKING_START' });
      send({ type: 'THINKING_TEXT_MESSAGE_START' });
      send({ type: 'THINKING_TEXT_MESSAGE_CONTENT', delta: 'old ' });
      send({ type: 'THINKING_TEXT_MESSAGE_CONTENT', delta: 'style' });
      send({ type: 'THINKING_TEXT_MESSAGE_END' });
      send({ type: 'THINKING_END' });
      text('After thinking.');
    } else if (has('thinking')) {
      send({ type: EventType.REASONING_START, messageId: 'r1' });
      send({ type: EventType.REASONING_MESSAGE_START, messageId: 'r1', role: 'reasoning' });
      send({ type: EventType.REASONING_MESSAGE_CONTENT, messageId: 'r1', delta: 'hmm' });
      send({ type: EventType.REASONING_MESSAGE_END, messageId: 'r1' });
      send({ type: EventType.REASONING_END, messageId: 'r1' });
      send({ type: EventType.RAW, event: { provider: 'x' } });
      send({ type: EventType.CUSTOM, name: 'something_else', value: 1 });
      text('After thinking.');
    } else if (has('snapshot')) {
      text('Streamed. ');
      send({
        type: EventType.MESSAGES_SNAPSHOT,
        messages: [
          ...input.messages,
          { id: `agui-msg-${input.runId}-1`, role: 'assistant', content: 'Streamed. ' },
          { id: 'late-1', role: 'assistant', content: 'Never streamed.' },
        ],
      });
    } else if (has('predict')) {
      send({
        type: EventType.CUSTOM,
        name: 'PredictState',
        value: [{ state_key: 'draft', tool: 'write', tool_argument: 'text' }],
      });
      call('write', '{"text":"Hello world"}');
    } else if (has('own-tool')) {
      const toolCallId = call('ownSearch', '{"q":"x"}');
      send({
        type: EventType.TOOL_CALL_RESULT,
        messageId: 'own-result',
        toolCallId,
        content: 'found it',
        role: 'tool',
      });
    } else if (directive('server-tool') || directive('tool')) {
      call(directive('server-tool') ?? directive('tool')!, directive('toolargs') ?? '{}');
    } else if (directive('say')) {
      text(directive('say')!.match(/\S+\s*/gu) ?? [], { chunks: has('chunks') });
    } else {
      const count = Number(directive('tokens') ?? 5);
      text(
        Array.from({ length: count }, (_, i) => `tok${i} `),
        { chunks: has('chunks') },
      );
    }
    send(runFinished);
    end();
  }
}
