import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { GatewayError } from '../src/core/errors.js';
import { SdkAttempts } from '../src/upstream/attempts.js';
import { UpstreamClient } from '../src/upstream/client.js';
import { readJsonLines } from '../src/upstream/jsonl.js';
import { backoffDelay, parseRetryAfter, retryPolicy } from '../src/upstream/retry.js';
import { silentLogger } from './support/harness.js';

// The one upstream HTTP client: retries, Retry-After, timeouts, aborts at every stage, reuse.

type Handler = (req: IncomingMessage, res: ServerResponse, call: number) => void;

let server: Server;
let base: string;
let handler: Handler;
let calls = 0;
const client = new UpstreamClient();

beforeAll(async () => {
  server = createServer((req, res) => {
    calls++;
    req.resume();
    handler(req, res, calls);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => {
  calls = 0;
});

afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const fast = (overrides = {}) => retryPolicy({ baseDelayMs: 1, maxDelayMs: 5, ...overrides }, 'test');

function call(overrides: Partial<Parameters<UpstreamClient['request']>[0]> = {}) {
  return {
    url: `${base}/agents/execute`,
    json: { hello: 'world' },
    who: 'agent "crew"',
    policy: fast(),
    signal: new AbortController().signal,
    logger: silentLogger,
    ...overrides,
  };
}

async function text(body: AsyncIterable<Uint8Array>): Promise<string> {
  let out = '';
  for await (const chunk of body) out += Buffer.from(chunk).toString('utf8');
  return out;
}

/** The two ways to read an answer: `request` (a body to iterate) and `stream` (chunks handed over as they arrive). */
const ways = {
  request: async (c: ReturnType<typeof call>) => {
    const response = await client.request(c);
    return { text: await text(response.body), attempts: response.attempts };
  },
  stream: async (c: ReturnType<typeof call>) => {
    let out = '';
    const { attempts } = await client.stream(c, (chunk) => (out += chunk.toString('utf8')));
    return { text: out, attempts };
  },
};

async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    return error as GatewayError;
  }
  throw new Error('expected a failure');
}

describe.each(Object.entries(ways))('retries (%s)', (_way, answer) => {
  it('retries a 503 and returns the answer that follows', async () => {
    handler = (_req, res, n) => (n < 3 ? res.writeHead(503).end() : res.end('ok'));
    const response = await answer(call());
    expect(response.text).toBe('ok');
    expect(calls).toBe(3);
    expect(response.attempts).toBe(3);
  });

  it('gives up after maxRetries with UPSTREAM_UNAVAILABLE, naming the upstream but not its URL', async () => {
    handler = (_req, res) =>
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"detail":"down for maintenance at http://10.0.0.7:8000"}');
    const error = await failure(answer(call({ policy: fast({ maxRetries: 3 }) })));
    expect(calls).toBe(4);
    expect(error).toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      message: 'Agent "crew" failed (HTTP 503).',
      details: { upstreamStatus: 503 },
    });
    expect(JSON.stringify(error.toJSON())).not.toMatch(/127\.0\.0\.1|10\.0\.0\.7/);
  });

  it.each([408, 429, 500, 502, 504])('retries %i', async (status) => {
    handler = (_req, res, n) => (n === 1 ? res.writeHead(status).end() : res.end('ok'));
    await answer(call());
    expect(calls).toBe(2);
  });

  it.each([400, 401, 404, 422])('does not retry %i, and says what the upstream refused', async (status) => {
    handler = (_req, res) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":"name is required"}');
    const error = await failure(answer(call()));
    expect(calls).toBe(1);
    expect(error.code).toBe(status === 401 ? 'UPSTREAM_AUTHENTICATION_FAILED' : 'UPSTREAM_REJECTED');
    if (status !== 401)
      expect(error.message).toBe(`Agent "crew" rejected the request (HTTP ${status}): name is required`);
  });

  it('honours Retry-After in seconds, and a long one only up to maxRetryAfterMs', async () => {
    // An hour, cut to 20 ms: without the cap this test would run into its timeout.
    handler = (_req, res, n) => (n === 1 ? res.writeHead(429, { 'retry-after': '3600' }).end() : res.end('ok'));
    await answer(call({ policy: fast({ maxRetryAfterMs: 20 }) }));
    expect(calls).toBe(2);
  });

  it('honours Retry-After as an HTTP date', async () => {
    handler = (_req, res, n) =>
      n === 1 ? res.writeHead(503, { 'retry-after': new Date(Date.now() - 1000).toUTCString() }).end() : res.end('ok');
    await answer(call());
    expect(calls).toBe(2);
  });

  it('does not start a retry that cannot finish within the total timeout', async () => {
    handler = (_req, res) => res.writeHead(429, { 'retry-after': '5' }).end();
    const error = await failure(answer(call({ policy: fast({ totalTimeoutMs: 1000 }) })));
    expect(calls).toBe(1);
    expect(error).toMatchObject({
      code: 'UPSTREAM_RATE_LIMITED',
      details: { upstreamStatus: 429, retryAfterSeconds: 5 },
    });
  });

  it('retries an attempt that gets no answer in time, then fails with UPSTREAM_TIMEOUT', async () => {
    handler = () => {}; // never answers
    const error = await failure(answer(call({ policy: fast({ attemptTimeoutMs: 200, maxRetries: 1 }) })));
    expect(calls).toBe(2);
    expect(error.code).toBe('UPSTREAM_TIMEOUT');
  });

  it('retries a connection reset before any byte of the answer', async () => {
    handler = (req, res, n) => (n < 3 ? req.socket.destroy() : res.end('ok'));
    expect((await answer(call())).text).toBe('ok');
    expect(calls).toBe(3);
  });

  it('reports an unreachable upstream after its retries', async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const retries: unknown[] = [];
    const logger = {
      ...silentLogger,
      info: (fields: unknown) => retries.push(fields),
      warn: () => {},
    } as unknown as typeof silentLogger;
    const error = await failure(
      answer(call({ url: `http://127.0.0.1:${port}/info`, logger, policy: fast({ maxRetries: 2 }) })),
    );
    expect(error).toMatchObject({
      code: 'UPSTREAM_UNREACHABLE',
      message: 'Agent "crew" could not be reached (connection refused).',
    });
    expect(retries).toHaveLength(2);
  });

  it('never retries a streamed answer whose body broke off', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/jsonl' });
      res.write('{"type":"TextMessageStart","messageId":"m1"}\n');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const error = await failure(answer(call()));
    expect(error.code).toBe('UPSTREAM_STREAM_INTERRUPTED');
    expect(calls).toBe(1);
  });
});

