import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parse, print, visit, type FieldNode, type GraphQLResolveInfo } from 'graphql';
import { LaterPayloads } from '../src/graphql/fast/later-payloads.js';
import type { LaterPayload } from '../src/graphql/fast/payloads.js';
import { leafStreamPlan } from '../src/graphql/fast/leaf-streams.js';
import { buildSchema } from '../src/graphql/schema.js';
import { SharedStream, SharedTextStream } from '../src/views/shared-stream.js';
import { HTTP_STREAMED } from './support/documents.js';
import { STOCK_DOCUMENT } from './support/fuzz-documents.js';

// Which @stream fields the HTTP transport writes itself instead of the executor (src/graphql/fast/leaf-streams.ts),
// and how the operation's LaterPayloads orders their items against the executor's payloads. The bytes
// themselves are compared with the executor's over real HTTP in test/incremental.test.ts.

const schema = buildSchema();

/** The fields a document's plan takes out of the executor, by response key, in document order. */
function taken(query: string, operationName?: string): string[] {
  const plan = leafStreamPlan(schema, parse(query), operationName);
  if (plan === undefined) return [];
  const names: string[] = [];
  visit(plan.document, {
    Field(node) {
      if (plan.fields.has(node)) names.push(node.alias?.value ?? node.name.value);
    },
  });
  return names;
}

const run = (messages: string, around = '') =>
  `mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId ${around} ${messages} } }`;

describe('the leaf-stream plan', () => {
  it("takes the stock client's two text streams, and leaves every other @stream and @defer to the executor", () => {
    expect(taken(STOCK_DOCUMENT)).toEqual(['content', 'arguments']);
    const rewritten = print(leafStreamPlan(schema, parse(STOCK_DOCUMENT), 'generateCopilotResponse')!.document);
    expect(rewritten).toContain('messages @stream');
    expect(rewritten).toContain('metaEvents @stream');
    expect(rewritten).toContain('... on BaseMessageOutput @defer');
    expect(rewritten).not.toContain('content @stream');
    expect(rewritten).not.toContain('arguments @stream');
    expect(taken(HTTP_STREAMED)).toEqual(['content']);
  });

  it('is worked out once per document and operation', () => {
    const document = parse(STOCK_DOCUMENT);
    expect(leafStreamPlan(schema, document, 'generateCopilotResponse')).toBe(
      leafStreamPlan(schema, document, 'generateCopilotResponse'),
    );
    expect(leafStreamPlan(schema, document, 'another')).toBeUndefined();
  });

  it('takes the text beside a status that is deferred for sure', () => {
    expect(
      taken(
        run(
          'messages @stream { ... on BaseMessageOutput @defer { status { code } } ... on TextMessageOutput { content @stream } }',
        ),
      ),
    ).toEqual(['content']);
    expect(
      taken(
        run(
          'messages @stream { ... on BaseMessageOutput @defer(if: true) { status { code } } ... on TextMessageOutput { content @stream } }',
        ),
      ),
    ).toEqual(['content']);
  });

  it('takes aliased fields under their alias', () => {
    expect(taken(run('messages @stream { ... on TextMessageOutput { text: content @stream } }'))).toEqual(['text']);
    expect(taken(run('all: messages @stream { ... on TextMessageOutput { content @stream } }'))).toEqual(['content']);
  });

  it.each([
    ['a label', run('messages @stream { ... on TextMessageOutput { content @stream(label: "text") } }')],
    ['initial items', run('messages @stream { ... on TextMessageOutput { content @stream(initialCount: 1) } }')],
    ['a condition', run('messages @stream { ... on TextMessageOutput { content @stream(if: true) } }')],
    ['messages not streamed', run('messages { ... on TextMessageOutput { content @stream } }')],
    [
      'messages streamed with initial items',
      run('messages @stream(initialCount: 1) { ... on TextMessageOutput { content @stream } }'),
    ],
    ['the text under @defer', run('messages @stream { ... on TextMessageOutput @defer { content @stream } }')],
    [
      'the messages under @defer',
      run('... @defer { messages @stream { ... on TextMessageOutput { content @stream } } }'),
    ],
    [
      'a named fragment among the items',
      `${run('messages @stream { ...Text }')} fragment Text on TextMessageOutput { content @stream }`,
    ],
    [
      'a named fragment beside the messages',
      `${run('messages @stream { ... on TextMessageOutput { content @stream } } ...More')} fragment More on CopilotResponse { runId }`,
    ],
    [
      'the text selected twice under one key',
      run(
        'messages @stream { ... on TextMessageOutput { content @stream } ... on TextMessageOutput { content @stream } }',
      ),
    ],
    [
      'the messages selected twice under one key',
      run('messages @stream { ... on TextMessageOutput { content @stream } } messages @stream { id }'),
    ],
    [
      'the message status not deferred',
      run(
        'messages @stream { ... on BaseMessageOutput { status { code } } ... on TextMessageOutput { content @stream } }',
      ),
    ],
    [
      'the message status deferred only on a condition',
      run(
        'messages @stream { ... on BaseMessageOutput @defer(if: $later) { status { code } } ... on TextMessageOutput { content @stream } }',
      ).replace('($data: GenerateCopilotResponseInput!)', '($data: GenerateCopilotResponseInput!, $later: Boolean!)'),
    ],
    ['a query', 'query { copilotThread(threadId: "t") { messages { ... on TextMessageOutput { content } } } }'],
  ])('leaves everything to the executor with %s', (_name, query) => {
    expect(taken(query)).toEqual([]);
  });

  it('picks the operation by name', () => {
    const query = `${run('messages @stream { ... on TextMessageOutput { content @stream } }').replace('mutation(', 'mutation Run(')} query Hello { hello }`;
    expect(taken(query, 'Run')).toEqual(['content']);
    expect(taken(query, 'Hello')).toEqual([]);
    expect(taken(query)).toEqual([]);
  });
});

