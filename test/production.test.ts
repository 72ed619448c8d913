import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ApolloClient, Defer20220824Handler, HttpLink, InMemoryCache, gql } from './clients/apollo.js';
import { CopilotRuntimeClient } from '@copilotkit/runtime-client-gql';
import { createClient } from 'graphql-ws';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { pino } from 'pino';
import WebSocket from 'ws';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { AnthropicAdapter } from '../src/adapters/anthropic.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { anyOf, bearerToken } from '../src/auth/authenticate.js';
import { apiKeyAuthenticator } from '../src/auth/api-keys.js';
import { jwtAuthenticator } from '../src/auth/jwt.js';
import { MemoryRateLimiter } from '../src/limits/rate-limiter.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import type { Principal } from '../src/core/principal.js';
import { possibleTypes } from '../src/index.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeAnthropic } from './support/fake-anthropic.js';
import { FakeCopilotKitEndpoint } from './support/fake-copilotkit-endpoint.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { close, listen } from './support/loopback.js';
import { RedisServer } from './support/redis.js';
import { RedisCluster } from './support/redis-cluster.js';
import { COPILOT_RUN, JOIN_RUN, STOP, THREAD, textOfEvents, until } from './support/threads.js';

// What a platform team deploys: authentication and thread ownership, rate limits, metrics, draining,
// keep-alive and the first-token timeout, through real clients on loopback.

const KEY_A = 'key-a-0123456789abcdef-secret';
const KEY_B = 'key-b-0123456789abcdef-secret';
const JWT_SECRET = 'a-shared-secret-of-at-least-32-characters!';

const fake = new FakeOpenAI();
let baseURL: string;
let redis: RedisServer;
/** Rate limits on a Redis Cluster: a client's keys are one slot, clients spread over the primaries. */
let cluster: RedisCluster;
const { start } = gatewaysPerTest();

