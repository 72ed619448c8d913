import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient } from 'graphql-ws';
import { pino } from 'pino';
import WebSocket from 'ws';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { AgentDefinition } from '../src/agents/definitions.js';
import type { LLMErrorData, LLMRequestData, LLMResponseData } from '../src/adapters/observed.js';
import { GatewayError } from '../src/core/errors.js';
import type { AfterRequestContext, BeforeRequestHookContext } from '../src/engine/hooks.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { eventually, gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { failOnProcessErrors } from './support/process-errors.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// Request middleware (onBeforeRequest / onAfterRequest) and observability hooks, observed through
// a real gateway and a fake model.

const model = new FakeOpenAI();
let baseURL: string;
beforeAll(async () => {
  baseURL = await model.start();
});
afterAll(() => model.stop());
failOnProcessErrors();
const { start } = gatewaysPerTest();
const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });

function capturingLogger() {
  const lines: any[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) }),
  );
  return { logger, lines };
}

/** generateCopilotResponse over graphql-ws, as a mutation: its status. */
async function wsMutation(gateway: { wsUrl: string }, data: unknown): Promise<{ status: { code: string } }> {
  const client = createClient({ url: gateway.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
  try {
    let status: { code: string } | undefined;
    for await (const result of client.iterate<any>({
      query:
        'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } } }',
      variables: { data } as Record<string, unknown>,
    })) {
      status = result.data?.generateCopilotResponse.status;
    }
    return { status: status ?? { code: 'none' } };
  } finally {
    await client.dispose();
  }
}

describe('onBeforeRequest and onAfterRequest', () => {
  for (const transport of TRANSPORTS) {
    it(`see the request and the finished run, and may add context for the model (${transport.name})`, async () => {
      const before: BeforeRequestHookContext[] = [];
      const after: AfterRequestContext[] = [];
      const gateway = await start({
        adapter: adapter(),
        hooks: {
          onBeforeRequest: async (context) => {
            before.push(context);
            return { context: [{ description: 'The user’s plan', value: 'Premium' }] };
          },
          onAfterRequest: async (context) => void after.push(context),
        },
      });
      const sent = model.requests.length;
      const outcome = await transport.run(
        gateway,
        runInput([userMessage('hi [tokens=2]', 'u1')], { threadId: 'thread-hooks' }),
        { properties: { tenant: 'acme' } },
      );
      expect(outcome.status.code).toBe('Success');
      expect(before).toEqual([
        expect.objectContaining({
          threadId: 'thread-hooks',
          runId: expect.any(String),
          inputMessages: [expect.objectContaining({ id: 'u1', content: 'hi [tokens=2]' })],
          properties: { tenant: 'acme' },
          url: 'http://localhost:3000/',
        }),
      ]);
      expect(model.requests[sent].messages[0]).toEqual({
        role: 'system',
        content: 'Context from the application:\n- The user’s plan: Premium',
      });
      await eventually(() => after.length === 1, 'onAfterRequest');
      expect(after[0]).toMatchObject({
        threadId: 'thread-hooks',
        runId: before[0].runId,
        status: { code: 'Success' },
        outputMessages: [{ kind: 'text', role: 'assistant', content: 'tok0 tok1 ' }],
      });
    });
  }

  it('may refuse a request with a coded error, before anything runs', async () => {
    const gateway = await start({
      adapter: adapter(),
      hooks: {
        onBeforeRequest: ({ properties }) => {
          if (properties.tenant !== 'acme') throw new GatewayError('REQUEST_REFUSED', 'Unknown tenant.');
        },
      },
    });
    const sent = model.requests.length;
    const outcome = await TRANSPORTS[0].run(gateway, runInput([userMessage('hi')]), {
      properties: { tenant: 'other' },
    });
    expect(outcome.errors?.[0]).toMatchObject({
      message: 'Unknown tenant.',
      extensions: { code: 'REQUEST_REFUSED', statusCode: 403 },
    });
    expect(model.requests.length).toBe(sent);
  });

  it('fail the request clearly when onBeforeRequest throws unexpectedly, and log it; onAfterRequest throwing is only logged', async () => {
    const { logger, lines } = capturingLogger();
    const broken = await start({
      adapter: adapter(),
      logger,
      hooks: {
        onBeforeRequest: () => {
          throw new TypeError('hook bug');
        },
      },
    });
    const refused = await TRANSPORTS[2].run(broken, runInput([userMessage('hi')]));
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'HOOK_FAILED', statusCode: 500 });
    expect(refused.errors?.[0]?.message).not.toContain('hook bug');
    expect(lines.some((line) => line.msg === 'the onBeforeRequest hook threw' && line.err.message === 'hook bug')).toBe(
      true,
    );

    const lenient = await start({
      adapter: adapter(),
      logger,
      hooks: {
        onAfterRequest: async () => {
          throw new Error('after bug');
        },
      },
    });
    const outcome = await TRANSPORTS[2].run(lenient, runInput([userMessage('hi [tokens=1]')]));
    expect(outcome.status.code).toBe('Success');
    await eventually(() => lines.some((line) => line.msg === 'the onAfterRequest hook threw'), 'the log line');
  });

  // The HTTP transports' requests, and a mutation over graphql-ws (a subscription gets no signal).
  const signalled = [
    ...TRANSPORTS.filter((t) => t.name !== 'graphql-ws'),
    { name: 'graphql-ws mutation', run: wsMutation },
  ];
  for (const transport of signalled) {
    it(`survive an onBeforeRequest whose abort listener throws once the request is over (${transport.name})`, async () => {
      const { logger, lines } = capturingLogger();
      const signals: AbortSignal[] = [];
      const gateway = await start({
        adapter: adapter(),
        logger,
        hooks: {
          onBeforeRequest: ({ signal }) => {
            if (!signal) return;
            signals.push(signal);
            signal.addEventListener('abort', () => {
              throw new Error('listener bug');
            });
            signal.onabort = () => {
              throw new Error('onabort bug');
            };
          },
        },
      });
      const first = await transport.run(gateway, runInput([userMessage('hi [tokens=1]')]));
      expect(first.status.code).toBe('Success');
      expect(signals).toHaveLength(1);
      // The response has closed: its signal aborts, and both listeners throw.
      await eventually(() => signals[0].aborted, 'the signal aborted');
      await new Promise((resolve) => setImmediate(resolve));
      // Nothing reached the process as uncaught: failOnProcessErrors checks after each test.
      await eventually(
        () =>
          lines.filter((line) => line.msg === 'an abort listener of the onBeforeRequest hook threw; ignored').length ===
          2,
        'both listeners logged',
      );
      const second = await transport.run(gateway, runInput([userMessage('again [tokens=1]')]));
      expect(second.status.code).toBe('Success');
    });
  }

  it('tell onAfterRequest how a failed run ended', async () => {
    const after: AfterRequestContext[] = [];
    const gateway = await start({
      adapter: adapter(),
      hooks: { onAfterRequest: (context) => void after.push(context) },
    });
    await TRANSPORTS[2].run(gateway, runInput([userMessage('[fail=503]')]));
    await eventually(() => after.length === 1, 'onAfterRequest');
    expect(after[0].status).toEqual({ code: 'Failed', errorCode: 'UPSTREAM_UNAVAILABLE' });
  });
});

