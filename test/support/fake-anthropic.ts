import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake Anthropic Messages API (`POST /v1/messages`) speaking its streaming wire format: named
 * server-sent events `message_start`, `content_block_start`, `ping`, `content_block_delta`
 * (`text_delta`, `input_json_delta`, `thinking_delta`), `content_block_stop`, `message_delta` (with
 * the stop reason), `message_stop`; errors as `{"type":"error","error":{type, message}}`. What it
 * answers is read from directives in the last user turn's text:
 *   [tokens=N]                 N text tokens "tok0 ", "tok1 ", …  (default: a short sentence)
 *   [delay=MS]                 pause between events
 *   [tool=NAME] [toolargs=J]   a tool_use block calling NAME, its input J in several deltas
 *   [tools=A,B]                several tool_use blocks (input {})
 *   [text-then-tool]           with [tool=…]: a text block before the call
 *   [thinking]                 a thinking block (with a signature) before the text
 *   [fail=STATUS]              an HTTP error with an Anthropic error body
 *   [fail-times=N]             with [fail=…]: only the first N requests with this prompt fail
 *   [echo-key]                 with [fail=…]: the error message repeats the key it was sent (x-api-key or authorization)
 *   [retry-after-ms=MS]        with [fail=…]: the `retry-after-ms` header (the SDK waits that long to retry)
 *   [overloaded]               one token, then an `error` event (overloaded_error)
 *   [cut]                      two tokens, then the connection is destroyed
 *   [stall]                    one token, then nothing until the client goes away
 *   [no-stop]                  two tokens and message_stop, but no message_delta with a stop reason
 *   [too-long]                 400 "prompt is too long", in Anthropic's words
 *   [odd=KIND]                 a delta of a shape the API never sends, then a complete end: KIND text (after one
 *                              good token, a text_delta whose text is 42), thinking (a thinking_delta whose thinking
 *                              is an object) or json (an input_json_delta whose partial_json is 7)
 * When the last user turn holds tool results, it answers "Tool result received: <content>".
 */
export class FakeAnthropic {
  readonly requests: { body: any; headers: IncomingMessage['headers'] }[] = [];
  abortedRequests = 0;
  private readonly server: Server;
  private count = 0;
  /** Failures answered so far, by prompt ([fail-times]). */
  private readonly failures = new Map<string, number>();

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
  }

  /** The base URL to give the SDK (it appends /v1/messages). */
  start(): Promise<string> {
    return listen(this.server);
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/messages') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'Not found' } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    this.requests.push({ body, headers: req.headers });
    const invalid = invalidRequest(body);
    if (invalid) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: invalid } }));
      return;
    }
    const turns: any[] = body.messages;
    const lastUser = [...turns].reverse().find((turn) => turn.role === 'user');
    const blocks: any[] =
      typeof lastUser?.content === 'string' ? [{ type: 'text', text: lastUser.content }] : (lastUser?.content ?? []);
    const prompt = blocks
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join(' ');
    const toolResult = blocks.find((b) => b.type === 'tool_result');
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const delay = Number(directive('delay') ?? 0);

    if (prompt.includes('[too-long]')) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          type: 'error',
          error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
        }),
      );
      return;
    }
    const fail = directive('fail');
    const failures = this.failures.get(prompt) ?? 0;
    if (fail && !toolResult && failures < Number(directive('fail-times') ?? Infinity)) {
      this.failures.set(prompt, failures + 1);
      const retryAfterMs = directive('retry-after-ms');
      const type =
        {
          400: 'invalid_request_error',
          401: 'authentication_error',
          403: 'permission_error',
          404: 'not_found_error',
          429: 'rate_limit_error',
          529: 'overloaded_error',
        }[fail] ?? 'api_error';
      res.writeHead(Number(fail), {
        'content-type': 'application/json',
        ...(fail === '429' ? { 'retry-after': '7' } : {}),
        ...(retryAfterMs ? { 'retry-after-ms': retryAfterMs } : {}),
      });
      // [echo-key]: the message repeats the key it was sent, as some services and proxies do.
      const echoed = prompt.includes('[echo-key]')
        ? ` for key ${String(req.headers['x-api-key'] ?? req.headers.authorization)}`
        : '';
      res.end(JSON.stringify({ type: 'error', error: { type, message: `fake failure ${fail}${echoed}` } }));
      return;
    }

    let finished = false;
    res.on('close', () => {
      if (!finished) this.abortedRequests++;
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const id = `msg_fake${++this.count}`;
    const send = async (event: string, data: Record<string, unknown>) => {
      if (res.destroyed) throw new Error('client went away');
      res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    };
    let index = 0;
    const text = async (tokens: string[]) => {
      await send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const token of tokens)
        await send('content_block_delta', { index, delta: { type: 'text_delta', text: token } });
      await send('content_block_stop', { index });
      index++;
    };
    const end = async (stopReason: string) => {
      await send('message_delta', {
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: 12 },
      });
      await send('message_stop', {});
      finished = true;
      res.end();
    };

    try {
      await send('message_start', {
        message: {
          id,
          type: 'message',
          role: 'assistant',
          content: [],
          model: body.model,
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 20, output_tokens: 1 },
        },
      });
      await send('ping', {});
      if (toolResult) {
        const content =
          typeof toolResult.content === 'string' ? toolResult.content : JSON.stringify(toolResult.content);
        await text([`Tool result received: ${content}`]);
        return await end('end_turn');
      }
      if (prompt.includes('[stall]')) {
        await send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        await send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tok0 ' } });
        return; // the gateway's idle timeout or the client must end it
      }
      if (prompt.includes('[overloaded]')) {
        await send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        await send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tok0 ' } });
        res.write(
          `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`,
        );
        finished = true;
        res.end();
        return;
      }
      if (prompt.includes('[cut]')) {
        await send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        await send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tok0 ' } });
        await send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tok1 ' } });
        finished = true;
        await new Promise((resolve) => setTimeout(resolve, 50));
        res.destroy();
        return;
      }
      if (prompt.includes('[no-stop]')) {
        await send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        await send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tok0 ' } });
        await send('content_block_stop', { index: 0 });
        await send('message_stop', {});
        finished = true;
        res.end();
        return;
      }
      const odd = directive('odd');
      if (odd) {
        // A delta whose text is not a string (as the Messages API never sends), after one good token.
        if (odd === 'text') {
          await send('content_block_start', { index, content_block: { type: 'text', text: '' } });
          await send('content_block_delta', { index, delta: { type: 'text_delta', text: 'tok0 ' } });
          await send('content_block_delta', { index, delta: { type: 'text_delta', text: 42 } });
        } else if (odd === 'thinking') {
          await send('content_block_start', {
            index,
            content_block: { type: 'thinking', thinking: '', signature: '' },
          });
          await send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: { a: 1 } } });
        } else {
          await send('content_block_start', {
            index,
            content_block: { type: 'tool_use', id: `toolu_${id}_0`, name: 'lookup', input: {} },
          });
          await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: 7 } });
        }
        await send('content_block_stop', { index });
        return await end('end_turn');
      }
      if (prompt.includes('[thinking]')) {
        await send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        await send('content_block_delta', {
          index,
          delta: { type: 'thinking_delta', thinking: 'Let me think about this.' },
        });
        await send('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } });
        await send('content_block_stop', { index });
        index++;
      }
      const names = directive('tools')?.split(',') ?? (directive('tool') ? [directive('tool')!] : []);
      if (names.length) {
        if (prompt.includes('[text-then-tool]')) await text(['Let me do that. ']);
        for (const [n, name] of names.entries()) {
          const args = directive('toolargs') ?? '{}';
          await send('content_block_start', {
            index,
            content_block: { type: 'tool_use', id: `toolu_${id}_${n}`, name, input: {} },
          });
          await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
          for (const part of args.match(/.{1,5}/gs) ?? [])
            await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
          await send('content_block_stop', { index });
          index++;
        }
        return await end('tool_use');
      }
      const count = directive('tokens');
      await text(
        count
          ? Array.from({ length: Number(count) }, (_, i) => `tok${i} `)
          : ['Hello ', 'from ', 'the ', 'fake ', 'Claude.'],
      );
      await end('end_turn');
    } catch {
      // The client went away mid-answer; 'close' has counted it.
    }
  }
}