beforeAll(async () => {
  [baseURL, redis, cluster] = await Promise.all([fake.start(), RedisServer.start(), RedisCluster.start()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([fake.stop(), redis.close(), cluster.close()]);
});

/**
 * A model that streams `first`, then waits until `release()` (or the run's abort) before its last
 * token; `thinkMs` delays the first token.
 */
class HoldingAdapter implements ModelAdapter {
  readonly name = 'holding';
  started = 0;
  aborted = 0;
  private waiting: (() => void)[] = [];
  constructor(private readonly options: { thinkMs?: number; hold?: boolean } = {}) {}

  release(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }

  async stream(_request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    this.started++;
    const wait = (until: (wake: () => void) => void) =>
      new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          this.aborted++;
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        until(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    if (this.options.thinkMs) await wait((wake) => setTimeout(wake, this.options.thinkMs).unref());
    const id = output.textStart();
    output.textContent(id, 'first ');
    if (this.options.hold !== false) await wait((wake) => this.waiting.push(wake));
    output.textContent(id, 'last');
    output.textEnd(id);
  }
}

/** A log that keeps every line written, to prove what never appears in it. */
function capturedLogger() {
  const lines: string[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { logger, text: () => lines.join('') };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Runs through the stock client; resolves with its last snapshot of generateCopilotResponse. */
async function stockRun(client: CopilotRuntimeClient, data: unknown): Promise<any> {
  const reader = client.asStream(client.generateCopilotResponse({ data: data as any })).getReader();
  let last: any;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last?.generateCopilotResponse;
    last = value;
  }
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const HELLO = { query: '{ hello }' };

/**
 * A graphql-ws subscription with connection params (and, when given, headers on the upgrade request);
 * resolves with its events, errors and how its socket closed.
 */
function subscribe(
  wsUrl: string,
  query: string,
  variables: Record<string, unknown>,
  connectionParams: Record<string, unknown> = {},
  headers?: Record<string, string>,
) {
  const events: any[] = [];
  const errors: any[] = [];
  let closeCode: number | undefined;
  let closeReason: string | undefined;
  const client = createClient({
    url: wsUrl,
    webSocketImpl: headers
      ? class extends WebSocket {
          constructor(url: string, protocols?: string | string[]) {
            super(url, protocols, { headers });
          }
        }
      : WebSocket,
    retryAttempts: 0,
    connectionParams,
    on: {
      closed: (event: any) => {
        closeCode = event?.code;
        closeReason = event?.reason;
      },
    },
  });
  const done = new Promise<void>((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (result: any) =>
          result.errors ? errors.push(...result.errors) : events.push(Object.values(result.data)[0]),
        error: (error) => {
          errors.push(error);
          resolve();
        },
        complete: () => resolve(),
      },
    );
  });
  return {
    events,
    errors,
    done,
    closeCode: () => closeCode,
    closeReason: () => closeReason,
    dispose: () => client.dispose(),
  };
}

const whoami: ServerAction = {
  name: 'whoami',
  description: 'Says who is asking.',
  handler: (_args, context) => `principal=${context.principal?.id ?? 'none'}`,
};

describe('authentication', () => {
  it('refuses requests without valid credentials over HTTP, AG-UI and WebSocket, and serves those with them', async () => {
    const adapter = new HoldingAdapter({ hold: false });
    const { logger, text: logs } = capturedLogger();
    const gateway = await start({ adapter, logger, authenticate: apiKeyAuthenticator([KEY_A]) });

    const missing = await post(gateway.url, HELLO);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect(missing.json.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const wrong = await post(gateway.url, HELLO, auth('not-the-key-0123456789'));
    expect(wrong.status).toBe(401);
    expect(wrong.json.errors[0].message).toMatch(/not accepted \(unknown API key\)/);
    expect((await post(gateway.url, HELLO, auth(KEY_A))).json).toEqual({ data: { hello: 'Hello World' } });

    const agUi = await post(`${gateway.url}/agent/default/run`, {
      threadId: 't',
      runId: 'r',
      messages: [],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    expect(agUi.status).toBe(401);
    expect(agUi.json).toMatchObject({ code: 'UNAUTHENTICATED' });
    // Only a browser opening the page is let through without credentials, however a query is encoded.
    const encodedQuery = await fetch(`${gateway.url}?%71uery=%7Bhello%7D`, {
      headers: { accept: 'text/html', 'apollo-require-preflight': 'true' },
    });
    expect(encodedQuery.status).toBe(401);
    const page = await fetch(gateway.url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain('Hello World');
    // Health, readiness and the metrics stay open to probes.
    for (const path of ['/health', '/ready', '/metrics'])
      expect((await fetch(new URL(path, gateway.url))).status).toBe(200);

    // WebSocket: closed with 4403 before any operation runs.
    const refused = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await refused.done;
    expect(refused.closeCode()).toBe(4403);
    expect(refused.events).toEqual([]);
    const badToken = subscribe(
      gateway.wsUrl,
      COPILOT_RUN,
      { data: runInput([userMessage('hi')]) },
      { authorization: 'Bearer wrong-key-0123456789' },
    );
    await badToken.done;
    expect(badToken.closeCode()).toBe(4403);
    expect(adapter.started).toBe(0);

    const served = subscribe(
      gateway.wsUrl,
      COPILOT_RUN,
      { data: runInput([userMessage('hi')]) },
      { authorization: `Bearer ${KEY_A}` },
    );
    await served.done;
    expect(textOfEvents(served.events)).toBe('first last');
    await served.dispose();

    // The stock client, with the key in its headers.
    const client = new CopilotRuntimeClient({ url: gateway.url, headers: auth(KEY_A) });
    expect((await stockRun(client, runInput([userMessage('hi')]))).status).toMatchObject({ code: 'Success' });

    // No secret in any log line: neither the key nor what was wrongly offered.
    expect(logs()).not.toContain(KEY_A);
    expect(logs()).not.toContain('not-the-key-0123456789');
    expect(logs()).not.toContain('wrong-key-0123456789');
  });

  it('takes only ASCII spaces and tabs around a credential: Unicode whitespace makes it another, wrong one', async () => {
    const gateway = await start({
      adapter: new HoldingAdapter({ hold: false }),
      authenticate: apiKeyAuthenticator([KEY_A]),
    });
    // HTTP: a header carries Latin-1, so U+00A0 is what can be sent around the key.
    for (const header of [
      `Bearer ${KEY_A}\u00a0`,
      `Bearer\u00a0${KEY_A}`,
      `\u00a0Bearer ${KEY_A}`,
      `Bearer \u00a0${KEY_A}`,
    ]) {
      const refused = await post(gateway.url, HELLO, { authorization: header });
      expect({ header: JSON.stringify(header), status: refused.status }).toEqual({
        header: JSON.stringify(header),
        status: 401,
      });
      expect(refused.json.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    expect((await post(gateway.url, HELLO, { authorization: `Bearer \t ${KEY_A}` })).status).toBe(200);
    expect((await fetch(`${gateway.url}/info`, { headers: { authorization: `Bearer ${KEY_A}\u00a0` } })).status).toBe(
      401,
    );
    expect((await fetch(`${gateway.url}/info`, { headers: auth(KEY_A) })).status).toBe(200);

    // WebSocket: connection_init's payload is JSON, so any character can be sent.
    const wsRun = (authorization: string) => subscribe(gateway.wsUrl, '{ hello }', {}, { authorization });
    for (const authorization of [
      `Bearer ${KEY_A}\u00a0`,
      `Bearer ${KEY_A}\u3000`,
      `\ufeffBearer ${KEY_A}`,
      `Bearer ${KEY_A}\u2028`,
      `Bearer\u3000${KEY_A}`,
      `Bearer ${KEY_A}\n`,
    ]) {
      const refused = wsRun(authorization);
      await refused.done;
      expect({ authorization: JSON.stringify(authorization), close: refused.closeCode() }).toEqual({
        authorization: JSON.stringify(authorization),
        close: 4403,
      });
      expect(refused.events).toEqual([]);
    }
    const served = wsRun(` \tBearer \t${KEY_A} \t`);
    await served.done;
    expect(served.events).toEqual(['Hello World']);
    await served.dispose();
  });

  it('gives the principal to hooks and server-side actions', async () => {
    const seen: (Principal | undefined)[] = [];
    const gateway = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
      actions: [whoami],
      authenticate: apiKeyAuthenticator([KEY_A]),
      hooks: { onBeforeRequest: ({ principal }) => void seen.push(principal) },
    });
    const client = new CopilotRuntimeClient({ url: gateway.url, headers: auth(KEY_A) });
    const messages: any[] = (await stockRun(client, runInput([userMessage('[tool=whoami]')]))).messages;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'api-key', id: expect.stringMatching(/^api-key:[0-9a-f]{12}$/) });
    expect(JSON.stringify(messages)).toContain(`principal=${seen[0]!.id}`);
    expect(JSON.stringify(seen)).not.toContain(KEY_A);
  });

  it('gives the principal to agent clients, whose hooks may send it upstream', async () => {
    const agent = new FakeAgUiAgent();
    const agentUrl = await agent.start();
    try {
      const gateway = await start({
        authenticate: apiKeyAuthenticator([KEY_A]),
        agents: {
          helper: agUiAgent({
            url: agentUrl,
            onBeforeRequest: ({ principal }) => ({ headers: { 'x-end-user': principal?.id ?? 'none' } }),
          }),
        },
      });
      const run = subscribe(
        gateway.wsUrl,
        COPILOT_RUN,
        { data: runInput([userMessage('[tokens=2]')], { agentSession: { agentName: 'helper' } }) },
        { authorization: `Bearer ${KEY_A}` },
      );
      await run.done;
      await run.dispose();
      expect(run.events.at(-1).status).toMatchObject({ code: 'Success' });
      expect(agent.requests[0].headers['x-end-user']).toMatch(/^api-key:[0-9a-f]{12}$/);
    } finally {
      await agent.stop();
    }
  });

  it('verifies JWTs with a shared secret: sub is the principal; expired or wrong-audience tokens are refused', async () => {
    const seen: (Principal | undefined)[] = [];
    const gateway = await start({
      adapter: new HoldingAdapter({ hold: false }),
      authenticate: anyOf(
        apiKeyAuthenticator([KEY_A]),
        jwtAuthenticator({ secret: JWT_SECRET, issuer: 'https://issuer.test', audience: 'gateway' }),
      ),
      hooks: { onBeforeRequest: ({ principal }) => void seen.push(principal) },
    });
    const key = new TextEncoder().encode(JWT_SECRET);
    const token = (claims: { aud?: string; exp?: number | string }) =>
      new SignJWT({ role: 'tester' })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('user-42')
        .setIssuer('https://issuer.test')
        .setAudience(claims.aud ?? 'gateway')
        .setExpirationTime(claims.exp ?? '5m')
        .sign(key);
    const good = await token({});
    const run = {
      query:
        'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId status { ... on BaseResponseStatus { code } } } }',
      variables: { data: runInput([userMessage('hi')]) },
    };
    const accepted = await post(gateway.url, run, auth(good));
    expect(accepted.json.data.generateCopilotResponse.status.code).toBe('Success');
    expect(seen[0]).toMatchObject({ id: 'jwt:user-42', method: 'jwt', claims: { role: 'tester', sub: 'user-42' } });
    // An API key still works beside it.
    expect((await post(gateway.url, HELLO, auth(KEY_A))).status).toBe(200);

    const expired = await post(gateway.url, HELLO, auth(await token({ exp: Math.floor(Date.now() / 1000) - 3600 })));
    expect(expired.status).toBe(401);
    expect(expired.json.errors[0].message).toMatch(/expired/);
    const otherAudience = await post(gateway.url, HELLO, auth(await token({ aud: 'someone-else' })));
    expect(otherAudience.status).toBe(401);
    const forged = await post(gateway.url, HELLO, auth(`${good.slice(0, -4)}AAAA`));
    expect(forged.status).toBe(401);
    expect(JSON.stringify([expired.json, otherAudience.json, forged.json])).not.toContain(good);
  });

  it('says which claim of a refused JWT failed, never the value it should have had', async () => {
    const gateway = await start({
      authenticate: jwtAuthenticator({ secret: JWT_SECRET, issuer: 'https://issuer.test', audience: 'copilot-api' }),
    });
    const key = new TextEncoder().encode(JWT_SECRET);
    const sign = (claims: { iss?: string | null; aud?: string | null; nbf?: number; typ?: boolean }) => {
      const jwt = new SignJWT(claims.nbf !== undefined ? { nbf: claims.nbf } : {})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('user-42')
        .setExpirationTime('5m');
      if (claims.iss !== null) jwt.setIssuer(claims.iss ?? 'https://issuer.test');
      if (claims.aud !== null) jwt.setAudience(claims.aud ?? 'copilot-api');
      return jwt.sign(key);
    };
    const refusal = async (token: string) => {
      const answer = await post(gateway.url, HELLO, auth(token));
      expect(answer.status).toBe(401);
      expect(answer.json.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      const ws = subscribe(gateway.wsUrl, '{ hello }', {}, { authorization: `Bearer ${token}` });
      await ws.done;
      expect(ws.closeCode()).toBe(4403);
      return answer.json.errors[0].message as string;
    };
    const now = Math.floor(Date.now() / 1000);
    const messages = {
      notYet: await refusal(await sign({ nbf: now + 3600 })),
      otherAudience: await refusal(await sign({ aud: 'someone-else' })),
      noAudience: await refusal(await sign({ aud: null })),
      otherIssuer: await refusal(await sign({ iss: 'https://elsewhere.test' })),
      noIssuer: await refusal(await sign({ iss: null })),
    };
    expect(messages).toEqual({
      notYet: 'The credentials were not accepted (the token is not valid yet ("nbf" is in the future)).',
      otherAudience: 'The credentials were not accepted (the token\'s "aud" claim names no accepted audience).',
      noAudience: 'The credentials were not accepted (the token has no "aud" claim).',
      otherIssuer: 'The credentials were not accepted (the token\'s "iss" claim is not the accepted issuer).',
      noIssuer: 'The credentials were not accepted (the token has no "iss" claim).',
    });
    // Which values would have been accepted is not said, nor what the token carried.
    for (const value of ['gateway', 'issuer.test', 'someone-else', 'elsewhere.test'])
      expect(JSON.stringify(messages)).not.toContain(value);
    // Still accepted within the clock tolerance (30 s).
    expect((await post(gateway.url, HELLO, auth(await sign({ nbf: now + 10 })))).status).toBe(200);
  });

  it('verifies JWTs against a JWKS URL, and answers 503 AUTH_UNAVAILABLE while the keys cannot be fetched', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    let jwksUp: boolean | 'error' = true;
    const jwks = createServer((req, res) => {
      if (jwksUp === 'error') return void res.writeHead(503).end('maintenance');
      if (!jwksUp) return res.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    const jwksUrl = `${await listen(jwks)}/.well-known/jwks.json`;
    try {
      const sign = () =>
        new SignJWT({})
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setSubject('user-7')
          .setExpirationTime('5m')
          .sign(privateKey);
      const gateway = await start({ authenticate: jwtAuthenticator({ jwksUrl }) });
      expect((await post(gateway.url, HELLO, auth(await sign()))).status).toBe(200);

      jwksUp = false;
      const cold = await start({ authenticate: jwtAuthenticator({ jwksUrl }) });
      const unavailable = await post(cold.url, HELLO, auth(await sign()));
      expect(unavailable.status).toBe(503);
      expect(unavailable.json.errors[0].extensions.code).toBe('AUTH_UNAVAILABLE');
      expect(unavailable.headers.get('retry-after')).toBe('5');
      // A key server that answers, but not with the keys: still the gateway's problem, not the token's.
      jwksUp = 'error';
      const erring = await start({ authenticate: jwtAuthenticator({ jwksUrl }) });
      const answered = await post(erring.url, HELLO, auth(await sign()));
      expect(answered.status).toBe(503);
      expect(answered.json.errors[0].extensions.code).toBe('AUTH_UNAVAILABLE');
    } finally {
      await close(jwks);
    }
  });
});

describe('a JWKS that fails or is too large', () => {
  it('asks a failing key server again only after 5 s, and takes at most 1 MiB and 100 keys of a key set', async () => {
    // Found from outside: while the key server failed, every token naming an unknown key made the gateway fetch the
    // set again; and a set of 200,000 keys (130 MB) was read whole and held.
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    let answer: 'keys' | 'error' | 'huge' | 'many' = 'error';
    let fetches = 0;
    const jwks = createServer((_req, res) => {
      fetches++;
      if (answer === 'error') return void res.writeHead(500).end('down');
      res.setHeader('content-type', 'application/json');
      if (answer === 'huge') return void res.end(JSON.stringify({ keys: [jwk], padding: 'x'.repeat(2 * 1024 * 1024) }));
      if (answer === 'many') {
        return void res.end(
          JSON.stringify({ keys: Array.from({ length: 101 }, (_, i) => ({ ...jwk, kid: `k${i}` })) }),
        );
      }
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    const jwksUrl = `${await listen(jwks)}/.well-known/jwks.json`;
    const sign = (kid: string) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid })
        .setSubject('user-8')
        .setExpirationTime('5m')
        .sign(privateKey);
    const unavailable = async (url: string, token: string) => {
      const refused = await post(url, HELLO, auth(token));
      expect(refused.status).toBe(503);
      expect(refused.json.errors[0].extensions.code).toBe('AUTH_UNAVAILABLE');
    };
    try {
      const gateway = await start({ authenticate: jwtAuthenticator({ jwksUrl }) });
      for (let index = 0; index < 5; index++) await unavailable(gateway.url, await sign(`unknown-${index}`));
      expect(fetches).toBe(1);
      for (const shape of ['huge', 'many'] as const) {
        answer = shape;
        const fresh = await start({ authenticate: jwtAuthenticator({ jwksUrl }) });
        await unavailable(fresh.url, await sign('k1'));
      }
      answer = 'keys';
      const working = await start({ authenticate: jwtAuthenticator({ jwksUrl }) });
      expect((await post(working.url, HELLO, auth(await sign('k1')))).status).toBe(200);
      // A critical header parameter jose does not know is named as such, not as the algorithm.
      const critical = await new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid: 'k1', crit: ['x-unknown'], 'x-unknown': true })
        .setSubject('user-8')
        .setExpirationTime('5m')
        .sign(privateKey, { crit: { 'x-unknown': true } });
      const refused = await post(working.url, HELLO, auth(critical));
      expect(refused.status).toBe(401);
      expect(refused.json.errors[0].message).toBe(
        "The credentials were not accepted (the token's algorithm or a critical header parameter of it is not " +
          'supported).',
      );
    } finally {
      await close(jwks);
    }
  });
});

describe('credentials that expire', () => {
  /** One operation on an existing graphql-ws client: its events and errors, and when it is over. */
  function operation(client: ReturnType<typeof createClient>, query: string, variables: Record<string, unknown>) {
    const events: any[] = [];
    const errors: any[] = [];
    const done = new Promise<void>((resolve) => {
      client.subscribe(
        { query, variables },
        {
          next: (result: any) =>
            result.errors ? errors.push(...result.errors) : events.push(Object.values(result.data)[0]),
          // An `error` message's errors, or what closed the socket.
          error: (error) => {
            errors.push(...(Array.isArray(error) ? error : [error]));
            resolve();
          },
          complete: () => resolve(),
        },
      );
    });
    return { events, errors, done };
  }

  /**
   * A custom hook whose sessions ("Bearer session-N") are good for `firstLifetimeMs` (the first) or a
   * minute (the others) from when they are checked, and a graphql-ws client that keeps its connection
   * (not lazy) and connects again at once when it is closed, with a new session each time.
   */
  function sessions(firstLifetimeMs: number) {
    const checked: { token: string; expiresAt: number }[] = [];
    const authenticate = ({ authorization }: { authorization: string | undefined }): Principal | null => {
      const token = bearerToken(authorization);
      if (!token?.startsWith('session-')) return null;
      const expiresAt = Date.now() + (checked.length === 0 ? firstLifetimeMs : 60_000);
      checked.push({ token, expiresAt });
      return { id: 'user-1', method: 'session', expiresAt };
    };
    let issued = 0;
    const closes: number[] = [];
    const client = (url: string) =>
      createClient({
        url,
        webSocketImpl: WebSocket,
        lazy: false,
        retryAttempts: 3,
        retryWait: async () => {},
        onNonLazyError: () => {},
        // Called for every connection: a fresh session each time.
        connectionParams: () => ({ authorization: `Bearer session-${++issued}` }),
        on: { closed: (event: any) => void closes.push(event?.code) },
      });
    return { authenticate, checked, closes, client };
  }

  it('over WebSocket: refuses operations asked after the expiry, lets the one under way end, then closes with 4403; the graphql-ws client connects again with fresh credentials', async () => {
    const adapter = new HoldingAdapter();
    const session = sessions(1_500);
    const gateway = await start({ adapter, authenticate: session.authenticate });
    const client = session.client(gateway.wsUrl);
    try {
      const underWay = operation(client, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
      await until(
        async () => adapter.started,
        (n) => n === 1,
        'the first run under way',
      );
      const { expiresAt } = session.checked[0];
      await until(
        async () => Date.now(),
        (now) => now > expiresAt,
        'the session expired',
      );

      const late = operation(client, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
      await late.done;
      expect(late.errors).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(/credentials have expired/),
          extensions: expect.objectContaining({ code: 'UNAUTHENTICATED' }),
        }),
      ]);
      expect(late.events).toEqual([]);
      expect(adapter.started).toBe(1);
      expect(session.closes).toEqual([]);

      // The run under way ends as it would have; then, with nothing under way, the connection is closed.
      adapter.release();
      await underWay.done;
      expect(textOfEvents(underWay.events)).toBe('first last');
      expect(underWay.errors).toEqual([]);
      expect(adapter.aborted).toBe(0);
      await until(
        async () => session.checked.length,
        (n) => n === 2,
        'the client connected again',
      );
      expect(session.closes).toEqual([4403]);
      expect(session.checked.map(({ token }) => token)).toEqual(['session-1', 'session-2']);

      // Served on the new connection.
      const next = operation(client, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
      await until(
        async () => adapter.started,
        (n) => n === 2,
        'the second run under way',
      );
      adapter.release();
      await next.done;
      expect(textOfEvents(next.events)).toBe('first last');
      expect(session.closes).toEqual([4403]);
    } finally {
      adapter.release();
      await client.dispose();
    }
  });

  it('over WebSocket: closes an idle connection when its credentials expire, and never early for an expiry past what a timer can wait (24.8 days)', async () => {
    const adapter = new HoldingAdapter({ hold: false });
    const short = sessions(300);
    const gateway = await start({ adapter, authenticate: short.authenticate });
    const client = short.client(gateway.wsUrl);
    try {
      const run = operation(client, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
      await run.done;
      expect(textOfEvents(run.events)).toBe('first last');
      await until(
        async () => short.checked.length,
        (n) => n === 2,
        'the idle connection closed at its expiry, and opened again',
      );
      expect(short.closes).toEqual([4403]);
    } finally {
      await client.dispose();
    }

    // 40 days: more than setTimeout's longest delay, which Node would cut to 1 ms.
    const long = sessions(40 * 24 * 3600_000);
    const patient = await start({ adapter, authenticate: long.authenticate });
    const longClient = long.client(patient.wsUrl);
    const timers = jest.spyOn(globalThis, 'setTimeout');
    try {
      for (let i = 0; i < 2; i++) {
        const run = operation(longClient, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
        await run.done;
        expect(textOfEvents(run.events)).toBe('first last');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(long.closes).toEqual([]);
      expect(long.checked).toHaveLength(1);
      expect(timers.mock.calls.filter(([, ms]) => (ms ?? 0) > 2 ** 31 - 1)).toEqual([]);
    } finally {
      timers.mockRestore();
      await longClient.dispose();
    }
  });

  it('refuses a principal that has already expired (401, 4403), and answers AUTH_UNAVAILABLE for an expiry that is not a time in milliseconds', async () => {
    let expiresAt: unknown = Date.now() - 1;
    const gateway = await start({ authenticate: () => ({ id: 'user-1', method: 'session', expiresAt }) as Principal });
    const expired = await post(gateway.url, HELLO, auth('anything'));
    expect(expired.status).toBe(401);
    expect(expired.json.errors[0]).toMatchObject({
      message: 'The credentials were not accepted (they have expired).',
      extensions: { code: 'UNAUTHENTICATED' },
    });
    const refused = subscribe(
      gateway.wsUrl,
      COPILOT_RUN,
      { data: runInput([userMessage('hi')]) },
      { authorization: 'Bearer anything' },
    );
    await refused.done;
    expect(refused.closeCode()).toBe(4403);

    expiresAt = 'tomorrow';
    const broken = await post(gateway.url, HELLO, auth('anything'));
    expect(broken.status).toBe(503);
    expect(broken.json.errors[0].extensions.code).toBe('AUTH_UNAVAILABLE');
    expiresAt = Number.NaN;
    expect((await post(gateway.url, HELLO, auth('anything'))).status).toBe(503);
    // Seconds, not milliseconds: a mistake of the hook's, which would otherwise refuse everyone as expired.
    expiresAt = Math.floor(Date.now() / 1000) + 3600;
    expect((await post(gateway.url, HELLO, auth('anything'))).status).toBe(503);
    expiresAt = Date.now() + 60_000;
    expect((await post(gateway.url, HELLO, auth('anything'))).json).toEqual({ data: { hello: 'Hello World' } });
  });

  it('sets no expiry on a connection that closed while it was being authenticated', async () => {
    let letThrough!: () => void;
    const gate = new Promise<void>((resolve) => (letThrough = resolve));
    let checked = 0;
    const gateway = await start({
      authenticate: async () => {
        checked++;
        await gate;
        return { id: 'user-1', method: 'session', expiresAt: Date.now() + 123_456_789 };
      },
    });
    const socket = new WebSocket(gateway.wsUrl, 'graphql-transport-ws');
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: 'Bearer anything' } }));
    await until(
      async () => checked,
      (n) => n === 1,
      'the connection being authenticated',
    );
    socket.close();
    await new Promise((resolve) => socket.once('close', resolve));
    const timers = jest.spyOn(globalThis, 'setTimeout');
    try {
      letThrough();
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      // No timer for the expiry (about 1.4 days away, or the longest a timer waits) of a connection that is gone.
      expect(timers.mock.calls.filter(([, ms]) => (ms ?? 0) > 100_000_000)).toEqual([]);
    } finally {
      timers.mockRestore();
    }
  });

  it("takes a JWT's expiry from its exp, plus the clock tolerance", async () => {
    const key = new TextEncoder().encode(JWT_SECRET);
    const authenticate = jwtAuthenticator({ secret: JWT_SECRET, clockToleranceSeconds: 10 });
    const exp = Math.floor(Date.now() / 1000) + 300;
    const expiring = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('user-42')
      .setExpirationTime(exp)
      .sign(key);
    const request = (token: string) => ({
      transport: 'ws' as const,
      authorization: `Bearer ${token}`,
      headers: {},
      clientAddress: undefined,
    });
    expect(await authenticate(request(expiring))).toMatchObject({ id: 'jwt:user-42', expiresAt: (exp + 10) * 1000 });
    const lasting = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('user-42').sign(key);
    expect((await authenticate(request(lasting)))?.expiresAt).toBeUndefined();
  });
});

describe.each([
  ['memory', () => ({})],
  ['redis', () => ({ threads: { redisUrl: redis.url, keyPrefix: `own-${Math.random().toString(36).slice(2)}:` } })],
])('threads belong to their principal (%s store)', (_kind, storeOptions) => {
  it('lets no other principal read, join, stop, continue or restore a thread', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({
      adapter,
      authenticate: apiKeyAuthenticator([KEY_A, KEY_B]),
      ...storeOptions(),
    } as any);
    const threadId = `owned-${Math.random().toString(36).slice(2)}`;
    const owner = subscribe(
      gateway.wsUrl,
      COPILOT_RUN,
      { data: runInput([userMessage('hi')], { threadId }) },
      { authorization: `Bearer ${KEY_A}` },
    );
    await until(
      async () => owner.events.length,
      (n) => n >= 3,
      'the run under way',
    );

    const asB = auth(KEY_B);
    expect(
      (await post(gateway.url, { query: THREAD, variables: { threadId } }, asB)).json.data.copilotThread,
    ).toBeNull();
    expect((await post(gateway.url, { query: STOP, variables: { threadId } }, asB)).json.data.stopCopilotRun).toBe(
      false,
    );
    const intruder = subscribe(gateway.wsUrl, JOIN_RUN, { threadId }, { authorization: `Bearer ${KEY_B}` });
    await intruder.done;
    expect(intruder.errors[0]).toMatchObject({ extensions: { code: 'RUN_NOT_FOUND' } });
    await intruder.dispose();
    const loadState = await post(
      gateway.url,
      {
        query: 'query($data: LoadAgentStateInput!) { loadAgentState(data: $data) { threadExists messages } }',
        variables: { data: { threadId, agentName: 'any' } },
      },
      asB,
    );
    expect(loadState.json.data.loadAgentState).toEqual({ threadExists: false, messages: '[]' });
    const connect = await post(
      `${gateway.url}/agent/default/connect`,
      { threadId, runId: 'x', messages: [], tools: [], context: [], state: {}, forwardedProps: {} },
      asB,
    );
    expect(connect.text).not.toContain('first');

    adapter.release();
    await owner.done;
    await owner.dispose();
    const continued = await post(
      gateway.url,
      {
        query: 'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId } }',
        variables: { data: runInput([userMessage('mine now')], { threadId }) },
      },
      asB,
    );
    expect(continued.json.errors[0].extensions).toMatchObject({ code: 'THREAD_FORBIDDEN' });
    expect(adapter.started).toBe(1);

    // The owner still has it all.
    const mine = (await post(gateway.url, { query: THREAD, variables: { threadId } }, auth(KEY_A))).json.data
      .copilotThread;
    expect(mine.runs).toHaveLength(1);
    expect(mine.messages.map((message: any) => message.content.join(''))).toEqual(['hi', 'first last']);
  });
});

describe('agent threads with authentication on', () => {
  it('does not ask an agent about a thread the store has no record of, since the agent keeps state by thread id for everyone', async () => {
    const endpoint = new FakeCopilotKitEndpoint();
    const endpointUrl = await endpoint.start();
    try {
      endpoint.threads.set('someone-elses', { state: { secret: 42 }, messages: [] });
      const open = await start({ remoteEndpoints: [endpointUrl] });
      const guarded = await start({ remoteEndpoints: [endpointUrl], authenticate: apiKeyAuthenticator([KEY_B]) });
      const load = {
        query: 'query($data: LoadAgentStateInput!) { loadAgentState(data: $data) { threadExists state } }',
        variables: { data: { threadId: 'someone-elses', agentName: 'crewAgent' } },
      };
      // Without authentication the agent is asked (the reference's behaviour)…
      expect((await post(open.url, load)).json.data.loadAgentState).toEqual({
        threadExists: true,
        state: '{"secret":42}',
      });
      const asked = endpoint.calls('/agents/state');
      // …with it, a thread the caller has no record of is not asked about.
      expect((await post(guarded.url, load, auth(KEY_B))).json.data.loadAgentState).toEqual({
        threadExists: false,
        state: '{}',
      });
      expect(endpoint.calls('/agents/state')).toBe(asked);
    } finally {
      await endpoint.stop();
    }
  });
});

describe('rate limits', () => {
  it('refuses a client over its requests per minute with 429 and Retry-After, and still serves others', async () => {
    const gateway = await start({
      authenticate: apiKeyAuthenticator([KEY_A, KEY_B]),
      rateLimits: { requestsPerMinute: 3 },
    });
    for (let i = 0; i < 3; i++) expect((await post(gateway.url, HELLO, auth(KEY_A))).status).toBe(200);
    const refused = await post(gateway.url, HELLO, auth(KEY_A));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.json.errors[0].extensions).toMatchObject({
      code: 'RATE_LIMITED',
      details: { retryAfterSeconds: Number(refused.headers.get('retry-after')) },
    });
    // Another client is not starved by the noisy one.
    expect((await post(gateway.url, HELLO, auth(KEY_B))).status).toBe(200);

    // Over WebSocket each operation counts: B has used one of its three.
    const socket = createClient({
      url: gateway.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { authorization: `Bearer ${KEY_B}` },
    });
    const results: any[] = [];
    for (let i = 0; i < 3; i++) {
      results.push(
        await new Promise((resolve) => {
          let last: any;
          socket.subscribe(
            { query: '{ hello }' },
            { next: (value) => (last = value), error: (error) => resolve({ error }), complete: () => resolve(last) },
          );
        }),
      );
    }
    await socket.dispose();
    expect(results[0]).toEqual({ data: { hello: 'Hello World' } });
    expect(results[1]).toEqual({ data: { hello: 'Hello World' } });
    expect(results[2].error[0]).toMatchObject({ extensions: { code: 'RATE_LIMITED' } });
  });

  it.each([
    ['in memory', () => ({})],
    [
      'shared through Redis by two instances',
      () => ({ threads: { redisUrl: redis.url, keyPrefix: `logins-${Math.random().toString(36).slice(2)}:` } }),
    ],
    [
      'shared through a Redis Cluster by two instances',
      () => ({
        threads: { clusterNodes: cluster.nodes, keyPrefix: `logins-${Math.random().toString(36).slice(2)}:` },
      }),
    ],
  ])(
    'counts failed logins over HTTP and WebSocket against their address, and accepts no credential from it while it is limited, %s',
    async (_kind, storeOptions) => {
      const options: any = {
        authenticate: apiKeyAuthenticator([KEY_A, KEY_B]),
        rateLimits: { requestsPerMinute: 3 },
        trustProxy: 1,
        ...storeOptions(),
      };
      const a = await start(options);
      const b = 'threads' in options ? await start(options) : a;
      // Two addresses behind the proxy, read from X-Forwarded-For over HTTP and on the WebSocket upgrade alike.
      const guesser = { 'x-forwarded-for': '203.0.113.7' };
      const neighbour = { 'x-forwarded-for': '203.0.113.8' };
      const connect = async (url: string, authorization: string, from: Record<string, string>) => {
        const socket = subscribe(url, '{ hello }', {}, { authorization: `Bearer ${authorization}` }, from);
        await socket.done;
        await socket.dispose();
        return { close: socket.closeCode(), reason: socket.closeReason(), events: socket.events };
      };

      // Three wrong keys, two of them over WebSocket: each counts.
      expect((await connect(a.wsUrl, 'guess-number-one-0123', guesser)).close).toBe(4403);
      expect((await connect(b.wsUrl, 'guess-number-two-0123', guesser)).close).toBe(4403);
      expect((await post(a.url, HELLO, { ...auth('guess-number-three-01'), ...guesser })).status).toBe(401);
      const fourth = await connect(b.wsUrl, 'guess-number-four-012', guesser);
      expect(fourth).toMatchObject({
        close: 4429,
        reason: expect.stringMatching(/^Too many failed logins: try again in \d+ s$/),
      });

      // The address is limited: the right key is refused too, over every transport and instance.
      const http = await post(b.url, HELLO, { ...auth(KEY_A), ...guesser });
      expect(http.status).toBe(429);
      const retryAfter = Number(http.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(http.json.errors[0].extensions).toMatchObject({
        code: 'RATE_LIMITED',
        details: { retryAfterSeconds: retryAfter },
      });
      expect(http.json.errors[0].message).toMatch(/^Too many failed logins from this address/);
      const info = await fetch(`${a.url}/info`, { headers: { ...auth(KEY_A), ...guesser } });
      expect(info.status).toBe(429);
      expect(Number(info.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await info.json()).toMatchObject({ code: 'RATE_LIMITED' });
      const ws = await connect(b.wsUrl, KEY_A, guesser);
      expect(ws).toMatchObject({ close: 4429, events: [] });
      expect(Number(/try again in (\d+) s/.exec(ws.reason ?? '')?.[1])).toBeGreaterThanOrEqual(1);

      // Another address is not held up, and the principal's own requests per minute were not spent.
      expect((await connect(a.wsUrl, KEY_B, neighbour)).events).toEqual(['Hello World']);
      for (let i = 0; i < 3; i++) expect((await post(b.url, HELLO, { ...auth(KEY_A), ...neighbour })).status).toBe(200);
    },
  );

  it('keeps an address limited for failed logins until the wait it was told, and no longer', () => {
    const limiter = new MemoryRateLimiter({ requestsPerMinute: 3, concurrentRuns: 0 });
    const start = 10 * 60_000 + 20_000;
    for (let i = 0; i < 3; i++) expect(limiter.hitNow('ip:203.0.113.7', start + i)).toBe(0);
    const told = limiter.hitNow('ip:203.0.113.7', start + 3);
    expect(told).toBeGreaterThan(0);
    // Looking does not count: the same wait, and it ends when it said.
    expect(limiter.waitNow('ip:203.0.113.7', start + 3)).toBe(told);
    expect(limiter.waitNow('ip:203.0.113.7', start + 3 + told - 1)).toBeGreaterThan(0);
    expect(limiter.waitNow('ip:203.0.113.7', start + 3 + told)).toBe(0);
    expect(limiter.waitNow('ip:203.0.113.8', start + 3)).toBe(0);
    void limiter.close();
  });

  it('refuses runs over maxConcurrentRuns with OVERLOADED over graphql-ws and AG-UI too, and serves again once one ends', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter, maxConcurrentRuns: 1 });
    const first = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await until(
      async () => adapter.started,
      (n) => n === 1,
      'the first run holding',
    );
    const overWs = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('more')]) });
    await overWs.done;
    expect(overWs.errors.flat()[0]).toMatchObject({ extensions: { code: 'OVERLOADED' } });
    const overAgUi = await post(`${gateway.url}/agent/default/run`, {
      threadId: 't-over',
      runId: 'r',
      messages: [{ id: 'u', role: 'user', content: 'more' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    expect(overAgUi.status).toBe(503);
    expect(overAgUi.json).toMatchObject({ code: 'OVERLOADED' });
    adapter.release();
    await first.done;
    const again = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('again')]) });
    await until(
      async () => adapter.started,
      (n) => n === 2,
      'a run once the first ended',
    );
    adapter.release();
    await again.done;
    expect(again.events.at(-1).status).toMatchObject({ code: 'Success' });
    for (const watch of [first, overWs, again]) await watch.dispose();
  });

  it('counts anonymous clients by address', async () => {
    const gateway = await start({ rateLimits: { requestsPerMinute: 1 } });
    expect((await post(gateway.url, HELLO)).status).toBe(200);
    expect((await post(gateway.url, HELLO)).status).toBe(429);
  });

  it.each([
    ['in memory', () => ({})],
    [
      'shared through Redis by two instances',
      () => ({ threads: { redisUrl: redis.url, keyPrefix: `limits-${Math.random().toString(36).slice(2)}:` } }),
    ],
    [
      'shared through a Redis Cluster by two instances',
      () => ({
        threads: { clusterNodes: cluster.nodes, keyPrefix: `limits-${Math.random().toString(36).slice(2)}:` },
      }),
    ],
  ])('limits concurrent runs per client, %s', async (_kind, storeOptions) => {
    const adapter = new HoldingAdapter();
    const options: any = {
      adapter,
      authenticate: apiKeyAuthenticator([KEY_A, KEY_B]),
      rateLimits: { concurrentRuns: 1 },
      ...storeOptions(),
    };
    const a = await start(options);
    const b = 'threads' in options ? await start(options) : a;
    const run = (gatewayUrl: string, key: string) =>
      post(
        gatewayUrl,
        {
          query:
            'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } } }',
          variables: { data: runInput([userMessage('hi')]) },
        },
        auth(key),
      );

    const first = run(a.url, KEY_A);
    await until(
      async () => adapter.started,
      (n) => n === 1,
      'the first run holding',
    );
    const second = await run(b.url, KEY_A);
    expect(second.json.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSeconds: 1 } });
    expect(second.headers.get('retry-after')).toBe('1');
    // The other client has places of its own.
    const other = run(b.url, KEY_B);
    await until(
      async () => adapter.started,
      (n) => n === 2,
      "the other client's run",
    );
    adapter.release();
    expect((await first).json.data.generateCopilotResponse.status.code).toBe('Success');
    await other;
    // Its place is free again once the run has ended. (Instance A gives it back without waiting for Redis, and this run
    // asks on B: asked again while that has not reached Redis, refused RATE_LIMITED, as a client told to retry would.)
    const third = await (async () => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const pending = run(b.url, KEY_A);
        const started = until(
          async () => adapter.started,
          (n) => n === 3,
          'a run after the first ended',
        ).then(
          () => true,
          () => false,
        );
        const refused = pending.then((answer) => answer.json.errors?.[0]?.extensions?.code === 'RATE_LIMITED');
        if (await Promise.race([started, refused.then((no) => !no && started)])) return { pending };
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error("the first run's place was never given back");
    })();
    adapter.release();
    expect((await third.pending).json.data.generateCopilotResponse.status.code).toBe('Success');
  });
});

