import { defaultFieldResolver, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { execute, subscribe } from '@graphql-tools/executor';
import { refusedDirectiveArguments } from './directive-arguments.js';
import { executeIncrementally, type ExecutionOutcome } from './fast/incremental.js';
import { withoutOrphansIn } from './nulled-paths.js';
import { owningLists } from './owned-lists.js';
import { createSubscriber, type ResultSink } from './fast/subscribe.js';

/** Which executor runs the operations: the gateway's own fast paths, or the libraries' as shipped. */
export type ExecutorName = 'fast' | 'stock';

/** A subscription's response stream, or the error result when it could not start. */
export type SubscribeOutcome = AsyncGenerator<ExecutionResult> | ExecutionResult;

/**
 * What runs GraphQL operations for the transports, in one place, so the gateway can run on either
 * implementation with one switch (GatewayOptions.executor, GATEWAY_EXECUTOR) and the same suites can
 * hold that the two agree:
 * - `fast` (the default): the gateway's own paths, written for speed and measured in BENCHMARKS.md:
 *   variables coerced by code made per operation (variables.ts), the run plan that writes a streamed
 *   run's payloads itself (message-plan.ts, leaf-streams.ts), known documents run without Apollo's
 *   pipeline and later payloads written without it (known-documents.ts, incremental.ts), and
 *   subscriptions' events executed by graphql-jit (subscribe.ts);
 * - `stock`: Apollo Server's pipeline and @graphql-tools/executor's `execute` and `subscribe`, as their
 *   authors ship them: the way back when an upgrade breaks an internal a fast path leans on.
 *
 * Both keep the gateway's three guards, which are about correctness, not speed: a directive argument
 * the executor cannot take is refused as the client's mistake (directive-arguments.ts), the lists the
 * executor would wait on are read for it so that none of its promises floats (owned-lists.ts), and
 * nothing is sent under a path the answer has nulled (incremental.ts `withoutOrphans`).
 */
export interface Executor {
  readonly name: ExecutorName;
  /**
   * Queries and mutations, with @defer/@stream: Apollo's `legacyExperimentalExecuteIncrementally` over
   * HTTP and graphql-ws's `execute`.
   */
  execute(args: ExecutionArgs): Promise<ExecutionOutcome>;
  /**
   * Subscriptions over graphql-ws. `onEnd` is called once however the operation ends; `sink`, where the
   * executor can use it, takes results pushed without a promise per event (the fast executor's).
   */
  subscribe(args: ExecutionArgs, onEnd: () => void, sink?: ResultSink): Promise<SubscribeOutcome>;
  /**
   * Whether the HTTP transport may run the documents it has seen without Apollo's pipeline and write
   * later payloads itself (known-documents.ts, incremental.ts `LaterPayloads`).
   */
  readonly httpFastPaths: boolean;
}

/** The gateway's own paths; see Executor. */
export function fastExecutor(schema: GraphQLSchema): Executor {
  return { name: 'fast', execute: executeIncrementally, subscribe: createSubscriber(schema), httpFastPaths: true };
}

/** Apollo's pipeline and @graphql-tools/executor as shipped, with the gateway's guards; see Executor. */
export function stockExecutor(): Executor {
  return { name: 'stock', execute: executeStock, subscribe: subscribeStock, httpFastPaths: false };
}

async function executeStock(args: ExecutionArgs): Promise<ExecutionOutcome> {
  const refused = refusedDirectiveArguments(args);
  if (refused !== undefined) return { errors: [refused] };
  return withoutOrphansIn(await execute({ ...args, fieldResolver: owningLists(args.fieldResolver ?? defaultFieldResolver) }));
}

async function subscribeStock(args: ExecutionArgs, onEnd: () => void): Promise<SubscribeOutcome> {
  const refused = refusedDirectiveArguments(args);
  if (refused !== undefined) return { errors: [refused] };
  const result = await subscribe(args);
  if (!(Symbol.asyncIterator in (result as object))) return result as ExecutionResult;
  return endingOnce(result as AsyncIterable<ExecutionResult>, onEnd);
}

/** The response stream, with `onEnd` called once however it ends (its last result, an error, or the reader leaving). */
function endingOnce(stream: AsyncIterable<ExecutionResult>, onEnd: () => void): AsyncGenerator<ExecutionResult> {
  const iterator = stream[Symbol.asyncIterator]();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const done: IteratorResult<ExecutionResult> = { value: undefined, done: true };
  const generator: AsyncGenerator<ExecutionResult> = {
    next: () =>
      iterator.next().then(
        (result) => {
          // Nothing the ending stream still produces is passed on once the reader has left.
          if (ended) return done;
          if (result.done) end();
          return result;
        },
        (error: unknown) => {
          end();
          throw error;
        },
      ),
    return: async () => {
      end();
      await iterator.return?.();
      return done;
    },
    throw: async (error: unknown) => {
      end();
      await iterator.return?.();
      throw error;
    },
    [Symbol.asyncIterator]: () => generator,
    [Symbol.asyncDispose]: () => generator.return(undefined).then(() => undefined),
  } as AsyncGenerator<ExecutionResult>;
  return generator;
}
