import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ModelAdapter } from '../src/adapters/adapter.js';
import { AnthropicAdapter } from '../src/adapters/anthropic.js';
import { GoogleAdapter } from '../src/adapters/google.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { SequencedEvent } from '../src/core/events.js';
import { eventBytes } from '../src/core/event-bytes.js';
import { EventSizeGuard, MAX_UNBROKEN_CHARS } from '../src/upstream/stream-limits.js';
import { FakeAnthropic } from './support/fake-anthropic.js';
import { FakeGemini } from './support/fake-gemini.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { close, listen } from './support/loopback.js';
import { THREAD, gql, memoryStore } from './support/threads.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// Upstream answers of the wrong shape or size: a model's text that is not a string, an event that never ends. Each
// fails its run with UPSTREAM_BAD_RESPONSE (as Chat Completions' wrong shapes do, test/fuzz.test.ts) and leaves the
// gateway, and the threads it keeps, as they were.

const anthropic = new FakeAnthropic();
const gemini = new FakeGemini();
const openai = new FakeOpenAI();
const urls = { anthropic: '', gemini: '', openai: '' };
beforeAll(async () => {
  [urls.anthropic, urls.gemini, urls.openai] = await Promise.all([anthropic.start(), gemini.start(), openai.start()]);
});
afterAll(() => Promise.all([anthropic.stop(), gemini.stop(), openai.stop()]));
const { start } = gatewaysPerTest();
const transport = TRANSPORTS[2]; // graphql-ws (the outcome is the same over every transport)

const adapters: Record<string, () => ModelAdapter> = {
  anthropic: () => new AnthropicAdapter({ baseURL: urls.anthropic, apiKey: 'k', maxRetries: 0 }),
  gemini: () => new GoogleAdapter({ baseURL: urls.gemini, apiKey: 'k', maxRetries: 0 }),
  'OpenAI Responses': () =>
    new OpenAIAdapter({ baseURL: urls.openai, apiKey: 'k', maxRetries: 0, apiStyle: 'responses' }),
};

/** A run on its own thread; its outcome. */
function run(gateway: RunningGateway, prompt: string, threadId: string) {
  return transport.run(gateway, runInput([userMessage(prompt)], { threadId }));
}

async function storedThread(gateway: RunningGateway, threadId: string): Promise<any> {
  return (await gql(gateway.url, THREAD, { threadId })).data?.copilotThread;
}

/** Two threads stored, then `poisoned` on a third: its outcome, once both are checked to be still kept. */
async function afterTwoThreads(gateway: RunningGateway, poisoned: string) {
  const id = Math.random().toString(36).slice(2);
  for (const name of ['one', 'two']) {
    const outcome = await run(gateway, `hello ${name}`, `${name}-${id}`);
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).not.toBe('');
  }
  const outcome = await run(gateway, poisoned, `poisoned-${id}`);
  // A later run of any client: it is what makes the store enforce its bounds again.
  expect((await run(gateway, 'hello three', `three-${id}`)).status.code).toBe('Success');
  for (const name of ['one', 'two', 'three']) {
    const thread = await storedThread(gateway, `${name}-${id}`);
    expect(thread?.messages.length).toBeGreaterThanOrEqual(2);
  }
  return outcome;
}

describe('a model that streams text that is not a string', () => {
  const cases: [string, string, RegExp][] = [
    ['anthropic', '[odd=text]', /sent a text_delta\.text that is not a string \(number\)/],
    ['anthropic', '[odd=thinking]', /sent a thinking_delta\.thinking that is not a string \(object\)/],
    ['anthropic', '[odd=json]', /sent a input_json_delta\.partial_json that is not a string \(number\)/],
    ['gemini', '[odd=text]', /sent a parts\[\]\.text that is not a string \(number\)/],
    ['gemini', '[odd=thought]', /sent a parts\[\]\.text that is not a string \(object\)/],
    ['gemini', '[odd=args]', /sent a functionCall whose args are not an object \(string\)/],
    ['OpenAI Responses', '[odd=text]', /sent a response\.output_text\.delta delta that is not a string \(number\)/],
    [
      'OpenAI Responses',
      '[odd=reasoning]',
      /sent a response\.reasoning_text\.delta delta that is not a string \(object\)/,
    ],
    [
      'OpenAI Responses',
      '[odd=args]',
      /sent a response\.function_call_arguments\.delta delta that is not a string \(number\)/,
    ],
    ['OpenAI Responses', '[odd=null]', /sent an event that is not an object \(null\)/],
    ['OpenAI Responses', '[odd=item]', /sent a response\.output_item\.added event without an item object/],
  ];
  it.each(cases)(
    '%s %s: the run fails with UPSTREAM_BAD_RESPONSE naming the field, and every other thread is kept',
    async (provider, prompt, message) => {
      const gateway = await start({ adapter: adapters[provider]() });
      const outcome = await afterTwoThreads(gateway, prompt);
      expect(outcome.status.code).toBe('Failed');
      expect(outcome.status.details).toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
      expect(outcome.status.details.description).toMatch(message);
    },
  );
});

