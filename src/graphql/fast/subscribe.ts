import { createSourceEventStream, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { statusOf, type ErrorCode } from '../../core/errors.js';
import type { EventHandover } from '../../core/events.js';
import { refusedDirectiveArguments } from '../directive-arguments.js';
import { eventDocumentOf, eventSchemaOf } from './event-documents.js';
import type { EventExecution } from './event-execution.js';
import { EventPushStream } from './push-stream.js';
import type { ResultSink } from '../executor.js';
import { EventResponseStream } from './response-stream.js';
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
): (
  args: ExecutionArgs,
  onEnd?: () => void,
  sink?: ResultSink,
) => Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
  const eventSchema = eventSchemaOf(schema);
  return async (args, onEnd, sink) => {
    // A directive's arguments the executor (or graphql-jit, which reads a null `if` as false) would not take: the
    // client's mistake, before the run starts.
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

function isHandover(source: AsyncIterator<unknown>): source is AsyncIterator<unknown> & EventHandover<unknown> {
  return typeof (source as Partial<EventHandover<unknown>>).request === 'function';
}

const NO_VARIABLES = Object.freeze({});

function pick(values: ExecutionArgs['variableValues'], names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) if (values && Object.hasOwn(values, name)) picked[name] = values[name];
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
    const code: ErrorCode = 'BAD_USER_INPUT';
    extensions.http = { ...(extensions.http as object), status: statusOf(code) };
    extensions.code = code;
  }
  return result;
}
