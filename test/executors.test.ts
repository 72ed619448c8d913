import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { pino } from 'pino';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { createGateway } from '../src/gateway.js';
import { fastExecutor } from '../src/graphql/fast/index.js';
import { buildSchema } from '../src/graphql/schema.js';
import { stockExecutor } from '../src/graphql/stock.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { payloadsOf, post } from './support/fuzz-client.js';
import { runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';

// The two executors (GatewayOptions.executor: the gateway's fast paths, and Apollo's pipeline with
// @graphql-tools/executor as shipped) agree: documents generated over the schema (fields chosen or
// left out, aliases, fragments, @include/@skip, @defer and @stream in many places) give the same
// merged answer from both, over multipart/mixed and SSE. Text is compared joined (how it is cut into
// chunks depends on timing, in either executor); ids and times are the run's own.

const fake = new FakeOpenAI();
let fast: RunningGateway;
let stock: RunningGateway;

beforeAll(async () => {
  const baseURL = await fake.start();
  const options = () => ({ adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }) });
  [fast, stock] = await Promise.all([
    startGateway({ ...options(), executor: 'fast' }),
    startGateway({ ...options(), executor: 'stock' }),
  ]);
});
afterAll(async () => {
  await Promise.all([fast?.close(), stock?.close(), fake.stop()]);
});

/** A field with optional directives, or a group of fields under `... @defer`, `... on`, a spread. */
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const condition = fc.constantFrom(
  '',
  ' @include(if: $yes)',
  ' @skip(if: $no)',
  ' @include(if: true)',
  ' @skip(if: false)',
);
const deferred = fc.constantFrom('', ' @defer', ' @defer(label: "later")', ' @defer(if: $yes)', ' @defer(if: false)');
const streamed = fc.constantFrom(
  '',
  ' @stream',
  ' @stream(initialCount: 0)',
  ' @stream(initialCount: 1)',
  ' @stream(initialCount: 3)',
  ' @stream(if: $no)',
  ' @stream(label: "s")',
);

const textFields = fc
  .subarray(['role', 'parentMessageId', 'content', '__typename'], { minLength: 1 })
  .chain((fields) => fc.tuple(fc.constant(fields), streamed, condition))
  .map(([fields, stream, cond]) =>
    fields.map((field) => (field === 'content' ? `content${stream}${cond}` : field)).join(' '),
  );
const statusSelection = fc.constantFrom(
  'status { __typename }',
  'status { ... on BaseMessageStatus { code } }',
  'status { ... on SuccessMessageStatus { code } ... on FailedMessageStatus { code reason } }',
);
const messageSelection = fc
  .record({
    id: fc.boolean(),
    typename: fc.boolean(),
    createdAt: fc.boolean(),
    status: maybe(fc.tuple(statusSelection, deferred)),
    text: maybe(fc.tuple(textFields, fc.constantFrom('inline', 'fragment', 'deferred'))),
    action: fc.boolean(),
    spread: fc.boolean(),
  })
  .map((m) => {
    const parts: string[] = [];
    if (m.id) parts.push('id');
    if (m.typename) parts.push('__typename');
    if (m.createdAt) parts.push('createdAt');
    if (m.status) parts.push(m.status[1] ? `...${m.status[1]} { ${m.status[0]} }` : m.status[0]);
    if (m.text) {
      const [fields, how] = m.text;
      parts.push(
        how === 'fragment'
          ? '...TextFields'
          : how === 'deferred'
            ? `... on TextMessageOutput @defer { ${fields} }`
            : `... on TextMessageOutput { ${fields} }`,
      );
    }
    if (m.action) parts.push('... on ActionExecutionMessageOutput { name arguments }');
    if (m.spread) parts.push('...MessageFields');
    if (parts.length === 0) parts.push('__typename');
    return { selection: parts.join(' '), textFields: m.text?.[1] === 'fragment' ? m.text[0] : undefined };
  });
