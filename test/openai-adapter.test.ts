import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { close, fakeListener, listen } from './support/loopback.js';
import { silentLogger } from './support/harness.js';

/**
 * The OpenAI adapter against a server whose every byte and every write the test decides: how the
 * stream is cut into reads, what it sends after an error, whether it keeps the connection.
 */
type Handler = (req: IncomingMessage, res: ServerResponse, body: any) => void | Promise<void>;

let server: Server;
let baseURL: string;
let handler: Handler;
const requests: { url: string; headers: IncomingMessage['headers']; body: any }[] = [];
let connections = 0;

beforeAll(async () => {
  server = createServer(
    fakeListener(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
      requests.push({ url: req.url ?? '', headers: req.headers, body });
      await handler(req, res, body);
    }),
  );
  server.on('connection', () => connections++);
  baseURL = `${await listen(server)}/v1`;
});

afterAll(() => close(server));

const adapters: OpenAIAdapter[] = [];
afterEach(async () => {
  requests.length = 0;
  for (const adapter of adapters.splice(0)) await adapter.close();
});

function adapter(options: ConstructorParameters<typeof OpenAIAdapter>[0] = {}): OpenAIAdapter {
  const created = new OpenAIAdapter({ baseURL, apiKey: 'sk-test', maxRetries: 0, ...options });
  adapters.push(created);
  return created;
}

const request: ModelRequest = {
  threadId: 't',
  runId: 'r',
  messages: [{ kind: 'text', id: 'u1', role: 'user', content: 'hi' }],
  tools: [],
  forwardedParameters: {},
  logger: silentLogger,
};

