import fc from 'fast-check';
import { print } from 'graphql';
import { GenerateCopilotResponseDocument } from '@copilotkit/runtime-client-gql';
import { runInput, userMessage } from './harness.js';
import { deepArb, toJson } from './fuzz-inputs.js';

/**
 * Random and malformed GraphQL requests. Big inputs are generated as small descriptors (kind, size,
 * depth) and built when a case runs, so that a failing case prints in a few lines.
 */

/** The stock client's own document (@copilotkit/runtime-client-gql's generateCopilotResponse). */
export const STOCK_DOCUMENT = print(GenerateCopilotResponseDocument as any);

/** A valid `data` for the stock document. */
export const stockVariables = () => ({ data: runInput([userMessage('Hello there', 'stock-u1')]) });

const TOKEN = /\.\.\.|[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|[{}()[\]:$@!=,|&]/g;
export const STOCK_TOKENS: readonly string[] = STOCK_DOCUMENT.match(TOKEN)!;

/** Tokens worth inserting: names of the schema, punctuation, directives, keywords. */
const INSERTABLE = [
  '{',
  '}',
  '(',
  ')',
  '[',
  ']',
  ':',
  '$',
  '@',
  '!',
  '=',
  '...',
  ',',
  '|',
  '&',
  '"',
  '"""',
  '#',
  '\\',
  '\u0000',
  '\uFEFF',
  'query',
  'mutation',
  'subscription',
  'fragment',
  'on',
  'true',
  'false',
  'null',
  '0',
  '-1',
  '1e999',
  '99999999999999999999',
  'hello',
  '__typename',
  '__schema',
  '__type(name: "Query")',
  'availableAgents',
  'loadAgentState',
  'copilotRun',
  'copilotThread',
  'generateCopilotResponse',
  'generateCopilotResponse(data: $data)',
  'messages',
  'status',
  'content',
  'arguments',
  'metaEvents',
  'threadId',
  'runId',
  'data',
  'extensions',
  'state',
  'agents',
  'id',
  'name',
  'result',
  'value',
  '@defer',
  '@stream',
  '@stream(initialCount: 2)',
  '@stream(initialCount: -1)',
  '@stream(initialCount: 99999999999)',
  '@defer(if: false)',
  '@defer(label: "x")',
  '@skip(if: true)',
  '@include(if: $data)',
  // Directive arguments at their edges (issue 28 §2): what validation lets through and the executor cannot take.
  '@stream(initialCount: null)',
  '@stream(initialCount: 0)',
  '@stream(initialCount: 2147483647)',
  '@stream(if: false, initialCount: -1)',
  '@stream(label: "x", initialCount: 1)',
  '@defer(if: false, label: "y")',
  '$v: Boolean = true',
  '@include(if: $v)',
  '@skip(if: $v)',
  '@stream(initialCount: $n)',
  '$n: Int',
  '@deprecated',
  '@specifiedBy(url: "x")',
  '@unknown',
  '... on TextMessageOutput',
  '... on CopilotResponse',
  '... on Mutation',
  '... on Query',
  '...F',
  'fragment F on CopilotResponse { threadId }',
  '$data',
  '$properties',
  '$x: Int = "a"',
  'GenerateCopilotResponseInput!',
  'JSONObject',
  'String',
  'a: hello',
  'a: messages',
];

export type Edit = {
  op: 'delete' | 'insert' | 'duplicate' | 'replace' | 'swap';
  at: number;
  length: number;
  token: string;
};

const editArb: fc.Arbitrary<Edit> = fc.record({
  op: fc.constantFrom('delete', 'insert', 'duplicate', 'replace', 'swap'),
  at: fc.nat(),
  length: fc.integer({ min: 1, max: 12 }),
  token: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...INSERTABLE) },
    { weight: 1, arbitrary: fc.string({ maxLength: 6, unit: 'binary' }) },
  ),
});