describe.each(Object.entries(ways))('aborts (%s)', (way, answer) => {
  it('stops waiting to retry', async () => {
    handler = (_req, res) => res.writeHead(503, { 'retry-after': '20' }).end();
    const controller = new AbortController();
    // Abort once the client has the 503 and starts waiting (it says so in its log).
    let waiting!: () => void;
    const isWaiting = new Promise<void>((resolve) => (waiting = resolve));
    const logger = {
      ...silentLogger,
      info: (_fields: unknown, message: string) => message.endsWith('retrying') && waiting(),
      warn: () => {},
    } as unknown as typeof silentLogger;
    const pending = answer(call({ signal: controller.signal, logger, policy: fast({ maxRetryAfterMs: 60_000 }) }));
    await isWaiting;
    controller.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await failure(pending)).toMatchObject({ code: 'CLIENT_DISCONNECTED' });
    expect(calls).toBe(1);
  });

  it('closes a request still waiting for its answer', async () => {
    let closed!: () => void;
    const wasClosed = new Promise<void>((resolve) => (closed = resolve));
    let arrived!: () => void;
    const hasArrived = new Promise<void>((resolve) => (arrived = resolve));
    handler = (req) => {
      req.socket.once('close', closed);
      arrived();
    };
    const controller = new AbortController();
    const pending = answer(call({ signal: controller.signal }));
    await hasArrived;
    controller.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await failure(pending)).toMatchObject({ code: 'CLIENT_DISCONNECTED' });
    await wasClosed;
  });

  it('closes a streamed answer in the middle', async () => {
    let closed!: () => void;
    const wasClosed = new Promise<void>((resolve) => (closed = resolve));
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('{"n":1}\n');
      res.once('close', closed);
    };
    const controller = new AbortController();
    const gone = new GatewayError('CLIENT_DISCONNECTED', 'gone');
    const lines: unknown[] = [];
    let reading: Promise<unknown>;
    if (way === 'request') {
      const response = await client.request(call({ signal: controller.signal }));
      reading = (async () => {
        for await (const { value } of readJsonLines(response.body, 'agent "crew"')) {
          lines.push(value);
          controller.abort(gone);
        }
      })();
    } else {
      reading = client.stream(call({ signal: controller.signal }), (chunk) => {
        lines.push(JSON.parse(chunk.toString('utf8')));
        controller.abort(gone);
      });
    }
    expect(await failure(reading)).toBe(gone);
    expect(lines).toEqual([{ n: 1 }]);
    await wasClosed;
  });
});

