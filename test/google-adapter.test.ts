import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { ModelRequest } from '../src/adapters/adapter.js';
import { GoogleAdapter } from '../src/adapters/google.js';
import { toGeminiContents, toGeminiToolConfig } from '../src/adapters/google-messages.js';
import type { ServerAction } from '../src/actions/server-action.js';
import type { Message } from '../src/core/messages.js';
import { FakeGemini } from './support/fake-gemini.js';
import { errorAndCause, recordingOutput, rejection } from './support/model-output.js';
import { eventually, gatewaysPerTest, runInput, silentLogger, userMessage } from './support/harness.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// The Gemini adapter: its conversion of every message kind, and its stream against a fake Gemini
// API that speaks the real streaming format (test/support/fake-gemini.ts).

const fake = new FakeGemini();
let baseURL: string;
beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(() => fake.stop());

const adapters: GoogleAdapter[] = [];
afterEach(async () => {
  for (const adapter of adapters.splice(0)) await adapter.close();
});
function adapter(options: ConstructorParameters<typeof GoogleAdapter>[0] = {}): GoogleAdapter {
  const created = new GoogleAdapter({ baseURL, apiKey: 'g-test', maxRetries: 0, ...options });
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

describe('the conversation in Gemini’s shape', () => {
  it('puts system and developer messages in the system instruction, model turns as "model", images inline', () => {
    const messages: Message[] = [
      { kind: 'text', id: 's', role: 'system', content: 'Be brief.' },
      { kind: 'text', id: 'u1', role: 'user', content: 'hi' },
      { kind: 'image', id: 'i', role: 'user', format: 'png', bytes: 'AAAA' },
      { kind: 'text', id: 'd', role: 'developer', content: 'Answer in French.' },
      { kind: 'text', id: 'a1', role: 'assistant', content: 'Bonjour.' },
      { kind: 'text', id: 'a2', role: 'assistant', content: '' },
    ];
    expect(toGeminiContents(messages)).toEqual({
      systemInstruction: 'Be brief.\n\nAnswer in French.',
      contents: [
        { role: 'user', parts: [{ text: 'hi' }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }] },
        { role: 'model', parts: [{ text: 'Bonjour.' }] },
      ],
    });
  });

  it('puts the calls of one assistant message in one model content, with their signatures, and the results in the next', () => {
    const messages: Message[] = [
      { kind: 'text', id: 'u1', role: 'user', content: 'weather in Paris and Rome?' },
      { kind: 'actionExecution', id: 'c1', name: 'weather', arguments: '{"city":"Paris"}', parentMessageId: 'a1' },
      { kind: 'result', id: 'r1', actionExecutionId: 'c1', actionName: 'weather', result: 'sunny' },
      { kind: 'actionExecution', id: 'c2', name: 'weather', arguments: '', parentMessageId: 'a1' },
      { kind: 'result', id: 'r2', actionExecutionId: 'c2', actionName: 'weather', result: 'rain' },
    ];
    expect(toGeminiContents(messages, new Map([['c1', 'sig-1']])).contents).toEqual([
      { role: 'user', parts: [{ text: 'weather in Paris and Rome?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { id: 'c1', name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'sig-1' },
          // A call this process did not see Gemini make: the documented placeholder signature.
          {
            functionCall: { id: 'c2', name: 'weather', args: {} },
            thoughtSignature: 'skip_thought_signature_validator',
          },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'c1', name: 'weather', response: { result: 'sunny' } } },
          { functionResponse: { id: 'c2', name: 'weather', response: { result: 'rain' } } },
        ],
      },
    ]);
  });

  it('maps the tool choice', () => {
    expect(toGeminiToolConfig({ toolChoice: 'required' })).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(toGeminiToolConfig({ toolChoice: 'function', toolChoiceFunctionName: 'go' })).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['go'] },
    });
    expect(toGeminiToolConfig({ toolChoice: 'none' })).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(toGeminiToolConfig({})).toBeUndefined();
  });
});

