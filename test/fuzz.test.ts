import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DemoAdapter } from '../src/adapters/demo.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';
import {
  assertHealthy,
  check,
  checkAgUiAnswer,
  checkCoded,
  checkGraphQLAnswer,
  checkRunEvents,
  checkRunStatus,
  checkWsResult,
  describeWsError,
  errorsOf,
  post,
  PLAIN_RUN,
  RawWs,
  rawWsExchange,
  RUN_EVENTS,
  WsSession,
  wsErrors,
  type GraphQLError,
  type RawAnswer,
} from './support/fuzz-client.js';
import {
  deepDocument,
  deepDocumentLevels,
  deepDepthArb,
  directiveCaseArb,
  directiveCaseRefused,
  directiveDocument,
  docCaseArb,
  documentOf,
  envelopeArb,
  operationNameArb,
  persistedQueryArb,
  requestOf,
  serverFrameArb,
  STOCK_DOCUMENT,
  stockVariables,
  wsFrameArb,
  type DeepShape,
  type DirectiveCase,
  type DocCase,
  type Envelope,
} from './support/fuzz-documents.js';
import {
  copilotInputArb,
  corrupt,
  corruptionsArb,
  Deep,
  DeepJsonString,
  jsonStringArb,
  MAX_NESTING,
  nestingOf,
  propertiesArb,
  runAgentInputArb,
  stringOf,
  textNestingOf,
  toJson,
  tooDeepArb,
  wrongValueArb,
} from './support/fuzz-inputs.js';
import {
  agUiStreamArb,
  answerOf,
  crewStreamArb,
  describeStream,
  graphStreamArb,
  openAiOddStreamArb,
  openAiStreamArb,
  type StreamCase,
} from './support/fuzz-streams.js';
import { planMarker, ScriptedUpstream } from './support/fuzz-upstream.js';
import { failOnProcessErrors } from './support/process-errors.js';

// Property-based and fuzz tests (fast-check) against real gateways on loopback: random and malformed
// GraphQL documents and variables (wrong types, huge strings, deep nesting, invalid JSON inside the
// JSON-string fields), AG-UI bodies, and malformed streams from every kind of upstream (an
// OpenAI-compatible model's SSE, a CopilotKit remote endpoint's JSON Lines in both dialects, an AG-UI
// agent's SSE). Whatever comes in: every answer is a clear coded error (a code of ERROR_CODES, never
// INTERNAL_SERVER_ERROR) or a valid answer, every run ends with one terminal status, nothing hangs,
// nothing reaches the process as an uncaught error, and the gateway is healthy afterwards.
//
// The generators go past the gateway's limits on purpose (nesting far deeper than 100 levels in
// documents, bodies, variables and JSON-string fields; operation names naming nothing; persisted
// queries; server-only graphql-ws messages; upstream chunks of the wrong types), and the tests after
// each general property pin the documented answer for those inputs exactly (PROTOCOL.md §1).
//
// Reproducible: the seed is fixed. FC_SEED=<n> explores another one, FC_RUNS=<factor> scales the
// number of runs; a failure prints its seed, path and (shrunk) counterexample.

const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20_240_611;
const SCALE = process.env.FC_RUNS ? Number(process.env.FC_RUNS) : 1;
/**
 * fast-check's parameters: the seed, the number of runs, and a time limit after which a property (its
 * shrinking included: a hang costs ANSWER_TIMEOUT_MS per step) stops and reports what it has as a failure.
 */
const runs = <T>(numRuns: number, examples: T[] = []): fc.Parameters<T> => ({
  seed: SEED,
  numRuns: Math.max(1, Math.round(numRuns * SCALE)),
  interruptAfterTimeLimit: 150_000,
  markInterruptAsFailure: true,
  // Cases every seed runs (first), so that what a property must reach does not depend on luck.
  examples,
});

/** Generous per-test limit: the properties take seconds; this only bounds a failing one's shrinking. */
const TEST_TIMEOUT_MS = 240_000;

/** A smaller body limit than the default 10 MiB, so that huge inputs on both sides of it stay quick. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

// Every uncaught exception and unhandled rejection of the real process fails the test it happened in.
failOnProcessErrors();

// --- gateways --------------------------------------------------------------------------------------

const FAST_RETRY = { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 2 };

/**
 * A gateway whose every upstream is the scripted one: the model (OpenAI-compatible), an AG-UI agent
 * (aguiAgent), a CopilotKit remote endpoint (agents fuzzCrew and fuzzGraph, action remoteEcho), the
 * guardrails service; plus a server-side action `echo`. Waits until the endpoint's agents are discovered.
 */
