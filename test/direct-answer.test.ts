import http from 'node:http';
import { HeaderMap, type ApolloServer, type HTTPGraphQLResponse } from '@apollo/server';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GraphQLError, getOperationAST, parse, type FieldNode } from 'graphql';
import { AgentNotFoundError, RateLimitedError, ShuttingDownError } from '../src/core/errors.js';
import { markDrainRefusal } from '../src/engine/drain.js';
import { createApollo } from '../src/graphql/apollo.js';
import type { GatewayContext } from '../src/graphql/context.js';
import { gatewayErrorFormatter } from '../src/graphql/error-answers.js';
import type { ExecutionOutcome, Executor } from '../src/graphql/executor.js';
import { answerOf, formattedLater, thrownAnswer, type AnswerSetting } from '../src/graphql/fast/direct-answer.js';
import type { LaterPayload } from '../src/graphql/fast/payloads.js';
import { buildSchema } from '../src/graphql/schema.js';
import { answeredDirectly } from '../src/transports/http/graphql.js';
import { multipartPart } from '../src/transports/http/multipart.js';
import { readAccept } from '../src/transports/http/negotiation.js';
import { ErrorLog } from './support/error-log.js';
import { STOCK_DOCUMENT } from './support/fuzz-documents.js';

// The answers the fast executor makes without Apollo's pipeline (src/graphql/fast/direct-answer.ts) against the
// answers Apollo's pipeline makes, configured and with the plugins as the gateway has them (src/graphql/apollo.ts),
// for the same outcome of the same executor: status, headers, bytes and log lines. Outcomes the gateway's own runs
// rarely or never make are here too (an error's `extensions.http`, a first part with errors, a thrown value), so that
// a plugin or an option added to Apollo's configuration and not to the fast path shows here. test/known-documents.test.ts
// compares the two end to end over HTTP.

const document = parse(STOCK_DOCUMENT);
const operationName = 'generateCopilotResponse';
const runField = getOperationAST(document, operationName)!.selectionSet.selections[0] as FieldNode;

/** An error as the executor locates one a resolver threw (at the run's field unless `path` says otherwise). */
function located(error: Error, path: (string | number)[] = [operationName]): GraphQLError {
  return new GraphQLError(error.message, { nodes: [runField], path, originalError: error });
}

const drainRefusal = (retryAfterSeconds?: number) =>
  markDrainRefusal(
    new ShuttingDownError('This instance is draining.', {
      ...(retryAfterSeconds === undefined ? {} : { details: { retryAfterSeconds } }),
    }),
  );

const later = (payloads: LaterPayload[]) =>
  (async function* () {
    yield* payloads;
  })();

const streamed = (initialResult: Record<string, unknown>, payloads: LaterPayload[] = []): ExecutionOutcome =>
  ({ initialResult: { hasNext: true, ...initialResult }, subsequentResults: later(payloads) }) as ExecutionOutcome;

const OUTCOMES: [string, () => ExecutionOutcome][] = [
  ['a run its resolver refused', () => ({ errors: [located(new AgentNotFoundError('planner', []))], data: null })],
  [
    'a run refused with retry-after',
    () => ({
      errors: [located(new RateLimitedError('Slow down.', { details: { retryAfterSeconds: 7 } }))],
      data: null,
    }),
  ],
  ['a draining refusal', () => ({ errors: [located(drainRefusal(3))], data: null })],
  [
    'a draining refusal beside another error',
    () => ({ errors: [located(drainRefusal()), located(new Error('other'), ['other'])], data: null }),
  ],
  ['an error without data (a request error)', () => ({ errors: [located(new Error('boom'))] })],
  [
    "an error's status and headers",
    () => ({
      errors: [
        new GraphQLError('h', {
          extensions: {
            http: {
              status: 418,
              headers: new Map([
                ['X-Foo', 'a'],
                ['retry-after', '1'],
              ]),
            },
          },
        }),
      ],
      data: null,
    }),
  ],
  [
    "an error's content type",
    () => ({
      errors: [new GraphQLError('h', { extensions: { http: { headers: new Map([['Content-Type', 'text/plain']]) } } })],
      data: null,
    }),
  ],
  ['extensions', () => ({ errors: [located(new Error('e'))], data: null, extensions: { a: 1 } })],
  ['a value that is not an error', () => ({ errors: ['a string' as unknown as GraphQLError], data: null })],
  [
    'a variable that did not coerce',
    () => {
      const definition = getOperationAST(document, operationName)!.variableDefinitions![0];
      const message = `Variable "$${definition.variable.name.value}" got invalid value 1; Expected type "Object".`;
      return { errors: [new GraphQLError(message, { nodes: [definition] })] };
    },
  ],
  [
    'a first part with a variable error',
    () => {
      const definition = getOperationAST(document, operationName)!.variableDefinitions![0];
      const message = `Variable "$${definition.variable.name.value}" of required type "X!" was not provided.`;
      return streamed({ data: null, errors: [new GraphQLError(message, { nodes: [definition] })] });
    },
  ],
  ['a first part without errors', () => streamed({ data: { generateCopilotResponse: { threadId: 't' } } })],
  [
    'a first part with errors',
    () =>
      streamed({
        data: { generateCopilotResponse: { threadId: 't' } },
        errors: [located(new Error('nullable failed'), [operationName, 'runId'])],
      }),
  ],
  [
    'a first part with a refusal and a status',
    () =>
      streamed({
        errors: [
          located(new RateLimitedError('Slow.', { details: { retryAfterSeconds: 2 } })),
          new GraphQLError('h', { extensions: { http: { status: 429 } } }),
        ],
        data: { generateCopilotResponse: null },
      }),
  ],
  ['a first part refused by draining', () => streamed({ errors: [located(drainRefusal())], data: null })],
];