describe('GoogleAdapter (Gemini API streaming on the official SDK)', () => {
  it('sends the key, the system instruction, functions and parameters, and streams text', async () => {
    const output = recordingOutput();
    const before = fake.requests.length;
    await adapter({ model: 'gemini-test', defaultHeaders: { 'x-proxy-route': 'eu' } }).stream(
      request('hi [tokens=3]', {
        messages: [
          { kind: 'text', id: 's', role: 'system', content: 'Be brief.' },
          { kind: 'text', id: 'u1', role: 'user', content: 'hi [tokens=3]' },
        ],
        tools: [{ name: 'lookup', description: 'Looks up.', parameters: { properties: { q: { type: 'string' } } } }],
        forwardedParameters: { temperature: 0.3, stop: ['END'], maxTokens: 99, toolChoice: 'auto' },
      }),
      output,
      new AbortController().signal,
    );
    const { url, body, headers } = fake.requests[before];
    expect(url).toBe('/v1beta/models/gemini-test:streamGenerateContent?alt=sse');
    expect(headers['x-goog-api-key']).toBe('g-test');
    expect(headers['x-proxy-route']).toBe('eu');
    expect(body).toMatchObject({
      contents: [{ role: 'user', parts: [{ text: 'hi [tokens=3]' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      tools: [
        {
          functionDeclarations: [
            {
              name: 'lookup',
              description: 'Looks up.',
              parametersJsonSchema: { type: 'object', properties: { q: { type: 'string' } } },
            },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
      generationConfig: { temperature: 0.3, stopSequences: ['END'], maxOutputTokens: 99 },
    });
    expect(output.log).toEqual([
      `start resp-fake${fake.requests.length}`,
      'text m1 tok0 ',
      'text m1 tok1 ',
      'text m1 tok2 ',
      'end m1',
      // The last chunk's usageMetadata, as AG-UI 1.0 counts it.
      'usage {"provider":"google","model":"gemini-test","inputTokens":12,"outputTokens":5,"totalTokens":17}',
    ]);
  });

  it('streams function calls whole, after the text before them, and thought parts as reasoning before both', async () => {
    const output = recordingOutput();
    await adapter().stream(
      request('[thinking] [text-then-tool] [tool=lookup] [toolargs={"q":"paris"}]'),
      output,
      new AbortController().signal,
    );
    const n = fake.requests.length;
    expect(output.log).toEqual([
      'think undefined',
      'thought r1 Let me think about this.',
      'thinkend r1',
      `start resp-fake${n}`,
      'text m2 Let me do that. ',
      'end m2',
      `call undefined lookup resp-fake${n}`,
      'args c3 {"q":"paris"}',
      'callend c3',
      'usage {"provider":"google","model":"gemini-flash-latest","inputTokens":12,"outputTokens":5,"totalTokens":17}',
    ]);
  });

  it.each([
    ['[bad-key]', 'UPSTREAM_AUTHENTICATION_FAILED', /refused the credentials \(HTTP 401\)\. Check GOOGLE_API_KEY\./],
    ['[fail=403]', 'UPSTREAM_AUTHENTICATION_FAILED', /refused the credentials \(HTTP 403\)\. Check GOOGLE_API_KEY\./],
    [
      '[fail=404]',
      'UPSTREAM_REJECTED',
      /rejected the request \(HTTP 404\): fake failure 404 Check the model name \(GOOGLE_MODEL\)\./,
    ],
    ['[fail=400]', 'UPSTREAM_REJECTED', /rejected the request \(HTTP 400\): fake failure 400/],
    ['[fail=429]', 'UPSTREAM_RATE_LIMITED', /rate limit was reached \(HTTP 429\)/],
    ['[fail=503]', 'UPSTREAM_UNAVAILABLE', /failed \(HTTP 503\)\.$/],
    ['[midstream-error]', 'UPSTREAM_UNAVAILABLE', /./],
    ['[safety]', 'UPSTREAM_REJECTED', /stopped its answer \(SAFETY\)/],
    ['[blocked]', 'UPSTREAM_REJECTED', /refused the prompt \(PROHIBITED_CONTENT\)/],
    ['[malformed]', 'UPSTREAM_BAD_RESPONSE', /could not complete \(MALFORMED_FUNCTION_CALL\)/],
    ['[cut]', 'UPSTREAM_STREAM_INTERRUPTED', /broke off in the middle of its answer/],
    ['[no-finish]', 'UPSTREAM_STREAM_INTERRUPTED', /ended its stream before the answer was complete/],
  ])('fails %s with %s and a message that says what to check', async (prompt, code, message) => {
    const error = await rejection(adapter().stream(request(prompt), recordingOutput(), new AbortController().signal));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(/127\.0\.0\.1/);
  });

  it('reports each retry the SDK makes, with why the attempt before failed, and streams the answer that follows', async () => {
    const retries: [string, string][] = [];
    const output = recordingOutput();
    const before = fake.requests.length;
    // One retry: the SDK waits a second or two before it (its own backoff, which the adapter does not set).
    const prompt = `[fail=503][fail-times=1][tokens=2] ${Math.random()}`;
    await adapter({ maxRetries: 1 }).stream(
      request(prompt, { onRetry: (who, reason) => void retries.push([who, reason]) }),
      output,
      new AbortController().signal,
    );
    expect(retries).toEqual([['the model provider (Google Gemini)', 'HTTP 503']]);
    expect(output.log.filter((line) => line.startsWith('text')).join('|')).toBe('text m1 tok0 |text m1 tok1 ');
    // Both attempts went through the adapter's fetch, the key and the base URL as configured.
    expect(fake.requests.slice(before).map((seen) => seen.headers['x-goog-api-key'])).toEqual(['g-test', 'g-test']);
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

  it.each(['[fail=400] [echo-key]', '[fail=403] [echo-key]', '[fail=500] [echo-key]'])(
    'keeps the key out of the error and its logged cause when the provider repeats it: %s',
    async (prompt) => {
      const key = 'key-echoed-by-the-provider-0123';
      const error = await rejection(
        adapter({ apiKey: key }).stream(request(prompt), recordingOutput(), new AbortController().signal),
      );
      expect(error.code).toMatch(/^UPSTREAM_/);
      // The explanation is there (a 4xx's is shown), with the key taken out.
      expect(errorAndCause(error)).toContain('for key [redacted]');
      expect(errorAndCause(error)).not.toContain(key);
    },
  );

  it('says which variable to check when the server cannot be reached', async () => {
    const unreachable = new GoogleAdapter({ baseURL: 'http://127.0.0.1:9', apiKey: 'k', maxRetries: 0 });
    adapters.push(unreachable);
    const error = await rejection(unreachable.stream(request('hi'), recordingOutput(), new AbortController().signal));
    expect(error.code).toBe('UPSTREAM_UNREACHABLE');
    expect(error.message).toMatch(/Check GOOGLE_BASE_URL/);
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

  it('sends no key to a proxy configured without one, and prints nothing about it', async () => {
    const before = fake.requests.length;
    const warned = jest.spyOn(console, 'warn');
    try {
      const keyless = new GoogleAdapter({ baseURL, maxRetries: 0 });
      adapters.push(keyless);
      await keyless.stream(request('hi'), recordingOutput(), new AbortController().signal);
      expect(fake.requests[before].headers['x-goog-api-key']).toBeUndefined();
      // (The SDK warns on the console when it has no key: a line outside the gateway's JSON logs.)
      expect(warned).not.toHaveBeenCalled();
    } finally {
      warned.mockRestore();
    }
  });

  it('refuses options it cannot use', () => {
    expect(() => new GoogleAdapter({})).toThrow(/needs an apiKey/);
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
    it(`continues after a server-side action, sending the call back with its thought signature (${transport.name})`, async () => {
      const gateway = await start({ adapter: adapter(), actions: [greet] });
      const before = fake.requests.length;
      const outcome = await transport.run(gateway, runInput([userMessage('[tool=greet] [toolargs={"name":"Ann"}]')]));
      expect(outcome.status.code).toBe('Success');
      expect(textOf(outcome)).toBe('Tool result received: Hello, Ann!');
      const second = fake.requests[before + 1].body.contents;
      const call = outcome.messages.find((m) => m.type === 'action') as { id: string };
      expect(second[1]).toEqual({
        role: 'model',
        parts: [
          {
            functionCall: { id: call.id, name: 'greet', args: { name: 'Ann' } },
            thoughtSignature: expect.stringMatching(/^sig-resp-fake\d+-0$/),
          },
        ],
      });
      expect(second[2]).toEqual({
        role: 'user',
        parts: [{ functionResponse: { id: call.id, name: 'greet', response: { result: 'Hello, Ann!' } } }],
      });
    });
  }
});
