import { execute, isIncrementalResults, type IncrementalExecutionResults } from '@graphql-tools/executor';
import {
  GraphQLObjectType,
  GraphQLSchema,
  Kind,
  TypeInfo,
  createSourceEventStream,
  getOperationAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type ASTNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
} from 'graphql';

/**
 * GraphQL subscriptions executed the way the specification describes them, with less machinery per
 * stream and per event than `@graphql-tools/executor`'s `subscribe`.
 *
 * Why: a gateway holds thousands of `copilotRun` streams at once and executes the event selection for
 * every token. The tools executor's `subscribe` keeps, per stream, the execution context (the coerced
 * variables: a copy of the whole conversation), a mapping iterator, a flattening iterator and their
 * closures, and per event an async generator and several promise hops. Measured (BENCHMARKS.md), that
 * was most of a held stream's heap and of the per-token CPU on the WebSocket transport.
 *
 * What stays the same: the source stream is created by graphql-js's own `createSourceEventStream`
 * (variables coerced, the root field's arguments read and its `subscribe` resolver called, errors
 * located, all exactly as the specification's CreateSourceEventStream); each event is then executed by
 * the tools executor's own `execute` (ExecuteSubscriptionEvent) with the event as the root value, so
 * every field, type resolution, scalar, error, alias, fragment and directive is the executor's work.
 *
 * What differs, and why the result is the same: an event is executed against an *event document* in
 * which the subscription's root field has no arguments (and the operation no longer declares the
 * variables only those arguments used), on an *event schema* in which the root field takes none.
 * The root field's arguments were read once, to create the stream; executing an event only calls the
 * root field's `resolve` (which returns the event) and never reads them, but the executor would coerce
 * every variable again for every event (the conversation, per token). Nothing else in the document
 * changes: names, aliases, selections and source locations are the original's, so payloads and errors
 * are byte for byte those of the executor's own `subscribe` (test/subscribe.test.ts proves it over
 * every document shape the tests use).
 */
export function createSubscriber(schema: GraphQLSchema): (args: ExecutionArgs) => Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
  const eventSchema = withoutRootArguments(schema);
  return async (args) => {
    const stream = await createSourceEventStream(args);
    if (!isAsyncIterable(stream)) return withInputErrorCodes(stream as ExecutionResult);
    const { document, variables } = eventDocumentOf(schema, args.document, args.operationName);
    return new EventResponseStream(stream[Symbol.asyncIterator](), {
      schema: eventSchema,
      document,
      contextValue: args.contextValue,
      // Only what the event selection uses: the rest (the conversation) is not held for the stream's life.
      variableValues: variables.length ? pick(args.variableValues, variables) : undefined,
      operationName: args.operationName,
    });
  };
}

/** What executing one event needs; the event is the root value. */
type EventExecution = Pick<ExecutionArgs, 'schema' | 'document' | 'contextValue' | 'variableValues' | 'operationName'>;

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;

/**
 * The response stream: each source event executed as it is read (MapSourceToResponseEvent). An event
 * whose selection uses @defer/@stream yields its initial result, then each subsequent payload, as the
 * tools executor does. `return()` and `throw()` end the source stream (which aborts its run).
 *
 * Written with `then` and handlers made once per stream rather than as async methods: a stream spends
 * its life waiting for its next event, and an awaiting async method holds a frame, two closures and
 * two promises for it.
 */
class EventResponseStream implements AsyncGenerator<ExecutionResult> {
  private pending: AsyncIterator<ExecutionResult> | undefined;
  private done = false;

  constructor(
    private readonly source: AsyncIterator<unknown>,
    private readonly execution: EventExecution,
  ) {}

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.pending) return this.pending.next().then(this.onPart);
    if (this.done) return Promise.resolve(DONE);
    return this.source.next().then(this.onEvent);
  }

  private readonly onEvent = (event: IteratorResult<unknown>): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (event.done || this.done) {
      this.done = true;
      return DONE;
    }
    const result = execute({ ...this.execution, rootValue: event.value });
    return isPromise(result) ? result.then(this.onResult) : this.onResult(result);
  };

  private readonly onResult = (result: ExecutionResult | IncrementalExecutionResults): IteratorResult<ExecutionResult> => {
    if (isIncrementalResults(result)) {
      this.pending = result.subsequentResults[Symbol.asyncIterator]() as AsyncIterator<ExecutionResult>;
      return { value: result.initialResult as ExecutionResult, done: false };
    }
    return { value: result as ExecutionResult, done: false };
  };

  private readonly onPart = (part: IteratorResult<ExecutionResult>): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (!part.done) return part;
    this.pending = undefined;
    return this.next();
  };

  async return(): Promise<IteratorResult<ExecutionResult>> {
    await this.end();
    return DONE;
  }

  async throw(error?: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.end();
    throw error;
  }

  private async end(): Promise<void> {
    if (this.done && !this.pending) return;
    this.done = true;
    const pending = this.pending;
    this.pending = undefined;
    await Promise.all([pending?.return?.(), this.source.return?.()]);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.end();
  }
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}