/** The stock document with some token-level edits applied. */
export function mutateTokens(edits: readonly Edit[]): string {
  const tokens = [...STOCK_TOKENS];
  for (const edit of edits) {
    const at = edit.at % (tokens.length + 1);
    switch (edit.op) {
      case 'delete':
        tokens.splice(at, edit.length);
        break;
      case 'insert':
        tokens.splice(at, 0, edit.token);
        break;
      case 'duplicate':
        tokens.splice(at, 0, ...tokens.slice(at, at + edit.length));
        break;
      case 'replace':
        tokens.splice(at, 1, edit.token);
        break;
      case 'swap': {
        const other = (at + edit.length) % Math.max(1, tokens.length);
        [tokens[at], tokens[other]] = [tokens[other], tokens[at]];
        break;
      }
    }
  }
  return tokens.filter((token) => token !== undefined).join(' ');
}

/** The stock document with some character-level edits applied (mostly syntax errors somewhere). */
export function mutateCharacters(edits: readonly Edit[]): string {
  let text = STOCK_DOCUMENT;
  for (const edit of edits) {
    const at = edit.at % (text.length + 1);
    if (edit.op === 'delete') text = text.slice(0, at) + text.slice(at + edit.length);
    else if (edit.op === 'duplicate') text = text.slice(0, at) + text.slice(at, at + edit.length) + text.slice(at);
    else text = text.slice(0, at) + edit.token + text.slice(edit.op === 'replace' ? at + 1 : at);
  }
  return text;
}

export type DeepShape =
  'selection' | 'list-value' | 'object-value' | 'inline-fragment' | 'list-type' | 'run-selection' | 'unbalanced';

/**
 * How deep `deepDocument(shape, depth)` nests its brackets (`{`, `[`, `(`), which is what the gateway's
 * limit counts: at most 100 levels, a deeper document is GRAPHQL_PARSE_FAILED before parsing.
 */
export function deepDocumentLevels(shape: DeepShape, depth: number): number {
  switch (shape) {
    case 'selection':
    case 'inline-fragment':
    case 'unbalanced':
    case 'list-type':
      return depth + 1;
    case 'list-value':
    case 'object-value':
      return depth + 2;
    case 'run-selection':
      return 2 * depth + 2;
  }
}

/** A document nested `depth` levels deep in one of several ways. */
export function deepDocument(shape: DeepShape, depth: number): string {
  switch (shape) {
    case 'selection':
      return `{${'a{'.repeat(depth)}b${'}'.repeat(depth)}}`;
    case 'list-value':
      return `{ hello(x: ${'['.repeat(depth)}1${']'.repeat(depth)}) }`;
    case 'object-value':
      return `{ loadAgentState(data: ${'{a:'.repeat(depth)}1${'}'.repeat(depth)}) { state } }`;
    case 'inline-fragment':
      return `{${'... on Query {'.repeat(depth)} hello ${'}'.repeat(depth)}}`;
    case 'list-type':
      return `query($x: ${'['.repeat(depth)}Int${']'.repeat(depth)}) { hello }`;
    case 'run-selection':
      return `mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { ${'messages { ... on TextMessageOutput { '.repeat(depth)} id ${'} }'.repeat(depth)} } }`;
    case 'unbalanced':
      return `{${'a{'.repeat(depth)}`;
  }
}

export type HugeWhere =
  | 'string-argument'
  | 'block-string'
  | 'field-name'
  | 'alias'
  | 'comment'
  | 'whitespace'
  | 'operation-name'
  | 'variable-name'
  | 'number'
  | 'unicode-string';

/** A document carrying one huge piece (`size` characters). */
export function hugeDocument(where: HugeWhere, size: number): string {
  const big = 'x'.repeat(size);
  switch (where) {
    case 'string-argument':
      return `{ loadAgentState(data: {threadId: "${big}", agentName: "${big.slice(0, 100)}"}) { state } }`;
    case 'block-string':
      return `{ hello(x: """${big}""") }`;
    case 'field-name':
      return `{ ${big} }`;
    case 'alias':
      return `{ ${big}: hello }`;
    case 'comment':
      return `# ${big}\n{ hello }`;
    case 'whitespace':
      return `{${' '.repeat(size)}hello }`;
    case 'operation-name':
      return `query ${big} { hello }`;
    case 'variable-name':
      return `query($${big}: Int) { hello }`;
    case 'number':
      return `{ hello(x: ${'9'.repeat(size)}) }`;
    case 'unicode-string':
      return `{ loadAgentState(data: {threadId: "${'\u{1F600}\u00e9\\u0000\\uD800'.repeat(Math.ceil(size / 12))}", agentName: "x"}) { state } }`;
  }
}