/** An info as the executor gives the field resolver of `generateCopilotResponse.messages.<index>.content`. */
function infoAt(index: number): GraphQLResolveInfo {
  const path = {
    prev: {
      prev: { prev: undefined, key: 'generateCopilotResponse', typename: 'Mutation' },
      key: 'messages',
      typename: 'CopilotResponse',
    },
    key: index,
    typename: undefined,
  };
  return {
    path: { prev: path, key: 'content', typename: 'TextMessageOutput' },
    parentType: { name: 'TextMessageOutput' },
    fieldName: 'content',
    fieldNodes: [contentNode],
  } as unknown as GraphQLResolveInfo;
}
const contentNode = (parse('{ content }').definitions[0] as unknown as { selectionSet: { selections: FieldNode[] } })
  .selectionSet.selections[0];

/** The executor's payload that carries message `index` (with `content: []`), or nulls it. */
const itemPayload = (index: number, hasNext = true, item: unknown = { content: [] }): LaterPayload =>
  ({
    incremental: [{ items: [item], path: ['generateCopilotResponse', 'messages', index] }],
    hasNext,
  }) as unknown as LaterPayload;

/**
 * A LaterPayloads as the transport uses it: an open sink that records what leaf streams write, an
 * executor whose payloads the test hands over (`executor.give`), and `step`, which takes the next
 * payload as the transport does (its JSON goes into the same record, then `after`).
 */
function opened(full = () => false) {
  const later = new LaterPayloads();
  const written: string[] = [];
  const drains: (() => void)[] = [];
  const failures: unknown[] = [];
  later.open({
    write: (json) => written.push(json),
    full,
    onDrain: (callback) => drains.push(callback),
    fail: (error) => failures.push(error),
  });
  const queue: IteratorResult<LaterPayload, void>[] = [];
  let waiting: ((step: IteratorResult<LaterPayload, void>) => void) | undefined;
  later.adopt({
    next: () => {
      const step = queue.shift();
      return step ? Promise.resolve(step) : new Promise((resolve) => (waiting = resolve));
    },
  } as unknown as AsyncGenerator<LaterPayload, void, void>);
  const executor = {
    give(payload: LaterPayload | undefined): void {
      const step: IteratorResult<LaterPayload, void> =
        payload === undefined ? { value: undefined, done: true } : { value: payload, done: false };
      if (waiting) {
        const resolve = waiting;
        waiting = undefined;
        resolve(step);
      } else queue.push(step);
    },
  };
  /** The next payload as the transport takes it: written, then `after`; undefined once there is none. */
  const step = async (): Promise<LaterPayload | undefined> => {
    const next = await later.next();
    if (next.done) return undefined;
    written.push(JSON.stringify(next.value));
    later.after();
    return next.value;
  };
  return { later, written, drains, failures, executor, step };
}
const turn = () => new Promise((resolve) => setImmediate(resolve));