describe('streaming an answer', () => {
  it('hands each read to the caller as it arrives, before the answer has ended', async () => {
    let more!: () => void;
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('first ');
      more = () => res.end('second');
    };
    const chunks: string[] = [];
    const done = client.stream(call(), (chunk) => {
      chunks.push(chunk.toString('utf8'));
      if (chunks.length === 1) more();
    });
    expect(await done).toMatchObject({ status: 200, attempts: 1 });
    expect(chunks.join('')).toBe('first second');
    expect(chunks[0]).toBe('first ');
  });

  it('ends the call with what the caller threw, and closes the connection', async () => {
    let closed!: () => void;
    const wasClosed = new Promise<void>((resolve) => (closed = resolve));
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('not what was expected');
      res.once('close', closed);
    };
    const thrown = new GatewayError('UPSTREAM_BAD_RESPONSE', 'bad line');
    expect(
      await failure(
        client.stream(call(), () => {
          throw thrown;
        }),
      ),
    ).toBe(thrown);
    await wasClosed;
    expect(calls).toBe(1);
  });

  it('gives no chunk of an error answer to the caller, and passes its explanation on', async () => {
    handler = (_req, res) =>
      res
        .writeHead(422, { 'content-type': 'application/json' })
        .end('{"error":{"message":"messages must not be empty"}}');
    const chunks: Buffer[] = [];
    const error = await failure(client.stream(call(), (chunk) => chunks.push(chunk)));
    expect(error).toMatchObject({
      code: 'UPSTREAM_REJECTED',
      message: 'Agent "crew" rejected the request (HTTP 422): messages must not be empty',
    });
    expect(chunks).toEqual([]);
  });

  it('sends the body with its content-length, not chunked, and whole again on a retry', async () => {
    const seen: { length?: string; encoding?: string; body: string }[] = [];
    handler = (req, res, n) => {
      const record = { length: req.headers['content-length'], encoding: req.headers['transfer-encoding'], body: '' };
      seen.push(record);
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (record.body += chunk));
      req.on('end', () => (n === 1 ? res.writeHead(503).end() : res.writeHead(200).end('ok')));
    };
    const json = { messages: [{ role: 'user', content: `Grüße 👋 ${'x'.repeat(70_000)}` }] };
    expect(await client.stream(call({ json }), () => {})).toMatchObject({ status: 200, attempts: 2 });
    const expected = JSON.stringify(json);
    expect(seen).toEqual([
      { length: String(Buffer.byteLength(expected)), encoding: undefined, body: expected },
      { length: String(Buffer.byteLength(expected)), encoding: undefined, body: expected },
    ]);
  });

  // undici keeps a Buffer body on its request until the answer has ended: for a stream, its whole
  // life. The body is given as an iterable it lets go of once written (client.ts writtenOnce).
  it('lets go of the body once it is written, while the answer still streams', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const held: ServerResponse[] = [];
    // The answer begins once the whole body has arrived: nothing of it is still on its way then.
    handler = (req, res) => {
      req.on('end', () => {
        res.writeHead(200);
        res.write('first');
        held.push(res);
      });
    };
    const streams = 40;
    const bodyBytes = 256 * 1024;
    gc();
    const before = process.memoryUsage().arrayBuffers;
    let started = 0;
    let allStarted!: () => void;
    const going = new Promise<void>((resolve) => (allStarted = resolve));
    const done = Array.from({ length: streams }, (_, i) =>
      client.stream(call({ json: { n: i, content: 'x'.repeat(bodyBytes) } }), () => {
        if (++started === streams) allStarted();
      }),
    );
    await going;
    // Written means drained: undici waits for a socket's 'drain' before it lets go of the body, and
    // that may come a turn after the server's first bytes (seen: half the bodies still held).
    let grown = Infinity;
    for (let turn = 0; turn < 20 && grown >= (streams * bodyBytes) / 4; turn++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
      grown = process.memoryUsage().arrayBuffers - before;
    }
    for (const res of held) res.end();
    await Promise.all(done);
    // Held, the bodies would be 10 MB of buffers.
    expect(grown).toBeLessThan((streams * bodyBytes) / 4);
  });

  it('sends nothing for a caller that has already gone', async () => {
    const controller = new AbortController();
    const gone = new GatewayError('CLIENT_DISCONNECTED', 'gone');
    controller.abort(gone);
    expect(await failure(client.stream(call({ signal: controller.signal }), () => {}))).toBe(gone);
    expect(calls).toBe(0);
  });
});

