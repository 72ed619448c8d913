import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CopilotRuntimeClient } from '@copilotkit/runtime-client-gql';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { eventually, runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';

// The unmodified stock client (urql 5, multipart/mixed) against a real gateway and a fake model.

const fake = new FakeOpenAI();
let gateway: RunningGateway;
let client: CopilotRuntimeClient;
const handlerCalls: unknown[] = [];

const sayHello: ServerAction<{ message: string }> = {
  name: 'sayHello',
  description: 'Greets someone.',
  parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  handler: ({ message }) => {
    handlerCalls.push(message);
    return `Hello, ${message}!`;
  },
};
const explode: ServerAction = {
  name: 'explode',
  description: 'Always fails.',
  handler: () => {
    throw new Error('kaboom');
  },
};

beforeAll(async () => {
  const baseURL = await fake.start();
  gateway = await startGateway({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'test-key', model: 'fake-model', maxRetries: 0 }),
    actions: [sayHello, explode],
    modelIdleTimeoutMs: 300,
    modelLimits: { allowedModels: ['fake-model', 'other-model'] },
  });
  client = new CopilotRuntimeClient({ url: gateway.url });
});

afterAll(async () => {
  await gateway.close();
  await fake.stop();
});

/** Every snapshot urql hands the client while the response streams, deep-copied. */
async function collect(data: unknown, signal?: AbortSignal, onSnapshot?: (snapshot: any) => void): Promise<any[]> {
  const snapshots: any[] = [];
  const stream = client.asStream(client.generateCopilotResponse({ data: data as any, signal }));
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const copy = JSON.parse(JSON.stringify(value));
    snapshots.push(copy);
    onSnapshot?.(copy);
  }
  return snapshots;
}

function finalResponse(snapshots: any[]) {
  return snapshots[snapshots.length - 1].generateCopilotResponse;
}