describe('metrics', () => {
  it('counts runs by kind and outcome, times the first token, and counts chunks, sockets and store operations', async () => {
    const adapter = new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });
    const gateway = await start({ adapter, metrics: { token: 'metrics-token-0123456789' } });
    const metrics = async () => {
      const response = await fetch(new URL('/metrics', gateway.url), { headers: auth('metrics-token-0123456789') });
      expect(response.status).toBe(200);
      return response.text();
    };
    expect((await fetch(new URL('/metrics', gateway.url))).status).toBe(401);

    const ok = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=5]')]) });
    await ok.done;
    await until(metrics, (text) => /copilot_gateway_websocket_connections 1/.test(text), 'the open socket counted');
    await ok.dispose();
    const failed = await post(gateway.url, {
      query:
        'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } } }',
      variables: { data: runInput([userMessage('[fail=500]')]) },
    });
    expect(failed.json.data.generateCopilotResponse.status.code).toBe('Failed');

    const text = await until(
      metrics,
      (value) => /copilot_gateway_runs_total\{kind="model",outcome="UPSTREAM_UNAVAILABLE"\} 1/.test(value),
      'both runs counted',
    );
    expect(text).toMatch(/copilot_gateway_runs_total\{kind="model",outcome="Success"\} 1/);
    expect(text).toMatch(/copilot_gateway_time_to_first_token_seconds_count\{kind="model"\} 1/);
    expect(text).toMatch(/copilot_gateway_run_duration_seconds_count\{kind="model"\} 2/);
    expect(text).toMatch(/copilot_gateway_tokens_streamed_total\{kind="model"\} [1-5]\b/);
    expect(text).toMatch(/copilot_gateway_upstream_calls_total\{upstream="model:openai",outcome="ok"\} 1/);
    expect(text).toMatch(
      /copilot_gateway_upstream_calls_total\{upstream="model:openai",outcome="UPSTREAM_UNAVAILABLE"\} 1/,
    );
    expect(text).toMatch(
      /copilot_gateway_thread_store_operations_total\{store="memory",operation="claim",outcome="ok"\} 2/,
    );
    expect(text).toMatch(/copilot_gateway_active_runs 0/);
    expect(text).toMatch(/copilot_gateway_websocket_connections 0/);
    expect(text).toMatch(/copilot_gateway_process_resident_memory_bytes \d+/);
  });
});

