import { execute, subscribe } from '@graphql-tools/executor';
import { defaultFieldResolver, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { refusedDirectiveArguments } from './directive-arguments.js';
import type { ExecutionOutcome, Executor, SubscribeOutcome } from './executor.js';
import { withoutOrphansIn } from './nulled-paths.js';
import { owningLists } from './owned-lists.js';

/** Apollo's pipeline and @graphql-tools/executor as shipped, with the gateway's guards; see Executor. */
export function stockExecutor(): Executor {
  return { name: 'stock', execute: executeStock, subscribe: subscribeStock, prepare: () => undefined };
}

async function executeStock(args: ExecutionArgs): Promise<ExecutionOutcome> {
  const refused = refusedDirectiveArguments(args);
  if (refused !== undefined) return { errors: [refused] };
  return withoutOrphansIn(
    await execute({ ...args, fieldResolver: owningLists(args.fieldResolver ?? defaultFieldResolver) }),
  );
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