/** A ModelOutput that records what the adapter wrote, in order. */
function recorder(): ModelOutput & { log: string[] } {
  const log: string[] = [];
  let ids = 0;
  return {
    log,
    textStart: (proposed) => (log.push(`start ${proposed}`), `m${++ids}`),
    textContent: (id, content) => void log.push(`text ${id} ${content}`),
    textEnd: (id) => void log.push(`end ${id}`),
    actionStart: (proposed, name) => (log.push(`call ${proposed} ${name}`), `c${++ids}`),
    actionArgs: (id, args) => void log.push(`args ${id} ${args}`),
    actionEnd: (id) => void log.push(`callend ${id}`),
    reasoningStart: (proposed) => (log.push(`think ${proposed}`), `r${++ids}`),
    reasoningContent: (id, content) => void log.push(`thought ${id} ${content}`),
    reasoningEnd: (id) => void log.push(`thinkend ${id}`),
    usage: (report) => void log.push(`usage ${JSON.stringify(report)}`),
  };
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('OpenAIAdapter (Chat Completions streaming on undici)', () => {
  it('sends the request with the key, default headers and query, and streams the answer', async () => {
    handler = (_req, res) => {
      sse(res);
      res.end(
        chunk({ role: 'assistant', content: '' }) +
          chunk({ content: 'Hel' }) +
          chunk({ content: 'lo' }) +
          chunk({}, 'stop') +
          'data: [DONE]\n\n',
      );
    };
    const output = recorder();
    await adapter({
      defaultHeaders: { 'x-route': 'eu' },
      defaultQuery: { 'api-version': '2024-10-21' },
      model: 'gpt-x',
    }).stream(request, output, new AbortController().signal);
    expect(requests[0].url).toBe('/v1/chat/completions?api-version=2024-10-21');
    expect(requests[0].headers).toMatchObject({
      authorization: 'Bearer sk-test',
      'x-route': 'eu',
      'content-type': 'application/json',
    });
    expect(requests[0].body).toEqual({ model: 'gpt-x', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    // Tokens that arrive in one read are written as one chunk; the text is the same.
    expect(output.log).toEqual(['start chatcmpl-1', 'text m1 Hello', 'end m1']);
  });

  it('keeps tokens that arrive apart as separate chunks, and reads events cut anywhere (inside a character too)', async () => {
    handler = async (_req, res) => {
      sse(res);
      const bytes = Buffer.from(
        chunk({ content: 'Grüß ' }) + chunk({ content: 'dich' }) + chunk({}, 'stop') + 'data: [DONE]\n\n',
      );
      const cut = bytes.indexOf(Buffer.from('ü')) + 1; // between the two bytes of "ü"
      res.write(bytes.subarray(0, cut));
      await pause(20);
      const second = bytes.indexOf('data: {', cut) + 10; // inside the second event's JSON
      res.write(bytes.subarray(cut, second));
      await pause(20);
      res.end(bytes.subarray(second));
    };
    const output = recorder();
    await adapter().stream(request, output, new AbortController().signal);
    expect(output.log).toEqual(['start chatcmpl-1', 'text m1 Grüß ', 'text m1 dich', 'end m1']);
  });

  it('reads a stream that begins with a byte order mark, even one cut across reads', async () => {
    handler = async (_req, res) => {
      sse(res);
      const bytes = Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(chunk({ content: 'Hi' }) + chunk({}, 'stop') + 'data: [DONE]\n\n'),
      ]);
      res.write(bytes.subarray(0, 2)); // inside the mark
      await pause(20);
      res.end(bytes.subarray(2));
    };
    const output = recorder();
    await adapter().stream(request, output, new AbortController().signal);
    expect(output.log).toEqual(['start chatcmpl-1', 'text m1 Hi', 'end m1']);
  });

  it('streams tool calls with their arguments, and ends the text before them', async () => {
    handler = (_req, res) => {
      sse(res);
      res.end(
        chunk({ content: 'Sure. ' }) +
          chunk({
            tool_calls: [
              { index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '{"q":' } },
            ],
          }) +
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] }) +
          chunk({}, 'tool_calls') +
          'data: [DONE]\n\n',
      );
    };
    const output = recorder();
    await adapter().stream(
      {
        ...request,
        tools: [{ name: 'lookup', description: 'Looks up.', parameters: { type: 'object', properties: {} } }],
      },
      output,
      new AbortController().signal,
    );
    expect(output.log).toEqual([
      'start chatcmpl-1',
      'text m1 Sure. ',
      'end m1',
      'call call_a lookup',
      'args c2 {"q":',
      'args c2 "x"}',
      'callend c2',
    ]);
    expect(requests[0].body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'lookup', description: 'Looks up.', parameters: { type: 'object', properties: {} } },
      },
    ]);
  });

  it('retries a declined call (503 with Retry-After) as the SDK does, reporting the retry, then streams', async () => {
    let calls = 0;
    handler = (_req, res) => {
      if (++calls === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end('{"error":{"message":"overloaded"}}');
        return;
      }
      sse(res);
      res.end(chunk({ content: 'ok' }) + chunk({}, 'stop') + 'data: [DONE]\n\n');
    };
    const output = recorder();
    const retries: [string, string][] = [];
    await adapter({ maxRetries: 2 }).stream(
      { ...request, onRetry: (who, reason) => void retries.push([who, reason]) },
      output,
      new AbortController().signal,
    );
    expect(calls).toBe(2);
    expect(retries).toEqual([['the model provider', 'HTTP 503']]);
    expect(output.log).toEqual(['start chatcmpl-1', 'text m1 ok', 'end m1']);
  });

  it('tries a call the provider refuses (HTTP 400) once, retries allowed: one request, no retry reported', async () => {
    handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"messages must not be empty"}}');
    };
    const retries: string[] = [];
    const failure = adapter({ maxRetries: 2 }).stream(
      { ...request, onRetry: (_who, reason) => void retries.push(reason) },
      recorder(),
      new AbortController().signal,
    );
    await expect(failure).rejects.toMatchObject({ code: 'UPSTREAM_REJECTED' });
    expect(requests).toHaveLength(1);
    expect(retries).toEqual([]);
  });

  it('maps a refused key to UPSTREAM_AUTHENTICATION_FAILED with a hint, without the provider text', async () => {
    handler = (_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"Incorrect API key provided: sk-test"}}');
    };
    const failure = adapter().stream(request, recorder(), new AbortController().signal);
    await expect(failure).rejects.toMatchObject({ code: 'UPSTREAM_AUTHENTICATION_FAILED' });
    const error = await failure.catch((e) => e);
    expect(error.message).toBe('The model provider refused the credentials (HTTP 401). Check OPENAI_API_KEY.');
  });

  it('passes on a 4xx explanation (without URLs)', async () => {
    handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"max_tokens is too large, see https://platform.example/docs"}}');
    };
    await expect(adapter().stream(request, recorder(), new AbortController().signal)).rejects.toMatchObject({
      code: 'UPSTREAM_REJECTED',
      message: 'The model provider rejected the request (HTTP 400): max_tokens is too large, see <url>',
    });
  });

  it('says which variable to check when the server cannot be reached', async () => {
    const probe = createServer();
    const unused = await listen(probe);
    await close(probe);
    const failure = adapter({ baseURL: `${unused}/v1` }).stream(request, recorder(), new AbortController().signal);
    await expect(failure).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
    expect((await failure.catch((e) => e)).message).toMatch(
      /could not be reached \(connection refused\)\. Check OPENAI_BASE_URL and that the server is running\.$/,
    );
  });

  it('fails with UPSTREAM_UNAVAILABLE when the provider reports an error mid-stream', async () => {
    handler = (_req, res) => {
      sse(res);
      res.end(chunk({ content: 'Hal' }) + 'data: {"error":{"message":"The server had an error"}}\n\n');
    };
    const output = recorder();
    await expect(adapter().stream(request, output, new AbortController().signal)).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
    });
    expect(output.log).toEqual(['start chatcmpl-1', 'text m1 Hal']);
  });

  it('fails with UPSTREAM_BAD_RESPONSE on an event that is not JSON', async () => {
    handler = (_req, res) => {
      sse(res);
      res.end(chunk({ content: 'a' }) + 'data: {oops\n\n');
    };
    await expect(adapter().stream(request, recorder(), new AbortController().signal)).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
    });
  });

  it('fails with UPSTREAM_STREAM_INTERRUPTED when the stream ends without a finish reason', async () => {
    handler = (_req, res) => {
      sse(res);
      res.end(chunk({ content: 'a' }) + 'data: [DONE]\n\n');
    };
    await expect(adapter().stream(request, recorder(), new AbortController().signal)).rejects.toMatchObject({
      code: 'UPSTREAM_STREAM_INTERRUPTED',
    });
  });

  it('reuses pooled connections for answers read to the end', async () => {
    handler = (_req, res) => {
      sse(res);
      res.end(chunk({ content: 'a' }) + chunk({}, 'stop') + 'data: [DONE]\n\n');
    };
    const reused = adapter();
    const before = connections;
    for (let i = 0; i < 6; i++) await reused.stream(request, recorder(), new AbortController().signal);
    // undici's pool may open a second connection while the first is being handed back, never one per answer.
    expect(connections - before).toBeLessThanOrEqual(2);
  });

  it('stops reading and closes the connection when aborted mid-stream', async () => {
    let closed!: () => void;
    const upstreamClosed = new Promise<void>((resolve) => (closed = resolve));
    handler = (_req, res) => {
      sse(res);
      res.write(chunk({ content: 'first' }));
      res.on('close', () => closed());
    };
    const controller = new AbortController();
    const output = recorder();
    const streaming = adapter().stream(
      request,
      {
        ...output,
        textContent: (id, text) => (output.textContent(id, text), controller.abort(new Error('client gone'))),
      },
      controller.signal,
    );
    await expect(streaming).rejects.toThrow('client gone');
    await upstreamClosed;
  });

  it('refuses a ready openai client, which it no longer uses', () => {
    expect(() => new OpenAIAdapter({ client: {} } as never)).toThrow(/no longer takes a ready openai client/);
  });
});
