import vm from 'node:vm';
import { createHook } from 'node:async_hooks';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import type { GatewayOptions } from '../src/gateway.js';
import { FaultUpstream, fullText, tokenText } from './support/fault-upstream.js';
import { runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';
import { agUiOutcome, rawRun, type RawRun, type RawVia } from './support/raw-clients.js';
import { RedisServer } from './support/redis.js';
import { COPILOT_RUN, JOIN_RUN, THREAD, gql, textOfEvents, until, watch } from './support/threads.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// Fault injection through the whole gateway, on loopback, for the three kinds of upstream a run streams
// from (the model over OpenAI-compatible SSE, a CopilotKit remote endpoint's agent over JSON Lines, an
// AG-UI agent over SSE) and every client transport (the stock client's multipart/mixed, urql's SSE,
// graphql-ws, AG-UI SSE): upstreams that trickle bytes, break off, reset, refuse, go silent; clients
// that vanish or stop reading; Redis restarted mid-run; SIGTERM mid-run; and no handle left behind.
// No assertion is on time: timeouts here only turn a hang into a failure. RELIABILITY.md has the map.

/** The real process (Jest hands a test file a copy): its resources are what keeps Node alive. */
const realProcess = vm.runInThisContext('process') as NodeJS.Process;

interface Kind {
  name: string;
  /** Its id on the AG-UI routes (`default` is the model). */
  agentId: string;
  /** Its name in agentSession, for agents. */
  agentName?: string;
}

const KINDS: Kind[] = [
  { name: 'the model (OpenAI-compatible SSE)', agentId: 'default' },
  { name: 'a CopilotKit remote endpoint agent (JSON Lines)', agentId: 'faultCrew', agentName: 'faultCrew' },
  { name: 'an AG-UI agent (SSE)', agentId: 'faultAgent', agentName: 'faultAgent' },
];

type Via = 'multipart' | 'sse' | 'graphql-ws' | 'ag-ui';
const VIAS: Via[] = ['multipart', 'sse', 'graphql-ws', 'ag-ui'];
const RAW_VIAS: RawVia[] = ['multipart', 'graphql-ws', 'ag-ui'];

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5, maxRetries: 2 };
/** Short first-token and idle timeouts, for the upstreams that never answer or go silent. */
const QUICK: GatewayOptions = {
  modelFirstTokenTimeoutMs: 300,
  modelIdleTimeoutMs: 300,
  agentFirstEventTimeoutMs: 300,
  agentIdleTimeoutMs: 300,
};
/** An answer of 8 MB: more than loopback sockets buffer, so a client that stops reading holds the gateway up. */
const BIG = { tokens: 2000, pad: 4000 };

type Urls = Awaited<ReturnType<FaultUpstream['start']>>;

/** A gateway whose model and agents are all the fault upstream's. The model retries twice, as the agents do. */
function optionsFor(urls: Urls, extra: GatewayOptions = {}): GatewayOptions {
  return {
    adapter: new OpenAIAdapter({ baseURL: urls.modelBaseURL, apiKey: 'k', model: 'fault-model', maxRetries: 2 }),
    remoteEndpoints: [{ url: urls.endpointUrl, retry: FAST_RETRY }],
    agents: { faultAgent: agUiAgent({ url: urls.aguiUrl, description: 'Misbehaves on request.', retry: FAST_RETRY }) },
    ...extra,
  };
}

let marks = 0;
/** A marker for the upstream's records of one run. */
const nextId = () => `f${++marks}x${Math.random().toString(36).slice(2, 6)}`;

/** A GenerateCopilotResponseInput for `kind`. */
const inputFor = (kind: Kind, prompt: string, threadId: string) =>
  runInput([userMessage(prompt)], {
    threadId,
    ...(kind.agentName ? { agentSession: { agentName: kind.agentName } } : {}),
  });

interface Seen {
  text: string;
  status: string;
  code?: string;
  upstreamStatus?: number;
}

/** Runs `prompt` for `kind` over `via`; what the client saw. */
async function runVia(via: Via, gateway: RunningGateway, kind: Kind, prompt: string): Promise<Seen> {
  const threadId = randomUUID();
  if (via === 'ag-ui') {
    const outcome = await rawRun('ag-ui', gateway.url, { data: {}, agentId: kind.agentId, threadId, prompt }).done;
    expect(outcome.ending).toBe('end');
    return { text: outcome.text, status: outcome.status, ...(outcome.code ? { code: outcome.code } : {}) };
  }
  const transport = TRANSPORTS.find((candidate) => candidate.name === via)!;
  const outcome = await transport.run(gateway, inputFor(kind, prompt, threadId));
  if (outcome.errors) throw new Error(`GraphQL errors: ${JSON.stringify(outcome.errors)}`);
  const details = outcome.status.details;
  return {
    text: textOf(outcome),
    status: outcome.status.code,
    ...(details?.code ? { code: details.code } : {}),
    ...(details?.originalError?.details?.upstreamStatus
      ? { upstreamStatus: details.originalError.details.upstreamStatus }
      : {}),
  };
}