const THROWN: [string, () => unknown][] = [
  ['an Error', () => new Error('broken')],
  ['a draining refusal', () => drainRefusal(4)],
  ['a string', () => 'oops'],
  ['a GraphQLError with a status', () => new GraphQLError('g', { extensions: { http: { status: 409 } } })],
];

const ACCEPTS = [
  'multipart/mixed; deferSpec=20220824, application/json',
  'text/event-stream, application/graphql-response+json',
  'text/event-stream',
];

describe('answers made without Apollo (graphql/fast/direct-answer.ts)', () => {
  const log = new ErrorLog();
  let next: () => Promise<ExecutionOutcome> = async () => ({ data: null });
  const executor = {
    name: 'fast',
    execute: () => next(),
    subscribe: () => Promise.reject(new Error('not here')),
    prepare: () => undefined,
  } as Executor;
  let apollo: ApolloServer<GatewayContext>;

  beforeAll(async () => {
    apollo = createApollo({
      schema: buildSchema(),
      executor,
      server: http.createServer(),
      drainWebSocket: async () => undefined,
      sandbox: false,
      formatError: gatewayErrorFormatter(false),
      logger: log.logger,
      usageReporting: false,
    });
    await apollo.start();
  });
  afterAll(async () => {
    await apollo?.stop();
  });

  /** What Apollo answers, and what it logged: the head and every part. */
  async function apollos(accept: string, sent: Record<string, string>) {
    const headers = new HeaderMap([['content-type', 'application/json'], ...Object.entries(sent)]);
    headers.set('accept', readAccept(accept).apollo);
    const context = { requestId: 'R', logger: log.logger, acceptsIncremental: true } as GatewayContext;
    log.lines = [];
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: 'POST', headers, search: '', body: { query: STOCK_DOCUMENT, operationName } },
      context: async () => context,
    });
    return { ...(await read(response)), logged: log.lines };
  }

  async function read(response: HTTPGraphQLResponse) {
    const parts: string[] = [];
    if (response.body.kind === 'complete') parts.push(response.body.string);
    else for await (const part of response.body.asyncIterator) parts.push(part);
    return { status: response.status, headers: [...response.headers], parts };
  }

  const setting = (sent: Record<string, string>): AnswerSetting => ({
    requestId: 'R',
    logger: log.logger,
    format: gatewayErrorFormatter(false),
    document,
    operationName,
    header: (name) => sent[name],
  });

  for (const accept of ACCEPTS) {
    for (const sent of [{}, { 'x-drain-refusal-status': '421' }] as Record<string, string>[]) {
      const asked = `${accept}${Object.keys(sent).length ? ', a proxy asking for 421' : ''}`;

      it.each(OUTCOMES)(`answer %s as Apollo does (${asked})`, async (_name, outcome) => {
        next = async () => outcome();
        const expected = await apollos(accept, sent);
        log.lines = [];
        const made = outcome();
        const ours = await read(answeredDirectly(answerOf(made, setting(sent)), readAccept(accept).single!));
        // Later payloads: the executor's, each formatted as Apollo formats them and framed as it frames them.
        if ('initialResult' in made) {
          for await (const payload of made.subsequentResults) {
            const formatted = formattedLater(payload, setting(sent));
            ours.parts.push(multipartPart(JSON.stringify(formatted), formatted.hasNext));
          }
        }
        expect({ ...ours, logged: log.lines }).toEqual(expected);
      });

      it.each(THROWN)(`answer an execution that throws %s as Apollo does (${asked})`, async (_name, thrown) => {
        next = () => Promise.reject(thrown());
        const expected = await apollos(accept, sent);
        log.lines = [];
        const ours = await read(answeredDirectly(thrownAnswer(thrown(), setting(sent)), readAccept(accept).single!));
        expect({ ...ours, logged: log.lines }).toEqual(expected);
      });
    }
  }

  it('format the errors of later payloads as Apollo does', async () => {
    const payloads = () => [
      {
        incremental: [
          { items: ['a'], path: [operationName, 'messages', 0] },
          { items: [null], path: [operationName, 'messages', 1], errors: [located(new Error('item failed'))] },
        ],
        hasNext: true,
      },
      {
        incremental: [
          {
            data: null,
            path: [operationName, 'status'],
            errors: [located(new RateLimitedError('Later.', { details: { retryAfterSeconds: 1 } }))],
          },
        ],
        hasNext: false,
      },
    ];
    const outcome = () => streamed({ data: { generateCopilotResponse: { threadId: 't' } } }, payloads() as never);
    next = async () => outcome();
    const expected = await apollos(ACCEPTS[0], {});
    log.lines = [];
    const ours = payloads().map((payload) => formattedLater(payload as never, setting({})));
    expect(ours.map((payload, i) => multipartPart(JSON.stringify(payload), i === 0))).toEqual(expected.parts.slice(1));
    expect(log.lines).toEqual(expected.logged);
    expect(log.lines).toHaveLength(2);
  });
});