describe('an adapter (plain JavaScript) that writes text that is not a string', () => {
  const writes: [string, (output: Parameters<ModelAdapter['stream']>[1]) => void][] = [
    ['textContent', (output) => output.textContent(output.textStart(), 42 as never)],
    ['reasoningContent', (output) => output.reasoningContent(output.reasoningStart(), { a: 1 } as never)],
    ['actionArgs', (output) => output.actionArgs(output.actionStart(null, 'lookup'), 7 as never)],
    ['actionStart', (output) => output.actionStart(null, null as never)],
  ];
  it.each(writes)(
    '%s: every other thread is kept (the store counts what it keeps, whatever its type)',
    async (_method, write) => {
      const adapter: ModelAdapter = {
        name: 'plain-js',
        async stream(request, output) {
          const prompt = request.messages.at(-1);
          if (prompt?.kind === 'text' && prompt.content === 'poison') return write(output);
          const id = output.textStart();
          output.textContent(id, 'fine');
          output.textEnd(id);
        },
      };
      const gateway = await start({ adapter });
      const outcome = await afterTwoThreads(gateway, 'poison');
      // What the client gets is GraphQL's to say (String takes a number as its text, refuses an object: the
      // executor's containment, test/executor-containment.test.ts); the store's count stays a number.
      expect(outcome.status).toBeDefined();
    },
  );
});

describe("the memory store's count of an event", () => {
  it('is a number whatever a field holds, so that its total is never NaN', async () => {
    const odd: unknown[] = [42, { a: 1 }, null, undefined, [1, 2], true];
    for (const value of odd) {
      const events = [
        { type: 'TextMessageContent', messageId: 'm', content: value },
        { type: 'ReasoningContent', messageId: 'm', content: value },
        { type: 'ActionExecutionArgs', actionExecutionId: 'c', args: value },
        { type: 'ActionExecutionResult', messageId: 'r', actionExecutionId: 'c', actionName: 'a', result: value },
        { type: 'AgentStateMessage', messageId: 's', state: value },
        { type: 'MetaEvent', event: { name: 'LangGraphInterruptEvent', value } },
      ];
      for (const event of events) expect(Number.isFinite(eventBytes({ ...event, sequence: 1 } as never))).toBe(true);
    }
    // A store given such an event directly keeps a finite total, and the threads it had.
    const store = memoryStore({ maxBytes: 10_000_000 });
    for (const threadId of ['a', 'b', 'c']) {
      const claim = await store.claim(threadId, `run-${threadId}`, `fresh-${threadId}`);
      const log = store.open(threadId, claim.runId, { messages: [], newMessages: [] });
      const content = threadId === 'c' ? 42 : 'text';
      const events = [
        { type: 'RunStarted', threadId, runId: claim.runId },
        { type: 'TextMessageStart', messageId: 'm', parentMessageId: null, role: 'assistant' },
        { type: 'TextMessageContent', messageId: 'm', content },
      ];
      events.forEach((event, sequence) => log.append({ ...event, sequence } as unknown as SequencedEvent));
    }
    expect(Number.isFinite(store.size.bytes)).toBe(true);
    expect(store.size.threads).toBe(3);
    await store.close();
  });
});