async function startUpstreamGateway(upstream: ScriptedUpstream): Promise<RunningGateway> {
  const gateway = await startGateway({
    adapter: new OpenAIAdapter({
      baseURL: `${upstream.origin}/v1`,
      apiKey: 'test-key',
      maxRetries: 0,
      model: 'gpt-4o-mini',
    }),
    agents: {
      aguiAgent: agUiAgent({ url: `${upstream.origin}/agui`, description: 'An AG-UI agent.', retry: FAST_RETRY }),
    },
    remoteEndpoints: [{ url: `${upstream.origin}/ck`, retry: FAST_RETRY }],
    guardrails: { url: `${upstream.origin}/guardrails`, timeoutMs: 5_000 },
    actions: [{ name: 'echo', description: 'Echoes its arguments.', handler: (args: Record<string, unknown>) => args }],
    maxBodyBytes: MAX_BODY_BYTES,
    maxRounds: 2,
    // The scripted upstream always ends its answers: an idle timeout would be a hang of the gateway's own.
    modelIdleTimeoutMs: 4_000,
    agentIdleTimeoutMs: 4_000,
  });
  for (let attempt = 0; ; attempt++) {
    const answer = await post(gateway.url, JSON.stringify({ query: '{ availableAgents { agents { name } } }' }), {
      'content-type': 'application/json',
    });
    if (answer.text.includes('fuzzGraph')) break;
    if (attempt > 100) throw new Error(`the remote endpoint's agents were not discovered: ${answer.text}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return gateway;
}

const upstream = new ScriptedUpstream();
let demo: RunningGateway;
let gateway: RunningGateway;
beforeAll(async () => {
  await upstream.start();
  demo = await startGateway({ adapter: new DemoAdapter({ tokenDelayMs: 0 }), maxBodyBytes: MAX_BODY_BYTES });
  gateway = await startUpstreamGateway(upstream);
});
afterAll(async () => {
  await demo?.close();
  await gateway?.close();
  await upstream.stop();
});
// After every property, both gateways are healthy, and the scripted upstream made no mistake of its own.
afterEach(async () => {
  await assertHealthy(demo, 'the demo gateway, after the property');
  await assertHealthy(gateway, 'the gateway with scripted upstreams, after the property');
  expect(upstream.faults.map(String)).toEqual([]);
});

let planCounter = 0;
/** Registers a scripted answer: every request that carries the returned marker gets it, until `done`. */
function plan(stream: StreamCase): { marker: string; done: () => void } {
  const id = `plan-${++planCounter}`;
  upstream.plans.set(id, answerOf(stream));
  return { marker: planMarker(id), done: () => void upstream.plans.delete(id) };
}

/** The usual request around a document: the stock variables, JSON in, JSON accepted. */
const PLAIN_ENVELOPE: Envelope = {
  variables: 'stock',
  accept: 'application/json',
  contentType: 'application/json',
  framing: 'object',
};

/** About the byte length of a graphql-ws subscribe message carrying this payload text (the id and type around it). */
const frameBytes = (payloadJson: string) => Buffer.byteLength(payloadJson) + 100;

/**
 * Every count of the outcomes a property saw, so that it can check that its generators reached what it
 * meant to exercise (`expectReached`), not only the first check that refuses an input.
 */
function tally() {
  const seen = new Map<string, number>();
  return {
    seen,
    add: (key: string) => void seen.set(key, (seen.get(key) ?? 0) + 1),
    expectReached(...patterns: RegExp[]) {
      const missing = patterns.filter((pattern) => ![...seen.keys()].some((key) => pattern.test(key)));
      if (missing.length)
        throw new Error(
          `The property never reached ${missing.join(', ')}; it saw ${JSON.stringify(Object.fromEntries(seen))}`,
        );
    },
  };
}

// --- 1. GraphQL documents ------------------------------------------------------------------------------

describe('random and malformed GraphQL documents', () => {
  it(
    'over HTTP: every answer is JSON (or a complete stream) whose errors are all coded, with a status that goes with them',
    async () => {
      const outcomes = tally();
      await fc.assert(
        fc.asyncProperty(docCaseArb, envelopeArb, async (doc, envelope) => {
          const request = requestOf(doc, envelope);
          const answer = await post(demo.url, request.body, {
            'content-type': request.contentType,
            accept: request.accept,
          });
          if (request.envelope) {
            // {method, params, body} without a query is the AG-UI single route, answered in AG-UI's form.
            checkAgUiAnswer(answer, request.describe);
            outcomes.add('ag-ui envelope');
            return;
          }
          const summary = checkGraphQLAnswer(answer, request.describe);
          for (const code of summary.codes.length
            ? summary.codes
            : [summary.runStatus ? `run ${summary.runStatus.code}` : 'data'])
            outcomes.add(code);
        }),
        runs<[DocCase, Envelope]>(220, [
          [{ kind: 'stock' }, { ...PLAIN_ENVELOPE, accept: 'multipart/mixed, application/json' }],
          [{ kind: 'stock' }, PLAIN_ENVELOPE],
          [{ kind: 'arbitrary', text: '{ hello }' }, PLAIN_ENVELOPE],
          [{ kind: 'arbitrary', text: '{ hello' }, PLAIN_ENVELOPE],
          [{ kind: 'many', what: 'aliases', count: 2_001 }, PLAIN_ENVELOPE],
          [{ kind: 'huge', where: 'comment', size: 2_200_000 }, PLAIN_ENVELOPE],
          [
            { kind: 'arbitrary', text: '{ hello }' },
            { ...PLAIN_ENVELOPE, framing: 'batch' },
          ],
          [{ kind: 'deep', shape: 'selection', depth: 50_000 }, PLAIN_ENVELOPE],
          [
            { kind: 'arbitrary', text: '{ hello }' },
            { ...PLAIN_ENVELOPE, operationName: 'nope' },
          ],
          [{ kind: 'stock' }, { ...PLAIN_ENVELOPE, extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } }],
          [
            { kind: 'stock' },
            {
              ...PLAIN_ENVELOPE,
              variables: 'random',
              randomVariables: { ...stockVariables(), properties: { nested: new Deep('array', 100_000) } },
            },
          ],
        ]),
      );
      outcomes.expectReached(
        /^GRAPHQL_PARSE_FAILED$/,
        /^GRAPHQL_VALIDATION_FAILED$/,
        /^BAD_REQUEST$/,
        /^BAD_USER_INPUT$/,
        /^NOT_SUPPORTED$/,
        /^PAYLOAD_TOO_LARGE$/,
        /^NOT_ACCEPTABLE$/,
        /^run Success$/,
        /^data$/,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'over graphql-ws (the graphql-ws client): coded error messages or results, and the socket stays open',
    async () => {
      const outcomes = tally();
      let session = new WsSession(demo.wsUrl);
      await session.ready();
      try {
        await fc.assert(
          fc.asyncProperty(
            docCaseArb,
            fc.option(operationNameArb, { nil: undefined, freq: 4 }),
            async (doc, operationName) => {
              const payload = {
                query: documentOf(doc),
                variables: stockVariables(),
                ...(operationName === undefined ? {} : { operationName }),
              };
              const size = frameBytes(JSON.stringify(payload));
              const outcome = await session.run(payload);
              const what = `${doc.kind} document of ${payload.query.length} characters${operationName === undefined ? '' : ` as ${JSON.stringify(operationName)}`} over graphql-ws`;
              if (size > MAX_BODY_BYTES) {
                // Documented: a message over maxBodyBytes closes the socket with 1009.
                check(
                  session.closes.length === 1 && session.closes[0].code === 1009,
                  `${what}: a message over maxBodyBytes did not close the socket with 1009`,
                  { closes: session.closes, error: describeWsError(outcome.error) },
                );
                outcomes.add('1009');
                await session.dispose();
                session = new WsSession(demo.wsUrl);
                await session.ready();
                return;
              }
              check(session.closes.length === 0, `${what}: the socket was closed`, {
                closes: session.closes,
                error: describeWsError(outcome.error),
              });
              const codes = checkCoded(wsErrors(outcome, what), what, outcome);
              for (const code of codes.length ? codes : ['results']) outcomes.add(code);
              if (!codes.length) check(outcome.results.length > 0, `${what}: completed without a result`, outcome);
            },
          ),
          runs<[DocCase, string | undefined]>(140, [
            [{ kind: 'stock' }, undefined],
            [{ kind: 'arbitrary', text: '{ hello' }, undefined],
            [{ kind: 'many', what: 'aliases', count: 2_001 }, undefined],
            [{ kind: 'huge', where: 'comment', size: 2_200_000 }, undefined],
            [{ kind: 'deep', shape: 'list-value', depth: 50_000 }, undefined],
            [{ kind: 'arbitrary', text: 'query A { hello } query B { hello }' }, undefined],
          ]),
        );
      } finally {
        await session.dispose();
      }
      outcomes.expectReached(
        /^GRAPHQL_PARSE_FAILED$/,
        /^GRAPHQL_VALIDATION_FAILED$/,
        /^BAD_REQUEST$/,
        /^results$/,
        /^1009$/,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'graphql-ws frames that break the protocol close the socket with a graphql-ws code (never 4500), or leave it serving',
    async () => {
      const outcomes = tally();
      await fc.assert(
        fc.asyncProperty(fc.array(wsFrameArb, { minLength: 1, maxLength: 5 }), async (frames) => {
          const result = await rawWsExchange(demo.wsUrl, frames);
          const what = `frames ${JSON.stringify(frames).slice(0, 600)}`;
          if (result.closeCode !== undefined) {
            // 4400 bad request (a message only servers send included), 4409 a subscriber of that id already exists, 4429 a second connection_init.
            check(
              [4400, 4409, 4429].includes(result.closeCode),
              `${what}: the socket was closed with ${result.closeCode} ${result.closeReason}`,
              result.received,
            );
            outcomes.add(
              /^Unexpected message of type /.test(result.closeReason ?? '')
                ? `closed ${result.closeCode}, a server-only message`
                : `closed ${result.closeCode}`,
            );
          } else {
            check(
              result.probe === 'answered',
              `${what}: the socket stayed open but stopped answering`,
              result.received,
            );
            outcomes.add('served');
          }
          for (const message of result.received) {
            if (message.type === 'error')
              for (const code of checkCoded(message.payload, what, message)) outcomes.add(`error ${code}`);
            if (message.type === 'next') checkCoded(message.payload?.errors ?? [], what, message);
          }
        }),
        runs<[string[]]>(70, [
          [['{"type":"nope"}']],
          [['{"type":"ping"}', '{"type":"complete","id":"x"}']],
          [['{"type":"next","id":"a","payload":{"data":{}}}']],
          [
            [
              toJson({
                id: 'a',
                type: 'subscribe',
                payload: { query: '{ hello }', variables: { x: new Deep('object', 5_000) } },
              }),
            ],
          ],
          [['{"id":"a","type":"subscribe","payload":{"query":"{ hello"}}']],
        ]),
      );
      outcomes.expectReached(
        /^closed 4400$/,
        /^closed 4400, a server-only message$/,
        /^served$/,
        /^error GRAPHQL_PARSE_FAILED$/,
        /^error BAD_USER_INPUT$/,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a client sending a message only servers send (connection_ack, next, error) gets its socket closed with 4400, not 4500',
    async () => {
      await fc.assert(
        fc.asyncProperty(serverFrameArb, async (frame) => {
          const result = await rawWsExchange(demo.wsUrl, [frame]);
          check(
            result.closeCode === 4400,
            `${frame}: the socket was closed with ${result.closeCode} ${result.closeReason}`,
            result.received,
          );
          check(
            /^Unexpected message of type (connection_ack|next|error) received$/.test(result.closeReason ?? ''),
            `${frame}: the close reason does not say what was wrong: ${result.closeReason}`,
            result.received,
          );
        }),
        runs(8),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a graphql-ws ping whose payload nests some 5,000 levels deep or more (graphql-ws echoes it in its pong) gets a pong or a 4400 close, never 4500',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom<'object' | 'array'>('object', 'array'),
          fc.constantFrom(5_000, 10_000, 100_000),
          async (shape, depth) => {
            const frame = toJson({ type: 'ping', payload: { nested: new Deep(shape, depth) } });
            const result = await rawWsExchange(demo.wsUrl, [frame]);
            check(
              result.closeCode === undefined || result.closeCode === 4400,
              `a ping whose payload is Deep(${shape}, ${depth}): the socket was closed with ${result.closeCode} ${result.closeReason}`,
              result.received.slice(0, 2),
            );
          },
        ),
        runs(4),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a document whose brackets nest deeper than 100 levels (some 2,000 to 50,000 levels included) is GRAPHQL_PARSE_FAILED before parsing, not a stack overflow; one of 100 levels is parsed',
    async () => {
      const shapes: DeepShape[] = [
        'selection',
        'list-value',
        'object-value',
        'inline-fragment',
        'list-type',
        'run-selection',
        'unbalanced',
      ];
      const tooDeep = 'Syntax Error: the document nests deeper than 100 levels.';
      const session = new WsSession(demo.wsUrl);
      await session.ready();
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...shapes),
            fc.oneof(deepDepthArb, fc.integer({ min: 40, max: 110 })),
            fc.boolean(),
            async (shape, depth, overWs) => {
              const levels = deepDocumentLevels(shape, depth);
              // Bigger than the body limit (some of the deepest run-selection documents): PAYLOAD_TOO_LARGE, another property's business.
              if (frameBytes(deepDocument(shape, depth)) > MAX_BODY_BYTES) return;
              const what = `a ${shape} document ${depth} deep (${levels} levels) over ${overWs ? 'graphql-ws' : 'HTTP'}`;
              let errors: GraphQLError[];
              if (overWs) {
                const outcome = await session.run({ query: deepDocument(shape, depth), variables: stockVariables() });
                errors = wsErrors(outcome, what);
                checkCoded(errors, what, outcome);
                check(session.closes.length === 0, `${what}: the socket was closed`, session.closes);
              } else {
                const answer = await post(
                  demo.url,
                  JSON.stringify({ query: deepDocument(shape, depth), variables: stockVariables() }),
                  { 'content-type': 'application/json' },
                );
                const summary = checkGraphQLAnswer(answer, what);
                errors = summary.payloads.flatMap((payload) => payload.errors ?? []);
                if (levels > MAX_NESTING)
                  check(answer.status === 400, `${what}: HTTP ${answer.status}, not 400`, answer.text);
              }
              if (levels > MAX_NESTING) {
                check(
                  errors.length === 1 &&
                    errors[0].extensions?.code === 'GRAPHQL_PARSE_FAILED' &&
                    errors[0].message === tooDeep,
                  `${what}: not refused with the one GRAPHQL_PARSE_FAILED "${tooDeep}"`,
                  errors,
                );
              } else {
                check(
                  errors.every((error) => error.message !== tooDeep),
                  `${what}: refused as too deep at ${levels} levels`,
                  errors,
                );
              }
            },
          ),
          runs<[DeepShape, number, boolean]>(40, [
            ['selection', 99, false],
            ['selection', 100, false],
            ['list-value', 98, true],
            ['list-value', 99, true],
            ['run-selection', 49, false],
            ['run-selection', 50, true],
          ]),
        );
      } finally {
        await session.dispose();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'extensions.persistedQuery (automatic persisted queries are off) is NOT_SUPPORTED with HTTP 200, whatever its hash and version, with a query or without',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('{ hello }', STOCK_DOCUMENT, '{ hello', undefined),
          persistedQueryArb.filter(Boolean),
          async (query, persistedQuery) => {
            const what = `persistedQuery ${JSON.stringify(persistedQuery)} with ${JSON.stringify(query)}`;
            const answer = await post(
              demo.url,
              JSON.stringify({ query, variables: stockVariables(), extensions: { persistedQuery } }),
              { 'content-type': 'application/json' },
            );
            const summary = checkGraphQLAnswer(answer, what);
            check(
              answer.status === 200 && summary.codes.length === 1 && summary.codes[0] === 'NOT_SUPPORTED',
              `${what}: not HTTP 200 with one NOT_SUPPORTED`,
              { status: answer.status, text: answer.text },
            );
            check(summary.payloads[0].data === undefined, `${what}: the operation ran`, summary.payloads[0]);
          },
        ),
        runs<[string | undefined, unknown]>(16, [
          ['{ hello }', { version: 1, sha256Hash: 'abc' }],
          [undefined, { version: 1, sha256Hash: '0'.repeat(64) }],
          ['{ hello }', { version: 2, sha256Hash: 'abc' }],
        ]),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "the directives' arguments at their edges (@stream initialCount negative, 0, huge, null or a variable; @defer if: false, a label, if: $d; @include/@skip on a null variable): a client's mistake is one BAD_USER_INPUT before the run, anything else runs without errors, over HTTP (multipart, SSE) and graphql-ws; the process stays up",
    async () => {
      const outcomes = tally();
      const session = new WsSession(demo.wsUrl);
      await session.ready();
      const issue28: DirectiveCase = {
        messagesStream: undefined,
        contentStream: { initialCount: -1 },
        defer: 'none',
        condition: 'none',
        n: undefined,
        v: undefined,
        d: undefined,
      };
      try {
        await fc.assert(
          fc.asyncProperty(directiveCaseArb, fc.constantFrom('multipart', 'sse', 'graphql-ws'), async (doc, via) => {
            const { query, variables } = directiveDocument(doc);
            const what = `${query} with ${JSON.stringify({ n: doc.n, v: doc.v, d: doc.d })} over ${via}`;
            let errors: GraphQLError[];
            let status: number | undefined;
            if (via === 'graphql-ws') {
              const outcome = await session.run({ query, variables });
              errors = wsErrors(outcome, what);
              checkCoded(errors, what, outcome);
              check(session.closes.length === 0, `${what}: the socket was closed`, session.closes);
            } else {
              const answer = await post(demo.url, JSON.stringify({ query, variables }), {
                'content-type': 'application/json',
                accept: via === 'sse' ? 'text/event-stream' : 'multipart/mixed',
              });
              const summary = checkGraphQLAnswer(answer, what);
              errors = summary.payloads.flatMap(errorsOf);
              status = answer.status;
            }
            if (directiveCaseRefused(doc)) {
              check(
                errors.length === 1 &&
                  errors[0].extensions?.code === 'BAD_USER_INPUT' &&
                  /^Argument "(if|initialCount)" of @(stream|defer|include|skip) must be /.test(
                    String(errors[0].message),
                  ),
                `${what}: not refused with one BAD_USER_INPUT saying what is wrong`,
                errors,
              );
              if (status !== undefined) check(status === 400, `${what}: HTTP ${status}, not 400`, errors);
              outcomes.add('refused');
            } else {
              check(errors.length === 0, `${what}: errors`, errors);
              outcomes.add('ran');
            }
          }),
          runs<[DirectiveCase, string]>(60, [
            [issue28, 'multipart'],
            [issue28, 'sse'],
            [issue28, 'graphql-ws'],
            [{ ...issue28, messagesStream: { initialCount: undefined } }, 'multipart'],
            [
              { ...issue28, contentStream: { initialCount: 2_147_483_647 }, messagesStream: { initialCount: 2 } },
              'sse',
            ],
            [{ ...issue28, contentStream: { initialCount: '$n' }, n: null }, 'graphql-ws'],
            [
              { ...issue28, contentStream: undefined, condition: 'include', v: null, defer: 'variable', d: false },
              'multipart',
            ],
          ]),
        );
      } finally {
        await session.dispose();
      }
      outcomes.expectReached(/^refused$/, /^ran$/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'an operation name naming no operation, or several operations and no name, is BAD_REQUEST: HTTP 400, and an error message over graphql-ws',
    async () => {
      const session = new WsSession(demo.wsUrl);
      await session.ready();
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.oneof(
              fc.constantFrom<[string, string | undefined]>(
                ['query A { hello } query B { hello }', undefined],
                ['query A { hello } query B { hello }', 'C'],
                ['query A { hello }', 'B'],
                ['{ hello }', 'nope'],
                ['{ hello }', ''],
                [STOCK_DOCUMENT, 'nope'],
              ),
              fc
                .tuple(
                  fc.constantFrom('query A { hello }', 'query A { hello } query B { hello }', '{ hello }'),
                  operationNameArb,
                )
                .filter(([query, name]) => !query.includes(`query ${name} `)),
            ),
            fc.boolean(),
            async ([query, operationName], overWs) => {
              const what = `${query} as ${JSON.stringify(operationName)} over ${overWs ? 'graphql-ws' : 'HTTP'}`;
              if (overWs) {
                const outcome = await session.run({ query, ...(operationName === undefined ? {} : { operationName }) });
                const errors = wsErrors(outcome, what);
                check(
                  outcome.error !== undefined && errors.length === 1 && errors[0].extensions?.code === 'BAD_REQUEST',
                  `${what}: not an error message with one BAD_REQUEST`,
                  outcome,
                );
                check(outcome.results.length === 0, `${what}: results`, outcome);
                check(session.closes.length === 0, `${what}: the socket was closed`, session.closes);
              } else {
                const answer = await post(
                  demo.url,
                  JSON.stringify({ query, operationName, variables: stockVariables() }),
                  { 'content-type': 'application/json' },
                );
                const summary = checkGraphQLAnswer(answer, what);
                check(
                  answer.status === 400 && summary.codes.length === 1 && summary.codes[0] === 'BAD_REQUEST',
                  `${what}: not HTTP 400 with one BAD_REQUEST`,
                  { status: answer.status, text: answer.text },
                );
              }
            },
          ),
          runs(24),
        );
      } finally {
        await session.dispose();
      }
    },
    TEST_TIMEOUT_MS,
  );
});

// --- 2. generateCopilotResponse variables ------------------------------------------------------------

type Transport = 'http-json' | 'http-multipart' | 'ws-subscription' | 'ws-mutation';
const transportArb = fc.constantFrom<Transport>('http-json', 'http-multipart', 'ws-subscription', 'ws-mutation');

/** What runWith saw: the codes and errors, the run's status when it ran, and the HTTP status or how the graphql-ws operation ended. */
interface RunOutcome {
  codes: string[];
  status?: { code: string; reason?: string; details?: any };
  errors: GraphQLError[];
  httpStatus?: number;
  wsEnd?: 'complete' | 'error' | 'closed';
}

/**
 * Runs `generateCopilotResponse` (or `copilotRun`) with variables given as JSON text, over a transport;
 * checks the answer with the general oracle and returns what it was: its codes and errors and the run's status.
 */
async function runWith(
  transport: Transport,
  variablesJson: string,
  ws: { session: RawWs },
  what: string,
  options: { forbid?: string[] } = {},
): Promise<RunOutcome> {
  if (transport === 'http-json' || transport === 'http-multipart') {
    const json = transport === 'http-json';
    const answer = await post(
      gateway.url,
      `{"query":${JSON.stringify(json ? PLAIN_RUN : STOCK_DOCUMENT)},"variables":${variablesJson}}`,
      { 'content-type': 'application/json', accept: json ? 'application/json' : 'multipart/mixed, application/json' },
    );
    const summary = checkGraphQLAnswer(answer, `${what} over ${transport}`);
    if (summary.runStatus) checkRunStatus(summary.runStatus, `${what} over ${transport}`, options);
    return {
      codes: summary.codes,
      status: summary.runStatus,
      errors: summary.payloads.flatMap(errorsOf),
      httpStatus: answer.status,
    };
  }
  const payload = `{"query":${JSON.stringify(transport === 'ws-subscription' ? RUN_EVENTS : PLAIN_RUN)},"variables":${variablesJson}}`;
  if (frameBytes(payload) > MAX_BODY_BYTES) {
    const outcome = await ws.session.operation(payload);
    check(
      outcome.end === 'closed' && ws.session.closed?.code === 1009,
      `${what} over ${transport}: a message over maxBodyBytes did not close the socket with 1009`,
      { end: outcome.end, closed: ws.session.closed },
    );
    ws.session.close();
    ws.session = await RawWs.open(gateway.wsUrl);
    return { codes: ['PAYLOAD_TOO_LARGE'], errors: [], wsEnd: 'closed' };
  }
  const outcome = await ws.session.operation(payload, what);
  const result =
    transport === 'ws-subscription'
      ? checkRunEvents(outcome, `${what} over ${transport}`, options)
      : checkWsResult(outcome, `${what} over ${transport}`, options);
  const errors = outcome.messages.flatMap((message): GraphQLError[] =>
    message.type === 'error' ? message.payload : message.type === 'next' ? errorsOf(message.payload) : [],
  );
  return { ...result, errors, wsEnd: outcome.end };
}

/** That an outcome is a refusal before any run: exactly one error, BAD_USER_INPUT (HTTP 400, or an error message over graphql-ws, when said). */
function checkRefused(
  outcome: RunOutcome,
  what: string,
  expect: { httpStatus?: number; wsEnd?: 'error'; message?: RegExp; field?: string } = {},
): void {
  check(
    outcome.errors.length === 1 && outcome.codes.length === 1 && outcome.codes[0] === 'BAD_USER_INPUT',
    `${what}: not refused with one BAD_USER_INPUT`,
    outcome,
  );
  check(outcome.status === undefined, `${what}: a run started`, outcome);
  const [error] = outcome.errors;
  if (expect.message)
    check(expect.message.test(String(error.message)), `${what}: the message does not say ${expect.message}`, error);
  if (expect.field !== undefined) {
    check(
      (error.extensions as any)?.details?.field === expect.field,
      `${what}: the error names ${(error.extensions as any)?.details?.field}, not ${expect.field}`,
      error,
    );
    check(String(error.message).includes(expect.field), `${what}: the message does not name ${expect.field}`, error);
  }
  if (outcome.httpStatus !== undefined && expect.httpStatus !== undefined)
    check(
      outcome.httpStatus === expect.httpStatus,
      `${what}: HTTP ${outcome.httpStatus}, not ${expect.httpStatus}`,
      outcome,
    );
  if (outcome.wsEnd !== undefined) {
    if (expect.wsEnd) check(outcome.wsEnd === expect.wsEnd, `${what}: over graphql-ws, not an error message`, outcome);
    check(!('http' in (error.extensions ?? {})), `${what}: an \`http\` extension over graphql-ws`, error);
  }
}

