import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { toResponsesInput } from '../src/adapters/openai-responses.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { readEnvironment } from '../src/env.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// The OpenAI adapter on the Responses API (apiStyle "responses"), and how it tells Chat Completions
// the token limit (max_tokens or max_completion_tokens).

const fake = new FakeOpenAI();
let baseURL: string;
beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(() => fake.stop());
const { start } = gatewaysPerTest();
const responses = () => new OpenAIAdapter({ baseURL, apiKey: 'k', maxRetries: 0, apiStyle: 'responses' });

describe('the conversation as Responses API input items', () => {
  it('keeps roles and turns calls and results into function_call and function_call_output items', () => {
    expect(
      toResponsesInput([
        { kind: 'text', id: 's', role: 'developer', content: 'Be brief.' },
        { kind: 'text', id: 'u', role: 'user', content: 'hi' },
        { kind: 'image', id: 'i', role: 'user', format: 'png', bytes: 'AAAA' },
        { kind: 'actionExecution', id: 'c1', name: 'lookup', arguments: '{"q":1}' },
        { kind: 'result', id: 'r1', actionExecutionId: 'c1', actionName: 'lookup', result: 'found' },
        { kind: 'text', id: 'a', role: 'assistant', content: 'Found it.' },
      ]),
    ).toEqual([
      { type: 'message', role: 'developer', content: 'Be brief.' },
      { type: 'message', role: 'user', content: 'hi' },
      {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_image', detail: 'auto', image_url: 'data:image/png;base64,AAAA' }],
      },
      { type: 'function_call', call_id: 'c1', name: 'lookup', arguments: '{"q":1}' },
      { type: 'function_call_output', call_id: 'c1', output: 'found' },
      { type: 'message', role: 'assistant', content: 'Found it.' },
    ]);
  });
});

describe('OpenAIAdapter on the Responses API', () => {
  const greet: ServerAction<{ name: string }> = {
    name: 'greet',
    description: 'Greets someone.',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    handler: ({ name }) => `Hello, ${name}!`,
  };

  for (const transport of TRANSPORTS) {
    it(`continues after a server-side action with the call and its output; reasoning is not the answer (${transport.name})`, async () => {
      const gateway = await start({ adapter: responses(), actions: [greet] });
      const before = fake.requests.length;
      const outcome = await transport.run(
        gateway,
        runInput([userMessage('[reasoning] [text-then-tool] [tool=greet] [toolargs={"name":"Ann"}]')], {
          forwardedParameters: { maxTokens: 300 },
        }),
      );
      expect(outcome.status.code).toBe('Success');
      expect(textOf(outcome)).toBe('Let me do that. Tool result received: Hello, Ann!');
      expect(JSON.stringify(outcome)).not.toContain('Thinking it over');
      expect(fake.requests[before]).toMatchObject({
        stream: true,
        store: false,
        max_output_tokens: 300,
        tools: [{ type: 'function', name: 'greet' }],
      });
      const input = fake.requests[before + 1].input;
      const call = input.find((item: any) => item.type === 'function_call');
      expect(call).toMatchObject({ name: 'greet', arguments: '{"name":"Ann"}' });
      expect(input.at(-1)).toEqual({ type: 'function_call_output', call_id: call.call_id, output: 'Hello, Ann!' });
    });
  }

  it('fails a stream that ends without response.completed as interrupted', async () => {
    const gateway = await start({ adapter: responses() });
    const outcome = await TRANSPORTS[2].run(gateway, runInput([userMessage('[no-finish]')]));
    expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_STREAM_INTERRUPTED' } });
  });

  it('refuses stop sequences, which the Responses API does not have, before calling it', async () => {
    const gateway = await start({ adapter: responses() });
    const before = fake.requests.length;
    const outcome = await TRANSPORTS[0].run(
      gateway,
      runInput([userMessage('hi')], { forwardedParameters: { stop: ['END'] } }),
    );
    expect(outcome.errors?.[0]?.extensions).toMatchObject({
      code: 'NOT_SUPPORTED',
      details: { field: 'forwardedParameters.stop' },
    });
    expect(fake.requests.length).toBe(before);
  });
});

describe('the token limit on Chat Completions', () => {
  it('is max_completion_tokens for OpenAI itself and max_tokens for other servers, unless configured', async () => {
    expect(new OpenAIAdapter({ apiKey: 'k' }).maxTokensParameter).toBe('max_completion_tokens');
    expect(new OpenAIAdapter({ baseURL }).maxTokensParameter).toBe('max_tokens');
    expect(new OpenAIAdapter({ baseURL: 'https://api.openai.com/v1', apiKey: 'k' }).maxTokensParameter).toBe(
      'max_completion_tokens',
    );
    const gateway = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', maxRetries: 0, maxTokensParameter: 'max_completion_tokens' }),
    });
    const before = fake.requests.length;
    await TRANSPORTS[2].run(
      gateway,
      runInput([userMessage('hi [tokens=1]')], { forwardedParameters: { maxTokens: 64 } }),
    );
    expect(fake.requests[before]).toMatchObject({ max_completion_tokens: 64 });
    expect(fake.requests[before].max_tokens).toBeUndefined();
  });

  it('and the API style are read from the environment', () => {
    expect(
      readEnvironment({ OPENAI_API_KEY: 'k', OPENAI_API_STYLE: 'responses', OPENAI_MAX_TOKENS_PARAMETER: 'max_tokens' })
        .provider,
    ).toEqual({
      name: 'openai',
      options: {
        apiKey: 'k',
        baseURL: undefined,
        model: 'gpt-4o-mini',
        apiStyle: 'responses',
        maxTokensParameter: 'max_tokens',
      },
    });
    expect(() => readEnvironment({ OPENAI_API_KEY: 'k', OPENAI_API_STYLE: 'assistants' })).toThrow(
      /OPENAI_API_STYLE must be chat or responses/,
    );
    expect(() => readEnvironment({ OPENAI_API_KEY: 'k', OPENAI_MAX_TOKENS_PARAMETER: 'limit' })).toThrow(
      /OPENAI_MAX_TOKENS_PARAMETER must be max_tokens or max_completion_tokens/,
    );
    expect(
      readEnvironment({ OPENAI_BASE_URL: 'http://vllm:8000/v1', OPENAI_STREAM_USAGE: 'true' }).provider,
    ).toMatchObject({ name: 'openai', options: { streamUsage: true } });
    expect(() => readEnvironment({ OPENAI_API_KEY: 'k', OPENAI_STREAM_USAGE: 'yes' })).toThrow(
      /OPENAI_STREAM_USAGE must be true or false/,
    );
    expect(new OpenAIAdapter({ apiKey: 'k' }).streamUsage).toBe(true);
    expect(new OpenAIAdapter({ baseURL: 'http://vllm:8000/v1' }).streamUsage).toBe(false);
  });
});
