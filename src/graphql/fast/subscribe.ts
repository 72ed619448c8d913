import { createRequire } from 'node:module';
import { execute, isIncrementalResults, type IncrementalExecutionResults } from '@graphql-tools/executor';
import type { CompiledQuery } from 'graphql-jit';
import {
  BREAK,
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
import type { EventConsumer, EventHandover } from '../../core/events.js';
import { expandedFieldCount } from '../validation.js';
import { refusedDirectiveArguments } from '../directive-arguments.js';
import { withCoercedVariables } from './variables.js';

/**
 * GraphQL subscriptions executed the way the specification describes them, with less machinery per
 * stream and per event than `@graphql-tools/executor`'s `subscribe`.
 *
 * Why: a gateway holds thousands of `copilotRun` streams at once and executes the event selection for
 * every token. The tools executor's `subscribe` keeps, per stream, the execution context (the coerced
 * variables: a copy of the whole conversation), a mapping iterator, a flattening iterator and their
 * closures, and per event builds an execution context, collects fields into maps, builds resolve infos
 * and paths, runs an async generator and several promise hops: about 6.5 KB of garbage and 6 µs per
 * event, most of a held stream's heap and of the per-token CPU on the WebSocket transport (BENCHMARKS.md).
 *
 * How:
 * - The source stream is created by graphql-js's own `createSourceEventStream` (variables coerced, the
 *   root field's arguments read and its `subscribe` resolver called, errors located, exactly as the
 *   specification's CreateSourceEventStream).
 * - Each event (ExecuteSubscriptionEvent) is executed against an *event document* in which the
 *   subscription's root field has no arguments (and the operation no longer declares the variables
 *   only those arguments used), on an *event schema* in which the root field takes none. The root
 *   field's arguments were read once, to create the stream; executing an event only calls the root
 *   field's `resolve` (which returns the event) and never reads them, but an executor would coerce
 *   every variable again for every event (the conversation, per token). Names, aliases, selections
 *   and source locations are the original's.
 * - The event document is compiled once by graphql-jit (the compiler Mercurius runs on), and each
 *   event runs the compiled function: same fields, order, type resolution and scalars, about 25 times
 *   less work. An event whose result has errors is executed again by the tools executor and that result
 *   is sent, so error messages, paths and locations are the executor's own; documents graphql-jit does
 *   not take (@defer/@stream inside the event selection, very large documents) run on the executor.
 *
 * - Given a `ResultSink` (the WebSocket transport's), a stream whose source hands its events over
 *   without promises (a run's view, EventHandover) and whose events run compiled is *pushed*: each
 *   event is executed as it comes and its result handed to the sink, and the next event is asked
 *   for once the sink has written it (EventPushStream). The reader's `next()` then resolves only
 *   when the stream ends. Nothing waits per event: no promise, no reader's loop step.
 *
 * test/subscribe.test.ts runs the executor's own `subscribe` and this (pulled and pushed) over every
 * document shape the tests use, events of every kind and events the schema cannot represent, and
 * asserts the same bytes.
 */
export function createSubscriber(
  schema: GraphQLSchema,
): (args: ExecutionArgs, onEnd?: () => void, sink?: ResultSink) => Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
  const eventSchema = eventSchemaOf(schema);
  return async (args, onEnd, sink) => {
    // A directive's arguments the executor (or graphql-jit, which reads a null `if` as false) would not take: the client's mistake, before the run starts.
    const refused = refusedDirectiveArguments(args);
    if (refused !== undefined) return { errors: [refused] };
    // The variables coerced by the operation's own coercer (graphql/fast/variables.ts): only the source
    // stream sees the document's copy; the event document is made from the original.
    const stream = await createSourceEventStream(withCoercedVariables(args));
    if (!isAsyncIterable(stream)) return withInputErrorCodes(stream as ExecutionResult);
    const { document, variables, compiled } = eventDocumentOf(schema, eventSchema, args.document, args.operationName);
    const execution: EventExecution = {
      schema: eventSchema,
      document,
      contextValue: args.contextValue,
      // Only what the event selection uses: the rest (the conversation) is not held for the stream's life.
      variableValues: variables.length ? pick(args.variableValues, variables) : NO_VARIABLES,
      operationName: args.operationName,
      compiled,
    };
    const source = stream[Symbol.asyncIterator]();
    if (sink && compiled && isHandover(source)) return new EventPushStream(source, execution, sink, onEnd);
    return new EventResponseStream(source, execution, onEnd);
  };
}