export type ManyKind =
  | 'aliases'
  | 'run-aliases'
  | 'fragment-fan'
  | 'fragment-cycle'
  | 'directives'
  | 'operations'
  | 'variables'
  | 'arguments';

/** A document with `count` of something. */
export function manyDocument(kind: ManyKind, count: number): string {
  const range = Array.from({ length: count }, (_, i) => i);
  switch (kind) {
    case 'aliases':
      return `{ ${range.map((i) => `a${i}: hello`).join(' ')} }`;
    case 'run-aliases':
      return `mutation($data: GenerateCopilotResponseInput!) { ${range.map((i) => `r${i}: generateCopilotResponse(data: $data) { threadId }`).join(' ')} }`;
    case 'fragment-fan':
      return `{ ...F0 } ${range.map((i) => `fragment F${i} on Query { hello ${i + 1 < count ? `...F${i + 1} ...F${i + 1}` : ''} }`).join(' ')}`;
    case 'fragment-cycle':
      return `{ ...F0 } ${range.map((i) => `fragment F${i} on Query { ...F${(i + 1) % count} }`).join(' ')}`;
    case 'directives':
      return `{ hello ${range.map(() => '@include(if: true)').join(' ')} }`;
    case 'operations':
      return range.map((i) => `query Q${i} { hello }`).join(' ');
    case 'variables':
      return `query(${range.map((i) => `$v${i}: Int`).join(' ')}) { hello }`;
    case 'arguments':
      return `{ hello(${range.map((i) => `a${i}: ${i}`).join(' ')}) }`;
  }
}

/** What a case sends: the JSON body's fields (or raw bytes) and the headers. */
export interface RequestCase {
  describe: string;
  /** The body as sent; a string is sent as is (it may not be JSON). */
  body: string;
  contentType?: string;
  accept?: string;
  /** Whether the body is an AG-UI envelope ({method: string, no query}), which is answered in AG-UI's error form. */
  envelope: boolean;
}

export type DocCase =
  | { kind: 'arbitrary'; text: string }
  | { kind: 'tokens'; edits: Edit[] }
  | { kind: 'characters'; edits: Edit[] }
  | { kind: 'deep'; shape: DeepShape; depth: number }
  | { kind: 'huge'; where: HugeWhere; size: number }
  | { kind: 'many'; what: ManyKind; count: number }
  | { kind: 'stock' };

export function documentOf(doc: DocCase): string {
  switch (doc.kind) {
    case 'arbitrary':
      return doc.text;
    case 'tokens':
      return mutateTokens(doc.edits);
    case 'characters':
      return mutateCharacters(doc.edits);
    case 'deep':
      return deepDocument(doc.shape, doc.depth);
    case 'huge':
      return hugeDocument(doc.where, doc.size);
    case 'many':
      return manyDocument(doc.what, doc.count);
    case 'stock':
      return STOCK_DOCUMENT;
  }
}

/**
 * Nesting depths of documents: shallow, both sides of the gateway's limit of 100 levels (see
 * deepDocumentLevels), and far past it, where graphql-js's recursive parser would overflow its stack
 * (some 2,000 levels down). `deepDepthArb`: only the far side.
 */
export const deepDepthArb = fc.constantFrom(2_000, 5_000, 6_600, 9_000, 12_000, 50_000);
export const depthArb = fc.oneof(
  fc.integer({ min: 1, max: 64 }),
  fc.constantFrom(48, 49, 50, 98, 99, 100, 101, 200, 500, 1_000),
  deepDepthArb,
);
const sizeArb = fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom(100_000, 1_000_000, 1_900_000, 2_200_000));
const countArb = fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(1_000, 1_999, 2_000, 2_001, 5_000, 10_000));