const threadOf = (url: string, threadId: string) =>
  gql(url, THREAD, { threadId }).then((answer) => answer.data?.copilotThread);

/** The thread's latest run once it has ended (polled; the run's end is not an event the test can await). */
const endedRun = (url: string, threadId: string) =>
  until(
    () => threadOf(url, threadId),
    (thread) => Boolean(thread?.runs?.at(-1)?.finishedAt),
    `the run of ${threadId} to end`,
  ).then((thread) => thread.runs.at(-1));

/** `POST {path}/agent/{id}/connect`: the thread replayed as AG-UI events. */
async function agUiConnect(url: string, agentId: string, threadId: string) {
  const response = await fetch(`${url}/agent/${agentId}/connect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId,
      runId: randomUUID(),
      messages: [],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  return agUiOutcome(await response.text());
}

const upstream = new FaultUpstream();
let urls: Urls;
beforeAll(async () => {
  urls = await upstream.start();
});
afterAll(async () => {
  await upstream.stop();
});

// --- upstream faults × kinds × transports ---------------------------------------------------------------------

describe('upstream faults', () => {
  let main: RunningGateway;
  /** Short first-token and idle timeouts, for the upstreams that never answer or go silent. */
  let quick: RunningGateway;
  beforeAll(async () => {
    main = await startGateway(optionsFor(urls));
    quick = await startGateway(optionsFor(urls, QUICK));
  });
  afterAll(async () => {
    await Promise.all([main.close(), quick.close()]);
  });

  describe.each(KINDS)('$name', (kind) => {
    describe.each(VIAS)('over %s', (via) => {
      it('streams an answer trickled byte by byte (headers and chunk framing too) whole: every token once, nothing lost', async () => {
        const id = nextId();
        const seen = await runVia(via, main, kind, `[id=${id}] [tokens=6] [trickle]`);
        expect(seen).toEqual({ text: fullText(6), status: 'Success' });
        expect(upstream.of(id)).toHaveLength(1);
      });

      it('fails with UPSTREAM_STREAM_INTERRUPTED when the answer breaks off mid-stream, keeping the text before, calling once', async () => {
        const id = nextId();
        const seen = await runVia(via, main, kind, `[id=${id}] [cut=3]`);
        expect(seen).toEqual({ text: fullText(3), status: 'Failed', code: 'UPSTREAM_STREAM_INTERRUPTED' });
        expect(upstream.of(id)).toHaveLength(1);
      });

      it('fails with UPSTREAM_STREAM_INTERRUPTED when the connection is reset mid-stream, calling once', async () => {
        const id = nextId();
        const seen = await runVia(via, main, kind, `[id=${id}] [rst=3]`);
        // A reset may discard bytes the gateway had not read yet: what arrived is a prefix.
        expect(seen).toMatchObject({ status: 'Failed', code: 'UPSTREAM_STREAM_INTERRUPTED' });
        expect(fullText(3).startsWith(seen.text)).toBe(true);
        expect(upstream.of(id)).toHaveLength(1);
      });

      it.each([
        [503, 'UPSTREAM_UNAVAILABLE'],
        [429, 'UPSTREAM_RATE_LIMITED'],
      ])('fails with the upstream code after the retries when every attempt answers %i', async (status, code) => {
        const id = nextId();
        const seen = await runVia(via, main, kind, `[id=${id}] [fail=${status}]`);
        expect(seen).toMatchObject({ text: '', status: 'Failed', code });
        if (via !== 'ag-ui') expect(seen.upstreamStatus).toBe(status); // AG-UI's RUN_ERROR carries the code only
        expect(upstream.of(id)).toHaveLength(3); // the first attempt and two retries
      });

      it('retries a connection reset before any byte of the answer, then streams it whole', async () => {
        const id = nextId();
        const seen = await runVia(via, main, kind, `[id=${id}] [reset-first] [tokens=4]`);
        expect(seen).toEqual({ text: fullText(4), status: 'Success' });
        expect(upstream.of(id)).toHaveLength(2);
      });

      it('cuts off an upstream that never answers (not even headers) with UPSTREAM_TIMEOUT, and closes its request', async () => {
        const id = nextId();
        const seen = await runVia(via, quick, kind, `[id=${id}] [hang]`);
        expect(seen).toMatchObject({ text: '', status: 'Failed', code: 'UPSTREAM_TIMEOUT' });
        await upstream.until(
          () => upstream.of(id).every((exchange) => exchange.abortedByClient),
          'the request to be closed',
        );
        expect(upstream.of(id)).toHaveLength(1);
      });

      it('cuts off an upstream that goes silent mid-answer with UPSTREAM_TIMEOUT, and closes its request', async () => {
        const id = nextId();
        const seen = await runVia(via, quick, kind, `[id=${id}] [stall]`);
        expect(seen).toEqual({ text: tokenText(0), status: 'Failed', code: 'UPSTREAM_TIMEOUT' });
        await upstream.until(
          () => upstream.of(id).every((exchange) => exchange.abortedByClient),
          'the request to be closed',
        );
      });
    });
  });

  it.each(KINDS.slice(0, 1))(
    // (An agent's stream starts with events of its own: its first write is never late.)
    'holds $name that stalls right after a late first token to the idle limit, not the first-token one',
    async (kind) => {
      // Found from outside: with a long first-token limit, the timer re-armed for all of it at its first look, so a
      // model that stalled after a first chunk that came late was held for the first-token limit (120 s by default).
      const gateway = await startGateway(
        optionsFor(urls, { ...QUICK, modelFirstTokenTimeoutMs: 60_000, agentFirstEventTimeoutMs: 60_000 }),
      );
      try {
        const seen = await runVia('multipart', gateway, kind, `[id=${nextId()}] [first-delay=800] [stall]`);
        expect(seen).toEqual({ text: tokenText(0), status: 'Failed', code: 'UPSTREAM_TIMEOUT' });
      } finally {
        await gateway.close();
      }
    },
    20_000,
  );

  it('retries an agent whose attempts get no headers in time (attemptTimeoutMs), then fails with UPSTREAM_TIMEOUT, closing every attempt', async () => {
    const retry = { ...FAST_RETRY, maxRetries: 1, attemptTimeoutMs: 200 };
    const gateway = await startGateway(
      optionsFor(urls, {
        agentIdleTimeoutMs: 60_000,
        agentFirstEventTimeoutMs: 60_000,
        remoteEndpoints: [{ url: urls.endpointUrl, retry }],
        agents: { faultAgent: agUiAgent({ url: urls.aguiUrl, retry }) },
      }),
    );
    try {
      for (const kind of KINDS.slice(1)) {
        const id = nextId();
        const seen = await runVia('graphql-ws', gateway, kind, `[id=${id}] [hang]`);
        expect(seen).toMatchObject({ status: 'Failed', code: 'UPSTREAM_TIMEOUT' });
        await upstream.until(
          () => upstream.of(id).length === 2 && upstream.of(id).every((exchange) => exchange.abortedByClient),
          'both attempts closed',
        );
      }
    } finally {
      await gateway.close();
    }
  });
});

// --- clients that vanish or stop reading -------------------------------------------------------------------------

describe('clients', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway(optionsFor(urls));
  });
  afterAll(async () => {
    await gateway.close();
  });

  const start = (via: RawVia, kind: Kind, prompt: string, threadId = randomUUID()) => ({
    threadId,
    run: rawRun(via, gateway.url, { data: inputFor(kind, prompt, threadId), agentId: kind.agentId, threadId, prompt }),
  });

  describe.each(KINDS)('$name', (kind) => {
    it.each(['multipart', 'graphql-ws'] as const)(
      'vanishing mid-stream over %s: the upstream request is closed, the run ends CLIENT_DISCONNECTED',
      async (via) => {
        const id = nextId();
        const { threadId, run } = start(via, kind, `[id=${id}] [tokens=2000] [delay=10]`);
        await run.firstText;
        run.vanish();
        await upstream.until(
          () => upstream.of(id)[0]?.abortedByClient === true,
          'the upstream request to be closed by the gateway',
        );
        expect(upstream.of(id)).toHaveLength(1);
        expect((await endedRun(gateway.url, threadId)).status).toMatchObject({
          code: 'Failed',
          details: { code: 'CLIENT_DISCONNECTED' },
        });
        expect((await run.done).ending).toBe('vanished');
      },
    );

    it.each(['multipart', 'graphql-ws'] as const)(
      'vanishing over %s while the gateway waits for it to read (backpressure): the upstream request is closed',
      async (via) => {
        const id = nextId();
        // 8 MB, more than the sockets' buffers hold (about 4 MB on loopback), and the answer never ends.
        const { threadId, run } = start(via, kind, `[id=${id}] [tokens=${BIG.tokens}] [pad=${BIG.pad}] [tail-stall]`);
        await run.firstText;
        run.pause();
        await upstream.until(
          () => upstream.of(id)[0]?.tokensWritten === BIG.tokens,
          'the upstream to have written everything',
        );
        run.vanish();
        await upstream.until(
          () => upstream.of(id)[0]?.abortedByClient === true,
          'the upstream request to be closed by the gateway',
        );
        expect((await endedRun(gateway.url, threadId)).status).toMatchObject({
          code: 'Failed',
          details: { code: 'CLIENT_DISCONNECTED' },
        });
      },
    );

    it.each(RAW_VIAS)(
      'that stops reading over %s for the whole answer (8 MB), then reads again, gets it whole, exactly once, in merged chunks',
      async (via) => {
        const id = nextId();
        const { run } = start(via, kind, `[id=${id}] [tokens=${BIG.tokens}] [pad=${BIG.pad}]`);
        await run.firstText;
        run.pause();
        await upstream.until(() => upstream.of(id)[0]?.finished === true, 'the upstream to have finished its answer');
        run.resume();
        const outcome = await run.done;
        expect(outcome).toMatchObject({ status: 'Success', ending: 'end' });
        const expected = fullText(BIG.tokens, BIG.pad);
        expect(outcome.text.length).toBe(expected.length);
        expect(outcome.text === expected).toBe(true); // not toBe: an 8 MB diff helps nobody
        // The gateway held the rest back while the client did not read, merged (PROTOCOL §4.4): not a
        // queue of every token.
        expect(outcome.chunks).toBeLessThan(BIG.tokens);
      },
    );

    it('vanishing over AG-UI SSE: the run goes on to its end without it (PROTOCOL §8.2), recorded whole, and connect replays it', async () => {
      const id = nextId();
      const { threadId, run } = start('ag-ui', kind, `[id=${id}] [tokens=40] [delay=10]`);
      await run.firstText;
      run.vanish();
      const ended = await endedRun(gateway.url, threadId);
      expect(ended.status.code).toBe('Success');
      expect(upstream.of(id)).toEqual([expect.objectContaining({ finished: true, abortedByClient: false })]);
      const replay = await agUiConnect(gateway.url, kind.agentId, threadId);
      expect(replay).toMatchObject({ text: fullText(40), status: 'Success' });
    });

    it('vanishing over AG-UI SSE from an upstream that stalls: stop ends the run and closes the upstream request', async () => {
      const id = nextId();
      const { threadId, run } = start('ag-ui', kind, `[id=${id}] [stall]`);
      await run.firstText;
      run.vanish();
      const stop = await fetch(`${gateway.url}/agent/${kind.agentId}/stop/${threadId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(await stop.json()).toEqual({ stopped: true });
      await upstream.until(() => upstream.of(id)[0]?.abortedByClient === true, 'the upstream request to be closed');
      expect((await endedRun(gateway.url, threadId)).status.details.code).toBe('RUN_STOPPED');
    });
  });
});

