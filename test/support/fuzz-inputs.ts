import fc from 'fast-check';

/**
 * Random and malformed inputs of generateCopilotResponse (GenerateCopilotResponseInput, `properties`)
 * and of AG-UI runs (RunAgentInput). Deep or huge values are markers (`Deep`, `Huge`) turned into text
 * only when the body is written (`toJson`), so that a failing case prints short and JSON.stringify
 * never recurses through them.
 */

/** A value nested `depth` levels deep: objects `{"a":{"a":…}}` or arrays `[[…]]`. */
export class Deep {
  constructor(
    readonly shape: 'object' | 'array',
    readonly depth: number,
  ) {}
  toJSON(): string {
    return `${PLACEHOLDER}${this.shape}:${this.depth}${PLACEHOLDER}`;
  }
  [fc.toStringMethod](): string {
    return `Deep(${this.shape}, ${this.depth})`;
  }
  text(): string {
    return this.shape === 'object'
      ? `${'{"a":'.repeat(this.depth)}1${'}'.repeat(this.depth)}`
      : `${'['.repeat(this.depth)}1${']'.repeat(this.depth)}`;
  }
}

/** A string of `size` characters (a repeated unit). */
export class Huge {
  constructor(
    readonly size: number,
    readonly unit: string = 'x',
  ) {}
  toJSON(): string {
    return `${PLACEHOLDER}huge:${this.size}:${encodeURIComponent(this.unit)}${PLACEHOLDER}`;
  }
  [fc.toStringMethod](): string {
    return `Huge(${this.size}, ${JSON.stringify(this.unit)})`;
  }
  text(): string {
    return this.unit.repeat(Math.ceil(this.size / this.unit.length)).slice(0, this.size);
  }
}

/** A JSON string (the value of a JSON-string field) that is itself deep: `"[[[…]]]"`. */
export class DeepJsonString {
  constructor(readonly deep: Deep) {}
  toJSON(): string {
    return `${PLACEHOLDER}deepstring:${this.deep.shape}:${this.deep.depth}${PLACEHOLDER}`;
  }
  text(): string {
    return this.deep.text();
  }
  [fc.toStringMethod](): string {
    return `DeepJsonString(${this.deep.shape}, ${this.deep.depth})`;
  }
}

const PLACEHOLDER = '\u0001FUZZ\u0001';
const MARKER = /"\\u0001FUZZ\\u0001([^"\\]*)\\u0001FUZZ\\u0001"/g;

/** JSON text of a value, with Deep/Huge markers expanded in place (no recursion through them). */
export function toJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.replace(MARKER, (_, spec: string) => {
    const [kind, a, b] = spec.split(':');
    if (kind === 'object' || kind === 'array') return new Deep(kind, Number(a)).text();
    if (kind === 'huge') return JSON.stringify(new Huge(Number(a), decodeURIComponent(b)).text());
    if (kind === 'deepstring') return JSON.stringify(new Deep(a as 'object' | 'array', Number(b)).text());
    throw new Error(`unknown marker ${spec}`);
  });
}

/**
 * How deep a JSON value nests objects and arrays (a scalar: 0, `{}` or `[]`: 1), Deep markers and
 * DeepJsonString (a string: 0) included; iterative, so that it takes any depth.
 */
export function nestingOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [current, above] = stack.pop()!;
    if (current instanceof Deep) deepest = Math.max(deepest, above + current.depth);
    else if (
      current !== null &&
      typeof current === 'object' &&
      !(current instanceof Huge) &&
      !(current instanceof DeepJsonString)
    ) {
      deepest = Math.max(deepest, above + 1);
      for (const child of Object.values(current)) stack.push([child, above + 1]);
    }
  }
  return deepest;
}

/**
 * How deep the text a JSON-string field carries nests its brackets (`{`, `[`, `(`, outside strings):
 * JSON's structure when it is JSON, and the same count when it is not (a truncated or garbled value is
 * still too deep when its brackets are). 0 for a value that is not a string.
 */
export function textNestingOf(value: unknown): number {
  if (value instanceof DeepJsonString) return value.deep.depth;
  const text = stringOf(value);
  if (text === undefined) return 0;
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (c === '{' || c === '[' || c === '(') {
      deepest = Math.max(deepest, ++depth);
    } else if (c === '}' || c === ']' || c === ')') {
      depth--;
    }
  }
  return deepest;
}

