import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { close, fakeListener, listen } from './support/loopback.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// Copilot Cloud input guardrails: a fake guardrails service that speaks Copilot Cloud's
// `POST /guardrails/validate` ({input, validTopics, invalidTopics, messages} → {status, reason}).

const model = new FakeOpenAI();
const checks: { headers: IncomingMessage['headers']; body: any }[] = [];
const service: Server = createServer(
  fakeListener(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    checks.push({ headers: req.headers, body });
    if (req.url !== '/guardrails/validate') return void res.writeHead(404).end();
    if (body.input.includes('[guard-500]'))
      return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}');
    if (body.input.includes('[guard-hang]')) return; // never answers
    if (body.input.includes('[guard-garbage]'))
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    const denied = body.invalidTopics.some((topic: string) => body.input.toLowerCase().includes(topic.toLowerCase()));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        denied
          ? { status: 'denied', reason: 'I can only help with questions about your account.' }
          : { status: 'allowed', reason: '' },
      ),
    );
  }),
);
let baseURL: string;
let guardrailsUrl: string;
beforeAll(async () => {
  [baseURL, guardrailsUrl] = await Promise.all([model.start(), listen(service)]);
});
afterAll(async () => {
  service.closeAllConnections();
  await Promise.all([model.stop(), close(service)]);
});
const { start } = gatewaysPerTest();
const gatewayOptions = () => ({
  adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', maxRetries: 0 }),
  guardrails: { url: guardrailsUrl, timeoutMs: 1_500 },
});
const cloud = { guardrails: { inputValidationRules: { allowList: ['account'], denyList: ['weather'] } } };
const KEY = { 'X-CopilotCloud-Public-API-Key': 'ck_pub_test' };
const at = new Date().toISOString();

for (const transport of TRANSPORTS) {
  describe(`guardrails (${transport.name})`, () => {
    it('let an allowed request through, after sending the service the input, the topics and the earlier turns with the key', async () => {
      const gateway = await start(gatewayOptions());
      const [beforeChecks, beforeModel] = [checks.length, model.requests.length];
      const outcome = await transport.run(
        gateway,
        runInput(
          [
            userMessage('hello', 'u1'),
            { id: 'a1', createdAt: at, textMessage: { role: 'assistant', content: 'Hi!' } },
            userMessage('my account balance [tokens=2]', 'u2'),
          ],
          { cloud },
        ),
        { headers: KEY },
      );
      expect(outcome.status.code).toBe('Success');
      expect(textOf(outcome)).toBe('tok0 tok1 ');
      expect(checks.length).toBe(beforeChecks + 1);
      expect(checks[beforeChecks].headers['x-copilotcloud-public-api-key']).toBe('ck_pub_test');
      expect(checks[beforeChecks].body).toEqual({
        input: 'my account balance [tokens=2]',
        validTopics: ['account'],
        invalidTopics: ['weather'],
        messages: [
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'Hi!' },
        ],
      });
      expect(model.requests.length).toBe(beforeModel + 1);
    });

    it('stop a denied request with the reason, as an assistant message and a GUARDRAILS_VALIDATION_FAILED status, calling no model', async () => {
      const gateway = await start(gatewayOptions());
      const before = model.requests.length;
      const outcome = await transport.run(gateway, runInput([userMessage('what is the weather?')], { cloud }), {
        headers: KEY,
      });
      expect(outcome.status).toMatchObject({
        code: 'Failed',
        reason: 'GUARDRAILS_VALIDATION_FAILED',
        details: {
          code: 'GUARDRAILS_VALIDATION_FAILED',
          guardrailsReason: 'I can only help with questions about your account.',
        },
      });
      expect(textOf(outcome)).toBe('I can only help with questions about your account.');
      expect(model.requests.length).toBe(before);
    });

    it('refuse a request without the public API key before anything runs', async () => {
      const gateway = await start(gatewayOptions());
      const [beforeChecks, beforeModel] = [checks.length, model.requests.length];
      const outcome = await transport.run(gateway, runInput([userMessage('my account')], { cloud }));
      expect(outcome.errors?.[0]?.extensions).toMatchObject({ code: 'MISSING_PUBLIC_API_KEY', statusCode: 401 });
      expect(outcome.errors?.[0]?.message).toContain('X-CopilotCloud-Public-API-Key');
      expect([checks.length, model.requests.length]).toEqual([beforeChecks, beforeModel]);
    });

    it.each([
      ['fails', '[guard-500]', 'UPSTREAM_UNAVAILABLE'],
      ['does not answer in time', '[guard-hang]', 'UPSTREAM_TIMEOUT'],
      ['answers something else', '[guard-garbage]', 'UPSTREAM_BAD_RESPONSE'],
    ])('fail closed when the service %s, calling no model', async (_what, prompt, code) => {
      const gateway = await start(gatewayOptions());
      const before = model.requests.length;
      const outcome = await transport.run(gateway, runInput([userMessage(`account ${prompt}`)], { cloud }), {
        headers: KEY,
      });
      expect(outcome.status).toMatchObject({ code: 'Failed', details: { code } });
      expect(outcome.status.details.description).toMatch(/not passed on/);
      expect(model.requests.length).toBe(before);
    });
  });
}

describe('guardrails', () => {
  it('are not asked when the last message is not the user’s', async () => {
    const gateway = await start(gatewayOptions());
    const before = checks.length;
    const outcome = await TRANSPORTS[2].run(
      gateway,
      runInput(
        [
          userMessage('weather please'),
          { id: 'c1', createdAt: at, actionExecutionMessage: { name: 'lookup', arguments: '{}' } },
          {
            id: 'r1',
            createdAt: at,
            resultMessage: { actionExecutionId: 'c1', actionName: 'lookup', result: 'sunny' },
          },
        ],
        { cloud },
      ),
    );
    expect(outcome.status.code).toBe('Success');
    expect(checks.length).toBe(before);
  });
});