const generatedArb = fc
  .record({
    alias: fc.constantFrom('', 'run: ', 'reply: '),
    threadId: fc.tuple(fc.boolean(), condition),
    runId: fc.boolean(),
    messages: maybe(fc.tuple(messageSelection, streamed, condition, fc.constantFrom('', 'chat: '))),
    status: maybe(fc.tuple(deferred, condition)),
    metaEvents: fc.boolean(),
  })
  .map((d) => {
    const fields: string[] = [];
    if (d.threadId[0]) fields.push(`threadId${d.threadId[1]}`);
    if (d.runId) fields.push('runId');
    const fragments: string[] = ['fragment MessageFields on BaseMessageOutput { id __typename }'];
    if (d.messages) {
      const [message, stream, cond, alias] = d.messages;
      fields.push(`${alias}messages${stream}${cond} { ${message.selection} }`);
      if (message.textFields) fragments.push(`fragment TextFields on TextMessageOutput { ${message.textFields} }`);
    }
    const status = 'status { ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason } }';
    if (d.status)
      fields.push(
        d.status[0]
          ? `...${d.status[0]}${d.status[1]} { ${status} }`
          : `${status.replace('status', `status${d.status[1]}`)}`,
      );
    if (d.metaEvents) fields.push('metaEvents { __typename name }');
    if (fields.length === 0) fields.push('threadId');
    const used = fragments.filter((fragment) => fields.join(' ').includes(`...${fragment.split(' ')[1]}`));
    const body = `{ ${d.alias}generateCopilotResponse(data: $data) { ${fields.join(' ')} } } ${used.join(' ')}`;
    // Only the variables the document uses are declared: an unused one fails validation, on both executors alike.
    const variables = [
      '$data: GenerateCopilotResponseInput!',
      ...(body.includes('$yes') ? ['$yes: Boolean = true'] : []),
      ...(body.includes('$no') ? ['$no: Boolean = false'] : []),
    ];
    return `mutation Run(${variables.join(', ')}) ${body}`;
  });