/** A document: arbitrary text, the stock document mutated, deeply nested, huge, or with many of something. */
export const docCaseArb: fc.Arbitrary<DocCase> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .oneof(
        fc.string({ maxLength: 200 }),
        fc.string({ maxLength: 200, unit: 'binary' }),
        fc.string({ maxLength: 100, unit: fc.constantFrom(...'{}()[]:$@!=.,"#\\ \n\tabc_019'.split('')) }),
      )
      .map((text): DocCase => ({ kind: 'arbitrary', text })),
  },
  {
    weight: 6,
    arbitrary: fc.array(editArb, { minLength: 1, maxLength: 6 }).map((edits): DocCase => ({ kind: 'tokens', edits })),
  },
  {
    weight: 3,
    arbitrary: fc
      .array(editArb, { minLength: 1, maxLength: 4 })
      .map((edits): DocCase => ({ kind: 'characters', edits })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      shape: fc.constantFrom<DeepShape>(
        'selection',
        'list-value',
        'object-value',
        'inline-fragment',
        'list-type',
        'run-selection',
        'unbalanced',
      ),
      depth: depthArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('huge' as const),
      where: fc.constantFrom<HugeWhere>(
        'string-argument',
        'block-string',
        'field-name',
        'alias',
        'comment',
        'whitespace',
        'operation-name',
        'variable-name',
        'number',
        'unicode-string',
      ),
      size: sizeArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('many' as const),
      what: fc.constantFrom<ManyKind>(
        'aliases',
        'run-aliases',
        'fragment-fan',
        'fragment-cycle',
        'directives',
        'operations',
        'variables',
        'arguments',
      ),
      count: countArb,
    }),
  },
  { weight: 1, arbitrary: fc.constant<DocCase>({ kind: 'stock' }) },
);

/** The rest of a GraphQL request around a document: variables, operation name, extensions, headers. */
export interface Envelope {
  variables: 'stock' | 'none' | 'null' | 'string' | 'array' | 'random';
  randomVariables?: unknown;
  operationName?: unknown;
  extensions?: unknown;
  accept: string | undefined;
  contentType: string | undefined;
  /** How the body is framed: the usual JSON object, or something else. */
  framing: 'object' | 'batch' | 'query-not-string' | 'raw-text' | 'random-json' | 'empty';
  randomJson?: unknown;
}

export const ACCEPTS = [
  undefined,
  'application/json',
  'application/graphql-response+json',
  'multipart/mixed',
  'multipart/mixed;deferSpec=20220824, application/json',
  'text/event-stream',
  '*/*',
  'text/html',
  'multipart/mixed;q=0, application/json',
  'garbage/;;;',
  '',
];
export const CONTENT_TYPES = [
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/graphql-response+json',
  'application/graphql',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  undefined,
  'application/jsonx',
  'APPLICATION/JSON',
];

/** An operation name as a string: one that names an operation of some documents here (Q0, A, B, the stock document's generateCopilotResponse), a fragment (F), or nothing. */
export const operationNameArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'Q0',
    'Q1',
    'A',
    'B',
    'F',
    'nope',
    '',
    ' ',
    'query',
    'GenerateCopilotResponse',
    'generateCopilotResponse',
  ),
  fc.string({ maxLength: 8 }),
);

