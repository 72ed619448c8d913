import { describe, expect, it } from '@jest/globals';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { execute, getVariableValues } from '@graphql-tools/executor';
import fc from 'fast-check';
import { getOperationAST, parse, print, type DocumentNode, type GraphQLResolveInfo } from 'graphql';
import { JSONResolver } from 'graphql-scalars';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { executeIncrementally } from '../src/graphql/fast/incremental.js';
import { buildSchema } from '../src/graphql/schema.js';
import { variablePlan } from '../src/graphql/fast/variables.js';
import { copilotInputArb, corrupt, corruptionsArb, toJson, wrongValueArb } from './support/fuzz-inputs.js';

// Variables coerced by an operation's own coercer (src/graphql/fast/variables.ts) must be exactly what the
// executor's coercion (graphql-js's coerceInputValue) makes of them, and the coercer must give up on
// every value the executor refuses, so that the executor reports the error itself.

const schema = buildSchema();
/** The stock client's mutation as it goes over the wire. */
const WIRE = parse(readFileSync(new URL('./fixtures/client-mutation.graphql', import.meta.url), 'utf8'));

/** The executor's coercion of an operation's variables: its values, or undefined where it reports errors. */
function executorCoercion(
  document: DocumentNode,
  inputs: Record<string, unknown>,
  onSchema = schema,
): Record<string, unknown> | undefined {
  const operation = getOperationAST(document)!;
  const result = getVariableValues(onSchema, operation.variableDefinitions ?? [], inputs, { maxErrors: 50 });
  return result.errors ? undefined : result.coerced;
}

/** Both coercions of the same inputs (as a client's JSON: parsed from text), for comparison. */
function both(document: DocumentNode, inputs: unknown, onSchema = schema) {
  const parsed = JSON.parse(toJson(inputs)) as Record<string, unknown>;
  const plan = variablePlan(onSchema, document, undefined)!;
  return { executor: executorCoercion(document, parsed, onSchema), ours: plan.coerce(parsed) };
}

/** Equal values with equal prototypes at every level (Dates by their time). */
function expectSame(ours: unknown, executor: unknown): void {
  expect(isDeepStrictEqual(ours, executor)).toBe(true);
  expect(ours).toEqual(executor);
}

const MESSAGE = { id: 'm1', createdAt: '2026-11-22T14:23:30.017Z', textMessage: { content: 'hello', role: 'user' } };
const INPUT = { metadata: { requestType: 'Chat' }, messages: [MESSAGE], frontend: { actions: [] } };

describe("an operation's variable coercer", () => {
  it("gives the stock client's variables exactly as the executor coerces them", () => {
    const stock = JSON.parse(readFileSync(new URL('../bench/stock-request.json', import.meta.url), 'utf8')) as {
      variables: Record<string, unknown>;
    };
    const { executor, ours } = both(WIRE, stock.variables);
    expect(executor).toBeDefined();
    expectSame(ours, executor);
    // A DateTimeISO is a Date, an absent optional field absent, an explicit null null.
    const data = (ours as { data: { messages: { createdAt: unknown }[]; runId: unknown; cloud?: unknown } }).data;
    expect(data.messages[0].createdAt).toBeInstanceOf(Date);
    expect(data.runId).toBeNull();
    expect('cloud' in data).toBe(false);
  });

  it('agrees with the executor on every random input, well-formed or corrupted: the same values, or both refuse', () => {
    let refused = 0;
    let accepted = 0;
    fc.assert(
      fc.property(
        copilotInputArb,
        corruptionsArb,
        fc.option(fc.oneof(fc.constant({ a: 1 }), wrongValueArb), { nil: undefined }),
        (input, corruptions, properties) => {
          const variables: Record<string, unknown> = { data: corrupt(input, corruptions) };
          if (properties !== undefined) variables.properties = properties;
          const { executor, ours } = both(WIRE, variables);
          if (executor === undefined) {
            refused++;
            expect(ours).toBeUndefined();
          } else {
            accepted++;
            expectSame(ours, executor);
          }
        },
      ),
      { numRuns: 400, seed: 7 },
    );
    // Both kinds of input were tried.
    expect(refused).toBeGreaterThan(20);
    expect(accepted).toBeGreaterThan(20);
  });

  it.each([
    ['a single message where a list is expected (a list of one)', { data: { ...INPUT, messages: MESSAGE } }],
    [
      'a single string where a list of strings is expected',
      { data: { ...INPUT, forwardedParameters: { stop: 'END' } } },
    ],
    ['null for a nullable list and a nullable object', { data: { ...INPUT, agentStates: null, cloud: null } }],
    ['null for a nullable variable', { data: INPUT, properties: null }],
    ['no value for a nullable variable', { data: INPUT }],
    ['an unknown key', { data: { ...INPUT, nope: 1 } }],
    [
      'an unknown key deep inside',
      { data: { ...INPUT, messages: [{ ...MESSAGE, textMessage: { ...MESSAGE.textMessage, nope: 1 } }] } },
    ],
    ['a missing required field', { data: { metadata: { requestType: 'Chat' }, frontend: { actions: [] } } }],
    ['null for a required field', { data: { ...INPUT, frontend: null } }],
    ['null for a required list item', { data: { ...INPUT, messages: [MESSAGE, null] } }],
    ['a value no enum has', { data: { ...INPUT, metadata: { requestType: 'Nope' } } }],
    ['an enum given as a number', { data: { ...INPUT, metadata: { requestType: 1 } } }],
    ['a date that is not one', { data: { ...INPUT, messages: [{ ...MESSAGE, createdAt: 'yesterday' }] } }],
    ['an array where an object is expected', { data: { ...INPUT, frontend: [] } }],
    ['a string where an object is expected', { data: { ...INPUT, metadata: 'Chat' } }],
    ['an object where a string is expected', { data: { ...INPUT, threadId: { id: 1 } } }],
    ['a float where an Int is expected', { data: { ...INPUT, forwardedParameters: { maxTokens: 1.5 } } }],
    ['an Int where a Float is expected', { data: { ...INPUT, forwardedParameters: { temperature: 1 } } }],
    ['null for the required variable', { data: null }],
    ['no value for the required variable', {}],
    ['a key named like an Object method', { data: { ...INPUT, constructor: 'x' } }],
  ])('agrees with the executor on %s', (_what, variables) => {
    const { executor, ours } = both(WIRE, variables);
    if (executor === undefined) expect(ours).toBeUndefined();
    else expectSame(ours, executor);
  });

  it("fills in a variable's default value, and gives up where graphql-js's rules are not copied (a @oneOf input)", () => {
    const withDefault = parse(
      'query ($data: LoadAgentStateInput! = {threadId: "t", agentName: "a"}, $other: String = "x") { loadAgentState(data: $data) { threadId } }',
    );
    const absent = both(withDefault, {});
    expect(absent.executor).toEqual({ data: { threadId: 't', agentName: 'a' }, other: 'x' });
    expectSame(absent.ours, absent.executor);
    const given = both(withDefault, { data: { threadId: 'u', agentName: 'b' }, other: null });
    expectSame(given.ours, given.executor);

    const oneOf = makeExecutableSchema({
      typeDefs: 'scalar JSON input Pick @oneOf { a: String b: Int } type Query { pick(value: Pick): String }',
      resolvers: { JSON: JSONResolver },
    });
    const document = parse('query ($value: Pick) { pick(value: $value) }');
    expect(executorCoercion(document, { value: { a: 'x' } }, oneOf)).toEqual({ value: { a: 'x' } });
    expect(variablePlan(oneOf, document, undefined)!.coerce({ value: { a: 'x' } })).toBeUndefined();
    expect(variablePlan(oneOf, document, undefined)!.coerce({ value: null })).toEqual({ value: null });
  });

  it('makes no plan without variables, or for a schema without a pass-through JSON scalar', () => {
    expect(variablePlan(schema, parse('{ hello }'), undefined)).toBeUndefined();
    const noJson = makeExecutableSchema({ typeDefs: 'type Query { echo(text: String): String }' });
    expect(variablePlan(noJson, parse('query ($text: String) { echo(text: $text) }'), undefined)).toBeUndefined();
  });
});