const item0 = JSON.stringify({
  incremental: [{ items: [{ content: [] }], path: ['generateCopilotResponse', 'messages', 0] }],
  hasNext: true,
});
const chunk = (text: string, at: number, index = 0) =>
  `{"incremental":[{"items":[${JSON.stringify(text)}],"path":["generateCopilotResponse","messages",${index},"content",${at}]}],"hasNext":true}`;

/** A text stream of message `index` whose message has gone out: what it gets is written. */
async function releasedText(harness: ReturnType<typeof opened>, index = 0): Promise<SharedTextStream> {
  const text = new SharedTextStream();
  await harness.later.leaf(text, infoAt(index));
  harness.executor.give(itemPayload(index));
  await harness.step();
  harness.written.length = 0;
  return text;
}

describe("an operation's leaf streams", () => {
  it("write nothing before the payload that carries their message, then what waited (joined), then each turn's chunks", async () => {
    const { later, written, executor, step } = opened();
    const text = new SharedTextStream();
    await later.leaf(text, infoAt(0));
    text.push('Hel');
    text.push('lo');
    await turn();
    expect(written).toEqual([]);
    // Another message's payload does not release it.
    executor.give(itemPayload(1));
    await step();
    expect(written).toHaveLength(1);
    executor.give(itemPayload(0));
    await step();
    expect(written.slice(1)).toEqual([item0, chunk('Hello', 0)]);
    text.push(', ');
    text.push('world');
    expect(written).toHaveLength(3);
    await turn();
    expect(written[3]).toBe(chunk(', world', 1));
    text.end();
    executor.give({ hasNext: false } as LaterPayload);
    expect(await step()).toEqual({ hasNext: false });
    expect(await step()).toBeUndefined();
    expect(written).toHaveLength(5);
  });

  it("are dropped when the executor's payload nulls their message, or it ends without carrying it", async () => {
    const { later, written, executor, step } = opened();
    const nulled = new SharedTextStream();
    const never = new SharedTextStream();
    await later.leaf(nulled, infoAt(0));
    await later.leaf(never, infoAt(1));
    executor.give({
      incremental: [{ items: null, path: ['generateCopilotResponse', 'messages', 0] }],
      hasNext: true,
    } as unknown as LaterPayload);
    await step();
    nulled.push('lost');
    await turn();
    // The executor's last payload: nothing is left to write, so it stays the last.
    executor.give({ hasNext: false } as LaterPayload);
    expect(await step()).toEqual({ hasNext: false });
    never.push('lost too');
    await turn();
    expect(written).toHaveLength(2);
    expect(await step()).toBeUndefined();
  });

  it("keep the executor's last payload from being the last while they still write", async () => {
    const { later, written, executor, step } = opened();
    const text = new SharedTextStream();
    await later.leaf(text, infoAt(0));
    executor.give(itemPayload(0, false));
    // It goes out with hasNext: true, and the answer ends once the stream is done.
    expect(await step()).toMatchObject({ hasNext: true });
    let settled = false;
    const done = step().then((last) => {
      expect(last).toEqual({ hasNext: false });
      settled = true;
    });
    text.push('late');
    await turn();
    expect(settled).toBe(false);
    text.end();
    await done;
    expect(written).toEqual([item0, chunk('late', 0), '{"hasNext":false}']);
  });

  it("end with the executor's error for an item GraphQL's String refuses, given by next() before the executor's next payload", async () => {
    const harness = opened();
    const { written, executor, step } = harness;
    const text = await releasedText(harness);
    const next = step();
    (text as SharedTextStream & { push(item: unknown): void }).push({ not: 'a string' } as unknown as string);
    const made = (await next) as unknown as {
      incremental: { items: null; path: unknown[]; errors: Error[] }[];
      hasNext: boolean;
    };
    expect(made.hasNext).toBe(true);
    expect(made.incremental[0].items).toBeNull();
    expect(made.incremental[0].path).toEqual(['generateCopilotResponse', 'messages', 0, 'content', 0]);
    expect(made.incremental[0].errors[0]).toMatchObject({
      message: expect.stringMatching(/^String cannot represent value/),
      path: ['generateCopilotResponse', 'messages', 0, 'content', 0],
    });
    // The stream ended there: nothing more is written, and the executor's own next comes after.
    text.push('then fine');
    await turn();
    expect(written).toHaveLength(1);
    executor.give({ hasNext: false } as LaterPayload);
    expect(await step()).toEqual({ hasNext: false });
  });

  it('wait while the response is full, and write what waited, joined, once it drains', async () => {
    let full = false;
    const harness = opened(() => full);
    const { written, drains } = harness;
    const text = await releasedText(harness);
    full = true;
    text.push('a');
    await turn();
    text.push('b');
    await turn();
    expect(written).toEqual([]);
    expect(drains).toHaveLength(1);
    full = false;
    drains[0]();
    expect(written).toEqual([chunk('ab', 0)]);
  });

  it('write nothing while a payload is going out: what came meanwhile follows it', async () => {
    const harness = opened();
    const { later, written, executor } = harness;
    const text = await releasedText(harness);
    executor.give(itemPayload(1));
    const next = await later.next();
    text.push('meanwhile');
    await turn();
    expect(written).toEqual([]);
    written.push(JSON.stringify(next.value));
    later.after();
    expect(written[1]).toBe(chunk('meanwhile', 0));
  });

  it("give an item GraphQL refuses after the executor's end at once, before the others are done", async () => {
    const { later, executor, step } = opened();
    const refusing = new SharedTextStream();
    const other = new SharedTextStream();
    await later.leaf(refusing, infoAt(0));
    await later.leaf(other, infoAt(1));
    executor.give(itemPayload(0));
    await step();
    executor.give(itemPayload(1, false));
    expect(await step()).toMatchObject({ hasNext: true });
    const first = step();
    refusing.push(null as unknown as string);
    const made = (await first) as unknown as { incremental: { items: null; errors: Error[] }[]; hasNext: boolean };
    expect(made.incremental[0].errors[0].message).toBe(
      'Cannot return null for non-nullable field TextMessageOutput.content.',
    );
    // The other stream still writes: not the last.
    expect(made.hasNext).toBe(true);
    other.end();
    expect(await step()).toEqual({ hasNext: false });
  });

  it("give every item refused in one turn after the executor's end: the first is not the last", async () => {
    const { later, executor, step } = opened();
    const one = new SharedTextStream();
    const two = new SharedTextStream();
    await later.leaf(one, infoAt(0));
    await later.leaf(two, infoAt(1));
    executor.give(itemPayload(0));
    await step();
    executor.give(itemPayload(1, false));
    const next = later.next();
    one.push(null as unknown as string);
    two.push(null as unknown as string);
    expect((await next).value).toMatchObject({ hasNext: true });
    later.after();
    const first = (await step()) as unknown as { incremental: { path: unknown[] }[]; hasNext: boolean };
    expect(first.hasNext).toBe(true);
    const second = (await step()) as unknown as { incremental: { path: unknown[] }[]; hasNext: boolean };
    expect(second.incremental[0].path).toEqual(['generateCopilotResponse', 'messages', 1, 'content', 0]);
    expect(second.hasNext).toBe(false);
    expect(await step()).toBeUndefined();
  });

  it('fail the response when writing throws (they write from microtasks, outside the transport)', async () => {
    const harness = opened();
    const failures: unknown[] = [];
    const text = await releasedText(harness);
    harness.later.open({
      write: () => {
        throw new Error('socket gone');
      },
      full: () => false,
      onDrain: () => undefined,
      fail: (error) => failures.push(error),
    });
    text.push('x');
    await turn();
    expect(failures).toEqual([new Error('socket gone')]);
    // The stream is done: the executor's end is the answer's.
    harness.executor.give({ hasNext: false } as LaterPayload);
    expect(await harness.step()).toEqual({ hasNext: false });
  });

  it('stop reading when the response is over', async () => {
    const harness = opened();
    const text = await releasedText(harness);
    harness.later.close();
    text.push('after the end');
    await turn();
    expect(harness.written).toEqual([]);
    expect(await harness.step()).toBeUndefined();
  });
});