/** Apollo's automatic persisted queries' `extensions.persistedQuery` (off in the gateway: NOT_SUPPORTED): well-formed, or not. */
export const persistedQueryArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.record(
    {
      version: fc.constantFrom(1, 2, 0, -1, '1', null),
      sha256Hash: fc.constantFrom(
        'abc',
        '0'.repeat(64),
        'ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38',
        '',
        5,
      ),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue({ maxDepth: 2 }),
);

export const envelopeArb: fc.Arbitrary<Envelope> = fc.record(
  {
    variables: fc.oneof(
      { weight: 12, arbitrary: fc.constant<Envelope['variables']>('stock') },
      { weight: 1, arbitrary: fc.constantFrom<Envelope['variables']>('none', 'null', 'string', 'array', 'random') },
    ),
    // Now and then nested past the gateway's limit of 100 levels (BAD_USER_INPUT), or far past it.
    randomVariables: fc.oneof(
      { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
      { weight: 1, arbitrary: deepArb },
      { weight: 1, arbitrary: deepArb.map((deep) => ({ ...stockVariables(), properties: { nested: deep } })) },
    ),
    operationName: fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(undefined, null) },
      { weight: 2, arbitrary: operationNameArb },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.integer(),
          fc.boolean(),
          fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
          fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
        ),
      },
    ),
    extensions: fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(undefined, {}) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
      { weight: 1, arbitrary: persistedQueryArb.map((persistedQuery) => ({ persistedQuery })) },
    ),
    accept: fc.constantFrom(...ACCEPTS),
    contentType: fc.oneof(
      { weight: 8, arbitrary: fc.constant('application/json') },
      { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
    ),
    framing: fc.oneof(
      { weight: 12, arbitrary: fc.constant<Envelope['framing']>('object') },
      {
        weight: 3,
        arbitrary: fc.constantFrom<Envelope['framing']>(
          'batch',
          'query-not-string',
          'raw-text',
          'random-json',
          'empty',
        ),
      },
    ),
    randomJson: fc.oneof({ weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) }, { weight: 1, arbitrary: deepArb }),
  },
  { requiredKeys: ['variables', 'accept', 'contentType', 'framing'] },
);

/** The bytes and headers of one request. */
export function requestOf(doc: DocCase, envelope: Envelope): RequestCase {
  const query = documentOf(doc);
  const variables =
    envelope.variables === 'stock'
      ? stockVariables()
      : envelope.variables === 'none'
        ? undefined
        : envelope.variables === 'null'
          ? null
          : envelope.variables === 'string'
            ? '{"data":{}}'
            : envelope.variables === 'array'
              ? [stockVariables()]
              : envelope.randomVariables;
  const object: Record<string, unknown> = { query };
  if (variables !== undefined) object.variables = variables;
  if (envelope.operationName !== undefined) object.operationName = envelope.operationName;
  if (envelope.extensions !== undefined) object.extensions = envelope.extensions;
  let body: string;
  let value: unknown = object;
  switch (envelope.framing) {
    case 'object':
      body = toJson(object);
      break;
    case 'batch':
      value = [object, object];
      body = toJson(value);
      break;
    case 'query-not-string':
      value = { ...object, query: envelope.randomJson ?? null };
      body = toJson(value);
      break;
    case 'raw-text':
      value = undefined;
      body = query;
      break;
    case 'random-json':
      value = envelope.randomJson;
      body = toJson(envelope.randomJson);
      break;
    case 'empty':
      value = undefined;
      body = '';
      break;
  }
  const envelopeShaped =
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof (value as any).method === 'string' &&
    !('query' in (value as any));
  return {
    describe: `${doc.kind} document (${query.length} characters), framing ${envelope.framing}, content-type ${envelope.contentType}, accept ${envelope.accept}`,
    body,
    contentType: envelope.contentType,
    accept: envelope.accept,
    envelope: envelopeShaped && /^application\/(graphql-response\+)?json\b/i.test(envelope.contentType ?? ''),
  };
}

/** A small document for graphql-ws frames: arbitrary text, the stock document edited, a valid query, or one nested deep. */
const smallDocArb: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '{ hello }',
      '{ availableAgents { agents { name } } }',
      'subscription { copilotRun }',
      'query A { hello } query B { hello }',
      STOCK_DOCUMENT,
    ),
  },
  { weight: 3, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 3, arbitrary: fc.array(editArb, { minLength: 1, maxLength: 3 }).map(mutateTokens) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom<DeepShape>('selection', 'list-value', 'object-value', 'list-type', 'unbalanced'), depthArb)
      .map(([shape, depth]) => deepDocument(shape, depth)),
  },
);
const wrongArb = fc.oneof(fc.constantFrom(null, 0, true, '', [], {}, [null]), fc.jsonValue({ maxDepth: 2 }));

