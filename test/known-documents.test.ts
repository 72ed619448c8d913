import http, { type IncomingMessage } from 'node:http';
import { ApolloServer } from '@apollo/server';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import type { GatewayOptions } from '../src/gateway.js';
import { KnownDocuments } from '../src/graphql/fast/known-documents.js';
import { LaterPayloads } from '../src/graphql/fast/later-payloads.js';
import { ErrorLog } from './support/error-log.js';
import { STOCK_DOCUMENT } from './support/fuzz-documents.js';
import { runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';

// These tests are of the fast executor's own paths (graphql/executor.ts): they run on it whatever
// GATEWAY_EXECUTOR says.
const FAST = 'fast' as const;

// A document Apollo has run once (the stock client's) is run again by the transport without Apollo's
// pipeline (src/graphql/fast/known-documents.ts), and answered as that pipeline answers, errors and
// refusals included (src/graphql/fast/direct-answer.ts). Here one gateway does that and another passes every request through Apollo
// (APOLLO_KEY set, as for Apollo's usage reporting): status, headers and bytes must be the same.
// test/incremental.test.ts does the same for every streamed answer the scripted models make.

/** Says "Hello" in two chunks, each step in a turn of its own; for the prompt "hold", holds the run until released. */
class HoldingAdapter implements ModelAdapter {
  readonly name = 'holding';
  private releases: (() => void)[] = [];
  holding = 0;

  async stream(request: ModelRequest, output: ModelOutput): Promise<void> {
    const last = request.messages[request.messages.length - 1];
    const prompt = last && 'content' in last ? String(last.content) : '';
    if (prompt === 'hold') {
      this.holding++;
      await new Promise<void>((resolve) => this.releases.push(resolve));
      this.holding--;
    }
    // Each step in a turn of its own, so that both gateways cut the answer into the same payloads.
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    await turn();
    const id = output.textStart('text-1');
    await turn();
    output.textContent(id, 'Hel');
    await turn();
    output.textContent(id, 'lo');
    await turn();
    output.textEnd(id);
    await turn();
  }

  release(): void {
    for (const release of this.releases.splice(0)) release();
  }
}

const MULTIPART = 'multipart/mixed; deferSpec=20220824, application/json';

interface Exchange {
  status: number;
  headers: [string, string][];
  text: string;
}

/**
 * One exchange on a connection of its own (a draining gateway closes idle ones), with what differs
 * between two (ids, clocks, the date) replaced by stable stand-ins.
 */
async function exchange(
  url: string,
  body: unknown,
  accept = MULTIPART,
  sent: Record<string, string> = {},
): Promise<Exchange> {
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const request = http.request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept, ...sent } },
      resolve,
    );
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
  let raw = '';
  for await (const chunk of response) raw += chunk;
  const ids = new Map<string, string>();
  const text = raw
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
      if (!ids.has(id)) ids.set(id, `id-${ids.size}`);
      return ids.get(id)!;
    })
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, 'TIME');
  const headers: [string, string][] = [];
  for (let i = 0; i < response.rawHeaders.length; i += 2) {
    const name = response.rawHeaders[i].toLowerCase();
    if (name !== 'date' && name !== 'x-request-id') headers.push([name, response.rawHeaders[i + 1]]);
  }
  return { status: response.statusCode!, headers, text };
}

const stock = (prompt: string, extra: Record<string, unknown> = {}) => ({
  operationName: 'generateCopilotResponse',
  query: STOCK_DOCUMENT,
  variables: { data: runInput([userMessage(prompt, 'user-1')], extra) },
});