/** The stock client's mutation as it goes over the wire (urql adds `__typename` everywhere). */
const WIRE = readFileSync(new URL('./fixtures/client-mutation.graphql', import.meta.url), 'utf8');

describe('the message plan', () => {
  const planOf = (query: string, operationName?: string) =>
    leafStreamPlan(schema, parse(query), operationName)?.messages;

  it("takes the stock client's document (as the package has it, and as it goes over the wire), and a deferred status beside the messages", () => {
    for (const [query, name] of [
      [STOCK_DOCUMENT, 'generateCopilotResponse'],
      [WIRE, 'generateCopilotResponse'],
      [HTTP_STREAMED, undefined],
    ] as const) {
      const plan = planOf(query, name);
      expect(plan).toBeDefined();
      // The executor runs the rest: the run's deferred status is taken out of its document.
      const executed = print(leafStreamPlan(schema, parse(query), name)!.document);
      expect(executed).not.toContain('... on CopilotResponse @defer');
      expect(executed).toContain('messages @stream');
      expect(plan!.runDeferred?.map((field) => field.key)).toEqual(
        query === HTTP_STREAMED ? ['status'] : query === WIRE ? ['status', '__typename'] : ['status'],
      );
    }
    // A message's fields in the executor's order (merged across fragments), its text last, its deferred status apart.
    const text = planOf(WIRE, 'generateCopilotResponse')!.items.get('TextMessageOutput')!;
    expect(text.fields.map((field) => `${field.kind}:${field.key}`)).toEqual([
      'typename:__typename',
      'leaf:id',
      'leaf:createdAt',
      'stream:content',
      'leaf:role',
      'leaf:parentMessageId',
    ]);
    expect(text.deferred?.map((field) => `${field.kind}:${field.key}`)).toEqual([
      'object:status',
      'typename:__typename',
    ]);
    expect(
      planOf(WIRE, 'generateCopilotResponse')!
        .items.get('ResultMessageOutput')!
        .fields.map((field) => field.key),
    ).toEqual(['__typename', 'id', 'createdAt', 'result', 'actionExecutionId', 'actionName']);
  });

  const run = (inside: string, beside = '') =>
    `mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId ${beside} messages @stream { __typename ${inside} ... on TextMessageOutput { content @stream } } } }`;
  const status = '... on BaseMessageOutput @defer { status { ... on SuccessMessageStatus { code } } }';

  it.each([
    [
      'a labelled @defer on the run',
      run(status, '... on CopilotResponse @defer(label: "s") { status { __typename } }'),
    ],
    ['two @defer on the run', run(status, '... @defer { status { __typename } } ... @defer { runId }')],
    [
      'a @defer on the run inside another fragment',
      run(status, '... on CopilotResponse { ... @defer { status { __typename } } }'),
    ],
    ['a labelled @defer in a message', run('... on BaseMessageOutput @defer(label: "m") { status { __typename } }')],
    ['two @defer in a message', run(`${status} ... on TextMessageOutput @defer { role }`)],
    [
      'a named fragment in the status',
      `${run('... on BaseMessageOutput @defer { status { ...Code } }')} fragment Code on SuccessMessageStatus { code }`,
    ],
    ['a variable in a directive', run('id @include(if: $yes)').replace('!)', '!, $yes: Boolean!)')],
    ['a list in a message that is not a leaf stream', run('... on ActionExecutionMessageOutput { arguments }')],
    [
      'another field beside the run',
      run(status).replace(/\} \} \}$/, '} } stopCopilotRun(threadId: "t") { __typename } }'),
    ],
    // A message's status is a promise until the message ends: the executor waits for it.
    [
      'the status selected outside @defer, with the text streamed under another key',
      run('status { __typename }', 'texts: messages @stream { ... on TextMessageOutput { content @stream } }'),
    ],
  ])('leaves the messages to the executor with %s (the leaf streams are still taken)', (_name, query) => {
    const plan = leafStreamPlan(schema, parse(query), undefined);
    expect(plan).toBeDefined();
    expect(plan!.messages).toBeUndefined();
  });
});