// --- Redis restarted mid-run -----------------------------------------------------------------------------------

describe('Redis restarted mid-run, without persistence (everything it had is gone)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await redis.close();
  });

  it('loses no event: every client gets its whole answer, every run is recorded again whole, every thread is freed', async () => {
    const gateway = await startGateway(
      optionsFor(urls, { threads: { redisUrl: redis.url, keyPrefix: 'faults:', leaseMs: 1_500 } }),
    );
    try {
      const runs = KINDS.flatMap((kind) =>
        RAW_VIAS.map((via) => {
          const threadId = randomUUID();
          const prompt = `[id=${nextId()}] [tokens=60] [delay=15]`;
          return {
            kind,
            via,
            threadId,
            run: rawRun(via, gateway.url, {
              data: inputFor(kind, prompt, threadId),
              agentId: kind.agentId,
              threadId,
              prompt,
            }),
          };
        }),
      );
      await Promise.all(runs.map(({ run }) => run.firstText));
      await redis.restart();
      for (const { kind, via, threadId, run } of runs) {
        const what = `${kind.name} over ${via}`;
        expect({ what, ...(await run.done) }).toMatchObject({
          what,
          text: fullText(60),
          status: 'Success',
          ending: 'end',
        });
        const ended = await endedRun(gateway.url, threadId);
        expect({ what, status: ended.status.code }).toEqual({ what, status: 'Success' });
        const joined = watch(gateway.wsUrl, JOIN_RUN, { threadId });
        await joined.done;
        expect({ what, text: textOfEvents(joined.events) }).toEqual({ what, text: fullText(60) });
        expect(joined.events.at(-1).sequence).toBe(ended.lastSequence);
        // The thread is free: a next run on it is admitted.
        const next = watch(gateway.wsUrl, COPILOT_RUN, { data: inputFor(kind, '[tokens=1]', threadId) });
        await next.done;
        expect({ what, errors: next.errors, status: next.events.at(-1)?.status?.code }).toEqual({
          what,
          errors: [],
          status: 'Success',
        });
      }
    } finally {
      await gateway.close();
    }
  }, 40_000);
});