describe('known documents (HTTP)', () => {
  const adapter = new HoldingAdapter();
  let direct: RunningGateway;
  let throughApollo: RunningGateway;
  const logs = new Map<RunningGateway, ErrorLog>();
  const gateways = async (options: Pick<GatewayOptions, 'maxConcurrentRuns' | 'rateLimits' | 'sandbox'> = {}) => {
    const start = async () => {
      const log = new ErrorLog();
      const gateway = await startGateway({ adapter, ...options, executor: FAST, logger: log.logger });
      logs.set(gateway, log);
      return gateway;
    };
    const ours = await start();
    process.env.APOLLO_KEY = 'service:test:not-a-key';
    try {
      return { ours, apollos: await start() };
    } finally {
      delete process.env.APOLLO_KEY;
    }
  };

  beforeAll(async () => {
    ({ ours: direct, apollos: throughApollo } = await gateways());
  });
  afterAll(async () => {
    await Promise.all([direct?.close(), throughApollo?.close()]);
  });

  /** Asks both gateways; `known` says whether ours answers it without Apollo's pipeline. */
  async function both(
    body: unknown,
    known: 'answered' | 'not known',
    accept = MULTIPART,
    pair = { ours: direct, apollos: throughApollo },
    headers: Record<string, string> = {},
  ) {
    const apolloAsked = jest.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');
    const found = jest.spyOn(KnownDocuments.prototype, 'find');
    const [ourLog, apollosLog] = [logs.get(pair.ours)!, logs.get(pair.apollos)!];
    ourLog.lines = [];
    apollosLog.lines = [];
    try {
      const ours = await exchange(pair.ours.url, body, accept, headers);
      expect(found.mock.results.some((result) => result.value !== undefined)).toBe(known !== 'not known');
      expect(apolloAsked).toHaveBeenCalledTimes(known === 'answered' ? 0 : 1);
      const apollos = await exchange(pair.apollos.url, body, accept, headers);
      expect(ours).toEqual(apollos);
      // And the same lines logged of what the client was told.
      expect(ourLog.lines).toEqual(apollosLog.lines);
      return { ...ours, logged: ourLog.lines };
    } finally {
      apolloAsked.mockRestore();
      found.mockRestore();
    }
  }

  it('answers a streamed run with the status, headers and bytes Apollo answers it with', async () => {
    // The first request of a text goes through Apollo, and makes it known.
    const first = await both(stock('hi'), 'not known');
    expect(first.text).toContain('"items":["Hel"]');
    for (const accept of [MULTIPART, 'text/event-stream']) {
      const answer = await both(stock('hi'), 'answered', accept);
      expect(answer.status).toBe(200);
      expect(answer.text).toContain('"Success"');
    }
    // Empty extensions, as Apollo reads them.
    await both({ ...stock('hi'), extensions: {} }, 'answered');
    // The text is known with the operation name it was run with: without one, Apollo runs it, once.
    const { operationName: _, ...unnamed } = stock('hi');
    await both(unnamed, 'not known');
    await both(unnamed, 'answered');
    await both(stock('hi'), 'answered');
  });

  it('answers a run its resolver refuses (AGENT_NOT_FOUND) as Apollo does', async () => {
    await both(stock('hi'), 'answered');
    const answer = await both(stock('hi', { agentSession: { agentName: 'planner' } }), 'answered');
    expect(answer.text).toMatch(/AGENT_NOT_FOUND/);
    expect(answer.text).toContain('"requestId"');
    expect(answer.logged).toEqual([expect.stringMatching(/^30 AGENT_NOT_FOUND request error: /)]);
  });

  it.each([
    [
      'variables that do not coerce (BAD_USER_INPUT, 400)',
      { ...stock('hi'), variables: { data: { messages: 'none' } } },
      /BAD_USER_INPUT/,
    ],
    ['no variables', { operationName: 'generateCopilotResponse', query: STOCK_DOCUMENT }, /was not provided/],
  ])('answers %s as Apollo does', async (_name, body, expected) => {
    await both(stock('hi'), 'answered');
    const answer = await both(body, 'answered');
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(expected);
  });

  it("answers an execution that throws as Apollo's pipeline does (500, masked, logged)", async () => {
    await both(stock('hi'), 'answered');
    // Something of the executor's own that breaks once the run has started: Apollo's pipeline catches what its
    // executor throws; the transport's run of a known document must answer the same.
    const broken = jest.spyOn(LaterPayloads.prototype, 'writeMessages').mockImplementation(() => {
      throw new Error('broken writer');
    });
    const log = logs.get(direct)!;
    log.lines = [];
    try {
      const ours = await exchange(direct.url, stock('hi'));
      const unknown = jest.spyOn(KnownDocuments.prototype, 'find').mockReturnValue(undefined);
      const apolloAsked = jest.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');
      try {
        expect(await exchange(direct.url, stock('hi'))).toEqual(ours);
        expect(apolloAsked).toHaveBeenCalledTimes(1);
      } finally {
        unknown.mockRestore();
        apolloAsked.mockRestore();
      }
      expect(broken).toHaveBeenCalledTimes(2);
      expect(ours.status).toBe(500);
      expect(ours.text).toContain('"message":"Unexpected error."');
      expect(ours.text).not.toContain('broken writer');
      // Logged in full, once for each answer.
      const line = '50 - unexpected error (masked for the client) broken writer';
      expect(log.lines).toEqual([line, line]);
    } finally {
      broken.mockRestore();
    }
  });

  it.each([
    ['variables that are not an object', { ...stock('hi'), variables: 'a string' }],
    ['variables that are a list', { ...stock('hi'), variables: [] }],
    ['an operation name that is not a string', { ...stock('hi'), operationName: 7 }],
    ['another operation name', { ...stock('hi'), operationName: 'other' }],
    [
      'a persisted query extension',
      { ...stock('hi'), extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } },
    ],
    ['extensions that are not an object', { ...stock('hi'), extensions: 'x' }],
  ])('leaves a request with %s to Apollo', async (_name, body) => {
    await both(stock('hi'), 'answered');
    const answer = await both(body, 'not known');
    expect(answer.text).toContain('"errors"');
  });

  /**
   * The pair, its document known to ours, each serving one run its model holds (prompt "hold") until released: their
   * exchanges.
   */
  async function holdingOneRunEach(pair: {
    ours: RunningGateway;
    apollos: RunningGateway;
  }): Promise<Promise<Exchange>[]> {
    await both(stock('hi'), 'not known', MULTIPART, pair);
    const held = [exchange(pair.ours.url, stock('hold')), exchange(pair.apollos.url, stock('hold'))];
    while (adapter.holding < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    return held;
  }

  it('answers a client over its concurrent runs (RATE_LIMITED) with retry-after, as Apollo does', async () => {
    const pair = await gateways({ rateLimits: { concurrentRuns: 1 } });
    try {
      const held = await holdingOneRunEach(pair);
      const limited = await both(stock('hi'), 'answered', MULTIPART, pair);
      expect(limited.text).toContain('RATE_LIMITED');
      expect(limited.headers).toContainEqual(['retry-after', expect.stringMatching(/^\d+$/)]);
      adapter.release();
      await Promise.all(held);
    } finally {
      adapter.release();
      await Promise.all([pair.ours.close(), pair.apollos.close()]);
    }
  });

  it('leaves to Apollo a client whose Accept takes no JSON type for one result (Apollo would answer it 406)', async () => {
    await both(stock('hi'), 'answered');
    const accept = 'multipart/mixed; deferSpec=20220824, application/json;q=0';
    const streamedAnswer = await both(stock('hi'), 'not known', accept);
    expect(streamedAnswer.text).toContain('"Success"');
    const refused = await both(stock('hi', { agentSession: { agentName: 'planner' } }), 'not known', accept);
    expect(refused.status).toBe(406);
  });

  it.each([true, false])(
    'keeps "Did you mean" in the errors it formats only where the sandbox is on (%s), as Apollo does',
    async (sandbox) => {
      const pair = await gateways({ sandbox });
      try {
        await both(stock('hi'), 'not known', MULTIPART, pair);
        const typo = stock('hi', { metadata: { requestType: 'Chatt' } });
        const answer = await both(typo, 'answered', MULTIPART, pair);
        expect(answer.text).toContain('BAD_USER_INPUT');
        expect(answer.text.includes('Did you mean')).toBe(sandbox);
      } finally {
        await Promise.all([pair.ours.close(), pair.apollos.close()]);
      }
    },
  );

  it('leaves a client that takes no streaming format to Apollo (406)', async () => {
    await both(stock('hi'), 'answered');
    const answer = await both(stock('hi'), 'not known', 'application/json');
    expect(answer.status).toBe(406);
  });

  it('answers a run refused over maxConcurrentRuns (OVERLOADED) and one refused while draining (SHUTTING_DOWN, 503) as Apollo does', async () => {
    const pair = await gateways({ maxConcurrentRuns: 1 });
    try {
      const held = await holdingOneRunEach(pair);
      const overloaded = await both(stock('hi'), 'answered', MULTIPART, pair);
      expect(overloaded.text).toContain('OVERLOADED');

      const draining = [pair.ours.gateway.shutdown(), pair.apollos.gateway.shutdown()];
      const refused = await both(stock('hi'), 'answered', MULTIPART, pair);
      expect(refused.status).toBe(503);
      expect(refused.text).toContain('SHUTTING_DOWN');
      // A proxy that asks for the draining refusal's own status (engine/drain.ts) gets it: nothing of the run ran.
      const toProxy = await both(stock('hi'), 'answered', MULTIPART, pair, { 'x-drain-refusal-status': '421' });
      expect(toProxy.status).toBe(421);
      adapter.release();
      const [ours, apollos] = await Promise.all(held);
      expect(ours).toEqual(apollos);
      expect(ours.text).toContain('"Success"');
      await Promise.all(draining);
    } finally {
      adapter.release();
      await Promise.all([pair.ours.close(), pair.apollos.close()]);
    }
  });
});