describe('metrics of the memory thread store', () => {
  it('reports the threads and bytes it keeps and the threads it let go of for its bounds', async () => {
    const adapter = new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });
    const gateway = await start({ adapter, metrics: true, threads: { maxThreads: 2 } });
    const metrics = async () => (await fetch(new URL('/metrics', gateway.url))).text();
    const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    const empty = await metrics();
    expect(value(empty, 'copilot_gateway_thread_store_threads')).toBe(0);
    expect(value(empty, 'copilot_gateway_thread_store_bytes')).toBe(0);

    for (const threadId of ['t-1', 't-2', 't-3']) {
      const answer = await post(gateway.url, {
        query:
          'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } } }',
        variables: { data: { ...runInput([userMessage('[tokens=5]')]), threadId } },
      });
      expect(answer.json.data.generateCopilotResponse.status.code).toBe('Success');
    }
    const full = await metrics();
    expect(value(full, 'copilot_gateway_thread_store_threads')).toBe(2);
    expect(value(full, 'copilot_gateway_thread_store_bytes')).toBeGreaterThan(0);
    expect(full).toMatch(/^copilot_gateway_thread_store_dropped_total\{reason="bound"\} 1$/m);
    expect(full).toMatch(/^copilot_gateway_thread_store_dropped_total\{reason="expired"\} 0$/m);
  });

  it('leaves them out for a store in another process (Redis), which has no census', async () => {
    const without = await new GatewayMetrics(
      () => 0,
      () => 0,
      () => ({}),
    ).render();
    expect(without.body).toMatch(/copilot_gateway_active_runs 0/);
    expect(without.body).not.toMatch(/copilot_gateway_thread_store_(threads|bytes|dropped)/);
    const census = { threads: 3, bytes: 1234, dropped: { bound: 5, expired: 6 } };
    const withCensus = await new GatewayMetrics(
      () => 0,
      () => 0,
      () => ({}),
      () => census,
    ).render();
    expect(withCensus.body).toMatch(/^copilot_gateway_thread_store_threads 3$/m);
    expect(withCensus.body).toMatch(/^copilot_gateway_thread_store_bytes 1234$/m);
    expect(withCensus.body).toMatch(/^copilot_gateway_thread_store_dropped_total\{reason="expired"\} 6$/m);
  });
});