function pick(values: ExecutionArgs['variableValues'], names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) if (values && name in values) picked[name] = values[name];
  return picked;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

/**
 * Errors of the operation as a whole (bad variables, an unknown operation) coded as the tools
 * executor codes them, so a client sees the same answer whichever executor ran the subscription.
 * Errors of the root field's resolver (they have a path) pass as they are.
 */
function withInputErrorCodes(result: ExecutionResult): ExecutionResult {
  for (const error of result.errors ?? []) {
    if (error.path !== undefined) continue;
    const extensions = error.extensions as Record<string, unknown>;
    extensions.http = { ...(extensions.http as object), status: 400 };
    extensions.code = 'BAD_USER_INPUT';
  }
  return result;
}

/** The schema with the subscription root's fields taking no arguments (see createSubscriber). */
function withoutRootArguments(schema: GraphQLSchema): GraphQLSchema {
  const root = schema.getSubscriptionType();
  if (!root) return schema;
  const config = root.toConfig();
  const fields = Object.fromEntries(Object.entries(config.fields).map(([name, field]) => [name, { ...field, args: {} }]));
  const eventRoot = new GraphQLObjectType({ ...config, fields });
  const schemaConfig = schema.toConfig();
  return new GraphQLSchema({
    ...schemaConfig,
    subscription: eventRoot,
    types: schemaConfig.types.map((type) => (type === root ? eventRoot : type)),
  });
}

/** An event document, and the variables the executed operation still declares in it. */
interface EventDocument {
  document: DocumentNode;
  variables: readonly string[];
}

/** Event documents by original document (documents are parsed once and shared: DocumentCache, Apollo's store). */
const eventDocuments = new WeakMap<DocumentNode, DocumentNode>();

function eventDocumentOf(schema: GraphQLSchema, document: DocumentNode, operationName: ExecutionArgs['operationName']): EventDocument {
  let eventDocument = eventDocuments.get(document);
  if (!eventDocument) {
    eventDocument = toEventDocument(schema, document);
    eventDocuments.set(document, eventDocument);
  }
  const operation = getOperationAST(eventDocument, operationName);
  return { document: eventDocument, variables: operation?.variableDefinitions?.map((definition) => definition.variable.name.value) ?? [] };
}

/**
 * The document with the arguments of the subscription root's fields removed (wherever they are
 * selected: the operation, inline fragments, fragments on the subscription type), and each
 * subscription's variable definitions reduced to the variables still used.
 */
export function toEventDocument(schema: GraphQLSchema, document: DocumentNode): DocumentNode {
  const root = schema.getSubscriptionType();
  if (!root) return document;
  const typeInfo = new TypeInfo(schema);
  const stripped: DocumentNode = visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node: FieldNode) {
        if (typeInfo.getParentType() !== root || !node.arguments?.length) return undefined;
        return { ...node, arguments: [] };
      },
    }),
  );
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of stripped.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return {
    ...stripped,
    definitions: stripped.definitions.map((definition) => {
      if (definition.kind !== Kind.OPERATION_DEFINITION || definition.operation !== 'subscription') return definition;
      const used = variablesUsed(definition, fragments);
      const kept = definition.variableDefinitions?.filter((variable) => used.has(variable.variable.name.value));
      return { ...definition, variableDefinitions: kept } satisfies OperationDefinitionNode;
    }),
  };
}

/** Names of the variables an operation refers to, in its selections and the fragments it spreads. */
function variablesUsed(operation: OperationDefinitionNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>): Set<string> {
  const used = new Set<string>();
  const visited = new Set<string>();
  const collect = (node: ASTNode): void => {
    visit(node, {
      VariableDefinition: () => false,
      Variable(variable) {
        used.add(variable.name.value);
      },
      FragmentSpread(spread) {
        const name = spread.name.value;
        const fragment = fragments.get(name);
        if (visited.has(name) || !fragment) return;
        visited.add(name);
        collect(fragment);
      },
    });
  };
  collect(operation);
  return used;
}