describe('a model stream that never ends its line', () => {
  // A raw model that answers `[huge]` with "data: " and then more than 16 MiB without a newline (and never ends the
  // answer), and anything else with a short well-formed answer in its API's format.
  const CHUNK = Buffer.alloc(1024 * 1024, 'x');
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (!body.includes('[huge]')) return res.end(wellFormed(req.url ?? ''));
      res.write(req.url?.startsWith('/v1/messages') ? 'event: content_block_delta\ndata: ' : 'data: ');
      let written = 0;
      const more = () => {
        // Past the limit by 2 MiB, then nothing more: the gateway must end it.
        while (written < MAX_UNBROKEN_CHARS + 2 * CHUNK.length && !res.destroyed) {
          written += CHUNK.length;
          if (!res.write(CHUNK)) return void res.once('drain', more);
        }
      };
      more();
    });
  });
  let origin = '';
  beforeAll(async () => {
    origin = await listen(server);
  });
  afterAll(() => close(server));

  const providers: [string, () => ModelAdapter][] = [
    ['OpenAI Chat Completions', () => new OpenAIAdapter({ baseURL: `${origin}/v1`, apiKey: 'k', maxRetries: 0 })],
    [
      'OpenAI Responses',
      () => new OpenAIAdapter({ baseURL: `${origin}/v1`, apiKey: 'k', maxRetries: 0, apiStyle: 'responses' }),
    ],
    ['Anthropic', () => new AnthropicAdapter({ baseURL: origin, apiKey: 'k', maxRetries: 0 })],
    ['Gemini', () => new GoogleAdapter({ baseURL: origin, apiKey: 'k', maxRetries: 0 })],
  ];
  it.each(providers)(
    '%s: the run fails with UPSTREAM_BAD_RESPONSE naming the limit, and the gateway keeps answering',
    async (_name, adapter) => {
      const gateway = await start({ adapter: adapter() });
      const outcome = await run(gateway, '[huge]', `huge-${Math.random()}`);
      expect(outcome.status.code).toBe('Failed');
      expect(outcome.status.details).toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
      expect(outcome.status.details.description).toMatch(/longer than 16777216 characters \(the limit is 16 MiB\)/);
      const after = await run(gateway, 'hello', `after-${Math.random()}`);
      expect(after.status.code).toBe('Success');
      expect(textOf(after)).toBe('fine');
    },
    60_000,
  );
});

describe('the event size guard (the SDKs’ and @ag-ui/client’s event streams)', () => {
  it('counts the bytes since the last blank line, with LF, CR and CRLF line ends split anywhere', () => {
    const fed = (guard: EventSizeGuard, text: string) => {
      for (const char of text) guard.check(Buffer.from(char));
    };
    for (const end of ['\n', '\r', '\r\n']) {
      const guard = new EventSizeGuard('the upstream', 10);
      // Events of 9 characters (their lines' ends not counted), one after another: never over.
      for (let i = 0; i < 5; i++) fed(guard, `data: abc${end}${end}`);
      // One event of many short lines: over once its lines add up to more than 10.
      expect(() => fed(guard, `data: a${end}data: b${end}`)).toThrow(
        /The upstream sent an event longer than 10 characters/,
      );
    }
    const line = new EventSizeGuard('the upstream', 10);
    expect(() => line.check(Buffer.alloc(11, 'x'))).toThrow(
      expect.objectContaining({ code: 'UPSTREAM_BAD_RESPONSE' }) as never,
    );
  });
});

/** A short well-formed streamed answer, "fine", in the format of the route asked. */
function wellFormed(url: string): string {
  // Named events where the API names them (the Anthropic SDK reads the name).
  const sse = (events: Record<string, unknown>[], named = false) =>
    events
      .map((event) => `${named ? `event: ${String(event.type)}\n` : ''}data: ${JSON.stringify(event)}\n\n`)
      .join('');
  if (url.startsWith('/v1/chat/completions')) {
    return (
      sse([
        { id: 'c', choices: [{ index: 0, delta: { role: 'assistant', content: 'fine' }, finish_reason: null }] },
        { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      ]) + 'data: [DONE]\n\n'
    );
  }
  if (url.startsWith('/v1/responses')) {
    return sse([
      { type: 'response.output_text.delta', item_id: 'm', delta: 'fine' },
      { type: 'response.completed', response: {} },
    ]);
  }
  if (url.startsWith('/v1/messages')) {
    return sse(
      [
        { type: 'message_start', message: { id: 'm', model: 'x', usage: { input_tokens: 1, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'fine' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } },
        { type: 'message_stop' },
      ],
      true,
    );
  }
  return sse([{ candidates: [{ content: { role: 'model', parts: [{ text: 'fine' }] }, finishReason: 'STOP' }] }]);
}
