#!/usr/bin/env node
// The load of a rolling restart: runs sent through the proxy without pause while the instances behind it
// are restarted one at a time, each run's outcome counted. scripts/cluster-local.sh drives it (its drain
// step); any other script can, by the same lines on stdin and stdout:
//
//   node scripts/rolling-restart.mjs <base URL> [--workers 6] [--path /api/copilotkit] [--timeout 60000]
//
// Runs of three kinds, in turn on each of `--workers` loops, one after another: the GraphQL mutation
// answered as one JSON result, the `copilotRun` subscription over graphql-ws (a socket of its own per run),
// and an AG-UI run (SSE). Every run must end well: HTTP 200, and the run's own end a success
// (SuccessResponseStatus, RUN_FINISHED); anything else counts as failed, with what went wrong.
//
// Commands, one a line on stdin, each answered with one line on stdout:
//   hold <host:port>    start streaming runs (graphql-ws and AG-UI) through the proxy until one of each is
//                       in flight on that instance (the proxy's X-Upstream says which): "held <n>" once they
//                       have started, or "hold-failed <why>". Send the instance SIGTERM after it: these runs
//                       must still finish.
//   sendon <host:port>  (that instance draining) send AG-UI runs, four at a time, until the proxy has sent
//                       one it refused on to the other instance: "senton <n>", or "sendon-failed <why>"
//                       after 40 runs.
//   routed <host:port>  wait until the proxy sends a request to that instance again (GET /health answered by
//                       it, first try): "routed <tries>", or "routed-failed <why>" after --timeout.
//   stop                (or the end of stdin) stop sending, wait for every run, and print
//                       "summary <JSON>": sent, succeeded, failed (with the first reasons), sentOn (runs a
//                       draining instance refused and the proxy sent to the other), reconnected (graphql-ws
//                       sockets told 1001 before their run started, connected again), resentIds (the first
//                       x-request-id of each HTTP request written on a kept-alive connection the proxy closed
//                       before answering, sent again: fetchResent), held and heldFinished.
// Progress goes to stderr. Exits 0 when no run failed and every held run finished, 1 otherwise.
//
// It needs no model (demo mode's replies are scripted) and only packages the gateway depends on.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};
const base = (args.find((arg) => /^https?:\/\//.test(arg)) ?? 'http://localhost:8080').replace(/\/$/, '');
const path = option('path', '/api/copilotkit');
const workers = Number(option('workers', '6'));
const timeoutMs = Number(option('timeout', '60000'));
const graphqlUrl = `${base}${path}`;
const wsUrl = graphqlUrl.replace(/^http/, 'ws');
const apiKey = (process.env.GATEWAY_API_KEY || process.env.GATEWAY_API_KEYS?.split(',')[0] || '').trim();
const auth = apiKey ? { authorization: `Bearer ${apiKey}` } : {};

const log = (line) => process.stderr.write(`rolling-restart: ${line}\n`);

// ---------------------------------------------------------------------------------------------------
// One run of each kind. Each resolves (never rejects) with its outcome; `onStarted(instance, upstream)` is
// called once the run is streaming (its first event), with the instance that serves it and the proxy's whole
// X-Upstream ("a : b" when a refused it and the proxy sent it on to b).

/** The instance that answered, from the proxy's X-Upstream: the last address ("a : b" after a refusal sent on). */
function answered(upstream) {
  return typeof upstream === 'string' && upstream
    ? upstream
        .split(/, | : /)
        .pop()
        .trim()
    : undefined;
}

/** Whether a draining instance refused the request and the proxy sent it to the other ("a : b"). */
const wasSentOn = (upstream) => typeof upstream === 'string' && upstream.includes(' : ');

function userMessage(content) {
  return { id: randomUUID(), createdAt: new Date().toISOString(), textMessage: { role: 'user', content } };
}

function runInput(content) {
  return {
    threadId: `rolling-${randomUUID()}`,
    metadata: { requestType: 'Chat' },
    frontend: { actions: [] },
    messages: [userMessage(content)],
  };
}

const RUN_MUTATION = `mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) {
  status { __typename ... on FailedResponseStatus { reason details } } } }`;
const RUN_SUBSCRIPTION = `subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) {
  __typename ... on RunFinishedEvent { status { __typename ... on FailedResponseStatus { reason details } } } } }`;

/** What a failed fetch says, with the socket's error code beneath undici's "fetch failed". */
const failure = (error) => `${error.name}: ${error.message}${error.cause?.code ? ` (${error.cause.code})` : ''}`;

/**
 * fetch, sent again once when the proxy closed the reused connection it was written on before any answer. At a
 * reload nginx's old workers close their idle keep-alive connections, and a request written on one at that moment
 * meets a closed socket: HTTP/1.1's keep-alive race, which browsers answer by sending the request again on a new
 * connection (undici's fetch does not, for a POST). nginx had not read it, so no instance saw it and nothing runs twice.
 * Counted by each first attempt's `x-request-id` (`resentIds`), which the summary shows: the
 * instances log every request's id, so cluster-local checks that none of those reached one (a proxy that dropped the
 * client after sending the request on would otherwise pass for this race).
 */
async function fetchResent(url, init) {
  const attempt = () => {
    const id = randomUUID();
    return { id, sent: fetch(url, { ...init, headers: { ...init.headers, 'x-request-id': id } }) };
  };
  const first = attempt();
  try {
    return await first.sent;
  } catch (error) {
    if (!['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'].includes(error?.cause?.code)) throw error;
    counts.resentIds.push(first.id);
    log(`${url}: the proxy closed the connection before answering (${failure(error)}); sending again`);
    return attempt().sent;
  }
}

const short = (value) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
};

/** The GraphQL mutation, answered as one JSON result at the run's end. */
async function graphqlJson(content) {
  let upstream;
  try {
    const response = await fetchResent(graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ query: RUN_MUTATION, variables: { data: runInput(content) } }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    upstream = response.headers.get('x-upstream') ?? undefined;
    const body = await response.json().catch(() => undefined);
    const status = body?.data?.generateCopilotResponse?.status;
    if (response.status === 200 && status?.__typename === 'SuccessResponseStatus') return { ok: true, upstream };
    const code = status?.details?.code ?? body?.errors?.[0]?.extensions?.code ?? short(body ?? '');
    return { ok: false, upstream, reason: `HTTP ${response.status} ${code}` };
  } catch (error) {
    return { ok: false, upstream, reason: failure(error) };
  }
}

/** A WebSocket that remembers which instance accepted it (the proxy's X-Upstream on the 101 answer). */
class TrackedWebSocket extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    // (No 'unexpected-response' listener: with one, `ws` leaves a refused handshake open for it to handle.)
    this.on('upgrade', (response) => (this.upstream = response.headers['x-upstream']));
  }
}