describe('metrics of retries', () => {
  it("counts the retries of model calls, the gateway's own (OpenAI-compatible) and a provider SDK's (Anthropic), by upstream and reason", async () => {
    const anthropic = new FakeAnthropic();
    const anthropicURL = await anthropic.start();
    try {
      const openai = await start({
        adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 2 }),
      });
      const claude = await start({
        adapter: new AnthropicAdapter({ baseURL: anthropicURL, apiKey: 'k', maxRetries: 2 }),
      });
      const run = (url: string, prompt: string) =>
        post(url, {
          query:
            'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { status { ... on BaseResponseStatus { code } } } }',
          variables: { data: runInput([userMessage(prompt)]) },
        });
      const metrics = async (url: string) => (await fetch(new URL('/metrics', url))).text();

      const nonce = Math.random();
      expect(
        (await run(openai.url, `[fail=503][fail-times=2][tokens=2] ${nonce}`)).json.data.generateCopilotResponse.status
          .code,
      ).toBe('Success');
      expect(
        (await run(claude.url, `[fail=529][fail-times=1][retry-after-ms=1][tokens=2] ${nonce}`)).json.data
          .generateCopilotResponse.status.code,
      ).toBe('Success');
      const openaiText = await metrics(openai.url);
      expect(openaiText).toMatch(
        /copilot_gateway_upstream_retries_total\{upstream="the model provider",reason="HTTP 503"\} 2\n/,
      );
      expect(openaiText).toMatch(/copilot_gateway_upstream_calls_total\{upstream="model:openai",outcome="ok"\} 1\n/);
      const claudeText = await metrics(claude.url);
      expect(claudeText).toMatch(
        /copilot_gateway_upstream_retries_total\{upstream="the model provider \(Anthropic\)",reason="HTTP 529"\} 1\n/,
      );
      // Each gateway counts its own calls' retries only.
      expect(claudeText).not.toMatch(/upstream="the model provider",/);
      expect(openaiText).not.toMatch(/Anthropic/);
    } finally {
      await anthropic.stop();
    }
  });
});