/** The text a string-valued input carries (Huge and DeepJsonString expanded), or undefined for other values. */
export function stringOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Huge || value instanceof DeepJsonString) return value.text();
  return undefined;
}

// --- building blocks ---------------------------------------------------------------------------

/**
 * Nesting depths of deep values: shallow ones, both sides of the gateway's limit (nothing may nest deeper
 * than 100 levels: PROTOCOL.md §1), and far past it, where recursive code (graphql-js, scalar coercion,
 * JSON.stringify of an upstream request) would overflow its stack. `tooDeepArb`: only past the limit.
 */
export const MAX_NESTING = 100;
const depthArb = fc.constantFrom(2, 50, 99, 100, 101, 1_000, 5_000, 100_000);
export const tooDeepArb = fc.constantFrom(101, 1_000, 5_000, 10_000, 100_000);
export const deepArb = fc
  .record({ shape: fc.constantFrom<'object' | 'array'>('object', 'array'), depth: depthArb })
  .map(({ shape, depth }) => new Deep(shape, depth));
export const hugeArb = fc
  .record({
    size: fc.constantFrom(10_000, 100_000, 300_000),
    unit: fc.constantFrom('x', '\u{1F600}', 'é', '\\', '"', '\u0000', '[plan='),
  })
  .map(({ size, unit }) => new Huge(size, unit));

/** Strings of every kind: short, unicode, lone surrogates, control characters, huge. */
export const stringArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 20, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 5, arbitrary: fc.string({ maxLength: 20, unit: 'binary' }) },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => `lone ${String.fromCharCode(code)} surrogate`),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\u0000',
      '\n',
      '__proto__',
      'constructor',
      'toString',
      '../../etc/passwd',
      '%00',
      '${7*7}',
      '<script>',
      'null',
      'undefined',
    ),
  },
  { weight: 1, arbitrary: hugeArb },
);

/** Values for JSON-string fields: valid JSON objects, other JSON, invalid JSON, truncated, deep, huge. */
export const jsonStringArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.object({ maxDepth: 2, maxKeys: 4 }).map((value) => JSON.stringify(value)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)) },
  { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.object({ maxDepth: 2, maxKeys: 4 }), fc.nat()).map(([value, cut]) => {
      const text = JSON.stringify(value);
      return text.slice(0, cut % Math.max(1, text.length)); // truncated JSON
    }),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'null',
      '[]',
      '""',
      '0',
      '-0',
      '1e999',
      'true',
      '{"a":',
      "{'a':1}",
      'NaN',
      'undefined',
      '{"__proto__":{"polluted":1}}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '\u0000',
      '{}',
      ' {} ',
      '{"a":1}garbage',
      '\uFEFF{}',
      '{"a":"\\ud800"}',
      '[1,2,',
      '{"type":"object","properties":5}',
      '{"type":"object","required":"x"}',
      '{"type":["object"],"properties":{"x":{"type":"nope"}}}',
      '{"$ref":"#"}',
    ),
  },
  { weight: 1, arbitrary: deepArb.map((deep) => new DeepJsonString(deep)) },
  { weight: 1, arbitrary: hugeArb.map((huge) => new Huge(huge.size, '{"a":[')) },
);

/**
 * For the JSON-string fields the gateway checks before a run (frontend.actions[i].jsonSchema,
 * agentStates[i].state and .config): mostly JSON objects, so that runs start and what they carry is
 * exercised; malformed ones now and then (their exact answer has its own property).
 */
export const checkedJsonStringArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.oneof(
      fc.object({ maxDepth: 2, maxKeys: 4 }).map((value) => JSON.stringify(value)),
      fc.constantFrom(
        '{}',
        '{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}',
        'null',
        '{"__proto__":{"polluted":1}}',
      ),
    ),
  },
  { weight: 1, arbitrary: jsonStringArb },
);

/** Any JSON value, deep and huge ones included: what a "wrong type" is. */
export const wrongValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      null,
      0,
      -1,
      1.5,
      1e308,
      true,
      '',
      [],
      {},
      [null],
      JSON.parse('{"__proto__":{"polluted":true}}'),
    ),
  },
  { weight: 1, arbitrary: deepArb },
  { weight: 1, arbitrary: hugeArb },
);

const idArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'call-1', 'call-2') },
  { weight: 2, arbitrary: stringArb },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(256), 'x'.repeat(257)) },
);
const roleArb = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom('user', 'assistant', 'system', 'tool', 'developer') },
  { weight: 1, arbitrary: fc.constantFrom('robot', 'USER', '') },
);
const dateArb = fc.oneof(
  { weight: 30, arbitrary: fc.constant('2025-01-01T00:00:00.000Z') },
  { weight: 1, arbitrary: fc.constantFrom('yesterday', '', '2025-13-45T99:99:99Z', '0') },
);
const nameArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('getWeather', 'echo', 'remoteEcho', 'fuzzCrew', 'aguiAgent') },
  { weight: 2, arbitrary: stringArb },
);

const textMessageArb = fc.record(
  { content: stringArb, role: roleArb, parentMessageId: fc.option(idArb, { nil: undefined }) },
  { requiredKeys: ['content', 'role'] },
);
const actionExecutionMessageArb = fc.record(
  {
    name: nameArb,
    arguments: jsonStringArb,
    parentMessageId: fc.option(idArb, { nil: undefined }),
    scope: fc.option(fc.constant('client'), { nil: undefined }),
  },
  { requiredKeys: ['name', 'arguments'] },
);
const resultMessageArb = fc.record(
  {
    actionExecutionId: idArb,
    actionName: nameArb,
    result: jsonStringArb,
    parentMessageId: fc.option(idArb, { nil: undefined }),
  },
  { requiredKeys: ['actionExecutionId', 'actionName', 'result'] },
);
const agentStateMessageArb = fc.record({
  threadId: idArb,
  agentName: nameArb,
  role: roleArb,
  state: jsonStringArb,
  running: fc.boolean(),
  nodeName: stringArb,
  runId: idArb,
  active: fc.boolean(),
});
const imageMessageArb = fc.record(
  {
    format: fc.constantFrom('png', 'jpeg', 'gif', 'webp', 'bmp', '', '../x'),
    bytes: fc.oneof(fc.base64String({ maxLength: 40 }), stringArb),
    role: roleArb,
    parentMessageId: fc.option(idArb, { nil: undefined }),
  },
  { requiredKeys: ['format', 'bytes', 'role'] },
);

/** A MessageInput: usually exactly one kind of message, sometimes none or two. */
export const messageInputArb = fc
  .record({
    id: idArb,
    createdAt: dateArb,
    kinds: fc.oneof({ weight: 20, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(0, 2) }),
    textMessage: textMessageArb,
    actionExecutionMessage: actionExecutionMessageArb,
    resultMessage: resultMessageArb,
    agentStateMessage: agentStateMessageArb,
    imageMessage: imageMessageArb,
    order: fc.shuffledSubarray(
      ['textMessage', 'actionExecutionMessage', 'resultMessage', 'agentStateMessage', 'imageMessage'] as const,
      { minLength: 5, maxLength: 5 },
    ),
  })
  .map(({ id, createdAt, kinds, order, ...bodies }) => {
    const message: Record<string, unknown> = { id, createdAt };
    for (const kind of order.slice(0, kinds)) message[kind] = bodies[kind];
    return message;
  });

const actionInputArb = fc.record(
  {
    name: nameArb,
    description: stringArb,
    jsonSchema: checkedJsonStringArb,
    available: fc.option(fc.constantFrom('enabled', 'disabled', 'remote'), { nil: undefined }),
  },
  { requiredKeys: ['name', 'description', 'jsonSchema'] },
);

const agentStateInputArb = fc.record(
  { agentName: nameArb, state: checkedJsonStringArb, config: fc.option(checkedJsonStringArb, { nil: undefined }) },
  { requiredKeys: ['agentName', 'state'] },
);

const metaEventInputArb = fc.record(
  {
    name: fc.oneof(
      { weight: 20, arbitrary: fc.constantFrom('LangGraphInterruptEvent', 'CopilotKitLangGraphInterruptEvent') },
      { weight: 1, arbitrary: fc.constant('Nope') },
    ),
    value: jsonStringArb,
    response: fc.option(jsonStringArb, { nil: undefined }),
    messages: fc.option(fc.array(messageInputArb, { maxLength: 2 }), { nil: undefined }),
  },
  { requiredKeys: ['name', 'value'] },
);