describe.each(Object.entries(ways))('credentials an error answer repeats (%s)', (_way, answer) => {
  it('are taken out of its explanation: header values (with or without a scheme), and query parameters as written and as read', async () => {
    // The service repeats whatever it was sent that looks like a credential: the URL as written, a signature as read.
    handler = (req, res) =>
      res.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: {
            message:
              `bad: ${req.headers.authorization} ${req.headers['x-api-key']} ${req.url} ` +
              new URL(req.url!, 'http://x').searchParams.get('sig'),
          },
        }),
      );
    const error = await failure(
      answer(
        call({
          url: `${base}/x?api_key=query-secret-1234&page=2&sig=AbCd%2BEf%2FGh%3D%3D&x-design=plain-design-value`,
          headers: { authorization: 'Key header-secret-5678', 'x-api-key': 'short' },
        }),
      ),
    );
    expect(error.code).toBe('UPSTREAM_REJECTED');
    expect(error.message).toContain(
      'bad: [redacted] short /x?api_key=[redacted]&page=2&sig=[redacted]&x-design=plain-design-value [redacted]',
    );
    for (const secret of ['header-secret-5678', 'query-secret-1234', 'AbCd'])
      expect(error.message).not.toContain(secret);
  });
});

describe.each(Object.entries(ways))('Basic credentials an error answer repeats as read (%s)', (_way, answer) => {
  it('are taken out of its explanation: the user and password decoded, and the password alone', async () => {
    // A service that repeats the user and password it was sent, decoded from the Basic header, in a 400's explanation
    // (a 401's is not shown to clients).
    handler = (req, res) => {
      const decoded = Buffer.from(req.headers.authorization!.replace(/^Basic /, ''), 'base64').toString('utf8');
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: `refused ${decoded}; password ${decoded.split(':')[1]}` } }));
    };
    const basic = `Basic ${Buffer.from('gateway-user:basic-password-9876').toString('base64')}`;
    const error = await failure(answer(call({ headers: { authorization: basic } })));
    expect(error.code).toBe('UPSTREAM_REJECTED');
    expect(error.message).toContain('refused [redacted]; password [redacted]');
    expect(error.message).not.toContain('basic-password-9876');
  });
});