describe('tracing', () => {
  it('makes a span per run and a child span per model call, through @opentelemetry/api, when on', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    try {
      const adapter = new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });
      const gateway = await start({ adapter, tracing: true, authenticate: apiKeyAuthenticator([KEY_A]) });
      const ok = subscribe(
        gateway.wsUrl,
        COPILOT_RUN,
        { data: runInput([userMessage('[tokens=3]')], { threadId: 'traced' }) },
        { authorization: `Bearer ${KEY_A}` },
      );
      await ok.done;
      await ok.dispose();
      const failed = subscribe(
        gateway.wsUrl,
        COPILOT_RUN,
        { data: runInput([userMessage('[fail=500]')]) },
        { authorization: `Bearer ${KEY_A}` },
      );
      await failed.done;
      await failed.dispose();
      const spans = await until(
        async () => exporter.getFinishedSpans(),
        (list) => list.length === 4,
        'four spans',
      );
      const runs = spans.filter((span) => span.name === 'copilot.run');
      const calls = spans.filter((span) => span.name === 'copilot.upstream');
      expect(runs.map((span) => span.attributes['copilot.outcome']).sort()).toEqual([
        'Success',
        'UPSTREAM_UNAVAILABLE',
      ]);
      const good = runs.find((span) => span.attributes['copilot.thread_id'] === 'traced')!;
      expect(good.attributes).toMatchObject({
        'copilot.run_kind': 'model',
        'enduser.id': expect.stringMatching(/^api-key:/),
      });
      for (const call of calls) {
        expect(call.attributes['copilot.upstream']).toBe('model:openai');
        expect(runs.map((span) => span.spanContext().spanId)).toContain(call.parentSpanContext?.spanId);
      }
      expect(calls.find((call) => call.parentSpanContext?.spanId === good.spanContext().spanId)!.status.code).toBe(
        SpanStatusCode.OK,
      );
    } finally {
      trace.disable();
      await provider.shutdown();
    }
  });

  it('makes none when off', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    try {
      const gateway = await start({ adapter: new HoldingAdapter({ hold: false }) });
      const ok = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
      await ok.done;
      await ok.dispose();
      expect(exporter.getFinishedSpans()).toEqual([]);
    } finally {
      trace.disable();
      await provider.shutdown();
    }
  });
});

