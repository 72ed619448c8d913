import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { GatewayError } from '../src/core/errors.js';
import type { Message } from '../src/core/messages.js';
import { readEnvironment } from '../src/env.js';
import { admitForwardedParameters, checkModelInput, resolveModelLimits } from '../src/engine/model-limits.js';
import { repairTranscript } from '../src/engine/transcript.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { TRANSPORTS } from './support/transports.js';

// Cost control (what clients may choose and send to the model) and the transcript check that runs
// before every model call: unit by unit, then through a real gateway and a fake model.

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a GatewayError');
}

describe('model limits', () => {
  it('allow only the adapter’s model by default, and any model with "*"', () => {
    const limits = resolveModelLimits(undefined, 'gpt-4o-mini');
    expect(admitForwardedParameters({ model: 'gpt-4o-mini' }, limits)).toEqual({ model: 'gpt-4o-mini' });
    expect(admitForwardedParameters({}, limits)).toEqual({});
    const error = thrown(() => admitForwardedParameters({ model: 'gpt-4.5-preview' }, limits));
    expect(error.code).toBe('MODEL_NOT_ALLOWED');
    expect(error.message).toContain('gpt-4o-mini');
    expect(error.details).toMatchObject({
      field: 'forwardedParameters.model',
      model: 'gpt-4.5-preview',
      allowedModels: ['gpt-4o-mini'],
    });
    expect(
      admitForwardedParameters({ model: 'anything' }, resolveModelLimits({ allowedModels: '*' }, 'gpt-4o-mini')),
    ).toEqual({ model: 'anything' });
    // An adapter that names no model lets clients name none.
    expect(thrown(() => admitForwardedParameters({ model: 'x' }, resolveModelLimits({}, undefined))).message).toMatch(
      /send no forwardedParameters.model/,
    );
  });

  it('refuse maxTokens over the ceiling and send the ceiling when a client asks for none', () => {
    const limits = resolveModelLimits({ maxTokens: 500 }, 'm');
    expect(admitForwardedParameters({ maxTokens: 200 }, limits)).toEqual({ maxTokens: 200 });
    expect(admitForwardedParameters({ maxTokens: null, temperature: 0.1 }, limits)).toEqual({
      maxTokens: 500,
      temperature: 0.1,
    });
    const error = thrown(() => admitForwardedParameters({ maxTokens: 501 }, limits));
    expect(error).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { field: 'forwardedParameters.maxTokens', limit: 500, value: 501 },
    });
  });

  it('count the messages and characters a model would be sent, not agent state', () => {
    const conversation: Message[] = [
      { kind: 'text', id: '1', role: 'user', content: 'hello' },
      { kind: 'actionExecution', id: '2', name: 'go', arguments: '{}' },
      { kind: 'result', id: '3', actionExecutionId: '2', actionName: 'go', result: 'done' },
      {
        kind: 'agentState',
        id: '4',
        threadId: 't',
        agentName: 'a',
        nodeName: 'n',
        runId: 'r',
        active: true,
        running: false,
        role: 'assistant',
        state: '{"big":"x"}',
      },
    ];
    // 5 + (2 + 2) + 4 = 13 characters in 3 messages
    expect(() =>
      checkModelInput(conversation, resolveModelLimits({ maxMessages: 3, maxInputChars: 13 }, undefined)),
    ).not.toThrow();
    expect(
      thrown(() => checkModelInput(conversation, resolveModelLimits({ maxMessages: 2 }, undefined))),
    ).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { field: 'messages', limit: 2, value: 3 },
    });
    expect(
      thrown(() => checkModelInput(conversation, resolveModelLimits({ maxInputChars: 12 }, undefined))),
    ).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { limit: 12, value: 13 },
    });
  });

  it('refuse mistaken options when the gateway is built', () => {
    expect(() => resolveModelLimits({ maxTokens: 0 }, 'm')).toThrow(/maxTokens must be a whole number/);
    expect(() => resolveModelLimits({ allowedModels: 'gpt-4o' as any }, 'm')).toThrow(/allowedModels must be/);
    expect(() => resolveModelLimits({ maxChars: 5 } as any, 'm')).toThrow(/Unknown option "modelLimits.maxChars"/);
  });

  it('are read from the environment', () => {
    expect(readEnvironment({}).modelLimits).toEqual({});
    expect(
      readEnvironment({ ALLOWED_MODELS: 'a, b', MAX_TOKENS: '800', MAX_INPUT_MESSAGES: '40', MAX_INPUT_CHARS: '20000' })
        .modelLimits,
    ).toEqual({
      allowedModels: ['a', 'b'],
      maxTokens: 800,
      maxMessages: 40,
      maxInputChars: 20000,
    });
    expect(readEnvironment({ ALLOWED_MODELS: '*' }).modelLimits).toEqual({ allowedModels: '*' });
    expect(() => readEnvironment({ MAX_TOKENS: 'lots' })).toThrow(/MAX_TOKENS must be a whole number/);
  });
});