// --- SIGTERM mid-run -------------------------------------------------------------------------------------------

describe("SIGTERM mid-run (npm start's shutdown)", () => {
  /** SHUTDOWN_GRACE_MS: runs of 200 ms finish within it, runs of 20 s are ended. */
  const GRACE_MS = 3_000;
  let redis: RedisServer;
  let child: ChildProcess | undefined;

  /**
   * The gateway as `npm start` configures it (src/main.ts, from the environment), in a process of its
   * own, run from the sources with tsx (no build needed), on Redis with the default key prefix and the
   * default lease (10 s: no other instance could end its runs while the test looks). Resolves once ready.
   */
  async function startProcess(): Promise<{ url: string; exited: Promise<number | null> }> {
    const root = fileURLToPath(new URL('..', import.meta.url));
    child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        NODE_ENV: 'development',
        PORT: '0',
        LOG_LEVEL: 'info',
        OPENAI_BASE_URL: urls.modelBaseURL,
        OPENAI_API_KEY: 'k',
        COPILOT_REMOTE_ENDPOINTS: urls.endpointUrl,
        AGUI_AGENTS: `faultAgent=${urls.aguiUrl}`,
        REDIS_URL: redis.url,
        SHUTDOWN_GRACE_MS: String(GRACE_MS),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child!.stdout!.on('data', (chunk) => {
        output += chunk;
        const match = output.match(/Copilot Gateway ready at (\S+?)[\s"]/);
        if (match) resolve(match[1]);
      });
      child!.stderr!.on('data', (chunk) => (output += chunk));
      void exited.then((code) => reject(new Error(`the gateway exited (${code}):\n${output}`)));
    });
    return { url, exited };
  }

  type Run = { what: string; threadId: string; id: string; run: RawRun; outcome?: Awaited<RawRun['done']> };
  // One process, every kind of run going on when it gets SIGTERM, and what was seen meanwhile and after.
  const scene = {
    exitCode: undefined as number | null | undefined,
    port: 0,
    /** Runs of 200 ms, well within the grace: every kind over multipart, graphql-ws and AG-UI. */
    finishing: [] as Run[],
    /** Runs of 20 s, their clients connected: every kind over multipart, graphql-ws and AG-UI. */
    ended: [] as Run[],
    /** Runs that outlive their clients, 20 s long: a graphql-ws CONTINUE run whose client left, an AG-UI run whose client vanished. */
    outliving: [] as { what: string; threadId: string; id: string }[],
    draining: { ready: 0, readyBody: undefined as any, agUi: undefined as any, multipart: undefined as any },
    /** The threads' latest runs as another instance reads them after the exit, and whether it admits a next run. */
    records: new Map<string, any>(),
    nextRun: new Map<string, string>(),
  };

  beforeAll(async () => {
    redis = await RedisServer.start();
    const { url, exited } = await startProcess();
    scene.port = Number(new URL(url).port);
    const start = (via: RawVia, kind: Kind, tokens: number, delay: number): Run => {
      const threadId = randomUUID();
      const id = nextId();
      const prompt = `[id=${id}] [tokens=${tokens}] [delay=${delay}]`;
      return {
        what: `${kind.name} over ${via}`,
        threadId,
        id,
        run: rawRun(via, url, { data: inputFor(kind, prompt, threadId), agentId: kind.agentId, threadId, prompt }),
      };
    };
    scene.finishing = KINDS.flatMap((kind) => RAW_VIAS.map((via) => start(via, kind, 20, 10)));
    scene.ended = KINDS.flatMap((kind) => RAW_VIAS.map((via) => start(via, kind, 2000, 10)));
    const continuing = {
      what: 'the model over graphql-ws, onDisconnect CONTINUE, client gone',
      threadId: randomUUID(),
      id: nextId(),
    };
    const watcher = watch(url.replace(/^http/, 'ws'), COPILOT_RUN, {
      data: inputFor(KINDS[0], `[id=${continuing.id}] [tokens=2000] [delay=10]`, continuing.threadId),
      onDisconnect: 'CONTINUE',
    });
    const vanishing = { what: 'an AG-UI agent over AG-UI, client vanished', threadId: randomUUID(), id: nextId() };
    const agUi = rawRun('ag-ui', url, {
      data: {},
      agentId: 'faultAgent',
      threadId: vanishing.threadId,
      prompt: `[id=${vanishing.id}] [tokens=2000] [delay=10]`,
    });
    scene.outliving = [continuing, vanishing];
    await Promise.all([
      ...[...scene.finishing, ...scene.ended].map(({ run }) => run.firstText),
      watcher.received(3),
      agUi.firstText,
    ]);
    await watcher.leave();
    agUi.vanish();

    child!.kill('SIGTERM');
    // While it drains: out of rotation, and new runs refused (nothing ran: a proxy may send them elsewhere).
    const ready = await until(
      () =>
        fetch(`http://127.0.0.1:${scene.port}/ready`).then(async (response) => ({
          status: response.status,
          body: await response.json(),
        })),
      (answer) => answer.status === 503,
      'the process unready',
    );
    scene.draining.ready = ready.status;
    scene.draining.readyBody = ready.body;
    const agUiLate = await fetch(`${url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: randomUUID(),
        runId: randomUUID(),
        messages: [{ id: randomUUID(), role: 'user', content: 'late' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    scene.draining.agUi = { status: agUiLate.status, body: await agUiLate.json() };
    const multipartLate = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
      body: JSON.stringify({
        query: 'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId } }',
        variables: { data: inputFor(KINDS[0], 'late', randomUUID()) },
      }),
    });
    scene.draining.multipart = {
      status: multipartLate.status,
      retryAfter: multipartLate.headers.get('retry-after'),
      body: await multipartLate.json(),
    };

    scene.exitCode = await exited;
    for (const run of [...scene.finishing, ...scene.ended]) run.outcome = await run.run.done;
    await watcher.done;

    const other = await startGateway(optionsFor(urls, { threads: { redisUrl: redis.url } }));
    try {
      for (const { threadId } of [...scene.finishing, ...scene.ended, ...scene.outliving]) {
        scene.records.set(threadId, (await threadOf(other.url, threadId))?.runs?.at(-1));
      }
      for (const { threadId } of [...scene.ended, ...scene.outliving]) {
        const next = watch(other.wsUrl, COPILOT_RUN, { data: inputFor(KINDS[0], '[tokens=1]', threadId) });
        await next.done;
        scene.nextRun.set(
          threadId,
          next.errors.length ? `errors ${JSON.stringify(next.errors)}` : next.events.at(-1)?.status?.code,
        );
      }
    } finally {
      await other.close();
    }
  }, 45_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await redis.close();
  });

  it('goes unready at once and refuses new runs over HTTP and AG-UI with 503 SHUTTING_DOWN', () => {
    expect(scene.draining.ready).toBe(503);
    expect(scene.draining.readyBody).toMatchObject({ checks: { draining: true } });
    expect(scene.draining.agUi).toMatchObject({ status: 503, body: { code: 'SHUTTING_DOWN' } });
    expect(scene.draining.multipart).toMatchObject({
      status: 503,
      retryAfter: '1',
      body: { errors: [{ extensions: { code: 'SHUTTING_DOWN' } }] },
    });
  });

  it('exits 0 and frees its port', async () => {
    expect(scene.exitCode).toBe(0);
    const probe = await new Promise<string>((resolve) => {
      const socket = connect(scene.port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve('connected')));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(probe).toBe('ECONNREFUSED');
  });

  it('lets the runs that finish within the grace period finish: sent whole over every transport, recorded Success', () => {
    expect(scene.finishing).toHaveLength(9);
    for (const { what, threadId, outcome } of scene.finishing) {
      expect({ what, text: outcome?.text, status: outcome?.status }).toEqual({
        what,
        text: fullText(20),
        status: 'Success',
      });
      expect({ what, status: scene.records.get(threadId)?.status?.code }).toEqual({ what, status: 'Success' });
    }
  });

  it('ends the runs still going after the grace period with SHUTTING_DOWN: the client is told, its text kept, the upstream closed, the record complete, the thread free', async () => {
    expect(scene.ended).toHaveLength(9);
    for (const { what, threadId, id, outcome } of scene.ended) {
      expect({ what, status: outcome?.status, code: outcome?.code }).toEqual({
        what,
        status: 'Failed',
        code: 'SHUTTING_DOWN',
      });
      expect({ what, prefix: fullText(2000).startsWith(outcome!.text), some: outcome!.text.length > 0 }).toEqual({
        what,
        prefix: true,
        some: true,
      });
      await upstream.until(() => upstream.of(id)[0]?.abortedByClient === true, `${what}: the upstream request closed`);
      expect({ what, record: scene.records.get(threadId)?.status }).toMatchObject({
        what,
        record: { code: 'Failed', details: { code: 'SHUTTING_DOWN' } },
      });
      expect({ what, next: scene.nextRun.get(threadId) }).toEqual({ what, next: 'Success' });
    }
  });

  it('ends the runs that outlived their clients too (graphql-ws CONTINUE, AG-UI): upstream closed, record complete, thread free', async () => {
    for (const { what, threadId, id } of scene.outliving) {
      await upstream.until(() => upstream.of(id)[0]?.abortedByClient === true, `${what}: the upstream request closed`);
      expect({ what, record: scene.records.get(threadId)?.status }).toMatchObject({
        what,
        record: { code: 'Failed', details: { code: 'SHUTTING_DOWN' } },
      });
      expect({ what, next: scene.nextRun.get(threadId) }).toEqual({ what, next: 'Success' });
    }
  });
});

// --- gateway.close() ---------------------------------------------------------------------------------------------

describe('gateway.close()', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await redis.close();
  });

  // Found on 8247b46 (close() resolved with these runs still going: their upstream requests open, their
  // records Pending, and with Redis each run's writer retrying against the closed connection for ever);
  // close() ends them since 99deb3d.
  it('ends the runs that outlived their clients (graphql-ws CONTINUE, AG-UI): upstream requests closed, records complete, threads free', async () => {
    const threads = { redisUrl: redis.url, keyPrefix: 'close:' };
    const gateway = await startGateway(optionsFor(urls, { threads }));
    const runs = [
      { id: nextId(), threadId: randomUUID() },
      { id: nextId(), threadId: randomUUID() },
    ];
    const continuing = watch(gateway.wsUrl, COPILOT_RUN, {
      data: inputFor(KINDS[0], `[id=${runs[0].id}] [stall]`, runs[0].threadId),
      onDisconnect: 'CONTINUE',
    });
    const agUi = rawRun('ag-ui', gateway.url, {
      data: {},
      agentId: 'faultAgent',
      threadId: runs[1].threadId,
      prompt: `[id=${runs[1].id}] [stall]`,
    });
    await Promise.all([continuing.received(3), agUi.firstText]);
    await continuing.leave();
    agUi.vanish();
    await gateway.close();
    await upstream.until(
      () => runs.every(({ id }) => upstream.of(id)[0]?.abortedByClient === true),
      "the orphaned runs' upstream requests to be closed",
    );
    const other = await startGateway(optionsFor(urls, { threads }));
    try {
      for (const { threadId } of runs) {
        expect((await threadOf(other.url, threadId)).runs.at(-1).status).toMatchObject({
          code: 'Failed',
          details: { code: 'SHUTTING_DOWN' },
        });
        const next = watch(other.wsUrl, COPILOT_RUN, { data: inputFor(KINDS[0], '[tokens=1]', threadId) });
        await next.done;
        expect(next.events.at(-1)?.status?.code).toBe('Success');
      }
    } finally {
      await other.close();
    }
  });
});

// --- handles ---------------------------------------------------------------------------------------------------

describe('handles', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await redis.close();
  });

  /** The types of the real process's resources that keep it alive, counted. */
  const counts = () =>
    realProcess
      .getActiveResourcesInfo()
      .reduce<Record<string, number>>((all, type) => ({ ...all, [type]: (all[type] ?? 0) + 1 }), {});
  /** What `now` has more of than `baseline`. */
  const excess = (baseline: Record<string, number>, now: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(now)
        .filter(([type, n]) => n > (baseline[type] ?? 0))
        .map(([type, n]) => [type, n - (baseline[type] ?? 0)]),
    );

  /**
   * One round: a fault upstream and a gateway on Redis, runs of every kind over every transport (whole,
   * vanished, refused, broken off, timed out), two runs left going without their clients, then the gateway
   * and the upstream closed.
   */
  async function round(): Promise<void> {
    const fake = new FaultUpstream();
    const roundUrls = await fake.start();
    const threads = { redisUrl: redis.url, keyPrefix: `handles${++marks}:`, leaseMs: 1_500 };
    const gateway = await startGateway(optionsFor(roundUrls, { threads }));
    const quick = await startGateway(optionsFor(roundUrls, { ...QUICK, threads }));
    try {
      const cases = KINDS.flatMap((kind) => [
        ...VIAS.map((via) => ({ kind, via, raw: false })),
        ...RAW_VIAS.map((via) => ({ kind, via, raw: true })),
      ]);
      await Promise.all(
        cases.map(async ({ kind, via, raw }) => {
          if (!raw) {
            expect((await runVia(via, gateway, kind, '[tokens=5]')).status).toBe('Success');
            expect((await runVia(via, gateway, kind, '[fail=503]')).code).toBe('UPSTREAM_UNAVAILABLE');
            expect((await runVia(via, gateway, kind, '[cut=2]')).code).toBe('UPSTREAM_STREAM_INTERRUPTED');
            expect((await runVia(via, quick, kind, '[stall]')).code).toBe('UPSTREAM_TIMEOUT');
            return;
          }
          const threadId = randomUUID();
          const prompt = `[id=${nextId()}] [tokens=${via === 'ag-ui' ? 20 : 2000}] [delay=10]`;
          const run = rawRun(via as RawVia, gateway.url, {
            data: inputFor(kind, prompt, threadId),
            agentId: kind.agentId,
            threadId,
            prompt,
          });
          await run.firstText;
          run.vanish();
          // AG-UI runs go on to their end; the others are aborted.
          await endedRun(gateway.url, threadId);
          await run.done;
        }),
      );
      // And runs still going at close(), their clients gone (they outlive them): close() must end them.
      const continuing = watch(gateway.wsUrl, COPILOT_RUN, {
        data: inputFor(KINDS[0], '[stall]', randomUUID()),
        onDisconnect: 'CONTINUE',
      });
      const orphan = rawRun('ag-ui', gateway.url, {
        data: {},
        agentId: 'faultAgent',
        threadId: randomUUID(),
        prompt: '[stall]',
      });
      await Promise.all([continuing.received(3), orphan.firstText]);
      await continuing.leave();
      orphan.vanish();
    } finally {
      await Promise.all([gateway.close(), quick.close()]);
      await fake.stop();
    }
  }

  it('are all released once the gateway and its upstreams are closed, whatever the runs went through', async () => {
    await round(); // warm-up: whatever is created once per process is created now
    const settle = async () => {
      // What the warm-up left closing (sockets in their last turns) is gone after a moment of quiet.
      let previous = JSON.stringify(counts());
      for (let quiet = 0; quiet < 5;) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const now = JSON.stringify(counts());
        quiet = now === previous ? quiet + 1 : 0;
        previous = now;
      }
      return counts();
    };
    const baseline = await settle();

    // Every timer and socket the round creates, and whether it was let go of (destroyed: cleared, fired,
    // closed). A one-off timer that is unref'd ends by itself and holds nothing (Apollo's drain leaves
    // one of 10 s behind, AbortSignal.timeout): not a leak. Set TRACE_HANDLES=1 to see where each one
    // left over was created.
    const tracked = new Map<number, { type: string; resource: any; where: string }>();
    let recording = true;
    const TYPES = new Set(['Timeout', 'TCPWRAP', 'TCPSERVERWRAP', 'PIPEWRAP', 'PROCESSWRAP']);
    const hook = createHook({
      init(asyncId, type, _trigger, resource) {
        if (recording && TYPES.has(type))
          tracked.set(asyncId, {
            type,
            resource,
            where: process.env.TRACE_HANDLES ? new Error().stack!.split('\n').slice(2, 14).join('\n') : '',
          });
      },
      destroy(asyncId) {
        tracked.delete(asyncId);
      },
    }).enable();
    const held = () =>
      [...tracked.values()]
        .filter(({ type, resource }) => type !== 'Timeout' || resource.hasRef() || resource._repeat)
        .map(({ type, where }) => `${type}${where ? `\n${where}` : ''}`);
    try {
      await round();
      recording = false; // the polling below makes timers of its own
      const leftovers = await until(
        async () => held(),
        (left) => left.length === 0,
        'every timer and socket of the round let go of',
        15_000,
      ).catch(() => held());
      expect(leftovers).toEqual([]);
      const more = await until(
        async () => excess(baseline, counts()),
        (found) => Object.keys(found).length === 0,
        "the process's resources back to what they were",
        15_000,
      ).catch(() => excess(baseline, counts()));
      expect(more).toEqual({});
    } finally {
      hook.disable();
    }
  }, 60_000);
});