/**
 * Where a pushed stream's results go: `send` writes one and calls `written` once it is out (or
 * dropped, the client having gone), never within `send` itself (a later turn or microtask: the
 * next event is executed from `written`). The next event is executed only then, so a slow reader
 * gets its source's merged events (RunEventStream), not a growing backlog of results.
 */
export interface ResultSink {
  send(result: ExecutionResult, written: () => void): void;
}

function isHandover(source: AsyncIterator<unknown>): source is AsyncIterator<unknown> & EventHandover<unknown> {
  return typeof (source as Partial<EventHandover<unknown>>).request === 'function';
}

/** What executing one event needs; the event is the root value. */
type EventExecution = Pick<ExecutionArgs, 'schema' | 'document' | 'contextValue' | 'variableValues' | 'operationName'> & {
  /** The event document compiled by graphql-jit, when it could be. */
  compiled: CompiledQuery | undefined;
};

const NO_VARIABLES = Object.freeze({});

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;

/**
 * What a response stream does when its reader ends it (`return()`, `throw()`, disposal): it stops,
 * telling its source (see each stream's `stop`).
 */
abstract class ResponseStream implements AsyncGenerator<ExecutionResult> {
  abstract next(): Promise<IteratorResult<ExecutionResult>>;

  /** Ends the stream from the reader's side. */
  protected abstract stop(): Promise<void>;

  async return(): Promise<IteratorResult<ExecutionResult>> {
    await this.stop();
    return DONE;
  }

  async throw(error?: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.stop();
    throw error;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/**
 * The response stream: each source event executed as it is read (MapSourceToResponseEvent). An event
 * whose selection uses @defer/@stream yields its initial result, then each subsequent payload, as the
 * tools executor does. `return()` and `throw()` end the source stream (which aborts its run), and
 * nothing the ending source still produces is passed on. `onEnd` is called once, however it ends.
 *
 * Written with `then` and handlers made once per stream rather than as async methods: a stream spends
 * its life waiting for its next event, and an awaiting async method holds a frame, two closures and
 * two promises for it, replaced (and so promoted to the old generation) at every event.
 */
class EventResponseStream extends ResponseStream {
  private pending: AsyncIterator<ExecutionResult> | undefined;
  private done = false;
  private ended = false;

  constructor(
    private readonly source: AsyncIterator<unknown>,
    private readonly execution: EventExecution,
    private readonly onEnd: (() => void) | undefined,
  ) {
    super();
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.pending) return this.pending.next().then(this.onPart, this.onExecutionError);
    if (this.done) return Promise.resolve(DONE);
    return this.source.next().then(this.onEvent, this.onError);
  }

  private readonly onEvent = (event: IteratorResult<unknown>): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (event.done || this.done) {
      this.done = true;
      this.end();
      return DONE;
    }
    let result: EventResult | Promise<EventResult>;
    try {
      result = executeEvent(this.execution, event.value);
    } catch (error) {
      return this.onExecutionError(error);
    }
    return isPromise(result) ? result.then(this.onResult, this.onExecutionError) : this.onResult(result);
  };

  private readonly onResult = (result: ExecutionResult | IncrementalExecutionResults): IteratorResult<ExecutionResult> => {
    if (this.done) return DONE;
    if (isIncrementalResults(result)) {
      this.pending = result.subsequentResults[Symbol.asyncIterator]() as AsyncIterator<ExecutionResult>;
      return { value: result.initialResult as ExecutionResult, done: false };
    }
    return { value: result as ExecutionResult, done: false };
  };

  private readonly onPart = (part: IteratorResult<ExecutionResult>): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (this.done) return DONE;
    if (!part.done) return part;
    this.pending = undefined;
    return this.next();
  };

  /** The source failed: it has ended itself. */
  private readonly onError = (error: unknown): never => {
    this.done = true;
    this.end();
    throw error;
  };

  /**
   * Executing an event failed (the executor's or the compiler's own error, not a field error): the
   * stream ends with it, and the source is told to stop, as graphql-js does, so that its run does
   * not go on with no reader (graphql-ws does not call `return()` after a rejected `next()`).
   */
  private readonly onExecutionError = (error: unknown): never => {
    const pending = this.pending;
    this.pending = undefined;
    this.done = true;
    this.end();
    void Promise.allSettled([pending?.return?.(), this.source.return?.()]);
    throw error;
  };

  /** Ends the stream from the reader's side: the source is told to stop (unless it already had). */
  protected async stop(): Promise<void> {
    const sourceDone = this.done && !this.pending;
    this.done = true;
    this.end();
    if (sourceDone) return;
    const pending = this.pending;
    this.pending = undefined;
    await Promise.all([pending?.return?.(), this.source.return?.()]);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.();
  }
}