describe('the transcript check', () => {
  const text = (id: string, content: string, role: 'user' | 'assistant' = 'user'): Message => ({
    kind: 'text',
    id,
    role,
    content,
  });
  const call = (id: string, name = 'lookup'): Message => ({
    kind: 'actionExecution',
    id,
    name,
    arguments: '{}',
    parentMessageId: 'a1',
  });
  const result = (callId: string, value = 'ok', actionName = 'lookup'): Message => ({
    kind: 'result',
    id: `r-${callId}-${value}`,
    actionExecutionId: callId,
    actionName,
    result: value,
  });

  it('leaves a well-formed conversation as it is, and logs nothing', () => {
    const logger = { info: jest.fn() } as any;
    const conversation = [
      text('u1', 'hi'),
      text('a1', 'let me look', 'assistant'),
      call('c1'),
      call('c2'),
      result('c1'),
      result('c2'),
      text('a2', 'done', 'assistant'),
    ];
    expect(repairTranscript(conversation, logger)).toEqual([
      conversation[0],
      conversation[1],
      conversation[2],
      conversation[4],
      conversation[3],
      conversation[5],
      conversation[6],
    ]);
    expect(logger.info).not.toHaveBeenCalled();
  });

  it('drops exact duplicates, calls without a result and results without a call, moves results after their call, and logs it', () => {
    const logger = { info: jest.fn() } as any;
    const repaired = repairTranscript(
      [
        result('c1'), // before its call
        text('u1', 'hi'),
        text('u1', 'hi'), // sent twice
        call('c1'),
        call('c2'), // never answered
        text('u2', 'and?'),
        result('ghost'), // no such call
      ],
      logger,
    );
    expect(repaired).toEqual([text('u1', 'hi'), call('c1'), result('c1'), text('u2', 'and?')]);
    expect(logger.info).toHaveBeenCalledWith(
      { transcript: { duplicates: 1, callsWithoutResult: ['c2'], resultsWithoutCall: ['ghost'], moved: 1 } },
      'repaired the conversation before calling the model',
    );
  });

  it('looks at each message a bounded number of times, however its calls and results are laid out', () => {
    // Every call first, then every result, in the same order: checking each result by scanning from its call was
    // quadratic (found from outside: 60,000 of each held the event loop 21 s). Counted, not timed: reads of `kind`.
    const n = 2_000;
    let reads = 0;
    const counted = (message: Message): Message =>
      new Proxy(message, {
        get: (target, key, receiver) => {
          if (key === 'kind') reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    const calls = Array.from({ length: n }, (_, i) => call(`c${i}`));
    const results = Array.from({ length: n }, (_, i) => result(`c${i}`));
    const repaired = repairTranscript([text('u1', 'hi'), ...calls, ...results].map(counted));
    expect(repaired).toHaveLength(2 * n + 1);
    expect(repaired[2]).toEqual(result('c0'));
    expect(reads).toBeLessThan(20 * (2 * n + 1));
  });

  it('keeps one of two identical results and names a result after its call', () => {
    const repaired = repairTranscript([
      call('c1', 'search'),
      result('c1', 'same', ''),
      { ...result('c1', 'same', ''), id: 'other-id' },
    ]);
    expect(repaired).toEqual([call('c1', 'search'), { ...result('c1', 'same', ''), actionName: 'search' }]);
  });

  it('refuses what it cannot repair, naming the message', () => {
    expect(thrown(() => repairTranscript([text('u1', 'hi'), call('c1', ' ')]))).toMatchObject({
      code: 'BAD_USER_INPUT',
      details: { field: 'messages[1]' },
    });
    expect(thrown(() => repairTranscript([text('m', 'one'), text('m', 'two')]))).toMatchObject({
      code: 'BAD_USER_INPUT',
      details: { field: 'messages[1]' },
    });
    const twoAnswers = thrown(() => repairTranscript([call('c1'), result('c1', 'yes'), result('c1', 'no')]));
    expect(twoAnswers).toMatchObject({ code: 'BAD_USER_INPUT', details: { field: 'messages[2]' } });
    expect(twoAnswers.message).toContain('second, different result');
  });
});

describe('through the gateway, over every transport', () => {
  const fake = new FakeOpenAI();
  let baseURL: string;
  const { start } = gatewaysPerTest();
  beforeAll(async () => {
    baseURL = await fake.start();
  });
  afterAll(() => fake.stop());
  const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });

  const longResult: ServerAction = {
    name: 'fetchReport',
    description: 'Returns a long report.',
    handler: () => 'r'.repeat(500),
  };

  for (const transport of TRANSPORTS) {
    describe(transport.name, () => {
      it('refuses a model outside the allowlist before calling the model', async () => {
        const gateway = await start({ adapter: adapter() });
        const before = fake.requests.length;
        const outcome = await transport.run(
          gateway,
          runInput([userMessage('hi')], { forwardedParameters: { model: 'gpt-4.5-preview' } }),
        );
        expect(outcome.errors?.[0]?.extensions).toMatchObject({ code: 'MODEL_NOT_ALLOWED', statusCode: 403 });
        expect(outcome.errors?.[0]?.message).toContain('Allowed: fake-model');
        expect(fake.requests.length).toBe(before);
      });

      it('sends the maxTokens ceiling when the client sets none, and the allowed model it names', async () => {
        const gateway = await start({
          adapter: adapter(),
          modelLimits: { allowedModels: ['fake-model', 'fake-mini'], maxTokens: 256 },
        });
        const before = fake.requests.length;
        const outcome = await transport.run(
          gateway,
          runInput([userMessage('hi [tokens=2]')], { forwardedParameters: { model: 'fake-mini' } }),
        );
        expect(outcome.status.code).toBe('Success');
        expect(fake.requests[before]).toMatchObject({ model: 'fake-mini', max_tokens: 256 });
      });

      it('refuses a conversation over the character limit before calling the model', async () => {
        const gateway = await start({ adapter: adapter(), modelLimits: { maxInputChars: 100 } });
        const before = fake.requests.length;
        const outcome = await transport.run(gateway, runInput([userMessage('x'.repeat(101))]));
        expect(outcome.errors?.[0]?.extensions).toMatchObject({
          code: 'LIMIT_EXCEEDED',
          details: { limit: 100, value: 101 },
        });
        expect(fake.requests.length).toBe(before);
      });

      it('fails the run when a server-side result grows the conversation past the limit, before the next model call', async () => {
        const gateway = await start({ adapter: adapter(), actions: [longResult], modelLimits: { maxInputChars: 300 } });
        const before = fake.requests.length;
        const outcome = await transport.run(gateway, runInput([userMessage('report please [tool=fetchReport]')]));
        expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'LIMIT_EXCEEDED' } });
        expect(outcome.messages.some((m) => m.type === 'result' && m.actionName === 'fetchReport')).toBe(true);
        expect(fake.requests.length - before).toBe(1);
      });

      it('fails a run whose output passes maxRunOutputMb', async () => {
        // Found from outside: an upstream that never stops (300 MB in seconds) was held whole, in the run's record and
        // in every client's view of it, and three such runs ended the process (the heap's limit).
        const gateway = await start({ adapter: adapter(), maxRunOutputMb: 1 });
        const outcome = await transport.run(gateway, runInput([userMessage('go on [tokens=20000]')]));
        expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'LIMIT_EXCEEDED' } });
        expect(JSON.stringify(outcome.status)).toContain('maxRunOutputMb');
        const text = outcome.messages.find((m) => m.type === 'text')?.content ?? '';
        expect(text.length).toBeGreaterThan(1_000);
        expect(text.length).toBeLessThan(1024 * 1024);
      });

      it('repairs the transcript the model is sent, and refuses one it cannot repair', async () => {
        const gateway = await start({ adapter: adapter() });
        const at = new Date().toISOString();
        const before = fake.requests.length;
        const repairable = await transport.run(
          gateway,
          runInput([
            userMessage('look it up', 'u1'),
            { id: 'a1', createdAt: at, textMessage: { role: 'assistant', content: 'Looking.' } },
            {
              id: 'c1',
              createdAt: at,
              actionExecutionMessage: { name: 'lookup', arguments: '{}', parentMessageId: 'a1' },
            },
            {
              id: 'c2',
              createdAt: at,
              actionExecutionMessage: { name: 'lookup', arguments: '{"again":true}', parentMessageId: 'a1' },
            },
            {
              id: 'r1',
              createdAt: at,
              resultMessage: { actionExecutionId: 'c1', actionName: 'lookup', result: 'found' },
            },
            {
              id: 'r9',
              createdAt: at,
              resultMessage: { actionExecutionId: 'gone', actionName: 'lookup', result: 'stale' },
            },
            userMessage('thanks [tokens=1]', 'u2'),
          ]),
        );
        expect(repairable.status.code).toBe('Success');
        expect(fake.requests[before].messages).toEqual([
          { role: 'user', content: 'look it up' },
          {
            role: 'assistant',
            content: 'Looking.',
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'found' },
          { role: 'user', content: 'thanks [tokens=1]' },
        ]);

        const broken = await transport.run(
          gateway,
          runInput([
            userMessage('hi', 'u1'),
            { id: 'c1', createdAt: at, actionExecutionMessage: { name: '', arguments: '{}' } },
          ]),
        );
        expect(broken.errors?.[0]?.extensions).toMatchObject({
          code: 'BAD_USER_INPUT',
          details: { field: 'messages[1]' },
        });
        expect(fake.requests.length).toBe(before + 1);
      });
    });
  }
});