describe.each(Object.entries(ways))('calls that cannot be sent (%s)', (_way, answer) => {
  it('fail at once, not after the attempt timeout: a header with a line break', async () => {
    handler = (_req, res) => res.end('never');
    // A key read from a secret file with its trailing newline; undici refuses it within dispatch.
    const slow = fast({ attemptTimeoutMs: 60_000, totalTimeoutMs: 60_000 });
    const error = await failure(answer(call({ headers: { authorization: 'Bearer key\n' }, policy: slow })));
    expect(error).toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
    expect(calls).toBe(0);
  });
});

describe("the caller's signal", () => {
  it('is let go of once each call is over, however many calls share it', async () => {
    handler = (_req, res) => res.end('{"ok":true}');
    const controller = new AbortController();
    const { signal } = controller;
    for (let i = 0; i < 12; i++) {
      await ways.request(call({ signal }));
      await ways.stream(call({ signal }));
      const fetched = await client.fetchFor(
        'test',
        fast(),
        silentLogger,
      )(`${base}/x`, { method: 'POST', body: '{}', signal });
      expect(await fetched.json()).toEqual({ ok: true });
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('still ends a body read through fetchFor when it aborts', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('partial');
    };
    const controller = new AbortController();
    const fetched = await client.fetchFor('test', fast(), silentLogger)(`${base}/x`, { signal: controller.signal });
    const reader = fetched.body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('partial');
    const gone = new GatewayError('CLIENT_DISCONNECTED', 'gone');
    controller.abort(gone);
    await expect(reader.read()).rejects.toBeDefined();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe.each(Object.entries(ways))('error answers that stall (%s)', (_way, answer) => {
  // Headers of an error, then a body that never comes: the status is all there is to go on.
  const stalledError = (status: number) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"det');
  };

  it('gives up waiting for the body after a moment and reports the status', async () => {
    handler = stalledError(400);
    const error = await failure(answer(call()));
    expect(error).toMatchObject({ code: 'UPSTREAM_REJECTED', details: { upstreamStatus: 400 } });
  });

  it("lets the caller's abort end the wait", async () => {
    handler = stalledError(400);
    const controller = new AbortController();
    const pending = answer(call({ signal: controller.signal }));
    setTimeout(() => controller.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone')), 50);
    expect(await failure(pending)).toMatchObject({ code: 'CLIENT_DISCONNECTED' });
  });

  it("does not wait for a declined answer's body before retrying", async () => {
    handler = (req, res, n) => (n === 1 ? stalledError(503)(req, res) : res.end('{"ok":true}'));
    expect(await client.json(call())).toEqual({ ok: true });
    expect(calls).toBe(2);
  });
});

describe('connections', () => {
  it('reuses one keep-alive connection for calls to the same origin', async () => {
    const own = createServer((req, res) => req.resume().on('end', () => res.end('{}')));
    let opened = 0;
    own.on('connection', () => opened++);
    await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(own.address() as AddressInfo).port}/info`;
    try {
      for (let i = 0; i < 10; i++) await client.json(call({ url }));
      // Without reuse, ten calls would open ten connections.
      expect(opened).toBeLessThanOrEqual(2);
    } finally {
      own.closeAllConnections();
      await new Promise<void>((resolve) => own.close(() => resolve()));
    }
  });

  it('reads a JSON answer and calls one that is not JSON a bad response', async () => {
    handler = (_req, res) => res.end('{"actions":[]}');
    expect(await client.json(call())).toEqual({ actions: [] });
    handler = (_req, res) => res.end('<html>oops</html>');
    expect(await failure(client.json(call()))).toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
      message: 'Agent "crew" answered with something that is not JSON.',
    });
  });
});

describe('the retry policy', () => {
  it('waits a random time up to a ceiling that doubles and is capped', () => {
    const policy = retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000 }, 'p');
    expect([0, 1, 2, 3, 4, 5].map((retry) => backoffDelay(policy, retry, () => 1))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
    expect(backoffDelay(policy, 3, () => 0.5)).toBe(400);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('refuses a policy it cannot follow, saying what to fix', () => {
    expect(() => retryPolicy({ maxRetries: -1 }, 'remoteEndpoints[0].retry')).toThrow(
      'remoteEndpoints[0].retry.maxRetries must be a whole number from 0 to 20 (got -1).',
    );
    expect(() => retryPolicy({ retryStatuses: [99] } as never, 'p')).toThrow(
      'p.retryStatuses must be an array of HTTP statuses such as [429, 503].',
    );
    expect(() => retryPolicy({ retries: 2 } as never, 'p')).toThrow(/Unknown option p\.retries/);
  });
});

describe('reading JSON lines', () => {
  const source = (parts: (string | Uint8Array)[]) => ({
    async *[Symbol.asyncIterator]() {
      for (const part of parts) yield typeof part === 'string' ? new TextEncoder().encode(part) : part;
    },
  });
  const read = async (parts: (string | Uint8Array)[]) => {
    const values: unknown[] = [];
    for await (const { value } of readJsonLines(source(parts), 'agent "crew"')) values.push(value);
    return values;
  };

  it('survives chunks split anywhere, inside a line and inside a character', async () => {
    const bytes = new TextEncoder().encode('{"content":"héllo 👋"}\r\n\r\n{"n":2}\n{"last":true}');
    const oneByOne = Array.from(bytes, (byte) => Uint8Array.of(byte));
    expect(await read(oneByOne)).toEqual([{ content: 'héllo 👋' }, { n: 2 }, { last: true }]);
  });

  it('reads a first line that begins with a byte order mark', async () => {
    const body = [Buffer.from([0xef, 0xbb]), Buffer.from([0xbf]), Buffer.from('{"n":1}\n{"n":2}\n')];
    expect(await read(body)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('reads a last line that has no trailing newline', async () => {
    expect(await read(['{"a":1}\n{"b":', '2}'])).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('fails on a line that is not JSON, naming the upstream and the line', async () => {
    await expect(read(['{"a":1}\n\nnot json\n{"b":2}\n'])).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
      message: 'Agent "crew" sent line 3, which is not JSON.',
    });
  });
});

describe('SdkAttempts (the retries a provider SDK makes on its own, seen through its fetch)', () => {
  const run = async (outcomes: (number | Error)[]) => {
    const retries: string[] = [];
    const attempts = new SdkAttempts(
      'the model provider (Test)',
      (who, reason) => void retries.push(`${who}: ${reason}`),
      silentLogger,
    );
    for (const outcome of outcomes) {
      await attempts
        .send(async () => {
          if (outcome instanceof Error) throw outcome;
          return { status: outcome };
        })
        .catch(() => undefined);
    }
    return retries;
  };

  it('reports an attempt that follows a failed one, with why that one failed', async () => {
    expect(await run([200])).toEqual([]);
    expect(await run([503, 429, 200])).toEqual([
      'the model provider (Test): HTTP 503',
      'the model provider (Test): HTTP 429',
    ]);
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    const timedOut = Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
    expect(await run([refused, timedOut, 200])).toEqual([
      'the model provider (Test): UPSTREAM_UNREACHABLE',
      'the model provider (Test): UPSTREAM_TIMEOUT',
    ]);
  });

  it("does not count as a retry an attempt that follows a successful one (Gemini's automatic continuation)", async () => {
    expect(await run([200, 200, 200])).toEqual([]);
    expect(await run([200, 503, 200])).toEqual(['the model provider (Test): HTTP 503']);
  });
});