describe('executing with coerced variables', () => {
  const seen: { args: unknown; declared: string[] }[] = [];
  const echo = makeExecutableSchema({
    typeDefs: `
      scalar JSON
      input Item { name: String! tags: [String!] = ["none"] }
      type Query { echo(item: Item!, items: [Item!], count: Int = 3, flag: Boolean): String }
    `,
    resolvers: {
      JSON: JSONResolver,
      Query: {
        echo: (_source: unknown, args: unknown, _context: unknown, info: GraphQLResolveInfo) => {
          seen.push({
            args,
            declared: (info.operation.variableDefinitions ?? []).map((definition) => print(definition.type)),
          });
          return JSON.stringify(args);
        },
      },
    },
  });
  const document = parse(
    'query Echo($item: Item!, $items: [Item!], $count: Int = 5, $flag: Boolean!) { echo(item: $item, items: $items, count: $count, flag: $flag) @include(if: $flag) }',
  );

  it("runs the operation on the values the executor would have coerced, through the variables' pass-through copy", async () => {
    const variables = { item: { name: 'a' }, items: { name: 'b', tags: 'x' }, flag: true };
    seen.length = 0;
    const ours = await executeIncrementally({
      schema: echo,
      document,
      variableValues: variables,
      operationName: 'Echo',
    });
    const executors = await execute({ schema: echo, document, variableValues: variables, operationName: 'Echo' });
    expect(ours).toEqual(executors);
    expect(ours).toEqual({
      data: {
        echo: JSON.stringify({
          item: { name: 'a', tags: ['none'] },
          items: [{ name: 'b', tags: ['x'] }],
          count: 5,
          flag: true,
        }),
      },
    });
    // The first run went through the copy (the executor saw JSON variables), the second through the original.
    expect(seen.map((call) => call.declared)).toEqual([
      ['JSON', 'JSON', 'JSON', 'JSON'],
      ['Item!', '[Item!]', 'Int', 'Boolean!'],
    ]);
    expect(seen[0].args).toEqual(seen[1].args);
    // A directive's variable is read the same way: with the field left out, nothing runs.
    seen.length = 0;
    expect(
      await executeIncrementally({
        schema: echo,
        document,
        variableValues: { ...variables, flag: false },
        operationName: 'Echo',
      }),
    ).toEqual({ data: {} });
    expect(seen).toEqual([]);
  });

  it('leaves refused variables to the executor, whose errors come out as they are', async () => {
    for (const variables of [
      { item: { name: 1 }, flag: true },
      { item: { name: 'a', nope: 1 }, flag: true },
      { item: { name: 'a' } },
      { item: null, flag: true },
    ]) {
      seen.length = 0;
      const ours = await executeIncrementally({
        schema: echo,
        document,
        variableValues: variables,
        operationName: 'Echo',
      });
      const executors = await execute({ schema: echo, document, variableValues: variables, operationName: 'Echo' });
      expect((ours as { errors?: unknown[] }).errors?.length).toBeGreaterThan(0);
      expect(JSON.stringify(ours)).toBe(JSON.stringify(executors));
      expect(seen).toEqual([]);
    }
  });
});