/** The stock client's document as it goes over the wire, and with its run field aliased (the fast executor's own shape, run by its plan). */
const STOCK = readFileSync(new URL('./fixtures/client-mutation.graphql', import.meta.url), 'utf8');
const ALIASED = STOCK.replace(
  /^(\s*)generateCopilotResponse\(data: \$data, properties: \$properties\)/m,
  '$1reply: generateCopilotResponse(data: $data, properties: $properties)',
);
const documentArb: fc.Arbitrary<{ document: string; operationName: string }> = fc.oneof(
  { weight: 3, arbitrary: generatedArb.map((document) => ({ document, operationName: 'Run' })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(STOCK, ALIASED)
      .map((document) => ({ document, operationName: 'generateCopilotResponse' })),
  },
);

type Path = readonly (string | number)[];

/** The payloads merged as a client does: `items` spliced into the list at the path, `data` merged into the object at it. */
function merge(payloads: any[]): { data: unknown; errors: unknown[] } {
  const [first, ...later] = payloads;
  const data = structuredClone(first.data ?? null);
  const errors: unknown[] = [...(first.errors ?? [])];
  const at = (path: Path): any => path.reduce((node: any, key) => node?.[key], data);
  for (const payload of later) {
    errors.push(...(payload.errors ?? []));
    for (const entry of payload.incremental ?? []) {
      errors.push(...(entry.errors ?? []));
      if ('items' in entry) {
        const list = at(entry.path.slice(0, -1));
        if (Array.isArray(list)) list.splice(entry.path.at(-1), entry.items.length, ...entry.items);
      } else {
        const target = at(entry.path);
        if (target && typeof target === 'object' && entry.data) deepAssign(target, entry.data);
      }
    }
  }
  return { data, errors };
}

function deepAssign(target: any, source: any): void {
  for (const [key, value] of Object.entries(source)) {
    if (value && typeof value === 'object' && !Array.isArray(value) && target[key] && typeof target[key] === 'object')
      deepAssign(target[key], value);
    else target[key] = value;
  }
}

/** What is the run's own (ids, times) replaced, text chunks joined, errors as their messages, paths and codes. */
function comparable(answer: { data: unknown; errors: unknown[] }): unknown {
  const normal = (value: any, key?: string): any => {
    if (Array.isArray(value))
      return key === 'content' || key === 'arguments' ? value.join('') : value.map((item) => normal(item));
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normal(v, k)]));
    if ((key === 'id' || key === 'runId' || key === 'threadId' || key === 'createdAt') && typeof value === 'string')
      return `<${key}>`;
    return value;
  };
  const errors = answer.errors
    .map((error: any) => ({ message: error.message, path: error.path, code: error.extensions?.code }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return { data: normal(answer.data), errors };
}

async function ask(
  gateway: RunningGateway,
  { document, operationName }: { document: string; operationName: string },
  accept: string,
): Promise<{ status: number; data: any; errors: unknown[] }> {
  const body = JSON.stringify({
    query: document,
    operationName,
    variables: { data: runInput([userMessage('[tokens=6] hello', 'u1')]) },
  });
  const answer = await post(gateway.url, body, { 'content-type': 'application/json', accept });
  const { payloads } = payloadsOf(answer);
  return { status: answer.status, ...(comparable(merge(payloads)) as { data: any; errors: unknown[] }) };
}

/** Whether an answer carries the run's text (a valid document that selected it, answered whole). */
function carriesText(answer: { status: number; data: any }): boolean {
  return answer.status === 200 && JSON.stringify(answer.data ?? null).includes('tok0 tok1 tok2 tok3 tok4 tok5');
}

describe('the fast and the stock executor', () => {
  it('give the same merged answer to documents generated over the schema, over multipart/mixed and SSE', async () => {
    let runs = 0;
    let answered = 0;
    let withText = 0;
    await fc.assert(
      fc.asyncProperty(
        documentArb,
        fc.constantFrom('multipart/mixed', 'text/event-stream', 'multipart/mixed;deferSpec=20220824, application/json'),
        async (document, accept) => {
          const [ours, theirs] = await Promise.all([ask(fast, document, accept), ask(stock, document, accept)]);
          expect(ours).toEqual(theirs);
          runs++;
          if (ours.status === 200 && ours.data !== null) answered++;
          if (carriesText(ours)) withText++;
        },
      ),
      {
        numRuns: Number(process.env.FC_RUNS ?? 1) * 60,
        seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : 28_29,
      },
    );
    // Not a comparison of refusals: most documents are valid and run, and many stream the run's text.
    expect(answered / runs).toBeGreaterThan(0.7);
    expect(withText / runs).toBeGreaterThan(0.3);
  }, 120_000);

  it('name themselves: the gateway says which it runs', () => {
    expect([fast.gateway.executor, stock.gateway.executor]).toEqual(['fast', 'stock']);
  });

  it('leave Apollo usage reporting off when apolloUsageReporting is false, APOLLO_KEY or not', async () => {
    // Apollo installs its usage reporting by itself when APOLLO_KEY is set (here it only warns: no graph ref); the
    // fast executor answers without Apollo's pipeline unless the option is on, so off must mean off.
    const installed: boolean[] = [];
    for (const apolloUsageReporting of [true, false]) {
      const lines: string[] = [];
      const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line).msg) });
      process.env.APOLLO_KEY = 'service:test:not-a-key';
      let gateway;
      try {
        gateway = createGateway({ logger, apolloUsageReporting });
      } finally {
        delete process.env.APOLLO_KEY;
      }
      await gateway.listen(0);
      await gateway.close();
      await new Promise((resolve) => gateway.server.close(resolve));
      expect(gateway.apolloUsageReporting).toBe(apolloUsageReporting);
      installed.push(lines.some((line) => /usage reporting/i.test(line)));
    }
    expect(installed).toEqual([true, false]);
  });

  it("leave nothing of an HTTP operation in its context: the fast executor's handle is a bare token", () => {
    // Resolvers are given the context: through the handle they could reach the operation's later payloads and the
    // transport's response they are written to.
    const request = { body: {}, direct: true, header: () => undefined, logger: pino({ level: 'silent' }) };
    const operation = fastExecutor(buildSchema()).prepare(request)!;
    expect(Object.isFrozen(operation.handle)).toBe(true);
    expect(Object.getOwnPropertyNames(operation.handle)).toEqual(['executor']);
    expect(Object.getPrototypeOf(operation.handle)).toBe(Object.prototype);
    expect(stockExecutor().prepare(request)).toBeUndefined();
  });
});