describe('the stock CopilotRuntimeClient over HTTP', () => {
  it('receives text token by token, then the message status, then the run status', async () => {
    const snapshots = await collect(runInput([userMessage('count [tokens=12] [delay=10]')]));
    const response = finalResponse(snapshots);
    expect(response.status).toEqual({ code: 'Success', __typename: 'SuccessResponseStatus' });
    expect(response.messages).toHaveLength(1);
    const [message] = response.messages;
    expect(message.__typename).toBe('TextMessageOutput');
    expect(message.role).toBe('assistant');
    expect(message.content.join('')).toBe(Array.from({ length: 12 }, (_, i) => `tok${i} `).join(''));
    expect(message.status).toEqual({ code: 'Success', __typename: 'SuccessMessageStatus' });

    // Many incremental updates, not one final blob: the text grew across several snapshots.
    const partialTexts = new Set(
      snapshots
        .map((s) => s.generateCopilotResponse.messages?.[0]?.content?.join(''))
        .filter((text) => text !== undefined && text.length < message.content.join('').length),
    );
    expect(partialTexts.size).toBeGreaterThanOrEqual(4);
    // The run's status arrives only at the end.
    expect(snapshots.slice(0, -1).every((s) => s.generateCopilotResponse.status === undefined)).toBe(true);
  });

  it('sends the system message as "system" and the forwarded parameters to the model', async () => {
    const before = fake.requests.length;
    await collect(
      runInput(
        [
          { id: 'sys', createdAt: new Date().toISOString(), textMessage: { role: 'system', content: 'Be brief.' } },
          userMessage('hi'),
        ],
        { forwardedParameters: { model: 'other-model', maxTokens: 50, temperature: 0.2, stop: ['END'] } },
      ),
    );
    const request = fake.requests[before];
    expect(request.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(request).toMatchObject({
      model: 'other-model',
      max_tokens: 50,
      temperature: 0.2,
      stop: ['END'],
      stream: true,
    });
  });

  it('streams a frontend action call with its arguments, exactly once, for the client to execute', async () => {
    const before = fake.requests.length;
    const snapshots = await collect(
      // [delay=5]: the argument chunks arrive apart (chunks that arrive together are joined into one).
      runInput([userMessage('alert [tool=showAlert] [toolargs={"message":"hi there"}] [delay=5]')], {
        frontend: {
          url: 'http://localhost:3000/',
          actions: [
            {
              name: 'showAlert',
              description: 'Shows an alert.',
              jsonSchema: JSON.stringify({
                type: 'object',
                properties: { message: { type: 'string' } },
                required: ['message'],
              }),
              available: 'enabled',
            },
            { name: 'hidden', description: 'Disabled.', jsonSchema: '{"type":"object"}', available: 'disabled' },
            { name: 'forAgents', description: 'Remote.', jsonSchema: '{"type":"object"}', available: 'remote' },
          ],
        },
      }),
    );
    const response = finalResponse(snapshots);
    expect(response.status.code).toBe('Success');
    expect(response.messages).toHaveLength(1);
    const [call] = response.messages;
    expect(call).toMatchObject({ __typename: 'ActionExecutionMessageOutput', name: 'showAlert' });
    expect(call.arguments.join('')).toBe('{"message":"hi there"}');
    expect(call.arguments.length).toBeGreaterThan(1);
    expect(call.status.code).toBe('Success');
    expect(handlerCalls).toHaveLength(0);
    // Only one model call: the client executes the action and sends the result next time.
    expect(fake.requests.length - before).toBe(1);
    const offered = fake.requests[before].tools.map((tool: any) => tool.function.name).sort();
    expect(offered).toEqual(['explode', 'sayHello', 'showAlert']);
  });

  it('passes a frontend action result from the next request to the model verbatim', async () => {
    const before = fake.requests.length;
    const now = new Date().toISOString();
    const snapshots = await collect(
      runInput([
        userMessage('greet bob'),
        {
          id: 'call_prev',
          createdAt: now,
          actionExecutionMessage: {
            name: 'showAlert',
            arguments: '{"message":"Bob"}',
            parentMessageId: 'chatcmpl-prev',
          },
        },
        {
          id: 'result-call_prev',
          createdAt: now,
          resultMessage: { actionExecutionId: 'call_prev', actionName: 'showAlert', result: '{"shown":true}' },
        },
      ]),
    );
    expect(finalResponse(snapshots).messages[0].content.join('')).toBe('Tool result received: {"shown":true}');
    const sent = fake.requests[before].messages;
    expect(sent[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_prev', type: 'function', function: { name: 'showAlert', arguments: '{"message":"Bob"}' } },
      ],
    });
    expect(sent[2]).toEqual({ role: 'tool', tool_call_id: 'call_prev', content: '{"shown":true}' });
  });

  it('keeps interleaved parallel tool calls apart', async () => {
    const action = (name: string) => ({
      name,
      description: name,
      jsonSchema: '{"type":"object"}',
      available: 'enabled',
    });
    const response = finalResponse(
      await collect(
        runInput([userMessage('[tools=first,second] [interleave]')], {
          frontend: { actions: [action('first'), action('second')] },
        }),
      ),
    );
    expect(response.messages.map((m: any) => [m.name, m.arguments.join('')])).toEqual([
      ['first', '{"n":1}'],
      ['second', '{"n":1}'],
    ]);
  });

  it('tells parallel tool calls apart by id when a server sends them all at index 0', async () => {
    const action = (name: string) => ({
      name,
      description: name,
      jsonSchema: '{"type":"object"}',
      available: 'enabled',
    });
    const response = finalResponse(
      await collect(
        runInput([userMessage('[tools=first,second] [same-index]')], {
          frontend: { actions: [action('first'), action('second')] },
        }),
      ),
    );
    expect(response.messages.map((m: any) => [m.name, m.arguments.join('')])).toEqual([
      ['first', '{"n":0}'],
      ['second', '{"n":1}'],
    ]);
  });

  it('gives the frontend context to the model as a system message after the leading system messages', async () => {
    const before = fake.requests.length;
    await collect(
      runInput(
        [
          { id: 'sys', createdAt: new Date().toISOString(), textMessage: { role: 'system', content: 'Be brief.' } },
          userMessage('hi'),
        ],
        { context: [{ description: 'The current page', value: '/orders/42' }] },
      ),
    );
    expect(fake.requests[before].messages.slice(0, 2)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Context from the application:\n- The current page: /orders/42' },
    ]);
  });

  it('executes a server-side action and continues generation in the same run', async () => {
    const before = fake.requests.length;
    const snapshots = await collect(runInput([userMessage('greet bob [tool=sayHello] [toolargs={"message":"Bob"}]')]));
    const response = finalResponse(snapshots);
    expect(response.status.code).toBe('Success');
    expect(response.messages.map((m: any) => m.__typename)).toEqual([
      'ActionExecutionMessageOutput',
      'ResultMessageOutput',
      'TextMessageOutput',
    ]);
    const [call, result, text] = response.messages;
    expect(call.arguments.join('')).toBe('{"message":"Bob"}');
    expect(result).toMatchObject({
      id: `result-${call.id}`,
      actionExecutionId: call.id,
      actionName: 'sayHello',
      result: 'Hello, Bob!',
    });
    expect(text.content.join('')).toBe('Tool result received: Hello, Bob!');
    expect(handlerCalls).toEqual(['Bob']);

    expect(fake.requests.length - before).toBe(2);
    const continuation = fake.requests[before + 1].messages;
    expect(continuation.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: call.id, type: 'function', function: { name: 'sayHello', arguments: '{"message":"Bob"}' } }],
      },
      { role: 'tool', tool_call_id: call.id, content: 'Hello, Bob!' },
    ]);
  });

  it('turns a failing handler or bad arguments into an error result and goes on', async () => {
    const failing = finalResponse(await collect(runInput([userMessage('[tool=explode]')])));
    expect(failing.status.code).toBe('Success');
    const failed = failing.messages.find((m: any) => m.__typename === 'ResultMessageOutput');
    expect(JSON.parse(failed.result)).toEqual({ error: { code: 'ACTION_FAILED', message: 'kaboom' }, result: '' });

    const bad = finalResponse(await collect(runInput([userMessage('[tool=sayHello] [toolargs={"msg":1}]')])));
    const badResult = bad.messages.find((m: any) => m.__typename === 'ResultMessageOutput');
    expect(JSON.parse(badResult.result)).toEqual({
      error: { code: 'INVALID_ARGUMENTS', message: 'Missing required argument(s): message.' },
      result: '',
    });
    expect(bad.messages[bad.messages.length - 1].content.join('')).toContain('INVALID_ARGUMENTS');
  });

  it('ends an upstream HTTP error in a Failed status with a clear reason and no stack trace', async () => {
    const snapshots = await collect(runInput([userMessage('boom [fail=400]')]));
    const response = finalResponse(snapshots);
    expect(response.messages).toEqual([]);
    expect(response.status).toMatchObject({
      code: 'Failed',
      reason: 'UNKNOWN_ERROR',
      __typename: 'FailedResponseStatus',
    });
    expect(response.status.details).toMatchObject({
      code: 'UPSTREAM_REJECTED',
      description: 'The model provider rejected the request (HTTP 400): fake failure 400',
    });
    expect(JSON.stringify(response.status.details)).not.toMatch(/\n\s+at /);
  });

  it("does not pass the provider's text on an authentication failure to the client", async () => {
    const response = finalResponse(await collect(runInput([userMessage('[fail=401]')])));
    expect(response.status.details.code).toBe('UPSTREAM_AUTHENTICATION_FAILED');
    expect(response.status.details.description).toBe(
      'The model provider refused the credentials (HTTP 401). Check OPENAI_API_KEY.',
    );
    expect(JSON.stringify(response.status)).not.toContain('fake failure');
  });

  it('closes the open message as Failed when the model stream is cut midway', async () => {
    const response = finalResponse(await collect(runInput([userMessage('[cut]')])));
    expect(response.status.details.code).toBe('UPSTREAM_STREAM_INTERRUPTED');
    expect(response.status).toMatchObject({ code: 'Failed', reason: 'MESSAGE_STREAM_INTERRUPTED' });
    expect(response.status.details.code).toBe('UPSTREAM_STREAM_INTERRUPTED');
    expect(response.messages[0].content.join('')).toBe('tok0 tok1 ');
    expect(response.messages[0].status).toMatchObject({ code: 'Failed', __typename: 'FailedMessageStatus' });
  });

  it('does not call an answer that ended without a finish reason a success', async () => {
    const response = finalResponse(await collect(runInput([userMessage('[no-finish]')])));
    expect(response.status).toMatchObject({ code: 'Failed', reason: 'MESSAGE_STREAM_INTERRUPTED' });
    expect(response.status.details.code).toBe('UPSTREAM_STREAM_INTERRUPTED');
    expect(response.messages[0].content.join('')).toBe('tok0 tok1 ');
  });

  it('cuts off a model that stalls and fails the run with UPSTREAM_TIMEOUT', async () => {
    const aborted = fake.abortedRequests;
    const response = finalResponse(await collect(runInput([userMessage('[stall]')])));
    expect(response.status).toMatchObject({ code: 'Failed', reason: 'UNKNOWN_ERROR' });
    expect(response.status.details.code).toBe('UPSTREAM_TIMEOUT');
    expect(response.messages[0].status.code).toBe('Failed');
    await eventually(() => fake.abortedRequests > aborted, 'the stalled model request to be closed');
  });
});