describe('KnownDocuments', () => {
  const document = { kind: 'Document', definitions: [] } as never;

  it('keeps the texts used last up to its capacity, and finds a text only for an operation name it was run with', () => {
    const known = new KnownDocuments(2);
    known.remember('a', { document, operationName: 'A' });
    known.remember('b', { document, operationName: undefined });
    // `a` is used: `b` is now the one used least recently, and goes when `c` comes.
    expect(known.find({ query: 'a', operationName: 'A' })).toEqual({
      document,
      operationName: 'A',
      variables: undefined,
    });
    known.remember('c', { document, operationName: undefined });
    expect(known.size).toBe(2);
    expect(known.find({ query: 'b' })).toBeUndefined();
    expect(known.find({ query: 'a', operationName: 'A' })).toBeDefined();
    expect(known.find({ query: 'a' })).toBeUndefined();
    // The same text run for another operation name: found for both.
    known.remember('a', { document, operationName: undefined });
    expect(known.size).toBe(2);
    expect(known.find({ query: 'a' })).toEqual({ document, operationName: undefined, variables: undefined });
    expect(known.find({ query: 'a', operationName: 'A' })).toEqual({
      document,
      operationName: 'A',
      variables: undefined,
    });
    known.remember('b', { document, operationName: undefined });
    expect(known.find({ query: 'b' })).toEqual({ document, operationName: undefined, variables: undefined });
    expect(known.find({ query: 'b', operationName: null, variables: null, extensions: null })).toEqual({
      document,
      operationName: undefined,
      variables: undefined,
    });
    expect(known.find({ query: 'b', operationName: 'B' })).toBeUndefined();
    expect(known.find({ query: 'b', variables: { x: 1 } })).toEqual({
      document,
      operationName: undefined,
      variables: { x: 1 },
    });
    // `c` was the one used least recently when `b` came back.
    expect(known.find({ query: 'c' })).toBeUndefined();
    expect(known.find([{ query: 'b' }])).toBeUndefined();
    expect(known.find('b')).toBeUndefined();
  });

  it('does not keep long texts', () => {
    const known = new KnownDocuments(2, 10);
    known.remember('x'.repeat(11), { document, operationName: undefined });
    expect(known.size).toBe(0);
  });
});
