import { execute, subscribe } from '@graphql-tools/executor';
import { defaultFieldResolver, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { refusedDirectiveArguments } from './directive-arguments.js';
import { EndingStream } from './ending-stream.js';
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
  return new EndingStream((result as AsyncIterable<ExecutionResult>)[Symbol.asyncIterator](), onEnd);
}