/**
 * A response stream pushed to a sink (see createSubscriber): the reader's first `next()` starts it
 * and resolves once the stream has ended (the source's end, `return()`), or rejects with an error
 * that executing an event threw, as a pulled stream's `next()` would. Events are executed the way
 * EventResponseStream executes them (compiled documents only: no incremental parts). `onEnd` is
 * called once, however it ends.
 */
class EventPushStream extends ResponseStream implements EventConsumer<unknown> {
  private started = false;
  private done = false;
  private settle: ((result: IteratorResult<ExecutionResult>) => void) | undefined;
  private reject: ((error: unknown) => void) | undefined;

  constructor(
    private readonly source: AsyncIterator<unknown> & EventHandover<unknown>,
    private readonly execution: EventExecution,
    private readonly sink: ResultSink,
    private readonly onEnd: (() => void) | undefined,
  ) {
    super();
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    // One reader, one call: the stream is pushed from here on.
    if (this.done || this.started) return Promise.resolve(DONE);
    this.started = true;
    return new Promise((resolve, reject) => {
      this.settle = resolve;
      this.reject = reject;
      this.source.request(this);
    });
  }

  /** EventConsumer: the source's next event. */
  take(event: unknown): void {
    if (this.done) return;
    let result: EventResult | Promise<EventResult>;
    try {
      result = executeEvent(this.execution, event);
    } catch (error) {
      return this.failed(error);
    }
    if (isPromise(result)) {
      result.then(
        (settled) => this.send(settled),
        (error: unknown) => this.failed(error),
      );
    } else {
      this.send(result);
    }
  }

  /** EventConsumer: the source has no more events. */
  end(): void {
    if (this.close()) this.settle?.(DONE);
  }

  /** EventConsumer: the source failed (and has ended itself): the reader gets its error, as from a pulled `next()`. */
  fail(error: unknown): void {
    if (this.close()) this.reject?.(error);
  }

  private send(result: EventResult): void {
    if (this.done) return;
    try {
      // A compiled event document has no @defer/@stream: its result is a plain one.
      this.sink.send(result as ExecutionResult, this.written);
    } catch (error) {
      this.failed(error);
    }
  }

  /**
   * The sink has written a result: the next event, please. Called from the socket's write callback,
   * where a throw would be uncaught: nothing may escape.
   */
  private readonly written = (): void => {
    if (this.done) return;
    try {
      this.source.request(this);
    } catch (error) {
      this.failed(error);
    }
  };

  /**
   * Executing an event failed (the executor's or the compiler's own error, not a field error), or
   * the sink threw: the stream ends with it, and the source is told to stop (see
   * EventResponseStream.onExecutionError). `take` runs within the run's own event, so the run is
   * aborted there and then, not a microtask later as on the pulled path; its abort is guarded.
   */
  private failed(error: unknown): void {
    if (!this.close()) return;
    this.reject?.(error);
    try {
      void Promise.resolve(this.source.return?.()).catch(() => {});
    } catch {
      // The source could not be told: it has failed itself.
    }
  }

  /** Ends the stream from the reader's side: the source is told to stop (unless it already had). */
  protected async stop(): Promise<void> {
    const first = this.close();
    this.settle?.(DONE); // settling twice changes nothing
    if (first) await this.source.return?.();
  }

  /**
   * Marks the stream done and tells `onEnd`, once: whether this call was the one. `onEnd` (a log
   * line) must not keep the reader waiting: what it throws is dropped.
   */
  private close(): boolean {
    if (this.done) return false;
    this.done = true;
    try {
      this.onEnd?.();
    } catch {
      // Nothing to tell: the operation's end is its log line.
    }
    return true;
  }
}

type EventResult = ExecutionResult | IncrementalExecutionResults;

/**
 * One event executed: by the compiled document when there is one and its result has no errors,
 * otherwise (again) by the tools executor, whose result is then the one sent.
 */