describe("an agent's loadState", () => {
  it('survives an abort listener that throws once the request is over', async () => {
    const { logger, lines } = capturingLogger();
    const signals: AbortSignal[] = [];
    const fragile: AgentDefinition = {
      kind: 'ag-ui',
      create: (name) => ({
        name,
        description: 'Keeps a fragile state.',
        kind: 'ag-ui',
        client: {
          async run() {},
          async loadState(_request, signal) {
            signals.push(signal);
            signal.addEventListener('abort', () => {
              throw new Error('listener bug');
            });
            return { threadExists: false, state: {}, messages: [] };
          },
        },
      }),
    };
    const gateway = await start({ adapter: adapter(), logger, agents: { fragile } });
    const load = async () => {
      const response = await fetch(gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: '{ loadAgentState(data: { threadId: "t1", agentName: "fragile" }) { threadExists } }',
        }),
      });
      return (await response.json()).data.loadAgentState;
    };
    expect(await load()).toEqual({ threadExists: false });
    await eventually(() => signals[0]?.aborted === true, 'the signal aborted');
    await new Promise((resolve) => setImmediate(resolve));
    // Nothing reached the process as uncaught: failOnProcessErrors checks after each test.
    await eventually(
      () => lines.some((line) => line.msg === 'an abort listener added by loadState threw; ignored'),
      'the listener logged',
    );
    expect(await load()).toEqual({ threadExists: false });
  });
});

describe('observability hooks', () => {
  it('see each model call, its whole answer once (batched), and a failure with its code', async () => {
    const requests: LLMRequestData[] = [];
    const responses: LLMResponseData[] = [];
    const errors: LLMErrorData[] = [];
    const gateway = await start({
      adapter: adapter(),
      observability: {
        handleRequest: (data) => void requests.push(data),
        handleResponse: (data) => void responses.push(data),
        handleError: (data) => void errors.push(data),
      },
    });
    await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=3]')], { threadId: 't-obs' }));
    expect(requests).toEqual([
      expect.objectContaining({
        threadId: 't-obs',
        model: 'fake-model',
        provider: 'openai',
        messages: [expect.objectContaining({ content: 'hi [tokens=3]' })],
        timestamp: expect.any(Number),
      }),
    ]);
    expect(responses).toEqual([
      expect.objectContaining({
        threadId: 't-obs',
        output: { text: 'tok0 tok1 tok2 ', actionCalls: [] },
        isFinalResponse: true,
        isProgressiveChunk: false,
        latency: expect.any(Number),
      }),
    ]);
    await TRANSPORTS[2].run(gateway, runInput([userMessage('[fail=429]')]));
    expect(errors).toEqual([
      expect.objectContaining({
        error: { code: 'UPSTREAM_RATE_LIMITED', message: expect.stringContaining('429') },
        provider: 'openai',
      }),
    ]);
  });

  it('see every chunk as it streams in progressive mode, then the whole answer', async () => {
    const responses: LLMResponseData[] = [];
    const gateway = await start({
      adapter: adapter(),
      observability: { progressive: true, handleResponse: (data) => void responses.push(data) },
    });
    await TRANSPORTS[0].run(gateway, runInput([userMessage('hi [tokens=3] [delay=5]')]));
    const chunks = responses.filter((r) => r.isProgressiveChunk).map((r) => r.output);
    expect(chunks.join('')).toBe('tok0 tok1 tok2 ');
    expect(chunks.length).toBeGreaterThan(1);
    expect(responses.at(-1)).toMatchObject({ isFinalResponse: true, output: { text: 'tok0 tok1 tok2 ' } });
  });

  it('never slow or fail a run, whatever they throw', async () => {
    const { logger, lines } = capturingLogger();
    const gateway = await start({
      adapter: adapter(),
      logger,
      observability: {
        progressive: true,
        handleRequest: () => {
          throw new Error('sync bug');
        },
        handleResponse: async () => {
          throw new Error('async bug');
        },
      },
    });
    const outcome = await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=2]')]));
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('tok0 tok1 ');
    await eventually(
      () => lines.filter((line) => line.msg === 'an observability hook failed').length >= 2,
      'the log lines',
    );
  });
});
