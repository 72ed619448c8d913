import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { apiKeyAuthenticator } from '../src/auth/api-keys.js';
import { jwtAuthenticator } from '../src/auth/jwt.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { forEnvironment, gatewayOptionsOf, readEnvironment } from '../src/env.js';
import { ConfigurationError } from '../src/core/errors.js';
import { createGateway, type GatewayOptions } from '../src/gateway.js';
import { silentLogger } from './support/harness.js';

// Mistakes in configuration fail at construction, with a message that says what to fix.

function configurationError(options: unknown): string {
  try {
    createGateway({ logger: silentLogger, ...(options as GatewayOptions) });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).code).toBe('CONFIGURATION_ERROR');
    return (error as Error).message;
  }
  throw new Error('expected a ConfigurationError');
}

const action = (overrides: Record<string, unknown> = {}) => ({
  name: 'ok',
  description: 'd',
  handler: () => 1,
  ...overrides,
});

describe('createGateway options', () => {
  it.each([
    [{ nope: 1 }, /Unknown option "nope"/],
    [{ executor: 'slow' }, /options\.executor must be "fast" or "stock" \(got "slow"\)/],
    [{ path: 'api' }, /options\.path must be a URL path starting with "\/"/],
    [{ path: '/health' }, /other than \/health and \/ready/],
    [{ path: '/ready' }, /other than \/health and \/ready/],
    [{ environment: 'staging' }, /options\.environment must be "development" or "production"/],
    [{ adapter: {} }, /options\.adapter must be a model adapter/],
    [{ maxRounds: 0 }, /options\.maxRounds must be a whole number from 1 to 100 \(got 0\)/],
    [{ modelIdleTimeoutMs: 1.5 }, /options\.modelIdleTimeoutMs must be a whole number/],
    [{ corsOrigins: 'https://a.example' }, /options\.corsOrigins must be an array/],
    [
      { corsOrigins: ['https://a.example/path'] },
      /options\.corsOrigins: "https:\/\/a\.example\/path" is not an origin; give just a scheme, host and optional port/,
    ],
    [{ corsOrigins: ['*'] }, /options\.corsOrigins: "\*" is not an origin/],
    [{ sandbox: 'yes' }, /options\.sandbox must be true or false/],
    [{ allowedHosts: ['http://x.test'] }, /options\.allowedHosts must be an array of host names/],
    [{ maxConcurrentRuns: 0 }, /options\.maxConcurrentRuns must be a whole number/],
    [{ actions: {} }, /options\.actions must be an array/],
    [{ actions: [action({ name: 'has space' })] }, /options\.actions\[0\]\.name must be 1 to 64 letters/],
    [{ actions: [action(), action()] }, /options\.actions\[1\]\.name "ok" is declared twice/],
    [{ actions: [action({ handler: 'x' })] }, /options\.actions\[0\]\.handler must be a function \(action "ok"\)/],
    [
      { actions: [action({ parameters: { type: 'string' } })] },
      /parameters must be a JSON Schema object with type "object"/,
    ],
    // An upload is read whole within the input held at once: a largest recording over it could never be taken.
    [
      { maxBufferedInputMb: 32, transcription: { baseURL: 'http://127.0.0.1:9/v1', maxBytes: 32 * 1024 * 1024 } },
      /options\.transcription\.maxBytes \(TRANSCRIPTION_MAX_MB\) is 33554432 bytes, .* maxBufferedInputMb \(MAX_BUFFERED_INPUT_MB\) 32 MiB: raise that, or lower/,
    ],
  ])('rejects %j', (options, message) => {
    expect(configurationError(options)).toMatch(message);
  });

  it('takes a largest recording that fits in the input held at once, with its form', () => {
    const transcription = { baseURL: 'http://127.0.0.1:9/v1', maxBytes: 32 * 1024 * 1024 - 16 * 1024 };
    expect(() => createGateway({ logger: silentLogger, maxBufferedInputMb: 32, transcription })).not.toThrow();
  });

  it('accepts a complete, valid configuration', () => {
    const gateway = createGateway({
      logger: silentLogger,
      adapter: new OpenAIAdapter({ apiKey: 'k' }),
      actions: [action({ parameters: { type: 'object', properties: {} } })],
      path: '/copilotkit',
      environment: 'production',
      corsOrigins: ['https://app.example.com', 'http://localhost:3000'],
      maxRounds: 3,
      modelIdleTimeoutMs: 1000,
    });
    expect(gateway.mode).toBe('openai');
    expect(gateway.path).toBe('/copilotkit');
  });

  it('rejects listen() on a port in use with a ConfigurationError that says what to do, and can listen again', async () => {
    const first = createGateway({ logger: silentLogger });
    const url = await first.listen(0, '127.0.0.1');
    const port = Number(new URL(url).port);
    const second = createGateway({ logger: silentLogger });
    const error = await second.listen(port, '127.0.0.1').catch((e) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toBe(
      `The port ${port} on 127.0.0.1 is already in use: stop the process that holds it, or choose another port (PORT).`,
    );
    await first.close();
    expect(await second.listen(port, '127.0.0.1')).toBe(url);
    await second.close();
  });

  it('listens on loopback by default in development, everywhere in production, and says where', async () => {
    const development = createGateway({ logger: silentLogger, environment: 'development' });
    expect(await development.listen(0)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/copilotkit$/);
    await development.close();
    const production = createGateway({ logger: silentLogger, environment: 'production' });
    expect(await production.listen(0)).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/api\/copilotkit$/);
    await production.close();
  });

  it('uses the demo model when no adapter is given', () => {
    expect(createGateway({ logger: silentLogger }).mode).toBe('demo');
  });

  it('requires a key or a base URL for the OpenAI adapter', () => {
    expect(() => new OpenAIAdapter({})).toThrow(/needs an apiKey/);
    expect(() => new OpenAIAdapter({ baseURL: 'http://127.0.0.1:11434/v1' })).not.toThrow();
  });
});

