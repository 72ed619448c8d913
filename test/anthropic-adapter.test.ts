import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ModelRequest } from '../src/adapters/adapter.js';
import { AnthropicAdapter } from '../src/adapters/anthropic.js';
import { toAnthropicMessages, toAnthropicToolChoice } from '../src/adapters/anthropic-messages.js';
import type { ServerAction } from '../src/actions/server-action.js';
import type { Message } from '../src/core/messages.js';
import { FakeAnthropic } from './support/fake-anthropic.js';
import { errorAndCause, recordingOutput, rejection } from './support/model-output.js';
import { eventually, gatewaysPerTest, runInput, silentLogger, userMessage } from './support/harness.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// The Anthropic adapter: its conversion of every message kind, and its stream against a fake
// Messages API that speaks the real event format (test/support/fake-anthropic.ts).

const fake = new FakeAnthropic();
let baseURL: string;
beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(() => fake.stop());

const adapters: AnthropicAdapter[] = [];
afterEach(async () => {
  for (const adapter of adapters.splice(0)) await adapter.close();
});
function adapter(options: ConstructorParameters<typeof AnthropicAdapter>[0] = {}): AnthropicAdapter {
  const created = new AnthropicAdapter({ baseURL, apiKey: 'sk-ant-test', maxRetries: 0, ...options });
  adapters.push(created);
  return created;
}

function request(prompt: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    threadId: 't',
    runId: 'r',
    messages: [{ kind: 'text', id: 'u1', role: 'user', content: prompt }],
    tools: [],
    forwardedParameters: {},
    logger: silentLogger,
    ...extra,
  };
}

describe('the conversation in the Messages API’s shape', () => {
  it('puts system and developer messages in the system prompt and merges turns of one role', () => {
    const messages: Message[] = [
      { kind: 'text', id: 's', role: 'system', content: 'Be brief.' },
      { kind: 'text', id: 'u1', role: 'user', content: 'hi' },
      { kind: 'text', id: 'd', role: 'developer', content: 'Answer in French.' },
      { kind: 'text', id: 'u2', role: 'user', content: 'again' },
      { kind: 'text', id: 'a0', role: 'assistant', content: '' },
      { kind: 'image', id: 'i', role: 'user', format: 'jpg', bytes: 'AAAA' },
    ];
    expect(toAnthropicMessages(messages)).toEqual({
      system: 'Be brief.\n\nAnswer in French.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'hi' },
            { type: 'text', text: 'again' },
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAAA' } },
          ],
        },
      ],
    });
  });

  it('puts the calls of one assistant message in one turn and their results first in the next', () => {
    const messages: Message[] = [
      { kind: 'text', id: 'u1', role: 'user', content: 'weather in Paris and Rome?' },
      { kind: 'text', id: 'a1', role: 'assistant', content: 'Checking.' },
      { kind: 'actionExecution', id: 'c1', name: 'weather', arguments: '{"city":"Paris"}', parentMessageId: 'a1' },
      { kind: 'result', id: 'r1', actionExecutionId: 'c1', actionName: 'weather', result: 'sunny' },
      { kind: 'actionExecution', id: 'c2', name: 'weather', arguments: 'not json', parentMessageId: 'a1' },
      { kind: 'result', id: 'r2', actionExecutionId: 'c2', actionName: 'weather', result: 'rain' },
      { kind: 'text', id: 'u2', role: 'user', content: 'thanks' },
      {
        kind: 'agentState',
        id: 'st',
        threadId: 't',
        agentName: 'a',
        nodeName: 'n',
        runId: 'r',
        active: false,
        running: false,
        role: 'assistant',
        state: '{}',
      },
    ];
    expect(toAnthropicMessages(messages).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'c1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'c2', name: 'weather', input: { input: 'not json' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'c1', content: 'sunny' },
          { type: 'tool_result', tool_use_id: 'c2', content: 'rain' },
          { type: 'text', text: 'thanks' },
        ],
      },
    ]);
  });

  it('maps the tool choice', () => {
    expect(toAnthropicToolChoice({ toolChoice: 'required' })).toEqual({ type: 'any' });
    expect(toAnthropicToolChoice({ toolChoice: 'function', toolChoiceFunctionName: 'go' })).toEqual({
      type: 'tool',
      name: 'go',
    });
    expect(toAnthropicToolChoice({ toolChoice: 'none' })).toEqual({ type: 'none' });
    expect(toAnthropicToolChoice({})).toBeUndefined();
  });
});

