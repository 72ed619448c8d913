import { describe, expect, it } from '@jest/globals';
import { parse, print, visit, type FieldNode, type GraphQLResolveInfo } from 'graphql';
import { LaterPayloads, type LaterPayload } from '../src/graphql/incremental.js';
import { leafStreamPlan } from '../src/graphql/leaf-streams.js';
import { buildSchema } from '../src/graphql/schema.js';
import { SharedTextStream } from '../src/graphql/views/shared-stream.js';
import { HTTP_STREAMED } from './support/documents.js';
import { STOCK_DOCUMENT } from './support/fuzz-documents.js';

// Which @stream fields the HTTP transport writes itself instead of the executor (src/graphql/leaf-streams.ts),
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

const run = (messages: string, around = '') => `mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId ${around} ${messages} } }`;

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
    expect(leafStreamPlan(schema, document, 'generateCopilotResponse')).toBe(leafStreamPlan(schema, document, 'generateCopilotResponse'));
    expect(leafStreamPlan(schema, document, 'another')).toBeUndefined();
  });

  it('takes the text beside a status that is deferred for sure', () => {
    expect(taken(run('messages @stream { ... on BaseMessageOutput @defer { status { code } } ... on TextMessageOutput { content @stream } }'))).toEqual(['content']);
    expect(taken(run('messages @stream { ... on BaseMessageOutput @defer(if: true) { status { code } } ... on TextMessageOutput { content @stream } }'))).toEqual(['content']);
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
    ['messages streamed with initial items', run('messages @stream(initialCount: 1) { ... on TextMessageOutput { content @stream } }')],
    ['the text under @defer', run('messages @stream { ... on TextMessageOutput @defer { content @stream } }')],
    ['the messages under @defer', run('... @defer { messages @stream { ... on TextMessageOutput { content @stream } } }')],
    ['a named fragment among the items', `${run('messages @stream { ...Text }')} fragment Text on TextMessageOutput { content @stream }`],
    ['a named fragment beside the messages', `${run('messages @stream { ... on TextMessageOutput { content @stream } } ...More')} fragment More on CopilotResponse { runId }`],
    ['the text selected twice under one key', run('messages @stream { ... on TextMessageOutput { content @stream } ... on TextMessageOutput { content @stream } }')],
    ['the messages selected twice under one key', run('messages @stream { ... on TextMessageOutput { content @stream } } messages @stream { id }')],
 ['the message status not deferred', run('messages @stream { ... on BaseMessageOutput { status { code } } ... on TextMessageOutput { content @stream } }')],
    ['the message status deferred only on a condition', run('messages @stream { ... on BaseMessageOutput @defer(if: $later) { status { code } } ... on TextMessageOutput { content @stream } }').replace('($data: GenerateCopilotResponseInput!)', '($data: GenerateCopilotResponseInput!, $later: Boolean!)')],
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
  const path = { prev: { prev: { prev: undefined, key: 'generateCopilotResponse', typename: 'Mutation' }, key: 'messages', typename: 'CopilotResponse' }, key: index, typename: undefined };
  return { path: { prev: path, key: 'content', typename: 'TextMessageOutput' }, parentType: { name: 'TextMessageOutput' }, fieldName: 'content', fieldNodes: [contentNode] } as unknown as GraphQLResolveInfo;
}
const contentNode = (parse('{ content }').definitions[0] as unknown as { selectionSet: { selections: FieldNode[] } }).selectionSet.selections[0];

/** The executor's payload that carries message `index` (with `content: []`), or nulls it. */
const itemPayload = (index: number, hasNext = true, item: unknown = { content: [] }): LaterPayload =>
  ({ incremental: [{ items: [item], path: ['generateCopilotResponse', 'messages', index] }], hasNext }) as unknown as LaterPayload;

/** A LaterPayloads with an open sink that records what leaf streams write. */
function opened(full = () => false) {
  const later = new LaterPayloads();
  const written: string[] = [];
  const drains: (() => void)[] = [];
  const failures: unknown[] = [];
  later.open({ write: (json) => written.push(json), full, onDrain: (callback) => drains.push(callback), fail: (error) => failures.push(error) });
  return { later, written, drains, failures };
}
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A text stream of message `index` whose message has gone out: what it gets is written. */
async function releasedText(later: LaterPayloads, index = 0): Promise<SharedTextStream> {
  const text = new SharedTextStream();
  await later.leaf(text, infoAt(index));
  later.before(itemPayload(index));
  later.after();
  return text;
}

describe("an operation's leaf streams", () => {
  it("write nothing before the payload that carries their message, then what waited (joined), then each turn's chunks", async () => {
    const { later, written } = opened();
    const text = new SharedTextStream();
    await later.leaf(text, infoAt(0));
    text.push('Hel');
    text.push('lo');
    await turn();
    expect(written).toEqual([]);
    // Another message's payload does not release it.
    expect(later.before(itemPayload(1))).toBe(false);
    later.after();
    expect(written).toEqual([]);
    expect(later.before(itemPayload(0))).toBe(false);
    expect(written).toEqual([]);
    later.after();
    expect(written).toEqual(['{"incremental":[{"items":["Hello"],"path":["generateCopilotResponse","messages",0,"content",0]}],"hasNext":true}']);
    text.push(', ');
    text.push('world');
    expect(written).toHaveLength(1);
    await turn();
    expect(written[1]).toBe('{"incremental":[{"items":[", world"],"path":["generateCopilotResponse","messages",0,"content",1]}],"hasNext":true}');
    text.end();
    expect(await later.madeOrSettled()).toBeUndefined();
    expect(written).toHaveLength(2);
  });

  it("are dropped when the executor's payload nulls their message, or it ends without carrying it", async () => {
    const { later, written } = opened();
    const nulled = new SharedTextStream();
    const never = new SharedTextStream();
    await later.leaf(nulled, infoAt(0));
    await later.leaf(never, infoAt(1));
    later.before({ incremental: [{ items: null, path: ['generateCopilotResponse', 'messages', 0] }], hasNext: true } as unknown as LaterPayload);
    later.after();
    nulled.push('lost');
    await turn();
    // The executor's last payload: nothing is left to write, so it stays the last.
    expect(later.before({ hasNext: false } as LaterPayload)).toBe(false);
    never.push('lost too');
    await turn();
    expect(written).toEqual([]);
    expect(await later.madeOrSettled()).toBeUndefined();
  });

  it("keep the executor's last payload from being the last while they still write", async () => {
    const { later, written } = opened();
    const text = new SharedTextStream();
    await later.leaf(text, infoAt(0));
    const last = itemPayload(0, false);
    // The caller (the transport) then sends it with hasNext: true, and the closing payload once settled.
    expect(later.before(last)).toBe(true);
    later.after();
    let settled = false;
    const done = later.madeOrSettled().then((made) => {
      expect(made).toBeUndefined();
      settled = true;
    });
    text.push('late');
    await turn();
    expect(settled).toBe(false);
    text.end();
    await done;
    expect(written).toEqual(['{"incremental":[{"items":["late"],"path":["generateCopilotResponse","messages",0,"content",0]}],"hasNext":true}']);
  });

  it("end with the executor's error for an item GraphQL's String refuses, given by next() before the executor's next payload", async () => {
    const { later, written } = opened();
    let release!: () => void;
    const executorsNext = new Promise<IteratorResult<LaterPayload, void>>((resolve) => (release = () => resolve({ value: { hasNext: false } as LaterPayload, done: false })));
    later.adopt({ next: () => executorsNext } as unknown as AsyncGenerator<LaterPayload, void, void>);
    const text = await releasedText(later);
    const next = later.next();
    (text as SharedTextStream & { push(item: unknown): void }).push({ not: 'a string' } as unknown as string);
    const made = (await next).value as unknown as { incremental: { items: null; path: unknown[]; errors: Error[] }[]; hasNext: boolean };
    expect(made.hasNext).toBe(true);
    expect(made.incremental[0].items).toBeNull();
    expect(made.incremental[0].path).toEqual(['generateCopilotResponse', 'messages', 0, 'content', 0]);
    expect(made.incremental[0].errors[0]).toMatchObject({ message: expect.stringMatching(/^String cannot represent value/), path: ['generateCopilotResponse', 'messages', 0, 'content', 0] });
    // The stream ended there: nothing more is written, and the executor's own next comes after.
    text.push('then fine');
    await turn();
    expect(written).toEqual([]);
    release();
    expect((await later.next()).value).toEqual({ hasNext: false });
  });

  it('wait while the response is full, and write what waited, joined, once it drains', async () => {
    let full = true;
    const { later, written, drains } = opened(() => full);
    const text = await releasedText(later);
    text.push('a');
    await turn();
    text.push('b');
    await turn();
    expect(written).toEqual([]);
    expect(drains).toHaveLength(1);
    full = false;
    drains[0]();
    expect(written).toEqual(['{"incremental":[{"items":["ab"],"path":["generateCopilotResponse","messages",0,"content",0]}],"hasNext":true}']);
  });

  it("write nothing while an executor's payload is going out (Apollo may be formatting it): what came meanwhile follows it", async () => {
    const { later, written } = opened();
    const text = await releasedText(later);
    later.before(itemPayload(1));
    text.push('meanwhile');
    await turn();
    expect(written).toEqual([]);
    later.after();
    expect(written).toEqual(['{"incremental":[{"items":["meanwhile"],"path":["generateCopilotResponse","messages",0,"content",0]}],"hasNext":true}']);
  });

  it("give an item GraphQL refuses after the executor's end to madeOrSettled at once, before the others are done", async () => {
    const { later } = opened();
    const refusing = new SharedTextStream();
    const other = new SharedTextStream();
    await later.leaf(refusing, infoAt(0));
    await later.leaf(other, infoAt(1));
    later.before(itemPayload(0));
    later.after();
    expect(later.before(itemPayload(1, false))).toBe(true);
    later.after();
    const first = later.madeOrSettled();
    refusing.push(null as unknown as string);
    const made = (await first) as unknown as { incremental: { items: null; errors: Error[] }[] };
    expect(made.incremental[0].errors[0].message).toBe('Cannot return null for non-nullable field TextMessageOutput.content.');
    // The other stream still writes: the transport sends this one with hasNext: true.
    expect(later.hasMore()).toBe(true);
    other.end();
    expect(await later.madeOrSettled()).toBeUndefined();
  });

  it('give every item refused in one turn after the executor\'s end: the first is not the last', async () => {
    const { later } = opened();
    const one = new SharedTextStream();
    const two = new SharedTextStream();
    await later.leaf(one, infoAt(0));
    await later.leaf(two, infoAt(1));
    later.before(itemPayload(0));
    later.after();
    later.before(itemPayload(1, false));
    one.push(null as unknown as string);
    two.push(null as unknown as string);
    later.after();
    const first = await later.madeOrSettled();
    expect(first).toBeDefined();
    // The transport sends it with hasNext: hasMore(), and the second must still come.
    expect(later.hasMore()).toBe(true);
    const second = (await later.madeOrSettled()) as unknown as { incremental: { path: unknown[] }[] };
    expect(second.incremental[0].path).toEqual(['generateCopilotResponse', 'messages', 1, 'content', 0]);
    expect(later.hasMore()).toBe(false);
    expect(await later.madeOrSettled()).toBeUndefined();
  });

  it('fail the response when writing throws (they write from microtasks, outside the transport)', async () => {
    const later = new LaterPayloads();
    const failures: unknown[] = [];
    later.open({ write: () => { throw new Error('socket gone'); }, full: () => false, onDrain: () => undefined, fail: (error) => failures.push(error) });
    const text = await releasedText(later);
    text.push('x');
    await turn();
    expect(failures).toEqual([new Error('socket gone')]);
    expect(later.hasMore()).toBe(false);
  });

  it('stop reading when the response is over', async () => {
    const { later, written } = opened();
    const text = await releasedText(later);
    later.close();
    text.push('after the end');
    await turn();
    expect(written).toEqual([]);
    expect(await later.madeOrSettled()).toBeUndefined();
  });
});