describe('the environment read by npm start', () => {
  it('defaults to demo mode on loopback port 4000 in development', () => {
    expect(readEnvironment({})).toEqual({
      port: 4000,
      host: '127.0.0.1',
      path: '/api/copilotkit',
      environment: 'development',
      logLevel: 'info',
      corsOrigins: [],
      allowedHosts: [],
      remoteEndpoints: [],
      agUiAgents: [],
      modelLimits: {},
      mcpServers: [],
      allowClientMcpServers: false,
      threads: {},
      auth: { apiKeys: [] },
      rateLimits: { requestsPerMinute: 0, concurrentRuns: 0 },
      metrics: true,
    });
  });

  it('reads authentication, rate limits, draining, metrics and the first-token timeouts', () => {
    expect(
      readEnvironment({
        GATEWAY_API_KEYS: 'first-key-0123456789, second-key-0123456789',
        JWT_JWKS_URL: 'https://issuer.example/.well-known/jwks.json',
        JWT_ISSUER: 'https://issuer.example/',
        JWT_AUDIENCE: 'copilot',
        RATE_LIMIT_REQUESTS_PER_MINUTE: '120',
        RATE_LIMIT_CONCURRENT_RUNS: '4',
        TRUST_PROXY: '1',
        SHUTDOWN_GRACE_MS: '0',
        SHUTDOWN_DELAY_MS: '5000',
        METRICS_TOKEN: 'scrape-token-0123456789',
        MODEL_FIRST_TOKEN_TIMEOUT_MS: '90000',
        AGENT_FIRST_EVENT_TIMEOUT_MS: '600000',
      }),
    ).toMatchObject({
      auth: {
        apiKeys: ['first-key-0123456789', 'second-key-0123456789'],
        jwt: {
          jwksUrl: 'https://issuer.example/.well-known/jwks.json',
          issuer: 'https://issuer.example/',
          audience: 'copilot',
        },
      },
      rateLimits: { requestsPerMinute: 120, concurrentRuns: 4 },
      trustProxy: 1,
      shutdownGraceMs: 0,
      shutdownDelayMs: 5000,
      metrics: { token: 'scrape-token-0123456789' },
      modelFirstTokenTimeoutMs: 90000,
      agentFirstEventTimeoutMs: 600000,
    });
    expect(readEnvironment({ METRICS: 'false' }).metrics).toBe(false);
    expect(() => readEnvironment({ JWT_ISSUER: 'x' })).toThrow(
      'JWT_ISSUER and JWT_AUDIENCE need JWT_JWKS_URL or JWT_SECRET.',
    );
    expect(() => readEnvironment({ TRUST_PROXY: 'yes' })).toThrow('TRUST_PROXY must be a whole number');
    expect(() => readEnvironment({ METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN must be at least 16 characters.');
    expect(readEnvironment({ GATEWAY_EXECUTOR: 'stock' }).executor).toBe('stock');
    expect(readEnvironment({ GATEWAY_EXECUTOR: 'Fast' }).executor).toBe('fast');
    expect(() => readEnvironment({ GATEWAY_EXECUTOR: 'jit' })).toThrow(
      'GATEWAY_EXECUTOR must be fast or stock (got "jit").',
    );
  });

  it('refuses API keys and JWT settings that cannot be safe', () => {
    expect(() => apiKeyAuthenticator(['short'])).toThrow('at least 16 characters');
    expect(() => jwtAuthenticator({ secret: 'too-short' })).toThrow('at least 32 characters');
    expect(() => jwtAuthenticator({})).toThrow('exactly one of a JWKS URL');
    expect(() => jwtAuthenticator({ jwksUrl: 'ftp://x' })).toThrow('http(s) URL');
  });

  it('reads where threads are kept and how: REDIS_URL and the thread settings', () => {
    expect(
      readEnvironment({
        REDIS_URL: 'redis://:secret@cache.internal:6379/2',
        THREAD_TTL_SECONDS: '3600',
        MAX_THREADS: '500',
        MAX_THREAD_STORE_MB: '16',
        INSTANCE_LEASE_MS: '5000',
        THREAD_BUSY_POLICY: 'interrupt',
        STORE_FAILURE_POLICY: 'fail',
        THREAD_LIST_ANONYMOUS: 'true',
      }).threads,
    ).toEqual({
      redisUrl: 'redis://:secret@cache.internal:6379/2',
      ttlSeconds: 3600,
      maxThreads: 500,
      maxBytes: 16 * 1024 * 1024,
      leaseMs: 5000,
      onBusy: 'interrupt',
      onStoreFailure: 'fail',
      listAnonymous: true,
    });
    expect(() => readEnvironment({ THREAD_LIST_ANONYMOUS: 'yes' })).toThrow(
      /THREAD_LIST_ANONYMOUS must be true or false/,
    );
    expect(() => createGateway({ logger: silentLogger, threads: { listAnonymous: 'yes' as never } })).toThrow(
      /options.threads.listAnonymous must be true or false/,
    );
    expect(() => readEnvironment({ REDIS_URL: 'localhost:6379' })).toThrow(
      /REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL, .*, or a Unix socket's, such as "unix:\/\/\/run/,
    );
    // A Unix socket: its absolute path after unix://.
    expect(readEnvironment({ REDIS_URL: 'unix:///run/redis/redis.sock' }).threads?.redisUrl).toBe(
      'unix:///run/redis/redis.sock',
    );
    expect(() => readEnvironment({ REDIS_URL: 'unix://run/redis.sock' })).toThrow(/REDIS_URL must be/);
    // Four slashes: ioredis would read "//run/…" as a host, not a path.
    expect(() => readEnvironment({ REDIS_URL: 'unix:////run/redis.sock' })).toThrow(/REDIS_URL must be/);
    expect(() => readEnvironment({ THREAD_BUSY_POLICY: 'wait' })).toThrow(
      /THREAD_BUSY_POLICY must be refuse or interrupt/,
    );
    expect(() => readEnvironment({ THREAD_TTL_SECONDS: '-1' })).toThrow(
      /THREAD_TTL_SECONDS must be a whole number of seconds/,
    );
  });

  it('checks the threads options', () => {
    expect(() => createGateway({ logger: silentLogger, threads: { redisUrl: 'http://x' } })).toThrow(
      /threads.redisUrl must be a redis:\/\/ or rediss:\/\/ URL/,
    );
    expect(() => createGateway({ logger: silentLogger, threads: { maxThreads: 0 } })).toThrow(
      /threads.maxThreads must be a whole number from 1/,
    );
    expect(() => createGateway({ logger: silentLogger, threads: { onBusy: 'queue' as any } })).toThrow(
      /threads.onBusy must be "refuse" or "interrupt"/,
    );
    expect(() => createGateway({ logger: silentLogger, threads: { ttl: 5 } as any })).toThrow(
      /Unknown option "threads.ttl"/,
    );
  });

  it('does not start when Redis cannot be reached and threads.onStoreFailure is "fail", and says so without the password', async () => {
    const gateway = createGateway({
      logger: silentLogger,
      threads: { redisUrl: 'redis://:hunter2@127.0.0.1:1', onStoreFailure: 'fail' },
    });
    const failure = gateway.listen(0, '127.0.0.1');
    await expect(failure).rejects.toThrow(/Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1\/? cannot be reached/);
    await expect(failure).rejects.not.toThrow(/hunter2/);
    await gateway.close();
  });

  it('reads agents: remote endpoints, AG-UI agents by name, LangGraph graphs', () => {
    expect(
      readEnvironment({
        COPILOT_REMOTE_ENDPOINTS: 'http://localhost:8000/copilotkit, https://agents.example.com/copilotkit',
        AGUI_AGENTS: 'researcher=http://localhost:8001/agent,writer=http://localhost:8002/',
        LANGGRAPH_DEPLOYMENT_URL: 'http://localhost:2024',
        LANGGRAPH_GRAPHS: 'planner, reviewer',
        LANGSMITH_API_KEY: 'lsv2-key',
        AGENT_IDLE_TIMEOUT_MS: '120000',
        MAX_CONCURRENT_RUNS: '6000',
      }),
    ).toMatchObject({
      remoteEndpoints: ['http://localhost:8000/copilotkit', 'https://agents.example.com/copilotkit'],
      agUiAgents: [
        { name: 'researcher', url: 'http://localhost:8001/agent' },
        { name: 'writer', url: 'http://localhost:8002/' },
      ],
      langGraph: { deploymentUrl: 'http://localhost:2024', graphs: ['planner', 'reviewer'], apiKey: 'lsv2-key' },
      agentIdleTimeoutMs: 120000,
      maxConcurrentRuns: 6000,
    });
  });

  it('switches to provider mode with OPENAI_API_KEY or OPENAI_BASE_URL', () => {
    expect(readEnvironment({ OPENAI_API_KEY: 'sk-test\n' }).provider).toEqual({
      name: 'openai',
      options: { apiKey: 'sk-test', baseURL: undefined, model: 'gpt-4o-mini' },
    });
    expect(readEnvironment({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', OPENAI_MODEL: 'llama3' }).provider).toEqual({
      name: 'openai',
      options: { apiKey: undefined, baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3' },
    });
  });

  it('picks Anthropic or Google by their keys, or whichever provider COPILOT_PROVIDER names', () => {
    expect(readEnvironment({ ANTHROPIC_API_KEY: 'sk-ant' }).provider).toEqual({
      name: 'anthropic',
      options: { apiKey: 'sk-ant', baseURL: undefined, model: 'claude-sonnet-5-5' },
    });
    expect(
      readEnvironment({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:8080/anthropic', ANTHROPIC_MODEL: 'claude-haiku-5-5' })
        .provider,
    ).toEqual({
      name: 'anthropic',
      options: { apiKey: undefined, baseURL: 'http://127.0.0.1:8080/anthropic', model: 'claude-haiku-5-5' },
    });
    expect(
      readEnvironment({ COPILOT_PROVIDER: 'Anthropic', ANTHROPIC_API_KEY: 'sk-ant', OPENAI_API_KEY: 'sk' }).provider
        ?.name,
    ).toBe('anthropic');
    expect(
      readEnvironment({ COPILOT_PROVIDER: 'openai', ANTHROPIC_API_KEY: 'sk-ant', OPENAI_API_KEY: 'sk' }).provider?.name,
    ).toBe('openai');
    expect(readEnvironment({ GOOGLE_API_KEY: 'g-key' }).provider).toEqual({
      name: 'google',
      options: { apiKey: 'g-key', baseURL: undefined, model: 'gemini-flash-latest' },
    });
    expect(
      readEnvironment({
        COPILOT_PROVIDER: 'google',
        GOOGLE_BASE_URL: 'http://127.0.0.1:8080/gemini',
        GOOGLE_MODEL: 'gemini-pro-latest',
        OPENAI_API_KEY: 'sk',
      }).provider,
    ).toEqual({
      name: 'google',
      options: { apiKey: undefined, baseURL: 'http://127.0.0.1:8080/gemini', model: 'gemini-pro-latest' },
    });
    expect(readEnvironment({}).provider).toBeUndefined();
  });

  it('reads MCP servers and whether requests may name more', () => {
    expect(
      readEnvironment({
        MCP_SERVERS: 'http://localhost:8931/mcp, https://tools.example.com/sse',
        MCP_ALLOW_CLIENT_SERVERS: 'true',
      }),
    ).toMatchObject({
      mcpServers: ['http://localhost:8931/mcp', 'https://tools.example.com/sse'],
      allowClientMcpServers: true,
    });
    expect(() => readEnvironment({ MCP_SERVERS: 'localhost:8931' })).toThrow(/MCP_SERVERS must list http\(s\) URLs/);
    expect(
      readEnvironment({ MCP_ALLOW_CLIENT_SERVERS: 'tools.example.com, 127.0.0.1:8931' }).allowClientMcpServers,
    ).toEqual(['tools.example.com', '127.0.0.1:8931']);
    expect(readEnvironment({ MCP_ALLOW_CLIENT_SERVERS: 'false' }).allowClientMcpServers).toBe(false);
    expect(() => readEnvironment({ MCP_ALLOW_CLIENT_SERVERS: 'http://tools.example.com' })).toThrow(
      /MCP_ALLOW_CLIENT_SERVERS must be true, false, or host names/,
    );
  });

  it.each([
    [
      { COPILOT_PROVIDER: 'anthropic', OPENAI_API_KEY: 'sk' },
      /COPILOT_PROVIDER is anthropic but ANTHROPIC_API_KEY \(or ANTHROPIC_BASE_URL\) is not set; OPENAI_API_KEY is\. Set ANTHROPIC_API_KEY, or COPILOT_PROVIDER=openai\./,
    ],
    [
      { COPILOT_PROVIDER: 'openai' },
      /COPILOT_PROVIDER is openai but OPENAI_API_KEY \(or OPENAI_BASE_URL\) is not set\./,
    ],
    [
      { OPENAI_API_KEY: 'sk', ANTHROPIC_API_KEY: 'sk-ant' },
      /Several providers are configured \(OPENAI_API_KEY, ANTHROPIC_API_KEY\): set COPILOT_PROVIDER/,
    ],
    [
      { COPILOT_PROVIDER: 'mistral', OPENAI_API_KEY: 'sk' },
      /COPILOT_PROVIDER must be one of openai, anthropic, google/,
    ],
    [
      { COPILOT_PROVIDER: 'google', ANTHROPIC_API_KEY: 'sk-ant' },
      /COPILOT_PROVIDER is google but GOOGLE_API_KEY \(or GOOGLE_BASE_URL\) is not set; ANTHROPIC_API_KEY is/,
    ],
    [{ ANTHROPIC_BASE_URL: 'api.anthropic.com' }, /ANTHROPIC_BASE_URL must be a URL/],
  ])('refuses a provider setting that cannot be right: %j', (env, message) => {
    expect(() => readEnvironment(env)).toThrow(message);
  });

  it('reads production settings', () => {
    const settings = readEnvironment({
      NODE_ENV: 'production',
      PORT: '8080',
      CORS_ORIGINS: 'https://a.example, https://b.example',
      LOG_LEVEL: 'warn',
    });
    expect(settings).toMatchObject({
      environment: 'production',
      host: '0.0.0.0',
      port: 8080,
      logLevel: 'warn',
      corsOrigins: ['https://a.example', 'https://b.example'],
    });
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT must be a whole number from 0 to 65535/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    [{ OPENAI_BASE_URL: 'localhost:11434' }, /OPENAI_BASE_URL must be a URL/],
    [{ MODEL_IDLE_TIMEOUT_MS: '-5' }, /MODEL_IDLE_TIMEOUT_MS must be a whole number/],
    [{ AGENT_IDLE_TIMEOUT_MS: 'soon' }, /AGENT_IDLE_TIMEOUT_MS must be a whole number/],
    [{ MAX_CONCURRENT_RUNS: '0' }, /MAX_CONCURRENT_RUNS must be a whole number of runs, 1 or more \(got "0"\)/],
    [{ MAX_CONCURRENT_RUNS: '2.5' }, /MAX_CONCURRENT_RUNS must be a whole number/],
    [{ COPILOT_REMOTE_ENDPOINTS: 'localhost:8000' }, /COPILOT_REMOTE_ENDPOINTS must list http\(s\) URLs/],
    [{ AGUI_AGENTS: 'http://localhost:8001/agent' }, /AGUI_AGENTS must be name=url pairs/],
    [{ AGUI_AGENTS: 'a b=http://localhost:8001/' }, /AGUI_AGENTS: the agent name "a b" must be/],
    [
      { AGUI_AGENTS: 'x=http://a/', LANGGRAPH_DEPLOYMENT_URL: 'http://b', LANGGRAPH_GRAPHS: 'x' },
      /the agent name "x" is used twice/,
    ],
    [{ LANGGRAPH_DEPLOYMENT_URL: 'http://localhost:2024' }, /LANGGRAPH_GRAPHS is not/],
    [{ LANGGRAPH_GRAPHS: 'agent' }, /LANGGRAPH_DEPLOYMENT_URL is not/],
  ])('rejects %j', (env, message) => {
    expect(() => readEnvironment(env)).toThrow(message);
  });
});

// Every variable in CONFIGURATION.md's table, set past any bound (alone, and with the other variables of its row, as
// REDIS_SENTINELS goes with REDIS_SENTINEL_NAME): a value readEnvironment takes but createGateway refuses must be
// reported by npm start under a variable's name (forEnvironment's table), not the option's alone. A new setting whose
// bound only createGateway checks fails here until it has its row in VARIABLE_OF_OPTION.
describe('npm start names the variable for every bound createGateway checks', () => {
  const rows = [
    ...readFileSync(new URL('../CONFIGURATION.md', import.meta.url), 'utf8').matchAll(/^\| (`[A-Z][^|]*) \|/gm),
  ].map((match) => [...match[1].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((name) => name[1]));

  it('finds the variables in CONFIGURATION.md', () => {
    expect(rows.flat().length).toBeGreaterThan(70);
    expect(rows).toEqual(
      expect.arrayContaining([['TRUST_PROXY'], ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME'], ['INSTANCE_LEASE_MS']]),
    );
  });

  it('for every variable and every value out of bounds', async () => {
    const refusedByGateway = new Set<string>();
    const unnamed: string[] = [];
    for (const row of rows) {
      const sets = row.length > 1 ? [...row.map((variable) => [variable]), row] : [row];
      for (const variables of sets) {
        for (const value of ['-1', '0', '1.5', '99999999999', 'x']) {
          const setting = Object.fromEntries(variables.map((variable) => [variable, value]));
          let env;
          try {
            env = readEnvironment(setting);
          } catch (error) {
            expect(error).toBeInstanceOf(ConfigurationError);
            continue;
          }
          let gateway;
          try {
            gateway = createGateway(gatewayOptionsOf(env, { logger: silentLogger }));
          } catch (error) {
            expect(error).toBeInstanceOf(ConfigurationError);
            const message = forEnvironment((error as Error).message);
            const named = variables.find((variable) => message.startsWith(`${variable} (options.`));
            if (named === undefined) unnamed.push(`${JSON.stringify(setting)}: ${message}`);
            else refusedByGateway.add(named);
            continue;
          }
          await gateway.close();
        }
      }
    }
    expect(unnamed).toEqual([]);
    // The test reaches createGateway's own checks (these are some of them).
    expect([...refusedByGateway]).toEqual(
      expect.arrayContaining([
        'TRUST_PROXY',
        'INSTANCE_LEASE_MS',
        'SHUTDOWN_GRACE_MS',
        'SHUTDOWN_DELAY_MS',
        'REDIS_SENTINELS',
      ]),
    );
  }, 60_000);
});
