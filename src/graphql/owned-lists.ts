import { GraphQLStreamDirective } from '@graphql-tools/utils';
import {
  defaultFieldResolver,
  getDirectiveValues,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLFieldResolver,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';

/**
 * Lists the executor reads from async iterables (the run's messages, texts and meta events), given
 * to it so that every promise it makes for a request stays owned by that request.
 *
 * Why: the tools executor (@graphql-tools/executor 1.5.7, `completeAsyncIteratorValue`) reads a
 * list that is not streamed, and a streamed list's first `initialCount` items, in a loop: it starts
 * each item's completion (a promise when the item has anything asynchronous in it: a message's text
 * is an async iterable) and awaits the iterator's next item before it attaches anything to the
 * promises it started (a `Promise.all` once the list ends). An item that fails while the loop waits
 * for the next (a non-null field's error, such as a text `@stream(initialCount: -1)` refuses, or a
 * text chunk GraphQL's String refuses) is a rejected promise nobody handles until the list ends: with
 * a model streaming tokens a few milliseconds apart, Node reports it as an unhandled rejection, which
 * ends the process (issue 28).
 *
 * So the executor is never given an async iterable it would wait on in that loop: a list that is not
 * streamed is read here first and given as an array (the executor then completes every item at once
 * and joins them at once), and a streamed list with `initialCount` n > 0 as an iterable whose first n
 * items are already read (the loop takes them within one turn, then hands the rest to the stream's
 * records, which handle their own errors). A streamed list with no initial items goes as it is: the
 * loop hands it over before reading anything. Errors of the source (its `next()` rejecting) reach the
 * executor where they would have: the array's promise rejects (a field error), or the buffered
 * iterator rejects at that item.
 *
 * What changes for the client: nothing in the data, errors or paths. A text read here for a list that
 * is not streamed may come in fewer, longer chunks (`content: ["Hello, world"]` for
 * `["Hello, ", "world"]`), as for any reader that reads later (views/shared-stream.ts): its items were
 * only ever cut where the reader happened to read.
 *
 * Applied to the field resolver every execution on a request's behalf is given (incremental.ts,
 * subscribe.ts) and to the schema's own resolvers of list fields (`ownListResolvers`).
 */
export function owningLists(
  resolver: GraphQLFieldResolver<unknown, unknown> = defaultFieldResolver,
): GraphQLFieldResolver<unknown, unknown> {
  const owning: GraphQLFieldResolver<unknown, unknown> & { [OWNING]?: true } = (source, args, context, info) => {
    const value = resolver(source, args, context, info);
    // Only lists are read in that loop: any other value (a status's promise) goes as it is, untouched.
    if (!isList(info.returnType)) return value;
    if (isAsyncIterable(value)) return owned(value, info);
    if (isPromiseLike(value))
      return Promise.resolve(value).then((settled) => (isAsyncIterable(settled) ? owned(settled, info) : settled));
    return value;
  };
  owning[OWNING] = true;
  return owning;
}

const OWNING: unique symbol = Symbol('owning lists');

/** Whether a field resolver already owns its lists (`owningLists`). */
function ownsLists(resolver: GraphQLFieldResolver<unknown, unknown> | undefined): boolean {
  return resolver !== undefined && (resolver as { [OWNING]?: true })[OWNING] === true;
}

/**
 * The schema's own resolvers of list fields made `owningLists` (the field resolver an execution is
 * given covers only the fields without one). Returns the schema, changed in place.
 */
export function ownListResolvers(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.resolve !== undefined && isList(field.type) && !ownsLists(field.resolve))
        field.resolve = owningLists(field.resolve);
    }
  }
  return schema;
}

function isList(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

/** An async iterable as the executor can read it without floating promises (see above). */
function owned(iterable: AsyncIterable<unknown>, info: GraphQLResolveInfo): unknown {
  const initialCount = streamedInitialCount(info);
  if (initialCount === 0) return iterable;
  if (initialCount === undefined) return collect(iterable);
  return prefetch(iterable, initialCount);
}

/**
 * The `initialCount` the executor streams the field with (as its getStreamValues reads it), or
 * undefined when it does not stream it: no `@stream`, `if: false`, an item of a list (inner lists
 * are not streamed), or arguments it would refuse (a negative or null count: the execution is
 * refused before it starts, graphql/directive-arguments.ts; read whole here, should it ever run).
 */
function streamedInitialCount(info: GraphQLResolveInfo): number | undefined {
  if (typeof info.path.key === 'number') return undefined;
  let stream: Record<string, unknown> | undefined;
  try {
    stream = getDirectiveValues(GraphQLStreamDirective, info.fieldNodes[0], info.variableValues);
  } catch {
    return undefined;
  }
  if (stream === undefined || stream.if === false) return undefined;
  const count = stream.initialCount;
  return typeof count === 'number' && count >= 0 ? count : undefined;
}

/** Every item of the iterable, once it has ended. */
async function collect(iterable: AsyncIterable<unknown>): Promise<unknown[]> {
  const items: unknown[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/**
 * The iterable, once its first `count` items are read (or it ended or failed before): those are
 * given from memory, the rest from the source as it comes. Its `return()` never rejects: the
 * executor calls it without handling the promise (on abort).
 */
async function prefetch(iterable: AsyncIterable<unknown>, count: number): Promise<AsyncIterable<unknown>> {
  const source = iterable[Symbol.asyncIterator]();
  const read: ({ step: IteratorResult<unknown> } | { error: unknown })[] = [];
  try {
    while (read.length < count) {
      const step = await source.next();
      read.push({ step });
      if (step.done) break;
    }
  } catch (error) {
    read.push({ error });
  }
  const iterator: AsyncIterator<unknown> = {
    next: () => {
      const first = read.shift();
      if (first === undefined) return source.next();
      return 'error' in first ? Promise.reject(first.error) : Promise.resolve(first.step);
    },
    return: async () => {
      read.length = 0;
      try {
        await source.return?.();
      } catch {
        // (The source could not stop cleanly: nothing reads it any more either way.)
      }
      return { value: undefined, done: true };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
