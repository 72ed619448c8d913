import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient } from 'graphql-ws';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import WebSocket from 'ws';
import type { ModelAdapter, ModelOutput } from '../src/adapters/adapter.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { apiKeyAuthenticator } from '../src/auth/api-keys.js';
import { anyOf } from '../src/auth/authenticate.js';
import { AuthUnavailableError } from '../src/core/errors.js';
import { jwtAuthenticator } from '../src/auth/jwt.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { close, listen } from './support/loopback.js';
import { RedisServer } from './support/redis.js';
import { until } from './support/threads.js';

// Refusals that keep one principal's things from another, or tell a client the truth about why it
// was refused: a JWT without a subject, keys that cannot be fetched behind anyOf(), and a thread
// store that is down while callers are authenticated.

const KEY_A = 'key-a-0123456789abcdef-secret';
const KEY_B = 'key-b-0123456789abcdef-secret';
const JWT_SECRET = 'a-shared-secret-of-at-least-32-characters!';
const HELLO = JSON.stringify({ query: '{ hello }' });

const { start } = gatewaysPerTest();

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('JWTs', () => {
  it('refuses a JWT without a subject with 401: tokens without `sub` would otherwise share one principal and its threads', async () => {
    const gateway = await start({ authenticate: jwtAuthenticator({ secret: JWT_SECRET }) });
    const key = new TextEncoder().encode(JWT_SECRET);
    const withSubject = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('user-1')
      .setExpirationTime('5m')
      .sign(key);
    expect((await post(gateway.url, HELLO, bearer(withSubject))).status).toBe(200);
    for (const claims of [{}, { sub: '' }, { sub: 42 }]) {
      const token = await new SignJWT(claims as Record<string, unknown>)
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime('5m')
        .sign(key);
      const refused = await post(gateway.url, HELLO, bearer(token));
      expect(refused.status).toBe(401);
      expect(refused.json.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  it('answers 503 AUTH_UNAVAILABLE behind anyOf(API keys, JWT with a JWKS) while the keys cannot be fetched, not 401', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    let jwksUp = false;
    const jwks = createServer((_req, res) => {
      if (!jwksUp) return void res.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    const jwksUrl = `${await listen(jwks)}/.well-known/jwks.json`;
    try {
      const gateway = await start({ authenticate: anyOf(apiKeyAuthenticator([KEY_A]), jwtAuthenticator({ jwksUrl })) });
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setSubject('user-7')
        .setExpirationTime('5m')
        .sign(privateKey);
      const unavailable = await post(gateway.url, HELLO, bearer(token));
      expect(unavailable.status).toBe(503);
      expect(unavailable.json.errors[0].extensions.code).toBe('AUTH_UNAVAILABLE');
      // The API keys beside it still work, and a wrong key is still the client's mistake.
      expect((await post(gateway.url, HELLO, bearer(KEY_A))).status).toBe(200);
      expect((await post(gateway.url, HELLO, bearer('not-a-key-0123456789abcdef'))).status).toBe(401);
      // Once the keys can be fetched, the token is accepted: within the `retry-after` the refusal gave (a failed fetch is
      // not repeated for 5 s).
      jwksUp = true;
      const accepted = await until(
        async () => (await post(gateway.url, HELLO, bearer(token))).status,
        (status) => status === 200,
        'the token accepted once the keys can be fetched',
        10_000,
      );
      expect(accepted).toBe(200);
    } finally {
      await close(jwks);
    }
  });
});

/**
 * A graphql-ws client (no retries) asking `{ hello }` with `connectionParams`: how its socket closed, and
 * what it was answered.
 */
async function wsHello(wsUrl: string, connectionParams: Record<string, unknown>) {
  let closed: { code: number; reason: string } | undefined;
  const client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams,
    on: { closed: (event: any) => (closed = { code: event.code, reason: event.reason }) },
  });
  const answers: unknown[] = [];
  await new Promise<void>((resolve) =>
    client.subscribe(
      { query: '{ hello }' },
      { next: (r) => answers.push(r), error: () => resolve(), complete: resolve },
    ),
  );
  await client.dispose();
  return { ...closed, answers };
}

describe('a refused WebSocket says why, as HTTP does', () => {
  it('closes with 4403 and the reason HTTP gives its 401 (for a missing credential, where it goes in connection_init)', async () => {
    const gateway = await start({
      authenticate: anyOf(apiKeyAuthenticator([KEY_A]), jwtAuthenticator({ secret: JWT_SECRET })),
    });
    const wrongKey = await post(gateway.url, HELLO, bearer('not-a-key-0123456789abcdef'));
    expect(wrongKey.status).toBe(401);
    expect(await wsHello(gateway.wsUrl, { authorization: 'Bearer not-a-key-0123456789abcdef' })).toEqual({
      code: 4403,
      reason: `Forbidden: ${wrongKey.json.errors[0].message}`,
      answers: [],
    });
    // A JWT refused for a claim: the claim and how, as over HTTP.
    const otherAudience = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('user-1')
      .setAudience('https://elsewhere.test')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_SECRET));
    const gatewayWithAudience = await start({
      authenticate: jwtAuthenticator({ secret: JWT_SECRET, audience: 'https://api.test' }),
    });
    const refusedToken = await post(gatewayWithAudience.url, HELLO, bearer(otherAudience));
    expect(refusedToken.status).toBe(401);
    expect(refusedToken.json.errors[0].message).toMatch(/"aud" claim/);
    expect(await wsHello(gatewayWithAudience.wsUrl, { authorization: `Bearer ${otherAudience}` })).toEqual({
      code: 4403,
      reason: `Forbidden: ${refusedToken.json.errors[0].message}`,
      answers: [],
    });
    expect(await wsHello(gateway.wsUrl, {})).toEqual({
      code: 4403,
      reason:
        'Forbidden: authentication is required: send "authorization": "Bearer <credential>" in connection_init\'s payload',
      answers: [],
    });
    expect(await wsHello(gateway.wsUrl, { authorization: `Bearer ${KEY_A}` })).toMatchObject({
      answers: [{ data: { hello: expect.any(String) } }],
    });
  });

  it('closes with 1013 and the reason HTTP gives its 503, cut to the 123 bytes a close reason holds, never inside a character', async () => {
    const why = `The key server cannot be reached: ${'é'.repeat(80)}.`;
    const gateway = await start({
      authenticate: () => {
        throw new AuthUnavailableError(why);
      },
    });
    const http = await post(gateway.url, HELLO, bearer('any-credential-0123456789'));
    expect(http.status).toBe(503);
    expect(http.json.errors[0].message).toBe(why);
    const { code, reason } = await wsHello(gateway.wsUrl, { authorization: 'Bearer any-credential-0123456789' });
    expect(code).toBe(1013);
    // "Try again later: " (17 bytes), "The key server cannot be reached: " (34), 34 "é" (68) and "…" (3): 122 bytes;
    // a 35th "é" would make 124.
    expect(reason).toBe(`Try again later: The key server cannot be reached: ${'é'.repeat(34)}…`);
    expect(Buffer.byteLength(reason!)).toBeLessThanOrEqual(123);
  });
});

/** A model that answers at once. */
const answering: ModelAdapter = {
  name: 'answering',
  async stream(_request, output: ModelOutput) {
    const id = output.textStart();
    output.textContent(id, 'answered');
    output.textEnd(id);
  },
};

describe('authentication on, the thread store down', () => {
  let redis: RedisServer;
  let agent: FakeAgUiAgent;
  let agentUrl: string;
  beforeAll(async () => {
    agent = new FakeAgUiAgent();
    [redis, agentUrl] = await Promise.all([RedisServer.start(), agent.start()]);
  });
  afterAll(async () => {
    await Promise.all([redis.close(), agent.stop()]);
  });

  it('fails loadAgentState with STORE_UNAVAILABLE, and refuses an agent run on another principal\'s thread id even with onStoreFailure "serve"', async () => {
    const gateway = await start({
      adapter: answering,
      authenticate: apiKeyAuthenticator([KEY_A, KEY_B]),
      agents: { helper: agUiAgent({ url: agentUrl }) },
      threads: {
        redisUrl: redis.url,
        keyPrefix: `down-${Math.random().toString(36).slice(2)}:`,
        onStoreFailure: 'serve',
      },
    });
    const run = (key: string, data: unknown) =>
      post(
        gateway.url,
        JSON.stringify({
          query:
            'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId status { ... on BaseResponseStatus { code } } } }',
          variables: { data },
        }),
        bearer(key),
      );
    const loadState = (key: string, threadId: string) =>
      post(
        gateway.url,
        JSON.stringify({
          query: 'query($data: LoadAgentStateInput!) { loadAgentState(data: $data) { threadExists state messages } }',
          variables: { data: { threadId, agentName: 'helper' } },
        }),
        bearer(key),
      );

    // A's thread, recorded while the store is up.
    const threadId = `a-thread-${Math.random().toString(36).slice(2)}`;
    expect(
      (await run(KEY_A, runInput([userMessage('mine')], { threadId, agentSession: { agentName: 'helper' } }))).json.data
        .generateCopilotResponse.status.code,
    ).toBe('Success');
    const asked = agent.requests.length;
    expect(asked).toBe(1);

    await redis.stop();
    await until(
      async () => (await (await fetch(new URL('/ready', gateway.url))).json()).checks.threadStore.reachable,
      (reachable) => reachable === false,
      'the gateway to see the store down',
    );

    // Whose thread it is cannot be checked: not "no such thread", but the store's failure.
    for (const key of [KEY_A, KEY_B]) {
      const state = await loadState(key, threadId);
      expect(state.json.errors[0].extensions.code).toBe('STORE_UNAVAILABLE');
    }
    // B's agent run on A's thread id: the agent, which keeps state by thread id for everyone, is not asked.
    const intruding = await run(
      KEY_B,
      runInput([userMessage('theirs now')], { threadId, agentSession: { agentName: 'helper' } }),
    );
    expect(intruding.json.errors[0].extensions.code).toBe('STORE_UNAVAILABLE');
    expect(agent.requests.length).toBe(asked);
    // A model run, which keeps nothing by thread id elsewhere, is still served unrecorded ("serve").
    expect(
      (await run(KEY_B, runInput([userMessage('a model run')]))).json.data.generateCopilotResponse.status.code,
    ).toBe('Success');
  });
});