/** A well-formed message of a type only servers send (connection_ack, next, error): the socket is closed with 4400. */
export const serverFrameArb: fc.Arbitrary<string> = fc.oneof(
  fc
    .constantFrom(undefined, {}, { a: 1 })
    .map((payload) => JSON.stringify({ type: 'connection_ack', ...(payload ? { payload } : {}) })),
  fc
    .record({
      id: fc.constantFrom('a', 'b', '1'),
      payload: fc.constantFrom({ data: {} }, { data: { hello: 'x' } }, { data: null, errors: [{ message: 'x' }] }),
    })
    .map((frame) => JSON.stringify({ type: 'next', ...frame })),
  fc
    .record({
      id: fc.constantFrom('a', 'b', '1'),
      payload: fc.constantFrom([{ message: 'x' }], [{ message: 'x', extensions: { code: 'BAD_REQUEST' } }]),
    })
    .map((frame) => JSON.stringify({ type: 'error', ...frame })),
);

/** One frame a client could send on a graphql-transport-ws socket: well-formed, breaking the protocol, or not JSON at all. */
export const wsFrameArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40, unit: 'binary' }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: serverFrameArb },
  {
    weight: 8,
    arbitrary: fc
      .record(
        {
          type: fc.oneof(
            { weight: 6, arbitrary: fc.constant('subscribe') },
            {
              weight: 3,
              arbitrary: fc.constantFrom(
                'complete',
                'ping',
                'pong',
                'connection_init',
                'next',
                'error',
                'connection_ack',
                'nope',
                '',
              ),
            },
            { weight: 1, arbitrary: wrongArb },
          ),
          id: fc.oneof(
            { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'c') },
            { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
            { weight: 1, arbitrary: wrongArb },
          ),
          payload: fc.oneof(
            {
              weight: 6,
              arbitrary: fc.record(
                {
                  query: fc.oneof({ weight: 8, arbitrary: smallDocArb }, { weight: 1, arbitrary: wrongArb }),
                  // Variables nested past the limit of 100 levels (BAD_USER_INPUT) and far past it, now and then.
                  variables: fc.oneof(
                    { weight: 4, arbitrary: fc.constant(stockVariables()) },
                    { weight: 2, arbitrary: wrongArb },
                    { weight: 1, arbitrary: deepArb },
                    {
                      weight: 1,
                      arbitrary: deepArb.map((deep) => ({ ...stockVariables(), properties: { nested: deep } })),
                    },
                  ),
                  operationName: fc.oneof(fc.constant(null), operationNameArb, wrongArb),
                  extensions: fc.oneof(
                    { weight: 3, arbitrary: wrongArb },
                    { weight: 1, arbitrary: persistedQueryArb.map((persistedQuery) => ({ persistedQuery })) },
                    { weight: 1, arbitrary: deepArb },
                  ),
                },
                { requiredKeys: ['query'] },
              ),
            },
            { weight: 1, arbitrary: wrongArb },
          ),
        },
        { requiredKeys: ['type'] },
      )
      .map((frame) => toJson(frame)),
  },
);

/**
 * The run's document with the incremental and conditional directives' arguments at their edges, in
 * several spots (issue 28 §2): `@stream` on the messages and on a text, with `initialCount` negative,
 * 0, 1, huge, null or a variable; `@defer` with `if: false`, a label, or `if` a variable; `@include` and
 * `@skip` on a variable, given true, false, null or nothing. What the executor cannot take is a
 * BAD_USER_INPUT before the run (`refused`); anything else runs.
 */
export interface DirectiveCase {
  /** `@stream` arguments on the messages list, and on a text (`content`); none: no `@stream` there. */
  messagesStream: StreamArgs | undefined;
  contentStream: StreamArgs | undefined;
  /** `@defer` on the messages' status fragment: none, plain, `if: false`, with a label, `if: $d`. */
  defer: 'none' | 'plain' | 'if-false' | 'label' | 'variable';
  /** A condition on the message id: none, `@include(if: $v)`, `@skip(if: $v)`. */
  condition: 'none' | 'include' | 'skip';
  /** The variables: `$n` (initialCount), `$v` (condition, default true), `$d` (defer, default true); absent when undefined. */
  n: number | null | undefined;
  v: boolean | null | undefined;
  d: boolean | null | undefined;
}

export type StreamArgs = { initialCount: number | null | '$n' | undefined; label?: string; ifFalse?: boolean };

export const INITIAL_COUNTS = [-1, -2_147_483_648, 0, 1, 2, 2_147_483_647, null, '$n', undefined] as const;