describe('draining', () => {
  it('closes once: a second close(), or a shutdown() during the close, settles only once everything the first releases is released', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter });
    const running = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await until(
      async () => running.events.length,
      (n) => n >= 3,
      'the run under way',
    );
    let firstDone = false;
    const first = gateway.gateway.close().then(() => (firstDone = true));
    await gateway.gateway.close();
    expect(firstDone).toBe(true);
    await gateway.gateway.shutdown();
    await first;
    await running.done;
    expect(running.events.at(-1).status).toMatchObject({ code: 'Failed', details: { code: 'SHUTTING_DOWN' } });
    await expect(gateway.gateway.listen(0)).rejects.toThrow('The gateway cannot listen: it is closed.');
  });

  it('goes unready and refuses new runs at once, and lets a run in flight finish within the grace period', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter });
    const running = subscribe(gateway.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await until(
      async () => running.events.length,
      (n) => n >= 3,
      'the run under way',
    );
    // A client connected with nothing going on: told the server is going away.
    let idleClosed: number | undefined;
    // (Its close is expected and checked below: not printed as a non-lazy client's error, graphql-ws's default.)
    const idle = createClient({
      url: gateway.wsUrl,
      webSocketImpl: WebSocket,
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => {},
      on: { closed: (event: any) => (idleClosed = event.code) },
    });
    await new Promise<void>((resolve) => idle.on('connected', () => resolve()));

    const shutdown = gateway.gateway.shutdown(30_000);
    const ready = await fetch(new URL('/ready', gateway.url));
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ checks: { draining: true } });
    const refused = await post(gateway.url, {
      query: 'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId } }',
      variables: { data: runInput([userMessage('late')]) },
    });
    expect(refused.json.errors[0].extensions).toMatchObject({ code: 'SHUTTING_DOWN' });
    // A proxy may send it to another instance: nothing ran.
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');

    adapter.release();
    await shutdown;
    await running.done;
    expect(running.events.at(-1).status).toMatchObject({ code: 'Success' });
    expect(textOfEvents(running.events)).toBe('first last');
    // Its run's end and its complete arrived before the socket closed.
    expect(running.errors).toEqual([]);
    expect(
      await until(
        async () => idleClosed,
        (code) => code !== undefined,
        'the idle socket closed',
      ),
    ).toBe(1001);
    await idle.dispose();
  });

  it("ends a run that was still being admitted when the shutdown began, and followers of other instances' runs", async () => {
    const adapter = new HoldingAdapter();
    const options: any = {
      adapter,
      threads: { redisUrl: redis.url, keyPrefix: `drain-admit-${Math.random().toString(36).slice(2)}:` },
    };
    let hookEntered!: () => void;
    const entered = new Promise<void>((resolve) => (hookEntered = resolve));
    const a = await start({
      ...options,
      hooks: {
        onBeforeRequest: () => {
          hookEntered();
          return new Promise<void>((resolve) => setTimeout(resolve, 300));
        },
      },
    });
    const b = await start(options);
    // A run on B, followed from A.
    const threadId = `drain-follow-${Math.random().toString(36).slice(2)}`;
    const onB = subscribe(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')], { threadId }) });
    await until(
      async () => onB.events.length,
      (n) => n >= 3,
      'the run on B under way',
    );
    const follower = subscribe(a.wsUrl, JOIN_RUN, { threadId });
    await until(
      async () => follower.events.length,
      (n) => n >= 3,
      'the join under way',
    );
    // A run on A still in its hook when A shuts down.
    const admitting = subscribe(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('late')]) });
    await entered;

    await a.gateway.shutdown(0);
    await Promise.all([admitting.done, follower.done]);
    expect(admitting.events.at(-1).status).toMatchObject({ code: 'Failed', details: { code: 'SHUTTING_DOWN' } });
    expect(adapter.aborted).toBe(1);
    expect(follower.errors.flat()[0]).toMatchObject({
      extensions: { code: 'SHUTTING_DOWN' },
      message: expect.stringMatching(/follow the run again/),
    });
    expect(textOfEvents(follower.events)).toBe('first ');
    // B's own run is untouched.
    adapter.release();
    await onB.done;
    expect(onB.events.at(-1).status).toMatchObject({ code: 'Success' });
    for (const watch of [onB, follower, admitting]) await watch.dispose();
  });

  it('ends runs still going after the grace period with SHUTTING_DOWN, their records complete in the store', async () => {
    const adapter = new HoldingAdapter();
    const options: any = {
      adapter,
      threads: { redisUrl: redis.url, keyPrefix: `drain-${Math.random().toString(36).slice(2)}:` },
    };
    const a = await start(options);
    const b = await start(options);
    const threadId = `drain-${Math.random().toString(36).slice(2)}`;
    const running = subscribe(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('hi')], { threadId }),
      onDisconnect: 'CONTINUE',
    });
    await until(
      async () => running.events.length,
      (n) => n >= 3,
      'the run under way',
    );
    await running.dispose(); // the client left; the run goes on (CONTINUE)

    await a.gateway.shutdown(200);
    expect(adapter.aborted).toBe(1);
    const thread = (await post(b.url, { query: THREAD, variables: { threadId } })).json.data.copilotThread;
    // UNKNOWN_ERROR: the stock client shows it (MESSAGE_STREAM_INTERRUPTED would pass for a whole, short answer).
    expect(thread.runs[0]).toMatchObject({
      status: { code: 'Failed', reason: 'UNKNOWN_ERROR', details: expect.objectContaining({ code: 'SHUTTING_DOWN' }) },
    });
    const joined = subscribe(b.wsUrl, JOIN_RUN, { threadId });
    await joined.done;
    expect(textOfEvents(joined.events)).toBe('first ');
    expect(joined.events.at(-1).status).toMatchObject({
      code: 'Failed',
      reason: 'UNKNOWN_ERROR',
      details: { code: 'SHUTTING_DOWN' },
    });
    await joined.dispose();
    // The thread is free: B serves its next run.
    adapter.release();
    const next = subscribe(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('again')], { threadId }) });
    await until(
      async () => adapter.started,
      (n) => n === 2,
      'the next run',
    );
    adapter.release();
    await next.done;
    expect(next.events.at(-1).status).toMatchObject({ code: 'Success' });
    await next.dispose();
  });
});

