import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { NO_PROVIDER } from './support/environment.js';

// `npm start` (scripts/start.mjs, the real process) refuses a wrong setting in one line that names the
// variable and says what to do: no stack, no message said twice, no library's own words. Started
// settings that are not errors but need saying (Redis unreachable while runs are served, production
// with no authentication) are one log line each.

const root = fileURLToPath(new URL('..', import.meta.url));

/** Whatever the machine's environment says: demo mode, no authentication, no Redis, unless a test says. */
const CLEAN = {
  ...NO_PROVIDER,
  GATEWAY_API_KEYS: '',
  JWT_SECRET: '',
  JWT_JWKS_URL: '',
  ALLOW_UNAUTHENTICATED: '',
  REDIS_URL: '',
  STORE_FAILURE_POLICY: '',
  LOG_FORMAT: '',
  NODE_ENV: '',
  HOST: '',
  PORT: '0',
  NODE_OPTIONS: '',
  LOG_LEVEL: 'info',
};

/** The lines a process wrote, without start.mjs's note that it builds first. */
function linesOf(output: string): string[] {
  return output
    .trim()
    .split('\n')
    .filter((line) => line && !line.startsWith('Building the gateway'));
}

/** Runs scripts/start.mjs with `env` until it exits: its exit code and everything it wrote (stdout and stderr). */
function startFails(env: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { ...process.env, ...CLEAN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, lines: linesOf(output) })));
}

/**
 * Starts scripts/start.mjs with `env` (through `command`, e.g. under a terminal), waits until it says
 * it is ready, stops it with SIGTERM, and resolves with every line it wrote up to its exit.
 */