export const directiveCaseArb: fc.Arbitrary<DirectiveCase> = (() => {
  const streamArb: fc.Arbitrary<StreamArgs | undefined> = fc.option(
    fc.record(
      {
        initialCount: fc.constantFrom(...INITIAL_COUNTS),
        label: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
        ifFalse: fc.boolean(),
      },
      { requiredKeys: ['initialCount'] },
    ),
    { nil: undefined, freq: 4 },
  );
  return fc.record({
    messagesStream: streamArb,
    contentStream: streamArb,
    defer: fc.constantFrom<DirectiveCase['defer']>('none', 'plain', 'if-false', 'label', 'variable'),
    condition: fc.constantFrom<DirectiveCase['condition']>('none', 'include', 'skip'),
    n: fc.constantFrom(-5, -1, 0, 1, 3, null, undefined),
    v: fc.constantFrom(true, false, null, undefined),
    d: fc.constantFrom(true, false, null, undefined),
  });
})();

function streamDirective(args: StreamArgs | undefined): string {
  if (args === undefined) return '';
  const written: string[] = [];
  if (args.initialCount !== undefined) written.push(`initialCount: ${args.initialCount}`);
  if (args.label !== undefined) written.push(`label: "${args.label}"`);
  if (args.ifFalse) written.push('if: false');
  return written.length ? ` @stream(${written.join(', ')})` : ' @stream';
}

/** The case's document and variables. */
export function directiveDocument(doc: DirectiveCase): { query: string; variables: Record<string, unknown> } {
  const condition = doc.condition === 'none' ? '' : ` @${doc.condition}(if: $v)`;
  const defer = {
    none: '',
    plain: ' @defer',
    'if-false': ' @defer(if: false)',
    label: ' @defer(label: "s")',
    variable: ' @defer(if: $d)',
  }[doc.defer];
  const status = doc.defer === 'none' ? '' : ` ...${defer} { status { __typename } }`;
  // Distinct labels where both streams have one (validation wants them unique).
  const contentStream =
    doc.contentStream?.label !== undefined && doc.contentStream.label === doc.messagesStream?.label
      ? { ...doc.contentStream, label: `${doc.contentStream.label}2` }
      : doc.contentStream;
  // Only the variables used are declared (validation refuses one that is not).
  const usesN = doc.messagesStream?.initialCount === '$n' || contentStream?.initialCount === '$n';
  const declared = `${usesN ? ', $n: Int' : ''}${condition ? ', $v: Boolean = true' : ''}${doc.defer === 'variable' ? ', $d: Boolean = true' : ''}`;
  const query = `mutation($data: GenerateCopilotResponseInput!${declared}) { generateCopilotResponse(data: $data) { threadId messages${streamDirective(doc.messagesStream)} { id${condition}${status} ... on TextMessageOutput { content${streamDirective(contentStream)} } } } }`;
  const variables: Record<string, unknown> = stockVariables();
  if (doc.n !== undefined) variables.n = doc.n;
  if (doc.v !== undefined) variables.v = doc.v;
  if (doc.d !== undefined) variables.d = doc.d;
  return { query, variables };
}

/** Whether the case is a client's mistake the gateway refuses before the run: a null `if`, a negative or null `initialCount`. */
export function directiveCaseRefused(doc: DirectiveCase): boolean {
  const count = (args: StreamArgs | undefined) =>
    args === undefined || args.initialCount === undefined
      ? 0
      : args.initialCount === '$n'
        ? doc.n === undefined
          ? 0
          : doc.n
        : args.initialCount;
  const badCount = (args: StreamArgs | undefined) => {
    const value = count(args);
    return value === null || value < 0;
  };
  return (
    badCount(doc.messagesStream) ||
    badCount(doc.contentStream) ||
    (doc.condition !== 'none' && doc.v === null) ||
    (doc.defer === 'variable' && doc.d === null)
  );
}

/** Whether the case's document streams at all (a `@stream` or `@defer` that is on): 406 for a client that takes only JSON. */
export function directiveCaseStreams(doc: DirectiveCase): boolean {
  return doc.messagesStream !== undefined || doc.contentStream !== undefined || doc.defer !== 'none';
}