describe("random and malformed variables of generateCopilotResponse (the stock client's mutation, and copilotRun)", () => {
  it(
    'wrong types, missing fields, huge strings, deep values, invalid JSON in the JSON-string fields: a coded error or a run with a terminal status',
    async () => {
      const outcomes = tally();
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            copilotInputArb,
            corruptionsArb,
            propertiesArb,
            transportArb,
            async (input, corruptions, properties, transport) => {
              const variables = toJson({ data: corrupt(input, corruptions), properties });
              const result = await runWith(transport, variables, ws, 'random variables');
              for (const code of result.codes.length ? result.codes : [`run ${result.status?.code}`])
                outcomes.add(code);
            },
          ),
          runs(160),
        );
      } finally {
        ws.session.close();
      }
      outcomes.expectReached(/^BAD_USER_INPUT$/, /^run Success$/, /^AGENT_NOT_FOUND$/, /^NOT_SUPPORTED$/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "a JSON-string field the gateway checks (an action's jsonSchema, an agent state or config) that is not a JSON object, or nests deeper than 100 levels, is BAD_USER_INPUT naming it; otherwise the run goes ahead",
    async () => {
      type Field =
        | 'frontend.actions[0].jsonSchema'
        | 'agentStates[0].state'
        | 'agentStates[0].config'
        | 'agentState.state'
        | 'agentState.config';
      const fields: Field[] = [
        'frontend.actions[0].jsonSchema',
        'agentStates[0].state',
        'agentStates[0].config',
        'agentState.state',
        'agentState.config',
      ];
      const outcomes = tally();
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...fields),
            jsonStringArb,
            fc.constantFrom<Transport>('http-json', 'ws-subscription'),
            async (field, value, transport) => {
              const text = stringOf(value)!;
              const data = runInput([userMessage('Check my input, please.', 'checked-u1')], {
                frontend: {
                  actions: [
                    {
                      name: 'frontendThing',
                      description: 'A frontend action.',
                      jsonSchema:
                        field === 'frontend.actions[0].jsonSchema' ? value : '{"type":"object","properties":{}}',
                    },
                  ],
                },
                agentStates: [
                  {
                    agentName: 'someAgent',
                    state: field === 'agentStates[0].state' ? value : '{}',
                    config: field === 'agentStates[0].config' ? value : '{}',
                  },
                ],
                agentState: {
                  agentName: 'otherAgent',
                  state: field === 'agentState.state' ? value : '{}',
                  config: field === 'agentState.config' ? value : '{}',
                },
              });
              let parsed: unknown;
              let parses = true;
              try {
                parsed = JSON.parse(text);
              } catch {
                parses = false;
              }
              const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
              // null counts as {} for states and configs, not for a JSON Schema; an empty config is no config.
              const accepted =
                ((parses && (isObject || (parsed === null && !field.endsWith('jsonSchema')))) ||
                  (field.endsWith('.config') && text === '')) &&
                textNestingOf(value) <= MAX_NESTING;
              const what = `${field} = ${JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text)}`;
              const variables = toJson({ data });
              if (frameBytes(variables) > MAX_BODY_BYTES) return;
              let errors: GraphQLError[];
              let status: { code: string; details?: any } | undefined;
              if (transport === 'http-json') {
                const answer = await post(
                  gateway.url,
                  `{"query":${JSON.stringify(PLAIN_RUN)},"variables":${variables}}`,
                  { 'content-type': 'application/json', accept: 'application/json' },
                );
                const summary = checkGraphQLAnswer(answer, what);
                errors = summary.payloads.flatMap((payload) => payload.errors ?? []);
                status = summary.runStatus;
              } else {
                const outcome = await ws.session.operation(
                  `{"query":${JSON.stringify(RUN_EVENTS)},"variables":${variables}}`,
                  what,
                );
                const result = checkRunEvents(outcome, what);
                errors = outcome.messages.flatMap((message) =>
                  message.type === 'error' ? message.payload : (message.payload?.errors ?? []),
                );
                status = result.status;
              }
              if (accepted) {
                check(
                  errors.length === 0 && status?.code === 'Success',
                  `${what}: accepted by the rules, but the run did not succeed`,
                  { errors, status },
                );
                outcomes.add('accepted');
              } else {
                check(
                  errors.length === 1 && errors[0].extensions?.code === 'BAD_USER_INPUT',
                  `${what}: not refused with one BAD_USER_INPUT`,
                  { errors, status },
                );
                check(
                  (errors[0].extensions as any)?.details?.field === field,
                  `${what}: the error names ${(errors[0].extensions as any)?.details?.field}, not ${field}`,
                  errors[0],
                );
                check(
                  typeof errors[0].message === 'string' && errors[0].message.includes(field),
                  `${what}: the message does not name ${field}`,
                  errors[0],
                );
                outcomes.add(textNestingOf(value) > MAX_NESTING ? 'refused, too deep' : 'refused');
              }
            },
          ),
          runs(90),
        );
      } finally {
        ws.session.close();
      }
      outcomes.expectReached(/^accepted$/, /^refused$/, /^refused, too deep$/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'invalid JSON in the JSON-string fields passed on as they are (action arguments, results, agent state messages, meta events) reaches the model or agent, and the run ends with a terminal status; one that nests deeper than 100 levels is BAD_USER_INPUT naming it',
    async () => {
      const routeOf = (agentName: string | undefined) =>
        agentName === undefined ? '/v1/chat/completions' : agentName === 'aguiAgent' ? '/agui' : '/ck/agents/execute';
      const outcomes = tally();
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.record({
              args: jsonStringArb,
              result: jsonStringArb,
              state: jsonStringArb,
              value: jsonStringArb,
              response: jsonStringArb,
            }),
            fc.constantFrom(undefined, 'aguiAgent', 'fuzzCrew', 'fuzzGraph'),
            transportArb,
            async ({ args, result, state, value, response }, agentName, transport) => {
              const at = '2025-01-01T00:00:00.000Z';
              const messages = [
                userMessage('Call the tool.', 'json-u1'),
                {
                  id: 'json-call-1',
                  createdAt: at,
                  actionExecutionMessage: { name: 'frontendThing', arguments: args, parentMessageId: 'json-a1' },
                },
                {
                  id: 'json-result-1',
                  createdAt: at,
                  resultMessage: { actionExecutionId: 'json-call-1', actionName: 'frontendThing', result },
                },
                {
                  id: 'json-state-1',
                  createdAt: at,
                  agentStateMessage: {
                    threadId: 'json-thread',
                    agentName: agentName ?? 'fuzzCrew',
                    role: 'assistant',
                    state,
                    running: true,
                    nodeName: 'n',
                    runId: 'r',
                    active: true,
                  },
                },
                userMessage('And now?', 'json-u2'),
              ];
              const data = runInput(messages, {
                frontend: {
                  actions: [
                    {
                      name: 'frontendThing',
                      description: 'A frontend action.',
                      jsonSchema: '{"type":"object","properties":{}}',
                    },
                  ],
                },
                ...(agentName ? { agentSession: { agentName } } : {}),
                metaEvents: [{ name: 'LangGraphInterruptEvent', value, response }],
              });
              const variables = toJson({ data });
              if (frameBytes(variables) > MAX_BODY_BYTES) return;
              const what = `JSON strings ${JSON.stringify({ args, result, state, value, response }).slice(0, 400)} to ${agentName ?? 'the model'} over ${transport}`;
              const fields: Record<string, unknown> = {
                'messages[1].actionExecutionMessage.arguments': args,
                'messages[2].resultMessage.result': result,
                'messages[3].agentStateMessage.state': state,
                'metaEvents[0].value': value,
                'metaEvents[0].response': response,
              };
              const tooDeep = Object.keys(fields).filter((field) => textNestingOf(fields[field]) > MAX_NESTING);
              const calls = upstream.counts.get(routeOf(agentName)) ?? 0;
              const outcome = await runWith(transport, variables, ws, what);
              if (tooDeep.length) {
                // Refused before the run, naming one of the fields that nest too deep.
                const field = (outcome.errors[0]?.extensions as any)?.details?.field;
                checkRefused(outcome, what, {
                  field: tooDeep.includes(field) ? field : tooDeep[0],
                  message: /nests deeper than 100 levels/,
                  httpStatus: 200,
                });
                check(
                  (upstream.counts.get(routeOf(agentName)) ?? 0) === calls,
                  `${what}: refused, but ${agentName ?? 'the model'} was called`,
                );
                outcomes.add('refused, too deep');
                return;
              }
              check(outcome.codes.length === 0 && outcome.status !== undefined, `${what}: no run`, outcome);
              check(
                (upstream.counts.get(routeOf(agentName)) ?? 0) > calls,
                `${what}: the run ended without calling ${agentName ?? 'the model'}`,
                outcome.status,
              );
              outcomes.add(`run ${outcome.status?.code}`);
            },
          ),
          runs(60),
        );
      } finally {
        ws.session.close();
      }
      outcomes.expectReached(/^run Success$/, /^refused, too deep$/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "variables that do not match their types are BAD_USER_INPUT over graphql-ws as over HTTP (HTTP 400; over graphql-ws without Apollo's `http` extension)",
    async () => {
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom('metadata', 'messages', 'frontend', 'threadId'),
            fc.constantFrom<unknown>(5, 'Nope', true, [1], { a: 1 }, null),
            fc.constantFrom<Transport>('ws-mutation', 'ws-subscription', 'http-json'),
            async (field, value, transport) => {
              const data = { ...runInput([userMessage('hi', 'ws-vars-u1')]), [field]: value };
              // A string, or null, is a value of the right type for threadId (it may be left out).
              if (field === 'threadId' && (value === null || typeof value === 'string')) return;
              const what = `data.${field} = ${JSON.stringify(value)} over ${transport}`;
              const outcome = await runWith(transport, JSON.stringify({ data }), ws, what);
              check(
                outcome.errors.length > 0 && outcome.codes.every((code) => code === 'BAD_USER_INPUT'),
                `${what}: not refused with BAD_USER_INPUT`,
                outcome,
              );
              check(
                outcome.errors.every((error) => /^Variable "\$data"/.test(String(error.message))),
                `${what}: not a variable error`,
                outcome.errors,
              );
              check(outcome.status === undefined, `${what}: a run started`, outcome);
              if (outcome.httpStatus !== undefined)
                check(outcome.httpStatus === 400, `${what}: HTTP ${outcome.httpStatus}, not 400`, outcome);
              if (outcome.wsEnd !== undefined) {
                check(outcome.wsEnd !== 'closed', `${what}: the socket closed`, outcome);
                check(
                  outcome.errors.every((error) => !('http' in (error.extensions ?? {}))),
                  `${what}: an \`http\` extension over graphql-ws`,
                  outcome.errors,
                );
              }
            },
          ),
          runs<['metadata' | 'messages' | 'frontend' | 'threadId', unknown, Transport]>(16, [
            ['threadId', 5, 'ws-mutation'],
            ['metadata', 'Nope', 'ws-subscription'],
          ]),
        );
      } finally {
        ws.session.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a value nested deeper than 100 levels where a DateTimeISO is expected (5,000 levels and more included) is BAD_USER_INPUT before coercion, not a stack overflow',
    async () => {
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom<'object' | 'array'>('object', 'array'),
            fc.oneof(tooDeepArb, fc.integer({ min: 90, max: 100 })),
            fc.constantFrom<Transport>('http-json', 'ws-subscription', 'ws-mutation'),
            async (shape, depth, transport) => {
              const variables = {
                data: runInput([{ ...userMessage('hi', 'deep-date-u1'), createdAt: new Deep(shape, depth) }]),
              };
              // The whole body over HTTP, the variables over graphql-ws, is what may not nest deeper than 100 levels.
              const nesting = nestingOf(variables) + (transport === 'http-json' ? 1 : 0);
              const what = `messages[0].createdAt = Deep(${shape}, ${depth}) (${nesting} levels) over ${transport}`;
              const outcome = await runWith(transport, toJson(variables), ws, what);
              // Deep enough to be refused up front; less deep, refused by DateTimeISO's coercion; either way a variable refused.
              if (nesting > MAX_NESTING)
                checkRefused(outcome, what, {
                  httpStatus: 400,
                  wsEnd: 'error',
                  message: /nests? deeper than 100 levels/,
                });
              else
                checkRefused(outcome, what, {
                  httpStatus: 400,
                  message: /^Variable "\$data" got invalid value .* at "data\.messages\[0\]\.createdAt"/,
                });
            },
          ),
          runs<['object' | 'array', number, Transport]>(12, [
            ['object', 100_000, 'http-json'],
            ['array', 5_000, 'ws-subscription'],
            ['object', 95, 'http-json'],
            ['object', 96, 'http-json'],
            ['object', 96, 'ws-mutation'],
            ['object', 97, 'ws-mutation'],
          ]),
        );
      } finally {
        ws.session.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'properties nested deeper than 100 levels, or an agent state (a JSON string) that nests so, are BAD_USER_INPUT before an agent is called (5,000 levels and more included); one of 100 levels reaches the agent',
    async () => {
      const routeOf = (agentName: string) => (agentName === 'aguiAgent' ? '/agui' : '/ck/agents/execute');
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom('aguiAgent', 'fuzzCrew', 'fuzzGraph'),
            fc.constantFrom('properties', 'agentStates[0].state'),
            fc.oneof(tooDeepArb, fc.integer({ min: 95, max: 100 })),
            fc.constantFrom<Transport>('http-json', 'ws-subscription'),
            async (agentName, where, depth, transport) => {
              const deep = new Deep('object', depth);
              const data = runInput([userMessage('hi', 'deep-agent-u1')], {
                agentSession: { agentName },
                ...(where === 'properties' ? {} : { agentStates: [{ agentName, state: new DeepJsonString(deep) }] }),
              });
              const variables = { data, ...(where === 'properties' ? { properties: { nested: deep } } : {}) };
              // Properties: the body (HTTP) or the variables (graphql-ws) may not nest deeper than 100 levels; an agent state, its own text.
              const nesting =
                where === 'properties' ? nestingOf(variables) + (transport === 'http-json' ? 1 : 0) : depth;
              const what = `${where} ${depth} levels deep (${nesting} counted), agent ${agentName}, over ${transport}`;
              const calls = upstream.counts.get(routeOf(agentName)) ?? 0;
              const outcome = await runWith(transport, toJson(variables), ws, what);
              if (nesting <= MAX_NESTING) {
                check(
                  outcome.codes.length === 0 && outcome.status?.code === 'Success',
                  `${what}: within the limit, but the run did not succeed`,
                  outcome,
                );
                check(
                  (upstream.counts.get(routeOf(agentName)) ?? 0) > calls,
                  `${what}: ${agentName} was not called`,
                  outcome,
                );
                return;
              }
              if (where === 'properties')
                checkRefused(outcome, what, {
                  httpStatus: 400,
                  wsEnd: 'error',
                  message: /nests? deeper than 100 levels/,
                });
              // A field of the input: refused as the run would start (§5.1: a GraphQL error, HTTP 200).
              else
                checkRefused(outcome, what, {
                  field: 'agentStates[0].state',
                  message: /nests deeper than 100 levels/,
                  httpStatus: 200,
                });
              check(
                (upstream.counts.get(routeOf(agentName)) ?? 0) === calls,
                `${what}: refused, but ${agentName} was called`,
              );
            },
          ),
          runs<[string, string, number, Transport]>(16, [
            ['fuzzCrew', 'properties', 100_000, 'http-json'],
            ['aguiAgent', 'agentStates[0].state', 5_000, 'ws-subscription'],
            ['fuzzGraph', 'agentStates[0].state', 100, 'http-json'],
            ['fuzzGraph', 'agentStates[0].state', 101, 'http-json'],
            ['aguiAgent', 'properties', 97, 'http-json'],
            ['aguiAgent', 'properties', 98, 'http-json'],
            ['aguiAgent', 'properties', 98, 'ws-subscription'],
            ['aguiAgent', 'properties', 99, 'ws-subscription'],
          ]),
        );
      } finally {
        ws.session.close();
      }
    },
    TEST_TIMEOUT_MS,
  );
});