const forwardedParametersArb = fc.record(
  {
    model: fc.oneof(fc.constant('gpt-4o-mini'), stringArb),
    maxTokens: fc.oneof(fc.integer({ min: -10, max: 100_000 }), fc.double(), fc.constantFrom(0, 1e308, -1e308)),
    stop: fc.array(stringArb, { maxLength: 3 }),
    toolChoice: fc.oneof(fc.constantFrom('auto', 'none', 'required', 'function'), stringArb),
    toolChoiceFunctionName: stringArb,
    temperature: fc.oneof(fc.double(), fc.constantFrom(0, 2, -1, 1e308)),
  },
  { requiredKeys: [] },
);

/**
 * A GenerateCopilotResponseInput: the right shape with random, often malformed contents (invalid JSON
 * inside every JSON-string field, unknown agents and models, long ids), then sometimes a few values
 * replaced by wrong types or removed (`corruptions`).
 */
export const copilotInputArb = fc.record(
  {
    metadata: fc.oneof(
      { weight: 30, arbitrary: fc.constant({ requestType: 'Chat' }) },
      { weight: 1, arbitrary: fc.constantFrom({}, { requestType: 'Nope' }, { requestType: null }) },
    ),
    threadId: fc.oneof(idArb, fc.constant('')),
    runId: fc.oneof(idArb, fc.constant('')),
    messages: fc.array(messageInputArb, { maxLength: 5 }),
    frontend: fc.record(
      {
        actions: fc.array(actionInputArb, { maxLength: 3 }),
        url: fc.option(stringArb, { nil: undefined }),
        toDeprecate_fullContext: fc.option(stringArb, { nil: undefined }),
      },
      { requiredKeys: ['actions'] },
    ),
    cloud: fc.oneof(
      { weight: 8, arbitrary: fc.constant({}) },
      {
        weight: 1,
        arbitrary: fc.constant({ guardrails: { inputValidationRules: { allowList: ['weather'], denyList: [] } } }),
      },
    ),
    forwardedParameters: forwardedParametersArb,
    agentSession: fc.record(
      {
        agentName: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('fuzzCrew', 'fuzzGraph', 'aguiAgent') },
          { weight: 1, arbitrary: nameArb },
        ),
        threadId: fc.option(idArb, { nil: undefined }),
        nodeName: fc.option(stringArb, { nil: undefined }),
      },
      { requiredKeys: ['agentName'] },
    ),
    agentState: agentStateInputArb,
    agentStates: fc.array(agentStateInputArb, { maxLength: 3 }),
    extensions: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom({}, { openaiAssistantAPI: null }) },
      { weight: 1, arbitrary: fc.constant({ openaiAssistantAPI: { runId: 'r', threadId: 't' } }) },
    ),
    metaEvents: fc.array(metaEventInputArb, { maxLength: 2 }),
    context: fc.array(fc.record({ description: stringArb, value: stringArb }), { maxLength: 3 }),
  },
  { requiredKeys: ['metadata', 'messages', 'frontend'] },
);

/** Replacements of a value somewhere in an input by a wrong type, or its removal. */
export interface Corruption {
  pick: number;
  remove: boolean;
  value: unknown;
}
export const corruptionsArb: fc.Arbitrary<Corruption[]> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Corruption[]>([]) },
  {
    weight: 1,
    arbitrary: fc.array(fc.record({ pick: fc.nat(), remove: fc.boolean(), value: wrongValueArb }), {
      minLength: 1,
      maxLength: 3,
    }),
  },
);

/** Applies corruptions to a copy of `value`: each picks one of its paths (by index) and replaces or removes it. */
export function corrupt<T>(value: T, corruptions: readonly Corruption[]): T {
  const copy = structuredCloneMarked(value) as T;
  for (const corruption of corruptions) {
    const paths = pathsOf(copy);
    if (paths.length === 0) break;
    const path = paths[corruption.pick % paths.length];
    const parent = path.slice(0, -1).reduce<any>((node, key) => node[key], copy);
    const key = path[path.length - 1];
    if (corruption.remove) {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else {
      parent[key] = corruption.value;
    }
  }
  return copy;
}

function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (
    value === null ||
    typeof value !== 'object' ||
    value instanceof Deep ||
    value instanceof Huge ||
    value instanceof DeepJsonString
  )
    return [];
  const paths: (string | number)[][] = [];
  for (const [key, child] of Object.entries(value)) {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    paths.push(path, ...pathsOf(child, path));
  }
  return paths;
}