/**
 * The copilotRun subscription over graphql-ws, on a socket of its own. A socket closed `1001 Going away` before
 * its run sent anything (a draining instance closes the sockets with no operation under way, one that had just
 * connected among them) connects again, as DEPLOYMENT.md tells clients to (graphql-ws's own client does, by
 * default): counted in `reconnected`, not failed. Anything else that ends the socket fails the run.
 */
async function graphqlWs(content, onStarted) {
  for (let attempt = 1; ; attempt++) {
    const outcome = await graphqlWsOnce(content, onStarted);
    if (!outcome.goingAwayBeforeRun || attempt === 3) return outcome;
    counts.reconnected += 1;
    log(`graphql-ws via ${outcome.upstream ?? '?'}: told 1001 before its run started; connecting again`);
  }
}

async function graphqlWsOnce(content, onStarted) {
  let socket;
  const client = createClient({
    url: wsUrl,
    webSocketImpl: TrackedWebSocket,
    connectionParams: apiKey ? { authorization: `Bearer ${apiKey}` } : undefined,
    lazy: true,
    retryAttempts: 0,
    on: { connected: (connected) => (socket = connected) },
  });
  let started = false;
  let last;
  const outcome = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ reason: `no end after ${timeoutMs} ms` }), timeoutMs);
    const done = (value) => {
      clearTimeout(timer);
      resolve(value);
    };
    client.subscribe(
      { query: RUN_SUBSCRIPTION, variables: { data: runInput(content) } },
      {
        next: ({ data, errors }) => {
          if (errors) return done({ reason: `errors: ${short(errors.map((e) => e.extensions?.code ?? e.message))}` });
          last = data.copilotRun;
          if (!started) {
            started = true;
            onStarted?.(answered(socket?.upstream), socket?.upstream);
          }
        },
        error: (error) => {
          const why = error?.reason || error?.message || error?.error?.message || String(error);
          done({
            reason: `socket closed: ${error?.code ?? ''} ${why}`.trim(),
            goingAwayBeforeRun: error?.code === 1001 && !started,
          });
        },
        complete: () => done({}),
      },
    );
  });
  await client.dispose();
  const upstream = socket?.upstream;
  if (outcome.reason)
    return { ok: false, upstream, reason: outcome.reason, goingAwayBeforeRun: outcome.goingAwayBeforeRun };
  if (last?.__typename === 'RunFinishedEvent' && last.status.__typename === 'SuccessResponseStatus') {
    return { ok: true, upstream };
  }
  return { ok: false, upstream, reason: `ended with ${last?.__typename ?? 'no event'} ${short(last?.status ?? '')}` };
}