// --- 3. AG-UI ----------------------------------------------------------------------------------------

type AgUiRoute =
  | 'run'
  | 'connect'
  | 'stop'
  | 'unknown'
  | 'envelope-run'
  | 'envelope-connect'
  | 'envelope-stop'
  | 'envelope-info'
  | 'envelope-other';

/** POSTs an AG-UI request: a multi-route path, or the single-route envelope around the body. */
function agUiRequest(
  route: AgUiRoute,
  agentId: string,
  body: string,
  contentType: string | undefined,
  method = '',
): Promise<RawAnswer> {
  // Ids that are not path-safe go in as they are (a bad percent-encoding, a slash) some of the time.
  const segment = /^[%.]|\//.test(agentId) ? agentId : encodeURIComponent(agentId);
  if (!route.startsWith('envelope')) {
    const path = route === 'stop' ? `stop/agui-t1` : route === 'unknown' ? 'nope' : route;
    return post(`${gateway.url}/agent/${segment}/${path}`, body, { 'content-type': contentType });
  }
  const envelopeMethod =
    route === 'envelope-other'
      ? method
      : route === 'envelope-info'
        ? 'info'
        : `agent/${route.slice('envelope-'.length)}`;
  const envelopeBody = body === '' || !/^\s*[[{"\d\-tfn]/.test(body) ? 'null' : body;
  let inner: string;
  try {
    JSON.parse(envelopeBody);
    inner = envelopeBody;
  } catch {
    inner = 'null';
  }
  return post(
    gateway.url,
    `{"method":${JSON.stringify(envelopeMethod)},"params":{"agentId":${JSON.stringify(agentId)},"threadId":"agui-t1"},"body":${inner}}`,
    { 'content-type': contentType },
  );
}

describe('AG-UI: random and malformed RunAgentInput bodies and single-route envelopes', () => {
  it(
    'every answer is a coded JSON error with its 4xx status, or a valid event stream whose runs each end with one terminal event',
    async () => {
      const outcomes = tally();
      const routeArb = fc.constantFrom<AgUiRoute>(
        'run',
        'run',
        'run',
        'connect',
        'stop',
        'unknown',
        'envelope-run',
        'envelope-run',
        'envelope-connect',
        'envelope-stop',
        'envelope-info',
        'envelope-other',
      );
      const agentArb = fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('default', 'default', 'aguiAgent', 'fuzzCrew', 'fuzzGraph') },
        { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
        { weight: 1, arbitrary: fc.constantFrom('%', '%E0%A4%A', '..', '%2F', 'a/b', '') },
      );
      const bodyArb = fc.oneof(
        {
          weight: 8,
          arbitrary: fc
            .tuple(runAgentInputArb, corruptionsArb)
            .map(([input, corruptions]) => toJson(corrupt(input, corruptions))),
        },
        { weight: 1, arbitrary: wrongValueArb.map((value) => toJson(value)) },
        { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
        { weight: 1, arbitrary: fc.constantFrom('', '{}', '{"runId":"x"}', '{"runId":5}', 'null') },
      );
      const contentTypeArb = fc.oneof(
        { weight: 12, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: fc.constantFrom('text/plain', undefined, 'application/json; charset=utf-8') },
      );
      await fc.assert(
        fc.asyncProperty(
          routeArb,
          agentArb,
          bodyArb,
          contentTypeArb,
          fc.string({ maxLength: 12 }),
          async (route, agentId, body, contentType, method) => {
            const answer = await agUiRequest(route, agentId, body, contentType, method);
            const what = `AG-UI ${route} of agent ${JSON.stringify(agentId)} (${contentType}), body ${body.slice(0, 500)}`;
            if (route.startsWith('envelope') && !/^application\/json/.test(contentType ?? '')) {
              // Not JSON, so not an envelope: GraphQL's answer (the CSRF rule, or a body that is no request).
              const summary = checkGraphQLAnswer(answer, what);
              outcomes.add(`graphql ${summary.codes.join(',')}`);
              return;
            }
            const summary = checkAgUiAnswer(answer, what, { expectRun: route === 'run' || route === 'envelope-run' });
            if (summary.kind === 'json') {
              if (route.endsWith('stop'))
                check(
                  typeof summary.body?.stopped === 'boolean',
                  `${what}: a stop answered without "stopped"`,
                  summary.body,
                );
              else
                check(
                  route === 'envelope-info' && summary.body?.agents?.default !== undefined,
                  `${what}: HTTP 200 JSON that is neither a stop's answer nor /info`,
                  summary.body,
                );
            }
            outcomes.add(
              summary.kind === 'error'
                ? `${answer.status} ${summary.code}`
                : summary.kind === 'stream'
                  ? `stream ${summary.terminals.map((event) => event.type).join(',')}`
                  : `json ${route}`,
            );
          },
        ),
        runs<[AgUiRoute, string, string, string | undefined, string]>(220, [
          [
            'run',
            'default',
            JSON.stringify({
              threadId: 'agui-t1',
              runId: 'agui-r1',
              messages: [{ id: 'agui-u1', role: 'user', content: 'hi' }],
              tools: [],
              context: [],
            }),
            'application/json',
            '',
          ],
          [
            'run',
            'default',
            JSON.stringify({
              threadId: 'agui-t1',
              runId: 'agui-r2',
              messages: [{ id: 'agui-u2', role: 'user', content: 'x'.repeat(MAX_BODY_BYTES) }],
              tools: [],
              context: [],
            }),
            'application/json',
            '',
          ],
          ['run', 'default', '{}', 'text/plain', ''],
          ['stop', 'default', '{}', 'application/json', ''],
          ['envelope-info', 'default', '', 'application/json', ''],
        ]),
      );
      outcomes.expectReached(
        /^400 BAD_USER_INPUT$/,
        /^404 (NOT_FOUND|AGENT_NOT_FOUND)$/,
        /^415 BAD_REQUEST$/,
        /^413 PAYLOAD_TOO_LARGE$/,
        /^stream RUN_FINISHED$/,
        /^json (envelope-)?stop$/,
        /^json envelope-info$/,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a RunAgentInput nesting deeper than 100 levels (5,000 levels and more included) is refused with 400 BAD_USER_INPUT before any run, on the route and in an envelope; one of 100 levels runs',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('default', 'fuzzCrew', 'aguiAgent'),
          fc.constantFrom('state', 'forwardedProps', 'tools[0].parameters', 'resume[0].payload'),
          fc.oneof(tooDeepArb, fc.integer({ min: 94, max: 100 })),
          fc.constantFrom<AgUiRoute>('run', 'envelope-run'),
          async (agentId, where, depth, route) => {
            const deep = new Deep('object', depth);
            const input: Record<string, unknown> = {
              threadId: `deep-${agentId}-${where}-${depth}-${route}`,
              runId: 'r1',
              messages: [{ id: 'u1', role: 'user', content: 'hi' }],
              tools: [],
              context: [],
            };
            if (where === 'state' || where === 'forwardedProps') input[where] = deep;
            if (where === 'tools[0].parameters') input.tools = [{ name: 'x', description: 'd', parameters: deep }];
            if (where === 'resume[0].payload')
              input.resume = [{ interruptId: 'i1', status: 'resolved', payload: deep }];
            // The whole body may not nest deeper than 100 levels: in an envelope, the RunAgentInput is its `body`, a level down.
            const nesting = nestingOf(input) + (route === 'envelope-run' ? 1 : 0);
            const what = `AG-UI ${route} of ${agentId} with ${where} ${depth} levels deep (${nesting} in all)`;
            const answer = await agUiRequest(route, agentId, toJson(input), 'application/json');
            const summary = checkAgUiAnswer(answer, what, { expectRun: nesting <= MAX_NESTING });
            if (nesting <= MAX_NESTING) return;
            check(
              answer.status === 400 && summary.kind === 'error' && summary.code === 'BAD_USER_INPUT',
              `${what}: not refused with 400 BAD_USER_INPUT`,
              { status: answer.status, text: answer.text.slice(0, 500) },
            );
            check(
              /nests deeper than 100 levels/.test(summary.body?.message),
              `${what}: the message does not say why`,
              summary.body,
            );
            // AG-UI's form {error, message, code}, on the route and in an envelope alike.
            check(
              typeof summary.body?.error === 'string' &&
                typeof summary.body?.message === 'string' &&
                summary.body?.code === 'BAD_USER_INPUT',
              `${what}: not in AG-UI's form`,
              summary.body,
            );
          },
        ),
        runs<[string, string, number, AgUiRoute]>(16, [
          ['default', 'state', 100_000, 'run'],
          ['aguiAgent', 'forwardedProps', 5_000, 'envelope-run'],
          ['default', 'state', 99, 'run'],
          ['default', 'state', 100, 'run'],
          ['fuzzCrew', 'state', 98, 'envelope-run'],
          ['fuzzCrew', 'state', 99, 'envelope-run'],
        ]),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

// --- 4. Malformed upstream streams ---------------------------------------------------------------------

type StreamTransport = Transport | 'ag-ui';
const streamTransportArb = fc.constantFrom<StreamTransport>('http-json', 'http-multipart', 'ws-subscription', 'ag-ui');

/**
 * Runs one request whose upstream answers with the scripted stream, over a transport, and checks that
 * it ends with a terminal status: Success, or a coded failure; never INTERNAL_SERVER_ERROR, never a
 * hang, and never UPSTREAM_TIMEOUT (the stream always ends) unless the upstream answered 408 or 504.
 * An upstream that answered an error status fails the run with an UPSTREAM_* code.
 */
async function runAgainstStream(
  stream: StreamCase,
  agentName: string | undefined,
  transport: StreamTransport,
  ws: { session: RawWs },
): Promise<string> {
  const { marker, done } = plan(stream);
  try {
    return await runAgainstPlan(stream, marker, agentName, transport, ws);
  } finally {
    done();
  }
}

async function runAgainstPlan(
  stream: StreamCase,
  marker: string,
  agentName: string | undefined,
  transport: StreamTransport,
  ws: { session: RawWs },
): Promise<string> {
  const what = `${agentName ?? 'the model'} streaming ${describeStream(stream)}`;
  const forbid = [408, 504].includes(stream.status) ? [] : ['UPSTREAM_TIMEOUT'];
  let status: { code: string; details?: any } | undefined;
  if (transport === 'ag-ui') {
    const input = {
      threadId: `stream-${marker}`,
      runId: `run-${marker}`,
      messages: [{ id: 'u1', role: 'user', content: `Go ${marker}` }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const answer = await agUiRequest('run', agentName ?? 'default', JSON.stringify(input), 'application/json');
    const summary = checkAgUiAnswer(answer, `${what} over AG-UI`, { expectRun: true, forbid });
    check(summary.kind === 'stream', `${what} over AG-UI: no event stream`, answer.text);
    const terminal = summary.terminals[0];
    status =
      terminal.type === 'RUN_FINISHED' ? { code: 'Success' } : { code: 'Failed', details: { code: terminal.code } };
  } else {
    const data = runInput([userMessage(`Go ${marker}`, 'stream-u1')], {
      frontend: {
        actions: [
          { name: 'frontendThing', description: 'A frontend action.', jsonSchema: '{"type":"object","properties":{}}' },
        ],
      },
      ...(agentName ? { agentSession: { agentName } } : {}),
    });
    const result = await runWith(transport, JSON.stringify({ data }), ws, what, { forbid });
    check(result.codes.length === 0, `${what}: errors before the run`, result);
    status = result.status;
    check(status !== undefined, `${what}: no terminal status`, result);
  }
  if (stream.status >= 400)
    check(
      status!.code === 'Failed' && String(status!.details?.code).startsWith('UPSTREAM_'),
      `${what}: an upstream answering HTTP ${stream.status} did not fail the run with an UPSTREAM_* code`,
      status,
    );
  return status!.code === 'Success' ? 'Success' : String(status!.details?.code);
}

describe('malformed streams from upstreams: every run ends with a terminal status, a coded failure or success, and never hangs', () => {
  const cases: [string, fc.Arbitrary<StreamCase>, string | undefined, RegExp[]][] = [
    [
      'an OpenAI-compatible model (Chat Completions SSE)',
      openAiStreamArb,
      undefined,
      [/^Success$/, /^UPSTREAM_BAD_RESPONSE$/, /^UPSTREAM_STREAM_INTERRUPTED$/],
    ],
    [
      "a CopilotKit remote endpoint's crewai agent (runtime-event JSON Lines)",
      crewStreamArb,
      'fuzzCrew',
      [/^Success$/, /^UPSTREAM_BAD_RESPONSE$/, /^AGENT_ERROR$/],
    ],
    [
      "a CopilotKit remote endpoint's LangGraph agent (LangGraph JSON Lines)",
      graphStreamArb,
      'fuzzGraph',
      [/^Success$/, /^UPSTREAM_BAD_RESPONSE$/],
    ],
    [
      'an AG-UI agent (SSE)',
      agUiStreamArb,
      'aguiAgent',
      [/^Success$/, /^UPSTREAM_BAD_RESPONSE$/, /^UPSTREAM_STREAM_INTERRUPTED$/],
    ],
  ];
  for (const [name, arbitrary, agentName, expected] of cases) {
    it(
      `${name}: garbage lines, invalid JSON, wrong shapes, random bytes, split anywhere, cut off`,
      async () => {
        const outcomes = tally();
        const ws = { session: await RawWs.open(gateway.wsUrl) };
        try {
          await fc.assert(
            fc.asyncProperty(arbitrary, streamTransportArb, async (stream, transport) => {
              outcomes.add(await runAgainstStream(stream, agentName, transport, ws));
            }),
            runs(110),
          );
        } finally {
          ws.session.close();
        }
        outcomes.expectReached(...expected);
      },
      TEST_TIMEOUT_MS,
    );
  }

  it(
    'a Chat Completions chunk that is not an object, or whose content, tool calls, index, tool call id, name or arguments are of the wrong type, fails the run with UPSTREAM_BAD_RESPONSE; a chunk id that is not a string is only not used',
    async () => {
      const ws = { session: await RawWs.open(gateway.wsUrl) };
      try {
        await fc.assert(
          fc.asyncProperty(
            openAiOddStreamArb,
            fc.constantFrom<StreamTransport>('http-json', 'ws-subscription', 'http-multipart', 'ag-ui'),
            async ({ stream, verdict }, transport) => {
              const outcome = await runAgainstStream(stream, undefined, transport, ws);
              check(
                outcome === verdict,
                `the model streaming ${describeStream(stream)} over ${transport}: the run ended with ${outcome}, not ${verdict}`,
              );
            },
          ),
          runs(30),
        );
      } finally {
        ws.session.close();
      }
    },
    TEST_TIMEOUT_MS,
  );
});