function structuredCloneMarked(value: unknown): unknown {
  if (
    value === null ||
    typeof value !== 'object' ||
    value instanceof Deep ||
    value instanceof Huge ||
    value instanceof DeepJsonString
  )
    return value;
  if (Array.isArray(value)) return value.map(structuredCloneMarked);
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, structuredCloneMarked(child)]));
}

/** `properties` of generateCopilotResponse (a JSONObject): objects, other JSON, deep, with odd keys. */
export const propertiesArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.object({ maxDepth: 2, maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
  { weight: 1, arbitrary: deepArb.map((deep) => ({ nested: deep })) },
  { weight: 1, arbitrary: hugeArb.map((huge) => ({ big: huge })) },
  { weight: 1, arbitrary: wrongValueArb.map((value) => ({ mcpServers: value })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom({ authorization: 'Bearer x' }, JSON.parse('{"__proto__":{"polluted":true}}'), {
      constructor: { prototype: { polluted: true } },
    }),
  },
);

// --- AG-UI ---------------------------------------------------------------------------------------

const agUiContentArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: stringArb },
  {
    weight: 2,
    arbitrary: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('text'), text: stringArb }),
        fc.record(
          {
            type: fc.constant('binary'),
            mimeType: fc.constantFrom('image/png', 'image/jpeg', 'text/plain', ''),
            data: fc.oneof(fc.base64String({ maxLength: 20 }), stringArb),
          },
          { requiredKeys: ['type', 'mimeType'] },
        ),
        fc.record({ type: fc.constantFrom('image', 'nope'), url: stringArb }),
      ),
      { maxLength: 3 },
    ),
  },
  { weight: 1, arbitrary: wrongValueArb },
);

const agUiMessageArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ id: idArb, role: fc.constant('user'), content: agUiContentArb }) },
  { weight: 2, arbitrary: fc.record({ id: idArb, role: fc.constantFrom('system', 'developer'), content: stringArb }) },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        id: idArb,
        role: fc.constant('assistant'),
        content: fc.option(stringArb, { nil: undefined }),
        toolCalls: fc.array(
          fc.record({
            id: idArb,
            type: fc.oneof(
              { weight: 10, arbitrary: fc.constant('function') },
              { weight: 1, arbitrary: fc.constant('nope') },
            ),
            function: fc.record({ name: nameArb, arguments: jsonStringArb }),
          }),
          { maxLength: 2 },
        ),
      },
      { requiredKeys: ['id', 'role'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        id: idArb,
        role: fc.constant('tool'),
        content: fc.oneof(stringArb, jsonStringArb),
        toolCallId: idArb,
        error: fc.option(stringArb, { nil: undefined }),
      },
      { requiredKeys: ['id', 'role', 'content', 'toolCallId'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      id: idArb,
      role: fc.constantFrom('activity', 'reasoning', 'robot'),
      content: wrongValueArb,
    }),
  },
);

/** A RunAgentInput: the right shape with random contents, then sometimes corrupted. */
export const runAgentInputArb = fc.record(
  {
    threadId: fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom('agui-t1', 'agui-t2', 'agui-t3') },
      { weight: 2, arbitrary: idArb },
      { weight: 1, arbitrary: fc.constant('') },
    ),
    runId: fc.oneof(idArb, fc.constant('')),
    messages: fc.array(agUiMessageArb, { maxLength: 4 }),
    tools: fc.array(
      fc.record(
        { name: nameArb, description: stringArb, parameters: fc.oneof(fc.object({ maxDepth: 2 }), wrongValueArb) },
        { requiredKeys: ['name', 'description'] },
      ),
      { maxLength: 2 },
    ),
    context: fc.array(fc.record({ description: stringArb, value: stringArb }), { maxLength: 2 }),
    state: fc.oneof(fc.object({ maxDepth: 2 }), wrongValueArb),
    forwardedProps: fc.oneof(
      fc.object({ maxDepth: 2 }),
      wrongValueArb,
      wrongValueArb.map((resume) => ({ command: { resume } })),
    ),
    resume: fc.array(
      fc.record(
        {
          interruptId: stringArb,
          status: fc.oneof(
            { weight: 10, arbitrary: fc.constantFrom('resolved', 'cancelled') },
            { weight: 1, arbitrary: fc.constant('nope') },
          ),
          payload: wrongValueArb,
        },
        { requiredKeys: ['interruptId', 'status'] },
      ),
      { maxLength: 2 },
    ),
  },
  { requiredKeys: ['threadId', 'runId', 'messages', 'tools', 'context'] },
);