/** The info the executor gives the field resolver of `generateCopilotResponse.messages`. */
const messagesInfo = {
  path: {
    prev: { prev: undefined, key: 'generateCopilotResponse', typename: 'Mutation' },
    key: 'messages',
    typename: 'CopilotResponse',
  },
  parentType: { name: 'CopilotResponse' },
  fieldName: 'messages',
} as unknown as GraphQLResolveInfo;

/** A run's view as views/copilot-response.ts makes it, settled by the test. */
function viewOf() {
  let settleRun!: (status: unknown) => void;
  const status = new Promise((resolve) => (settleRun = resolve));
  return {
    view: {
      threadId: 't',
      runId: 'r',
      messages: new SharedStream<Record<string, unknown>>(),
      status,
      metaEvents: new SharedStream(),
      extensions: null,
    },
    settleRun,
  };
}

function textMessage(id: string, fields: Record<string, unknown> = {}) {
  let settle!: (status: unknown) => void;
  const content = new SharedTextStream();
  const status = new Promise((resolve) => (settle = resolve));
  return {
    message: {
      __typename: 'TextMessageOutput',
      id,
      createdAt: new Date(0),
      role: 'assistant',
      parentMessageId: null,
      content,
      status,
      ...fields,
    },
    content,
    settle,
  };
}