/**
 * The Messages API's own checks of a request, as it answers them (400 invalid_request_error), so that a
 * conversion the real API would refuse fails here too: max_tokens present, roles alternating, no empty
 * text, tool results first in a user turn and answering the tool_use blocks of the turn before.
 */
function invalidRequest(body: any): string | undefined {
  if (!Number.isInteger(body.max_tokens)) return 'max_tokens: Field required';
  const turns: any[] = body.messages ?? [];
  if (turns.length === 0) return 'messages: at least one message is required';
  for (const [i, turn] of turns.entries()) {
    if (i > 0 && turns[i - 1].role === turn.role)
      return `messages: roles must alternate between "user" and "assistant" (messages.${i})`;
    const blocks: any[] = typeof turn.content === 'string' ? [{ type: 'text', text: turn.content }] : turn.content;
    if (!blocks.length) return `messages.${i}: all messages must have non-empty content`;
    for (const block of blocks) {
      if (block.type === 'text' && !String(block.text).trim())
        return `messages.${i}: text content blocks must contain non-whitespace text`;
    }
    const results = blocks.filter((b) => b.type === 'tool_result');
    if (results.length) {
      if (turn.role !== 'user') return `messages.${i}: tool_result blocks are only allowed in user messages`;
      if (
        blocks.findIndex((b) => b.type !== 'tool_result') !== -1 &&
        blocks.findIndex((b) => b.type !== 'tool_result') < results.length
      ) {
        return `messages.${i}: tool_result blocks must come first in the content`;
      }
      const asked = new Set(
        (turns[i - 1]?.content ?? []).filter((b: any) => b.type === 'tool_use').map((b: any) => b.id),
      );
      for (const result of results) {
        if (!asked.has(result.tool_use_id))
          return `messages.${i}: unexpected tool_use_id found in tool_result blocks: ${result.tool_use_id}`;
      }
    }
    if (turn.role === 'assistant' && i + 1 < turns.length) {
      const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id);
      const next: any[] = typeof turns[i + 1].content === 'string' ? [] : turns[i + 1].content;
      const answered = new Set(next.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id));
      for (const id of uses)
        if (!answered.has(id))
          return `messages.${i + 1}: tool_use ids were found without tool_result blocks immediately after: ${id}`;
    }
  }
  return undefined;
}
