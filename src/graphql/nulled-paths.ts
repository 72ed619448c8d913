// What goes out under a path an answer has already nulled: nothing (issue 28 §2). Shared by both executors
// (graphql/executor.ts).
import {
  isIncrementalResults,
  type IncrementalExecutionResults,
  type SingularExecutionResult,
  type SubsequentIncrementalExecutionResult,
} from '@graphql-tools/executor';
import type { GraphQLError } from 'graphql';

type ExecutionOutcome = SingularExecutionResult<any> | IncrementalExecutionResults<any>;
type LaterPayload = SubsequentIncrementalExecutionResult;

type Path = readonly (string | number)[];

/**
 * The executor's later payloads without the entries under a path the answer has already nulled.
 *
 * The tools executor drops what is pending under a field that fails (its filterSubsequentPayloads),
 * but only under that field's own path: when the null goes up to a parent (a non-null field), or
 * nulls a whole deferred fragment (`{"data":null,"path":["run"]}`), the records started under the
 * parent, such as a `@stream` list inside that fragment and its items' own `@defer`, still give their
 * payloads, for paths the client was told are null (issue 28 §2). So each payload's errors are read
 * against the data it carries: where the value on an error's path is null, that path is nulled, and
 * entries at it or under it that come later are dropped. A payload left with no entries is not given,
 * unless it is the last (then `{"hasNext":false}`). Payloads without errors pass as they are.
 */
export function withoutOrphans(
  initial: { data?: unknown; errors?: readonly GraphQLError[] },
  results: AsyncGenerator<LaterPayload, void, void>,
): AsyncGenerator<LaterPayload, void, void> {
  const nulled: Path[] = [];
  if (initial.errors !== undefined) addNulled(nulled, initial.data, [], initial.errors);
  const next = (): Promise<IteratorResult<LaterPayload, void>> =>
    results.next().then((step) => {
      if (step.done) return step;
      const payload = step.value;
      const incremental = payload.incremental;
      if (incremental === undefined || (nulled.length === 0 && !carriesErrors(payload))) return step;
      const kept: (typeof incremental)[number][] = [];
      for (const entry of incremental) {
        const path = entry.path as Path;
        if (nulled.some((prefix) => isAtOrUnder(path, prefix))) continue;
        kept.push(entry);
        if (entry.errors === undefined) continue;
        if ('items' in entry) {
          // A stream's items: read as the list at the path before the first item's index.
          const items = entry.items as unknown[] | null;
          const list = path.slice(0, -1);
          const first = path[path.length - 1] as number;
          if (items === null) nulled.push(path);
          else addNulled(nulled, Object.fromEntries(items.map((item, i) => [first + i, item])), list, entry.errors);
        } else {
          addNulled(nulled, (entry as { data?: unknown }).data, path, entry.errors);
        }
      }
      if (kept.length === incremental.length) return step;
      if (kept.length > 0) return { value: { ...payload, incremental: kept }, done: false };
      return payload.hasNext ? next() : { value: { hasNext: false }, done: false };
    });
  const stream: AsyncGenerator<LaterPayload, void, void> = {
    next,
    return: (value) => results.return(value),
    throw: (error) => results.throw(error),
    [Symbol.asyncIterator]: () => stream,
    [Symbol.asyncDispose]: () => results.return(undefined).then(() => undefined),
  } as AsyncGenerator<LaterPayload, void, void>;
  return stream;
}

/** The paths the errors null in `data` (the value at `base`): on each error's path, the first null. */
function addNulled(nulled: Path[], data: unknown, base: Path, errors: readonly GraphQLError[]): void {
  for (const error of errors) {
    const path = error.path;
    if (path === undefined || path.length < base.length || !isAtOrUnder(path, base)) continue;
    let value = data;
    for (let i = base.length; ; i++) {
      if (value === null) {
        nulled.push(path.slice(0, i));
        break;
      }
      if (i >= path.length || typeof value !== 'object') break;
      value = (value as Record<string | number, unknown>)[path[i]];
    }
  }
}

function isAtOrUnder(path: Path | undefined, prefix: Path): boolean {
  if (path === undefined || path.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    if (path[i] !== prefix[i]) return false;
  }
  return true;
}

/**
 * An execution's outcome with its later payloads passed through `withoutOrphans` (the fast and the stock executor
 * alike).
 */
export function withoutOrphansIn(outcome: ExecutionOutcome): ExecutionOutcome {
  if (!isIncrementalResults(outcome)) return outcome;
  return {
    initialResult: outcome.initialResult,
    subsequentResults: withoutOrphans(outcome.initialResult, outcome.subsequentResults),
  };
}

/** Whether the payload carries errors (in an item or a deferred part), which are formatted before it goes out. */
export function carriesErrors(payload: LaterPayload): boolean {
  if ((payload as { errors?: unknown }).errors !== undefined) return true;
  const incremental = payload.incremental;
  if (incremental === undefined) return false;
  for (let i = 0; i < incremental.length; i++) {
    if (incremental[i].errors !== undefined) return true;
  }
  return false;
}