describe('keep-alive and timeouts', () => {
  it('sends empty results as multipart parts while the model is quiet, which the stock client takes in its stride', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter, keepAliveMs: 20 });
    const response = fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
      body: JSON.stringify({
        query:
          'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId ... @defer { status { ... on BaseResponseStatus { code } } } } }',
        variables: { data: runInput([userMessage('hi')]) },
      }),
    });
    const client = new CopilotRuntimeClient({ url: gateway.url });
    const stock = stockRun(client, runInput([userMessage('hi')]));
    await until(
      async () => adapter.started,
      (n) => n === 2,
      'both runs holding',
    );
    await new Promise((resolve) => setTimeout(resolve, 150)); // several keep-alive intervals of silence
    adapter.release();
    const raw = await (await response).text();
    expect(raw).toContain('\r\n---\r\ncontent-type: application/json; charset=utf-8\r\n\r\n{}\r\n---\r\n');
    expect(raw.endsWith('-----\r\n')).toBe(true);
    const result = await stock;
    expect(result.status).toMatchObject({ code: 'Success' });
    const messages: any[] = result.messages;
    expect(messages.map((message) => message.content?.join?.('') ?? message.content)).toContain('first last');
  });

  it("keeps Apollo Client's deferred mutation whole across the multipart keep-alive parts", async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({ adapter, keepAliveMs: 20 });
    const client = new ApolloClient({
      link: new HttpLink({ uri: gateway.url }),
      cache: new InMemoryCache({ possibleTypes }),
      incrementalHandler: new Defer20220824Handler(),
    });
    const mutation = gql`
      mutation Run($data: GenerateCopilotResponseInput!) {
        generateCopilotResponse(data: $data) {
          threadId
          ... on CopilotResponse @defer {
            status {
              ... on BaseResponseStatus {
                code
              }
            }
          }
        }
      }
    `;
    const result = client.mutate({ mutation, variables: { data: runInput([userMessage('hi')]) } });
    await until(
      async () => adapter.started,
      (n) => n === 1,
      'the run holding',
    );
    await new Promise((resolve) => setTimeout(resolve, 150)); // several keep-alive intervals of silence
    adapter.release();
    const { data, error } = (await result) as any;
    expect(error).toBeUndefined();
    expect(data.generateCopilotResponse.status).toMatchObject({ code: 'Success' });
  });

  it('gives the model modelFirstTokenTimeoutMs to think, and modelIdleTimeoutMs between chunks', async () => {
    const thinker = new HoldingAdapter({ thinkMs: 300, hold: false });
    const patient = await start({ adapter: thinker, modelFirstTokenTimeoutMs: 5_000, modelIdleTimeoutMs: 100 });
    const served = subscribe(patient.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await served.done;
    expect(served.events.at(-1).status).toMatchObject({ code: 'Success' });
    await served.dispose();

    const hasty = await start({
      adapter: new HoldingAdapter({ thinkMs: 5_000 }),
      modelFirstTokenTimeoutMs: 100,
      modelIdleTimeoutMs: 60_000,
    });
    const cut = subscribe(hasty.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await cut.done;
    expect(cut.events.at(-1).status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_TIMEOUT' } });
    expect(JSON.stringify(cut.events.at(-1).status)).toContain('modelFirstTokenTimeoutMs');
    await cut.dispose();

    const stalled = await start({
      adapter: new HoldingAdapter(),
      modelFirstTokenTimeoutMs: 60_000,
      modelIdleTimeoutMs: 100,
    });
    const idle = subscribe(stalled.wsUrl, COPILOT_RUN, { data: runInput([userMessage('hi')]) });
    await idle.done;
    expect(textOfEvents(idle.events)).toBe('first ');
    expect(JSON.stringify(idle.events.at(-1).status)).toContain('modelIdleTimeoutMs');
    await idle.dispose();
  });
});