function startAndStop(env: Record<string, string>, command = [process.execPath, 'scripts/start.mjs']) {
  const child = spawn(command[0], command.slice(1), {
    cwd: root,
    env: { ...process.env, ...CLEAN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stopped = false;
  const collect = (chunk: Buffer) => {
    output += chunk;
    if (!stopped && /Copilot Gateway ready at/.test(output)) {
      stopped = true;
      child.kill('SIGTERM');
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  return new Promise<{ code: number | null; lines: string[] }>((resolve) =>
    child.on('close', (code) => resolve({ code, lines: linesOf(output) })),
  );
}

/** A loopback port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// start.mjs builds first when dist/ is older than the sources: done once here, with the time a build
// takes on a busy machine, so that each test's bound is for starting alone.
beforeAll(async () => {
  expect((await startFails({ LOG_FORMAT: 'xml' })).code).toBe(1);
}, 300_000);

describe('npm start refuses a wrong setting in one line naming the variable', () => {
  it.each([
    [
      'a HOST that does not resolve',
      { HOST: 'notahost.invalid' },
      /^Configuration error: HOST "notahost\.invalid" is not a name this machine can resolve: use 127\.0\.0\.1/,
    ],
    [
      'a GRAPHQL_PATH without its slash',
      { GRAPHQL_PATH: 'api' },
      /^Configuration error: GRAPHQL_PATH must be a URL path starting with "\/", such as "\/api\/copilotkit"/,
    ],
    [
      'a short key in GATEWAY_API_KEYS (the key itself not shown)',
      { GATEWAY_API_KEYS: 'a-long-enough-key-1234,short' },
      /^Configuration error: GATEWAY_API_KEYS: key number 2 has 5 characters; each key needs at least 16[^"]*"openssl rand -hex 32"\)\.$/,
    ],
    [
      'an unknown NODE_ENV, with the values it may take',
      { NODE_ENV: 'prod' },
      /^Configuration error: NODE_ENV must be production, development, test or unset \(got "prod"\)\.$/,
    ],
    [
      'ALLOW_UNAUTHENTICATED=false with no authentication',
      { ALLOW_UNAUTHENTICATED: 'false' },
      /^Configuration error: ALLOW_UNAUTHENTICATED=false and no authentication is configured: set GATEWAY_API_KEYS/,
    ],
    ['a LOG_FORMAT it does not know', { LOG_FORMAT: 'xml' }, /^Configuration error: LOG_FORMAT must be json or pretty/],
    // Bounds only createGateway checks: its message names the option, npm start the variable first.
    [
      'a TRUST_PROXY past its bound',
      { TRUST_PROXY: '20' },
      /^Configuration error: TRUST_PROXY \(options\.trustProxy\) must be a whole number from 0 to 10 \(got 20\)\.$/,
    ],
    [
      'an INSTANCE_LEASE_MS below its bound',
      { INSTANCE_LEASE_MS: '100' },
      /^Configuration error: INSTANCE_LEASE_MS \(options\.threads\.leaseMs\) must be a whole number from 300 to 600000/,
    ],
  ])(
    'reports %s, and exits 1',
    async (_what, env, message) => {
      const { code, lines } = await startFails(env);
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(message);
      // A key is a secret: its length is said, never the key.
      expect(lines[0]).not.toMatch(/a-long-enough-key|short\b/);
    },
    30_000,
  );

  it('reports Redis unreachable with STORE_FAILURE_POLICY=fail in one line naming REDIS_URL, without the password, and exits 1', async () => {
    const port = await closedPort();
    const { code, lines } = await startFails({
      REDIS_URL: `redis://:hunter2@127.0.0.1:${port}`,
      STORE_FAILURE_POLICY: 'fail',
    });
    expect(code).toBe(1);
    expect(lines).toEqual([
      `Configuration error: Redis at redis://:***@127.0.0.1:${port} cannot be reached (connect ECONNREFUSED ` +
        `127.0.0.1:${port}): start Redis there or correct REDIS_URL; STORE_FAILURE_POLICY=serve starts without it.`,
    ]);
  }, 30_000);

  it('reports a Unix socket it cannot reach without the password in its query, and exits 1', async () => {
    const socket = join(tmpdir(), `cg-missing-${process.pid}.sock`);
    const { code, lines } = await startFails({
      REDIS_URL: `unix://${socket}?password=hun#ter2&db=0`,
      STORE_FAILURE_POLICY: 'fail',
    });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(`Redis at unix://${socket}?password=***&db=0`);
    expect(lines[0]).not.toMatch(/hun|ter2/);
  }, 30_000);
});

describe('npm start says what needs saying at start, once', () => {
  it('with Redis unreachable and runs served regardless (the default), says so in one log line: no stack, no ioredis words, once', async () => {
    const port = await closedPort();
    const { code, lines } = await startAndStop({ REDIS_URL: `redis://127.0.0.1:${port}` });
    expect(code).toBe(0);
    const entries = lines.map((line) => JSON.parse(line));
    const ready = entries.findIndex((entry) => /Copilot Gateway ready/.test(entry.msg));
    const before = entries.slice(0, ready);
    expect(before).toEqual([
      expect.objectContaining({
        level: 40,
        redis: `redis://127.0.0.1:${port}`,
        msg:
          `Redis at redis://127.0.0.1:${port} cannot be reached (connect ECONNREFUSED 127.0.0.1:${port}): runs are ` +
          'served unrecorded until it answers (STORE_FAILURE_POLICY=serve), retrying in the background; start ' +
          'Redis there or correct REDIS_URL.',
      }),
    ]);
    expect(before[0]).not.toHaveProperty('err');
    expect(lines.join('\n')).not.toMatch(/enableOfflineQueue|Connection is closed|stack/);
  }, 30_000);

  it('in production with no authentication, warns at every start, and not once ALLOW_UNAUTHENTICATED=true or a key is set', async () => {
    const warning = (lines: string[]) =>
      lines.map((line) => JSON.parse(line)).filter((entry) => /^No authentication/.test(entry.msg));
    const production = { NODE_ENV: 'production', HOST: '127.0.0.1' };
    const open = await startAndStop(production);
    expect(warning(open.lines)).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(
          /Set GATEWAY_API_KEYS .* or JWT_JWKS_URL or JWT_SECRET; or ALLOW_UNAUTHENTICATED=true/,
        ),
      }),
    ]);
    expect(warning((await startAndStop({ ...production, ALLOW_UNAUTHENTICATED: 'true' })).lines)).toEqual([]);
    expect(warning((await startAndStop({ ...production, GATEWAY_API_KEYS: 'a-long-enough-key-1234' })).lines)).toEqual(
      [],
    );
    // Development is for trying things: no warning there.
    expect(warning((await startAndStop({})).lines)).toEqual([]);
  }, 60_000);
});

describe('npm start logs', () => {
  it('as JSON, one object a line, when stdout is not a terminal', async () => {
    const { lines } = await startAndStop({});
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines)
      expect(Object.keys(JSON.parse(line)).slice(0, 5)).toEqual([
        'level',
        'time',
        'pid',
        'hostname',
        expect.any(String),
      ]);
  }, 30_000);

  it('readably with LOG_FORMAT=pretty, and as JSON with LOG_FORMAT=json', async () => {
    const pretty = await startAndStop({ LOG_FORMAT: 'pretty' });
    expect(pretty.lines).toContainEqual(
      expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Copilot Gateway ready at /),
    );
    expect(pretty.lines).toContainEqual(expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: shut down$/));
    const json = await startAndStop({ LOG_FORMAT: 'json' });
    expect(json.lines.map((line) => JSON.parse(line).msg)).toContainEqual(
      expect.stringMatching(/^Copilot Gateway ready at/),
    );
  }, 30_000);

  // util-linux's `script` gives the process a terminal; without it this cannot be shown.
  const script = existsSync('/usr/bin/script');
  (script ? it : it.skip)(
    `readably on a terminal outside production, as JSON in production${script ? '' : ' (skipped: no /usr/bin/script to make a terminal)'}`,
    async () => {
      const onTerminal = (env: Record<string, string>) =>
        startAndStop(env, ['/usr/bin/script', '-qefc', `${process.execPath} scripts/start.mjs`, '/dev/null']);
      const development = await onTerminal({});
      // Colours on a terminal: ESC [ … m around the level.
      const text = development.lines.join('\n');
      expect(text).toMatch(/INFO.*Copilot Gateway ready at/);
      expect(text).toContain('\u001b[32mINFO\u001b[39m');
      expect(development.lines.some((line) => line.startsWith('{'))).toBe(false);
      const production = await onTerminal({ NODE_ENV: 'production', HOST: '127.0.0.1', ALLOW_UNAUTHENTICATED: 'true' });
      expect(production.lines.filter((line) => /Copilot Gateway ready/.test(line))).toEqual([
        expect.stringMatching(/^\{"level":30,/),
      ]);
    },
    30_000,
  );
});
