import type { SubsequentIncrementalExecutionResult } from '@graphql-tools/executor';
import type { ExecutionOutcome } from '../executor.js';
import type { GraphQLError, GraphQLResolveInfo } from 'graphql';

// What the fast executor's later payloads are made of, shared by the files that make them (later-payloads.ts,
// message-stream.ts, leaf-stream.ts).

export type { ExecutionOutcome };

/** One later payload of an operation with @defer/@stream, as the executor yields it. */
export type LaterPayload = SubsequentIncrementalExecutionResult;

/** Whether `path` lies under `prefix` (a list's path). */
export function isUnder(path: readonly (string | number)[] | undefined, prefix: readonly (string | number)[]): boolean {
  if (path === undefined || path.length <= prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    if (path[i] !== prefix[i]) return false;
  }
  return true;
}
/**
 * Watches a stream and calls `read` a microtask after the first change of a turn: what changes in
 * one turn is read together. Returns the unwatch.
 */
export function watchBatched(source: { watch(watcher: () => void): () => void }, read: () => void): () => void {
  let scheduled = false;
  const readSoon = (): void => {
    scheduled = false;
    read();
  };
  return source.watch(() => {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(readSoon);
  });
}

/** A stream item's payload entry: `{items, path}`, with its errors when it has any. */
export function itemsPayload(
  items: unknown[] | null,
  path: readonly (string | number)[],
  errors: readonly GraphQLError[],
): LaterPayload {
  return {
    incremental: [errors.length > 0 ? { items, path, errors } : { items, path }],
    hasNext: true,
  } as unknown as LaterPayload;
}

/** A deferred fragment's payload entry: `{data, path}`, with its errors when it has any. */
export function deferredPayload(
  data: Record<string, unknown> | null,
  path: readonly (string | number)[],
  errors: readonly GraphQLError[],
): LaterPayload {
  return {
    incremental: [errors.length > 0 ? { data, path, errors } : { data, path }],
    hasNext: true,
  } as unknown as LaterPayload;
}
export const EMPTY: readonly never[] = Object.freeze([]);

/** A field's path as the executor writes it. */
export function pathOf(path: GraphQLResolveInfo['path']): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let at: GraphQLResolveInfo['path'] | undefined = path; at !== undefined; at = at.prev) keys.push(at.key);
  return keys.reverse();
}