function executeEvent(execution: EventExecution, event: unknown): EventResult | Promise<EventResult> {
  const { compiled } = execution;
  if (!compiled) return execute({ ...execution, rootValue: event });
  const result = compiled.query(event, execution.contextValue, execution.variableValues);
  if (isPromise(result)) return result.then((settled) => (settled.errors?.length ? execute({ ...execution, rootValue: event }) : settled));
  return result.errors?.length ? execute({ ...execution, rootValue: event }) : result;
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

const eventSchemas = new WeakMap<GraphQLSchema, GraphQLSchema>();

/** The event schema of a schema, made once. */
function eventSchemaOf(schema: GraphQLSchema): GraphQLSchema {
  let eventSchema = eventSchemas.get(schema);
  if (!eventSchema) {
    eventSchema = withoutRootArguments(schema);
    eventSchemas.set(schema, eventSchema);
  }
  return eventSchema;
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

/** An event document, the variables the executed operation still declares in it, and its compiled form. */
interface EventDocument {
  document: DocumentNode;
  variables: readonly string[];
  compiled: CompiledQuery | undefined;
}

/** Documents longer than this (in source characters) are not compiled: compiling costs about as much as parsing. */
const MAX_COMPILED_DOCUMENT_CHARS = 16 * 1024;

/**
 * Documents that select more fields than this once fragments are expanded are not compiled: the
 * compiler writes code for every expanded path and every possible type of each abstract field, so its
 * time grows faster than the expansion (about 5 ms for the README's document of 28 fields, 20 ms for
 * 47, 175 ms for 202 of nested aliased fragments). A document selecting every field of every event
 * is under 100.
 */
const MAX_COMPILED_FIELDS = 128;

/** Event documents by original document (documents are parsed once and shared: DocumentCache, Apollo's store). */
const eventDocuments = new WeakMap<DocumentNode, { document: DocumentNode; compiled: Map<string | null, CompiledQuery | undefined> }>();

function eventDocumentOf(schema: GraphQLSchema, eventSchema: GraphQLSchema, document: DocumentNode, operationName: ExecutionArgs['operationName']): EventDocument {
  let entry = eventDocuments.get(document);
  if (!entry) {
    entry = { document: toEventDocument(schema, document), compiled: new Map() };
    eventDocuments.set(document, entry);
  }
  const name = operationName ?? null;
  if (!entry.compiled.has(name)) entry.compiled.set(name, compile(eventSchema, entry.document, operationName));
  const operation = getOperationAST(entry.document, operationName);
  const variables = operation?.variableDefinitions?.map((definition) => definition.variable.name.value) ?? [];
  return { document: entry.document, variables, compiled: entry.compiled.get(name) };
}

/** Whether a subscription's events run on the compiled event document (true) or on the executor alone. */
export function eventsRunCompiled(schema: GraphQLSchema, document: DocumentNode, operationName?: string): boolean {
  return eventDocumentOf(schema, eventSchemaOf(schema), document, operationName).compiled !== undefined;
}

let jit: typeof import('graphql-jit') | undefined;

/**
 * graphql-jit, required on the first subscription rather than imported at start-up: with the JSON
 * serializer and schema validator it brings, it is about 1.5 MB of heap and 2 MB of RSS in a gateway that
 * may only ever serve HTTP (measured at idle). Required (CommonJS) so compiling stays synchronous; the
 * gateway and graphql-jit share the same CommonJS `graphql`, as with an import.
 */
function jitCompiler(): typeof import('graphql-jit') {
  jit ??= createRequire(import.meta.url)('graphql-jit') as typeof import('graphql-jit');
  return jit;
}

/** The event document compiled by graphql-jit, or undefined where the executor must run it. */
function compile(eventSchema: GraphQLSchema, document: DocumentNode, operationName: ExecutionArgs['operationName']): CompiledQuery | undefined {
  if ((document.loc?.end ?? Infinity) > MAX_COMPILED_DOCUMENT_CHARS || usesIncrementalDelivery(document)) return undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation || expandedFieldCount(document, operation) > MAX_COMPILED_FIELDS) return undefined;
  try {
    // Inside the try: the subscription's run has started by now, and a compiler that cannot even be
    // loaded (a broken install) leaves the executor to run the events rather than failing the stream.
    const { compileQuery, isCompiledQuery } = jitCompiler();
    const compiled = compileQuery(eventSchema, document, operationName ?? undefined);
    return isCompiledQuery(compiled) ? compiled : undefined;
  } catch {
    return undefined; // a shape the compiler does not take: the executor runs it
  }
}

function usesIncrementalDelivery(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'defer' || node.name.value === 'stream') {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
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
