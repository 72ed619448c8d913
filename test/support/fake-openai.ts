import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake OpenAI-compatible server speaking the Chat Completions streaming wire format
 * (`data: {chat.completion.chunk}` lines, then `data: [DONE]`). What it answers is read from
 * directives in the last user message:
 *   [tokens=N]                 stream N text tokens "tok0 ", "tok1 ", …  (default: a short sentence)
 *   [delay=MS]                 pause between chunks
 *   [tool=NAME] [toolargs=J]   call tool NAME with arguments J (split across several chunks)
 *   [tools=A,B]                call several tools in one answer (arguments "{}")
 *   [text-then-tool]           with [tool=…]: say a sentence before the call
 *   [interleave]               with [tools=…]: the calls' argument deltas alternate
 *   [same-index]               with [tools=…]: every call at index 0, told apart by id
 *   [fail=STATUS]              answer with an HTTP error and an OpenAI error body
 *   [fail-times=N]             with [fail=…]: only the first N requests with this prompt fail, each with
 *                              `retry-after: 0` (so that the retry follows at once)
 *   [cut]                      send two tokens, then destroy the connection (no [DONE])
 *   [stall]                    send one token, then nothing until the client goes away
 *   [think]                    first reason ("Let me ", "think.") as `reasoning_content` (DeepSeek, vLLM), then answer
 *   [think-ollama]             the same as `reasoning` (OpenRouter, Ollama)
 *   [think-cut]                reason ("Let me "), then destroy the connection
 *   [no-finish]                send two tokens and [DONE], but no finish_reason (an answer cut short)
 *   [too-long]                 400 context_length_exceeded, in OpenAI's words
 * When the last message is a tool result, it answers "Tool result received: <result>".
 * Asked to call `copilotkitSuggest` (`tool_choice` forcing it: CopilotKit's suggestions), it calls it with one
 * suggestion, titled "Say hi".
 */
export class FakeOpenAI {
  readonly requests: any[] = [];
  /** Requests whose client closed the connection before the answer was complete. */
  abortedRequests = 0;
  private server: Server;
  private completions = 0;
  /** Failures answered so far, by prompt ([fail-times]). */
  private readonly failures = new Map<string, number>();
  private closedWaiters: (() => void)[] = [];

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
  }

  async start(): Promise<string> {
    return `${await listen(this.server)}/v1`;
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  /** Resolves when a client has closed an unfinished answer. */
  waitForAbort(): Promise<void> {
    if (this.abortedRequests > 0) return Promise.resolve();
    return new Promise((resolve) => this.closedWaiters.push(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method === 'POST' && req.url === '/v1/responses') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      this.requests.push(body);
      return this.responses(body, res);
    }
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    this.requests.push(body);
    const id = `chatcmpl-fake${++this.completions}`;
    const messages: any[] = body.messages;
    const last = messages[messages.length - 1];
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    const prompt: string = typeof lastUser?.content === 'string' ? lastUser.content : '';
    const forcedSuggest = body.tool_choice?.function?.name === 'copilotkitSuggest';
    const directive = (name: string) =>
      forcedSuggest && name === 'tool'
        ? 'copilotkitSuggest'
        : forcedSuggest && name === 'toolargs'
          ? JSON.stringify({ suggestions: [{ title: 'Say hi', message: 'Hi there!' }] })
          : prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const delay = Number(directive('delay') ?? 0);

    if (prompt.includes('[too-long]')) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            message:
              "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        }),
      );
      return;
    }
    const fail = directive('fail');
    const failures = this.failures.get(prompt) ?? 0;
    const failTimes = directive('fail-times');
    if (fail && last.role !== 'tool' && failures < Number(failTimes ?? Infinity)) {
      this.failures.set(prompt, failures + 1);
      res.writeHead(Number(fail), { 'content-type': 'application/json', ...(failTimes ? { 'retry-after': '0' } : {}) });
      res.end(
        JSON.stringify({
          error: { message: `fake failure ${fail}`, type: 'invalid_request_error', param: null, code: null },
        }),
      );
      return;
    }

    let finished = false;
    res.on('close', () => {
      if (!finished) {
        this.abortedRequests++;
        this.closedWaiters.splice(0).forEach((resolve) => resolve());
      }
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const created = Math.floor(Date.now() / 1000);
    const send = async (delta: Record<string, unknown>, finishReason: string | null = null) => {
      if (res.destroyed) throw new Error('client went away');
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        system_fingerprint: 'fp_fake',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    };

    try {
      await send({ role: 'assistant', content: '' });
      for (const [directiveName, field] of [
        ['[think]', 'reasoning_content'],
        ['[think-ollama]', 'reasoning'],
      ]) {
        if (prompt.includes(directiveName))
          for (const piece of ['Let me ', 'think.']) await send({ content: null, [field]: piece });
      }
      if (prompt.includes('[think-cut]')) {
        await send({ content: null, reasoning_content: 'Let me ' });
        finished = true; // the fake ends it; not a client abort
        await new Promise((resolve) => setTimeout(resolve, 50));
        res.destroy();
        return;
      }
      if (last.role === 'tool') {
        await send({ content: `Tool result received: ${last.content}` });
        await send({}, 'stop');
      } else if (prompt.includes('[stall]')) {
        await send({ content: 'tok0 ' });
        return; // keep the connection open: the gateway's idle timeout or the client must end it
      } else if (prompt.includes('[no-finish]')) {
        await send({ content: 'tok0 ' });
        await send({ content: 'tok1 ' });
      } else if (prompt.includes('[cut]')) {
        await send({ content: 'tok0 ' });
        await send({ content: 'tok1 ' });
        finished = true; // the fake ends it; not a client abort
        // Let the tokens reach the client before the connection breaks.
        await new Promise((resolve) => setTimeout(resolve, 50));
        res.destroy();
        return;
      } else if (directive('tool') || directive('tools')) {
        if (prompt.includes('[text-then-tool]')) await send({ content: 'Let me do that. ' });
        const names = directive('tools')?.split(',') ?? [directive('tool')!];
        if (prompt.includes('[same-index]')) {
          // Parallel calls all at index 0, told apart only by their ids (some compatible servers do this).
          for (const [n, name] of names.entries()) {
            await send({
              tool_calls: [{ index: 0, id: `call_${id}_${n}`, type: 'function', function: { name, arguments: '' } }],
            });
            await send({ tool_calls: [{ index: 0, function: { arguments: `{"n":${n}}` } }] });
          }
          await send({}, 'tool_calls');
          res.write('data: [DONE]\n\n');
          finished = true;
          res.end();
          return;
        }
        if (prompt.includes('[interleave]')) {
          // Parallel calls whose deltas alternate, as some OpenAI-compatible servers send them.
          for (const [index, name] of names.entries()) {
            await send({
              tool_calls: [{ index, id: `call_${id}_${index}`, type: 'function', function: { name, arguments: '' } }],
            });
          }
          for (const part of ['{"n":', '1}']) {
            for (const index of names.keys()) await send({ tool_calls: [{ index, function: { arguments: part } }] });
          }
          await send({}, 'tool_calls');
          res.write('data: [DONE]\n\n');
          finished = true;
          res.end();
          return;
        }
        for (const [index, name] of names.entries()) {
          const args = directive('toolargs') ?? '{}';
          const callId = `call_${id}_${index}`;
          await send({ tool_calls: [{ index, id: callId, type: 'function', function: { name, arguments: '' } }] });
          for (const part of args.match(/.{1,5}/gs) ?? []) {
            await send({ tool_calls: [{ index, function: { arguments: part } }] });
          }
        }
        await send({}, 'tool_calls');
      } else {
        const count = directive('tokens');
        const tokens = count
          ? Array.from({ length: Number(count) }, (_, i) => `tok${i} `)
          : ['Hello ', 'from ', 'the ', 'fake ', 'model.'];
        for (const token of tokens) await send({ content: token });
        await send({}, 'stop');
      }
      if (body.stream_options?.include_usage) {
        // As OpenAI sends it when asked: a last chunk with no choices, the call's usage.
        const usage = {
          prompt_tokens: 11,
          completion_tokens: 7,
          total_tokens: 18,
          prompt_tokens_details: { cached_tokens: 3 },
          completion_tokens_details: { reasoning_tokens: 2 },
        };
        const chunk = { id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      res.write('data: [DONE]\n\n');
      finished = true;
      res.end();
    } catch {
      // The client went away mid-answer; 'close' has counted it.
    }
  }

  /**
   * The Responses API (`POST /v1/responses`, `stream: true`): named events `response.created`,
   * `response.output_item.added`, `response.output_text.delta`, `response.function_call_arguments.delta`,
   * `response.output_item.done`, `response.completed`, and reasoning summaries with [reasoning]; the same
   * directives as Chat Completions ([no-finish]: no `response.completed`), and [odd=KIND]: one token, then an event
   * the API never sends (KIND text: a delta that is a number; reasoning: a reasoning delta that is an object; args: a
   * call's arguments delta that is a number; null: `data: null`; item: output_item.added without its item), then
   * `response.completed`. When the last input item is a
   * `function_call_output`, it answers "Tool result received: <output>".
   */
  private async responses(body: any, res: ServerResponse): Promise<void> {
    const input: any[] = body.input ?? [];
    const last = input[input.length - 1];
    const lastUser = [...input].reverse().find((item) => item.role === 'user');
    const prompt: string = typeof lastUser?.content === 'string' ? lastUser.content : '';
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const delay = Number(directive('delay') ?? 0);
    if (prompt.includes('[too-long]')) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
            type: 'invalid_request_error',
            param: 'input',
            code: 'context_length_exceeded',
          },
        }),
      );
      return;
    }
    const fail = directive('fail');
    if (fail && last?.type !== 'function_call_output') {
      res.writeHead(Number(fail), { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: `fake failure ${fail}`, type: 'invalid_request_error', param: null, code: null },
        }),
      );
      return;
    }
    let finished = false;
    res.on('close', () => {
      if (!finished) {
        this.abortedRequests++;
        this.closedWaiters.splice(0).forEach((resolve) => resolve());
      }
    });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const responseId = `resp_fake${++this.completions}`;
    let sequence = 0;
    const send = async (type: string, data: Record<string, unknown>) => {
      if (res.destroyed) throw new Error('client went away');
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    };
    const response = (status: string) => ({
      id: responseId,
      object: 'response',
      status,
      model: body.model,
      output: [],
      // The Responses API reports usage on its completed response.
      ...(status === 'completed'
        ? {
            usage: {
              input_tokens: 21,
              input_tokens_details: { cached_tokens: 0 },
              output_tokens: 9,
              output_tokens_details: { reasoning_tokens: 4 },
              total_tokens: 30,
            },
          }
        : {}),
    });
    let index = 0;
    const message = async (tokens: string[]) => {
      const id = `msg_${responseId}_${index}`;
      await send('response.output_item.added', {
        output_index: index,
        item: { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] },
      });
      await send('response.content_part.added', {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const token of tokens)
        await send('response.output_text.delta', {
          item_id: id,
          output_index: index,
          content_index: 0,
          delta: token,
          logprobs: [],
        });
      await send('response.output_text.done', {
        item_id: id,
        output_index: index,
        content_index: 0,
        text: tokens.join(''),
        logprobs: [],
      });
      await send('response.output_item.done', {
        output_index: index,
        item: {
          id,
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: tokens.join(''), annotations: [] }],
        },
      });
      index++;
    };
    const complete = async () => {
      await send('response.completed', { response: response('completed') });
      finished = true;
      res.end();
    };
    try {
      await send('response.created', { response: response('in_progress') });
      await send('response.in_progress', { response: response('in_progress') });
      if (last?.type === 'function_call_output') {
        await message([`Tool result received: ${last.output}`]);
        return await complete();
      }
      if (prompt.includes('[reasoning]')) {
        const id = `rs_${responseId}`;
        await send('response.output_item.added', { output_index: index, item: { id, type: 'reasoning', summary: [] } });
        await send('response.reasoning_summary_text.delta', {
          item_id: id,
          output_index: index,
          summary_index: 0,
          delta: 'Thinking it over.',
        });
        await send('response.output_item.done', {
          output_index: index,
          item: { id, type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thinking it over.' }] },
        });
        index++;
      }
      if (prompt.includes('[stall]')) {
        const id = `msg_${responseId}_0`;
        await send('response.output_item.added', {
          output_index: 0,
          item: { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] },
        });
        await send('response.output_text.delta', {
          item_id: id,
          output_index: 0,
          content_index: 0,
          delta: 'tok0 ',
          logprobs: [],
        });
        return;
      }
      if (prompt.includes('[no-finish]')) {
        await message(['tok0 ', 'tok1 ']);
        finished = true;
        res.end();
        return;
      }
      const odd = directive('odd');
      if (odd) {
        // One good token, then an event of a shape the Responses API never sends, then a complete end.
        const id = `msg_${responseId}_0`;
        await send('response.output_item.added', {
          output_index: 0,
          item: { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] },
        });
        await send('response.output_text.delta', { item_id: id, output_index: 0, content_index: 0, delta: 'tok0 ' });
        if (odd === 'null') res.write('data: null\n\n');
        else if (odd === 'item') await send('response.output_item.added', { output_index: 1 });
        else if (odd === 'text')
          await send('response.output_text.delta', { item_id: id, output_index: 0, content_index: 0, delta: 42 });
        else if (odd === 'reasoning')
          await send('response.reasoning_text.delta', { item_id: 'rs', output_index: 1, content_index: 0, delta: {} });
        else if (odd === 'args') {
          const call = `fc_${responseId}_0`;
          await send('response.output_item.added', {
            output_index: 1,
            item: { id: call, type: 'function_call', status: 'in_progress', call_id: 'c', name: 'x', arguments: '' },
          });
          await send('response.function_call_arguments.delta', { item_id: call, output_index: 1, delta: 7 });
        }
        return await complete();
      }
      const names = directive('tools')?.split(',') ?? (directive('tool') ? [directive('tool')!] : []);
      if (names.length) {
        if (prompt.includes('[text-then-tool]')) await message(['Let me do that. ']);
        for (const [n, name] of names.entries()) {
          const args = names.length === 1 ? (directive('toolargs') ?? '{}') : '{}';
          const id = `fc_${responseId}_${n}`;
          const callId = `call_${responseId}_${n}`;
          await send('response.output_item.added', {
            output_index: index,
            item: { id, type: 'function_call', status: 'in_progress', call_id: callId, name, arguments: '' },
          });
          for (const part of args.match(/.{1,5}/gs) ?? [])
            await send('response.function_call_arguments.delta', { item_id: id, output_index: index, delta: part });
          await send('response.function_call_arguments.done', { item_id: id, output_index: index, arguments: args });
          await send('response.output_item.done', {
            output_index: index,
            item: { id, type: 'function_call', status: 'completed', call_id: callId, name, arguments: args },
          });
          index++;
        }
        return await complete();
      }
      const count = directive('tokens');
      await message(
        count
          ? Array.from({ length: Number(count) }, (_, i) => `tok${i} `)
          : ['Hello ', 'from ', 'the ', 'fake ', 'model.'],
      );
      await complete();
    } catch {
      // The client went away mid-answer; 'close' has counted it.
    }
  }
}