describe('AnthropicAdapter (Messages API streaming on the official SDK)', () => {
  it('sends the key, the API version, the system prompt, tools and parameters, and streams text', async () => {
    const output = recordingOutput();
    const before = fake.requests.length;
    await adapter({ model: 'claude-test', maxTokens: 1000, defaultHeaders: { 'x-proxy-route': 'eu' } }).stream(
      request('hi [tokens=3]', {
        messages: [
          { kind: 'text', id: 's', role: 'system', content: 'Be brief.' },
          { kind: 'text', id: 'u1', role: 'user', content: 'hi [tokens=3]' },
        ],
        tools: [{ name: 'lookup', description: 'Looks up.', parameters: { properties: { q: { type: 'string' } } } }],
        forwardedParameters: { temperature: 0.3, stop: ['END'], toolChoice: 'auto' },
      }),
      output,
      new AbortController().signal,
    );
    const { body, headers } = fake.requests[before];
    // The SDK decides how the key travels (this version: a bearer token).
    expect(headers['x-api-key'] ?? headers.authorization).toMatch(/^(Bearer )?sk-ant-test$/);
    expect(headers['anthropic-version']).toBeDefined();
    expect(headers['x-proxy-route']).toBe('eu');
    expect(body).toMatchObject({
      model: 'claude-test',
      max_tokens: 1000,
      stream: true,
      system: 'Be brief.',
      temperature: 0.3,
      stop_sequences: ['END'],
      tool_choice: { type: 'auto' },
      tools: [
        {
          name: 'lookup',
          description: 'Looks up.',
          input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi [tokens=3]' }] }],
    });
    expect(output.log).toEqual([
      `start msg_fake${fake.requests.length}`,
      'text m1 tok0 ',
      'text m1 tok1 ',
      'text m1 tok2 ',
      'end m1',
      // message_start's input count and message_delta's output count.
      'usage {"provider":"anthropic","model":"claude-test","inputTokens":20,"outputTokens":12,"totalTokens":32}',
    ]);
  });

  it('sends a request’s own model and maxTokens', async () => {
    const before = fake.requests.length;
    await adapter().stream(
      request('hi', { forwardedParameters: { model: 'claude-other', maxTokens: 12 } }),
      recordingOutput(),
      new AbortController().signal,
    );
    expect(fake.requests[before].body).toMatchObject({ model: 'claude-other', max_tokens: 12 });
  });

  it('streams tool calls with their input, after the text before them, and thinking as reasoning first', async () => {
    const output = recordingOutput();
    await adapter().stream(
      request('[thinking] [text-then-tool] [tool=lookup] [toolargs={"q":"paris"}]'),
      output,
      new AbortController().signal,
    );
    const n = fake.requests.length;
    expect(output.log.slice(0, 3)).toEqual(['think undefined', 'thought r1 Let me think about this.', 'thinkend r1']);
    expect(output.log[3]).toBe(`start msg_fake${n}`);
    expect(output.log).toContain('text m2 Let me do that. ');
    expect(output.log).toContain(`call toolu_msg_fake${n}_0 lookup msg_fake${n}`);
    const args = output.log
      .filter((line) => line.startsWith('args c3 '))
      .map((line) => line.slice('args c3 '.length))
      .join('');
    expect(JSON.parse(args)).toEqual({ q: 'paris' });
    expect(output.log.indexOf('end m2')).toBeLessThan(
      output.log.indexOf(`call toolu_msg_fake${n}_0 lookup msg_fake${n}`),
    );
    expect(output.log.at(-2)).toBe('callend c3');
    expect(output.log.at(-1)).toMatch(/^usage \{"provider":"anthropic"/);
  });

  it.each([
    [
      '[fail=401]',
      'UPSTREAM_AUTHENTICATION_FAILED',
      /refused the credentials \(HTTP 401\)\. Check ANTHROPIC_API_KEY\./,
    ],
    [
      '[fail=404]',
      'UPSTREAM_REJECTED',
      /rejected the request \(HTTP 404\): fake failure 404 Check the model name \(ANTHROPIC_MODEL\)\./,
    ],
    ['[fail=400]', 'UPSTREAM_REJECTED', /rejected the request \(HTTP 400\): fake failure 400/],
    ['[fail=429]', 'UPSTREAM_RATE_LIMITED', /rate limit was reached \(HTTP 429\)/],
    ['[fail=529]', 'UPSTREAM_UNAVAILABLE', /failed \(HTTP 529\)\.$/],
    ['[overloaded]', 'UPSTREAM_UNAVAILABLE', /reported an error in the middle of its answer/],
    ['[cut]', 'UPSTREAM_STREAM_INTERRUPTED', /broke off in the middle of its answer/],
    ['[no-stop]', 'UPSTREAM_STREAM_INTERRUPTED', /ended its stream before the answer was complete/],
  ])('fails %s with %s and a message that says what to check', async (prompt, code, message) => {
    const error = await rejection(adapter().stream(request(prompt), recordingOutput(), new AbortController().signal));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(/127\.0\.0\.1/);
    if (prompt === '[fail=429]') expect(error.details).toMatchObject({ upstreamStatus: 429, retryAfterSeconds: 7 });
  });

  it('reports each retry the SDK makes, with why the attempt before failed, and streams the answer that follows', async () => {
    const retries: [string, string][] = [];
    const onRetry = (who: string, reason: string) => void retries.push([who, reason]);
    const output = recordingOutput();
    const prompt = `[fail=529][fail-times=2][retry-after-ms=1][tokens=2] ${Math.random()}`;
    await adapter({ maxRetries: 2 }).stream(request(prompt, { onRetry }), output, new AbortController().signal);
    expect(retries).toEqual([
      ['the model provider (Anthropic)', 'HTTP 529'],
      ['the model provider (Anthropic)', 'HTTP 529'],
    ]);
    expect(output.log.filter((line) => line.startsWith('text')).join('|')).toBe('text m1 tok0 |text m1 tok1 ');

    // A server that cannot be reached: each retry says so.
    retries.length = 0;
    const unreachable = new AnthropicAdapter({ baseURL: 'http://127.0.0.1:9', apiKey: 'k', maxRetries: 1 });
    adapters.push(unreachable);
    const error = await rejection(
      unreachable.stream(request('hi', { onRetry }), recordingOutput(), new AbortController().signal),
    );
    expect(error.code).toBe('UPSTREAM_UNREACHABLE');
    expect(retries).toEqual([['the model provider (Anthropic)', 'UPSTREAM_UNREACHABLE']]);
  });

  it('tries a call the provider refuses (HTTP 400) once, retries allowed: one request, no retry reported', async () => {
    const retries: string[] = [];
    const before = fake.requests.length;
    const error = await rejection(
      adapter({ maxRetries: 2 }).stream(
        request(`[fail=400] ${Math.random()}`, { onRetry: (_who, reason) => void retries.push(reason) }),
        recordingOutput(),
        new AbortController().signal,
      ),
    );
    expect(error.code).toBe('UPSTREAM_REJECTED');
    expect(fake.requests.length - before).toBe(1);
    expect(retries).toEqual([]);
  });

  it.each(['[fail=400] [echo-key]', '[fail=401] [echo-key]', '[fail=529] [echo-key]'])(
    'keeps the key out of the error and its logged cause when the provider repeats it: %s',
    async (prompt) => {
      const key = 'key-echoed-by-the-provider-0123';
      const error = await rejection(
        adapter({ apiKey: key }).stream(request(prompt), recordingOutput(), new AbortController().signal),
      );
      expect(error.code).toMatch(/^UPSTREAM_/);
      // The explanation is there (a 4xx's is shown), with the key taken out.
      expect(errorAndCause(error)).toMatch(/for key (Bearer )?\[redacted\]/);
      expect(errorAndCause(error)).not.toContain(key);
    },
  );

  it('says which variable to check when the server cannot be reached', async () => {
    const error = await rejection(
      new AnthropicAdapter({ baseURL: 'http://127.0.0.1:9', apiKey: 'k', maxRetries: 0 }).stream(
        request('hi'),
        recordingOutput(),
        new AbortController().signal,
      ),
    );
    expect(error.code).toBe('UPSTREAM_UNREACHABLE');
    expect(error.message).toMatch(/Check ANTHROPIC_BASE_URL/);
  });

  it('stops the stream and rejects with the abort reason when aborted', async () => {
    const controller = new AbortController();
    const before = fake.abortedRequests;
    const output = recordingOutput();
    const streaming = adapter().stream(
      request('[stall]'),
      { ...output, textContent: (id, text) => (output.textContent(id, text), controller.abort(new Error('gone'))) },
      controller.signal,
    );
    expect((await rejection(streaming)).message).toBe('gone');
    await eventually(() => fake.abortedRequests > before, 'the upstream request to be closed', 500);
    expect(fake.abortedRequests).toBe(before + 1);
  });

  it('sends no credentials to a proxy configured without a key', async () => {
    const before = fake.requests.length;
    const keyless = new AnthropicAdapter({ baseURL, maxRetries: 0 });
    adapters.push(keyless);
    await keyless.stream(request('hi'), recordingOutput(), new AbortController().signal);
    expect(fake.requests[before].headers.authorization).toBeUndefined();
    expect(fake.requests[before].headers['x-api-key']).toBeUndefined();
  });

  it('refuses options it cannot use', () => {
    expect(() => new AnthropicAdapter({})).toThrow(/needs an apiKey/);
    expect(() => new AnthropicAdapter({ apiKey: 'k', maxTokens: 0 })).toThrow(/maxTokens must be a whole number/);
  });
});

describe('through the gateway', () => {
  const { start } = gatewaysPerTest();
  const greet: ServerAction<{ name: string }> = {
    name: 'greet',
    description: 'Greets someone.',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    handler: ({ name }) => `Hello, ${name}!`,
  };

  for (const transport of TRANSPORTS) {
    it(`continues after a server-side action with the tool_use and its tool_result (${transport.name})`, async () => {
      const gateway = await start({ adapter: adapter(), actions: [greet] });
      const before = fake.requests.length;
      const outcome = await transport.run(gateway, runInput([userMessage('[tool=greet] [toolargs={"name":"Ann"}]')]));
      expect(outcome.status.code).toBe('Success');
      expect(textOf(outcome)).toBe('Tool result received: Hello, Ann!');
      const second = fake.requests[before + 1].body.messages;
      expect(second[1]).toEqual({
        role: 'assistant',
        content: [{ type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'greet', input: { name: 'Ann' } }],
      });
      expect(second[2]).toEqual({
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: second[1].content[0].id, content: 'Hello, Ann!' }],
      });
    });
  }

  it('sends a history of parallel calls, their results and whitespace the API would refuse, in a shape the API accepts', async () => {
    const gateway = await start({ adapter: adapter() });
    const at = new Date().toISOString();
    const before = fake.requests.length;
    const outcome = await TRANSPORTS[2].run(
      gateway,
      runInput([
        { id: 's', createdAt: at, textMessage: { role: 'system', content: 'Be brief.' } },
        userMessage('weather in Paris and Rome?', 'u1'),
        { id: 'a1', createdAt: at, textMessage: { role: 'assistant', content: 'Checking.' } },
        {
          id: 'c1',
          createdAt: at,
          actionExecutionMessage: { name: 'weather', arguments: '{"city":"Paris"}', parentMessageId: 'a1' },
        },
        {
          id: 'c2',
          createdAt: at,
          actionExecutionMessage: { name: 'weather', arguments: '{"city":"Rome"}', parentMessageId: 'a1' },
        },
        { id: 'r1', createdAt: at, resultMessage: { actionExecutionId: 'c1', actionName: 'weather', result: 'sunny' } },
        { id: 'r2', createdAt: at, resultMessage: { actionExecutionId: 'c2', actionName: 'weather', result: 'rain' } },
        { id: 'a2', createdAt: at, textMessage: { role: 'assistant', content: '   ' } },
        userMessage('thanks [tokens=1]', 'u2'),
      ]),
    );
    // The fake answers 400 for anything the real API refuses (alternation, tool_result placement, empty text).
    expect(outcome.status.code).toBe('Success');
    expect(fake.requests[before].body.messages.map((turn: any) => turn.role)).toEqual(['user', 'assistant', 'user']);
  });
});