describe("the message plan's payloads", () => {
  const plan = leafStreamPlan(schema, parse(WIRE), 'generateCopilotResponse')!.messages!;
  const path = '"path":["generateCopilotResponse","messages",0]';

  it("give each message's item, its text after it, its status once it settles, and the run's status last, ending the answer once the executor ends", async () => {
    const harness = opened();
    const { later, written, executor, step } = harness;
    const { view, settleRun } = viewOf();
    const executorsStream = later.messages(plan, view, messagesInfo, {});
    // The executor is given a stream with nothing in it.
    expect(await executorsStream[Symbol.asyncIterator]().next()).toEqual({ value: undefined, done: true });
    const { message, content, settle } = textMessage('m1');
    view.messages.push(message);
    await step();
    expect(written).toEqual([
      `{"incremental":[{"items":[{"__typename":"TextMessageOutput","id":"m1","createdAt":"1970-01-01T00:00:00.000Z","role":"assistant","parentMessageId":null,"content":[]}],${path}}],"hasNext":true}`,
    ]);
    content.push('Hi');
    await turn();
    expect(written[1]).toBe(chunk('Hi', 0));
    content.end();
    settle({ code: 'Success' });
    await step();
    expect(written[2]).toBe(
      `{"incremental":[{"data":{"__typename":"TextMessageOutput","status":{"code":"Success","__typename":"SuccessMessageStatus"}},${path}}],"hasNext":true}`,
    );
    view.messages.end();
    settleRun({ code: 'Success' });
    // The run's status is the plan's last: it waits for the executor's end (its bare hasNext:false), and ends the answer itself.
    const last = step();
    await turn();
    expect(written).toHaveLength(3);
    executor.give({ hasNext: false } as LaterPayload);
    await last;
    expect(written[3]).toBe(
      '{"incremental":[{"data":{"__typename":"CopilotResponse","status":{"code":"Success","__typename":"SuccessResponseStatus"}},"path":["generateCopilotResponse"]}],"hasNext":false}',
    );
    expect(await step()).toBeUndefined();
  });

  it('give a status settled in the same turn as the next message starts before that message, as the executor orders them', async () => {
    const { later, step } = opened();
    const { view } = viewOf();
    later.messages(plan, view, messagesInfo, {});
    const first = textMessage('m1');
    view.messages.push(first.message);
    await step();
    // A text ends and a call starts in one read of the model's stream.
    first.content.end();
    first.settle({ code: 'Success' });
    view.messages.push(textMessage('m2').message);
    const status = (await step()) as unknown as { incremental: { data?: unknown; path: unknown[] }[] };
    const item = (await step()) as unknown as { incremental: { items?: unknown; path: unknown[] }[] };
    expect(status.incremental[0]).toMatchObject({
      path: ['generateCopilotResponse', 'messages', 0],
      data: { status: { code: 'Success' } },
    });
    expect(item.incremental[0]).toMatchObject({
      path: ['generateCopilotResponse', 'messages', 1],
      items: [{ id: 'm2' }],
    });
  });

  it('give a message whose status is already there (a result) and its status as two payloads', async () => {
    const { later, written, step } = opened();
    const { view } = viewOf();
    later.messages(plan, view, messagesInfo, {});
    view.messages.push({
      __typename: 'ResultMessageOutput',
      id: 'r1',
      createdAt: new Date(0),
      actionExecutionId: 'c1',
      actionName: 'lookUp',
      result: 'sunny',
      status: { code: 'Success' },
    });
    await step();
    await step();
    expect(written).toEqual([
      `{"incremental":[{"items":[{"__typename":"ResultMessageOutput","id":"r1","createdAt":"1970-01-01T00:00:00.000Z","result":"sunny","actionExecutionId":"c1","actionName":"lookUp"}],${path}}],"hasNext":true}`,
      // A status that is not a promise comes in the selection's order.
      `{"incremental":[{"data":{"status":{"code":"Success","__typename":"SuccessMessageStatus"},"__typename":"ResultMessageOutput"},${path}}],"hasNext":true}`,
    ]);
  });

  it("null a message whose non-null field GraphQL refuses, end the list, drop the statuses still to come under it, and still give the run's status", async () => {
    const { later, executor, step } = opened();
    const { view, settleRun } = viewOf();
    later.messages(plan, view, messagesInfo, {});
    const first = textMessage('m1');
    view.messages.push(first.message);
    await step();
    view.messages.push({
      __typename: 'ActionExecutionMessageOutput',
      id: 'c1',
      createdAt: new Date(0),
      name: { not: 'a name' },
      parentMessageId: null,
      arguments: new SharedTextStream(),
      status: new Promise(() => undefined),
    });
    const nulled = (await step()) as unknown as {
      incremental: {
        items: null;
        path: unknown[];
        errors: { message: string; path: unknown[]; locations: unknown[] }[];
      }[];
    };
    expect(nulled.incremental[0].items).toBeNull();
    expect(nulled.incremental[0].path).toEqual(['generateCopilotResponse', 'messages', 1]);
    expect(nulled.incremental[0].errors).toHaveLength(1);
    expect(nulled.incremental[0].errors[0]).toMatchObject({
      message: 'String cannot represent value: { not: "a name" }',
      path: ['generateCopilotResponse', 'messages', 1, 'name'],
    });
    expect(nulled.incremental[0].errors[0].locations).toHaveLength(1);
    // Nothing more under the list: not the first message's status, not a later message.
    first.settle({ code: 'Success' });
    view.messages.push(textMessage('m2').message);
    view.messages.end();
    settleRun({ code: 'Success' });
    executor.give({ hasNext: false } as LaterPayload);
    const last = (await step()) as unknown as { incremental: { path: unknown[] }[]; hasNext: boolean };
    expect(last.incremental[0].path).toEqual(['generateCopilotResponse']);
    expect(last.hasNext).toBe(false);
    expect(await step()).toBeUndefined();
  });

  it('give an item with the error of a nullable field GraphQL refuses, the field null', async () => {
    const { later, step } = opened();
    const { view } = viewOf();
    later.messages(plan, view, messagesInfo, {});
    view.messages.push(textMessage('m1', { parentMessageId: { not: 'an id' } }).message);
    const item = (await step()) as unknown as {
      incremental: { items: Record<string, unknown>[]; errors: { message: string; path: unknown[] }[] }[];
    };
    expect(item.incremental[0].items[0]).toMatchObject({ id: 'm1', parentMessageId: null, content: [] });
    expect(item.incremental[0].errors).toEqual([
      expect.objectContaining({
        message: 'String cannot represent value: { not: "an id" }',
        path: ['generateCopilotResponse', 'messages', 0, 'parentMessageId'],
      }),
    ]);
  });

  /**
   * A document without the run's status, whose messages select `inside`: a first message gone out and
   * still open, then a call whose name is null (a non-null field), which nulls its item.
   */
  async function nulledSecond(inside: string) {
    const bare = leafStreamPlan(
      schema,
      parse(
        run(
          `messages @stream { __typename ... on BaseMessageOutput { id } ${inside} ... on ActionExecutionMessageOutput { name } ... on TextMessageOutput { content @stream } }`,
        ),
      ),
      undefined,
    )!.messages!;
    expect(bare.runDeferred).toBeUndefined();
    const harness = opened();
    const { view } = viewOf();
    harness.later.messages(bare, view, messagesInfo, {});
    view.messages.push(textMessage('m1').message);
    await harness.step();
    view.messages.push({
      __typename: 'ActionExecutionMessageOutput',
      id: 'c1',
      createdAt: new Date(0),
      name: null,
      parentMessageId: null,
      arguments: new SharedTextStream(),
      status: new Promise(() => undefined),
    });
    return harness;
  }

  it('end the answer on a nulled message when nothing else is to come, though earlier messages are still open', async () => {
    const { executor, step } = await nulledSecond('... on BaseMessageOutput @defer { status { __typename } }');
    // The executor has nothing else: its stream of messages (given to the plan) ended at once.
    executor.give({ hasNext: false } as LaterPayload);
    const nulled = (await step()) as unknown as {
      incremental: { items: null; errors: { message: string }[] }[];
      hasNext: boolean;
    };
    expect(nulled.incremental[0].errors[0].message).toBe(
      'Cannot return null for non-nullable field ActionExecutionMessageOutput.name.',
    );
    expect(nulled.hasNext).toBe(false);
    expect(await step()).toBeUndefined();
  });

  it('give a nulled message at once when the executor does not end within the turn (its meta events still open)', async () => {
    const { executor, step } = await nulledSecond('');
    const nulled = (await step()) as unknown as { incremental: { items: null }[]; hasNext: boolean };
    expect(nulled.incremental[0].items).toBeNull();
    expect(nulled.hasNext).toBe(true);
    // The executor ends later, with nothing to say: the answer ends as the executor ends it.
    executor.give({ hasNext: false } as LaterPayload);
    expect(await step()).toEqual({ hasNext: false });
    expect(await step()).toBeUndefined();
  });

  it('keep a field aliased `__proto__` as a key, as the executor does', async () => {
    const aliased = leafStreamPlan(
      schema,
      parse(
        run(
          'messages @stream { ... on BaseMessageOutput { __proto__: id } ... on TextMessageOutput { content @stream } }',
        ),
      ),
      undefined,
    )!.messages!;
    const { later, step } = opened();
    const { view } = viewOf();
    later.messages(aliased, view, messagesInfo, {});
    view.messages.push(textMessage('m1').message);
    expect(JSON.stringify(await step())).toContain('"__proto__":"m1"');
  });

  it('start nothing for a field completed after the response is over, and fail the answer when a message stream breaks', async () => {
    const closed = opened();
    closed.later.close();
    const { view } = viewOf();
    closed.later.messages(plan, view, messagesInfo, {});
    view.messages.push(textMessage('m1').message);
    await turn();
    expect(closed.written).toEqual([]);
    // Before the transport opened its sink, the failure is thrown by next().
    const later = new LaterPayloads();
    later.adopt({ next: () => new Promise(() => undefined) } as unknown as AsyncGenerator<LaterPayload, void, void>);
    const next = later.next();
    later.failed(new Error('broken'));
    await expect(next).rejects.toThrow('broken');
  });

  it('make nothing more once the response is over', async () => {
    const { later, written, step } = opened();
    const { view, settleRun } = viewOf();
    later.messages(plan, view, messagesInfo, {});
    later.close();
    view.messages.push(textMessage('m1').message);
    settleRun({ code: 'Success' });
    await turn();
    expect(await step()).toBeUndefined();
    expect(written).toEqual([]);
  });
});