/** An AG-UI run (SSE). */
async function agUi(content, onStarted) {
  let upstream;
  try {
    const response = await fetchResent(`${graphqlUrl}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...auth },
      body: JSON.stringify({
        threadId: `rolling-${randomUUID()}`,
        runId: randomUUID(),
        state: {},
        messages: [{ id: randomUUID(), role: 'user', content }],
        tools: [],
        context: [],
        forwardedProps: {},
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    upstream = response.headers.get('x-upstream') ?? undefined;
    if (response.status !== 200) {
      return { ok: false, upstream, reason: `HTTP ${response.status} ${short(await response.text())}` };
    }
    const types = [];
    let error;
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffered.indexOf('\n\n')) !== -1) {
        const frame = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = frame
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        if (!data) continue;
        const event = JSON.parse(data);
        if (types.length === 0) onStarted?.(answered(upstream), upstream);
        types.push(event.type);
        if (event.type === 'RUN_ERROR') error = `RUN_ERROR ${event.code ?? ''} ${event.message ?? ''}`;
      }
    }
    if (error) return { ok: false, upstream, reason: error };
    if (types.at(-1) === 'RUN_FINISHED') return { ok: true, upstream };
    return { ok: false, upstream, reason: `the stream ended after ${types.at(-1) ?? 'no event'}` };
  } catch (error) {
    return { ok: false, upstream, reason: failure(error) };
  }
}

const KINDS = { 'graphql-json': graphqlJson, 'graphql-ws': graphqlWs, 'ag-ui': agUi };

// ---------------------------------------------------------------------------------------------------
// Counting

const counts = {
  sent: 0,
  succeeded: 0,
  failed: 0,
  sentOn: 0,
  reconnected: 0,
  resentIds: [],
  byKind: {},
  failures: [],
};
const pending = new Set();

/** Sends one run and counts its outcome; resolves with it. */
function send(kind, content, onStarted) {
  counts.sent += 1;
  const run = KINDS[kind](content, onStarted).then((outcome) => {
    const tally = (counts.byKind[kind] ??= { sent: 0, failed: 0 });
    tally.sent += 1;
    if (wasSentOn(outcome.upstream)) counts.sentOn += 1;
    if (outcome.ok) counts.succeeded += 1;
    else {
      counts.failed += 1;
      tally.failed += 1;
      if (counts.failures.length < 10)
        counts.failures.push(`${kind} via ${outcome.upstream ?? '?'}: ${outcome.reason}`);
      log(`FAILED ${kind} via ${outcome.upstream ?? '?'}: ${outcome.reason}`);
    }
    pending.delete(run);
    return outcome;
  });
  pending.add(run);
  return run;
}

// A reply of the demo model as long as it goes (it echoes up to 200 characters): about 1.5 s of streaming.
const LONG = 'A run still streaming while its instance drains, which must reach its end all the same. '.repeat(3);
// The longest reply of the demo model (100 one-letter words, 200 characters, echoed: about 2 s): a run held on an instance
// told SIGTERM, which keeps it draining while the driver takes it out of the proxy's rotation.
const HELD = 'a '.repeat(100);

let sending = true;
async function loop(index) {
  const kinds = Object.keys(KINDS);
  for (let turn = index; sending; turn += 1) {
    await send(kinds[turn % kinds.length], turn % 2 ? LONG : 'hello');
  }
}

// ---------------------------------------------------------------------------------------------------
// Commands

const held = [];

/** Starts streaming runs until one graphql-ws and one AG-UI run are in flight on `address`. */
async function hold(address) {
  const wanted = ['graphql-ws', 'ag-ui'];
  for (const kind of wanted) {
    let holding = false;
    for (let attempt = 0; !holding; attempt += 1) {
      if (attempt === 20) throw new Error(`no ${kind} run reached ${address} in 20 attempts`);
      let run;
      const started = new Promise((resolve) => {
        run = send(kind, HELD, (upstream) => resolve(upstream));
        // A run that ends without starting (failed) must not leave this waiting.
        void run.then(() => resolve(undefined));
      });
      if ((await started) === address) {
        holding = true;
        held.push(run);
      }
    }
  }
  return held.length;
}

/**
 * Sends AG-UI runs, four at a time, until the draining instance at `address` has refused one and the proxy has
 * sent it on (its X-Upstream "address : other"); resolves with how many were.
 */
async function sendOn(address) {
  for (let round = 0; round < 10; round += 1) {
    const upstreams = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise((resolve) => {
            const run = send('ag-ui', 'hello', (_instance, upstream) => resolve(upstream));
            void run.then((outcome) => resolve(outcome.upstream));
          }),
      ),
    );
    const refused = upstreams.filter((upstream) => wasSentOn(upstream) && upstream.split(' : ')[0] === address);
    if (refused.length) return refused.length;
  }
  throw new Error(`no run was refused by ${address} and sent on in 40 runs`);
}

/** Waits until GET /health through the proxy is answered by `address` at its first try. */
async function routed(address) {
  const deadline = Date.now() + timeoutMs;
  for (let tries = 1; ; tries += 1) {
    const response = await fetch(`${base}/health`, { headers: auth }).catch(() => undefined);
    await response?.arrayBuffer().catch(() => undefined);
    if (response?.status === 200 && response.headers.get('x-upstream') === address) return tries;
    if (Date.now() > deadline) throw new Error(`nginx sent no request to ${address} in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function finish() {
  sending = false;
  await Promise.all(loops);
  await Promise.all([...pending]);
  const outcomes = await Promise.all(held);
  const heldFinished = outcomes.filter((outcome) => outcome.ok).length;
  const summary = { ...counts, held: held.length, heldFinished };
  process.stdout.write(`summary ${JSON.stringify(summary)}\n`);
  process.exit(summary.failed === 0 && heldFinished === held.length ? 0 : 1);
}

log(`${workers} loops of runs through ${graphqlUrl} (GraphQL JSON, graphql-ws, AG-UI)`);
const loops = Array.from({ length: workers }, (_, index) => loop(index));

let finishing;
const commands = createInterface({ input: process.stdin });
// One command at a time, in order: each answer is the line the driver waits for.
let queue = Promise.resolve();
commands.on('line', (line) => {
  const [command, argument] = line.trim().split(/\s+/);
  queue = queue.then(async () => {
    if (command === 'hold') {
      try {
        process.stdout.write(`held ${await hold(argument)}\n`);
      } catch (error) {
        process.stdout.write(`hold-failed ${error.message}\n`);
      }
    } else if (command === 'sendon') {
      try {
        process.stdout.write(`senton ${await sendOn(argument)}\n`);
      } catch (error) {
        process.stdout.write(`sendon-failed ${error.message}\n`);
      }
    } else if (command === 'routed') {
      try {
        process.stdout.write(`routed ${await routed(argument)}\n`);
      } catch (error) {
        process.stdout.write(`routed-failed ${error.message}\n`);
      }
    } else if (command === 'stop') {
      finishing ??= finish();
    } else if (command) {
      process.stdout.write(`unknown ${command}\n`);
    }
  });
});
commands.on('close', () => {
  queue = queue.then(() => (finishing ??= finish()));
});
