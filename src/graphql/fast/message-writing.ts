import { inspect, locatedError } from '@graphql-tools/utils';
import {
  GraphQLError,
  isAbstractType,
  type FieldNode,
  type GraphQLAbstractType,
  type GraphQLLeafType,
  type GraphQLObjectType,
} from 'graphql';
import type { FieldWriter, ObjectWriter } from './message-plan.js';

// Writing: what the executor's completeValue makes of the view's values, for the fields the message
// plan (message-plan.ts) takes.

/**
 * An object's fields (not its deferred ones, not its streams) as the executor completes them:
 * errors of nullable fields go to `errors` (the field is null), an error of a non-null field is
 * thrown, located, for the caller to null what holds it.
 */
export function writeFields(
  writer: ObjectWriter,
  source: Record<string, unknown>,
  path: readonly (string | number)[],
  errors: GraphQLError[],
  context: unknown,
): Record<string, unknown> {
  // No prototype, as the executor's: a field aliased `__proto__` is a key like any other.
  const object: Record<string, unknown> = Object.create(null);
  for (const field of writer.fields) {
    if (field.kind === 'stream') continue;
    object[field.key] =
      field.kind === 'typename'
        ? writer.type.name
        : writeField(writer.type, field, source[field.name], path, errors, context);
  }
  return object;
}

/**
 * Deferred fields, as the executor completes a deferred fragment's: those whose values are there
 * now first, in order, then those that are promises as they settle (its `promiseForObject`).
 * `done` gets the data, at once when no value is a promise, else in the turn of the promise queue
 * in which the last one settles; a non-null field's error nulls the whole fragment (data null, the
 * error in `errors`). (With two promises or more, the executor nulls the fragment as soon as one
 * fails and completes no other; this waits for them all and completes none after the failure. The
 * view's objects have one promise each, their status.)
 */
export function writeDeferred(
  type: GraphQLObjectType,
  fields: readonly FieldWriter[],
  source: Record<string, unknown>,
  path: readonly (string | number)[],
  errors: GraphQLError[],
  context: unknown,
  done: (data: Record<string, unknown> | null) => void,
): void {
  const data: Record<string, unknown> = Object.create(null);
  // One for each promise, and one for this pass over the fields: nothing finishes before it ends.
  let waiting = 1;
  let failed: GraphQLError | undefined;
  const settledOne = (): void => {
    if (--waiting > 0) return;
    if (failed !== undefined) errors.push(failed);
    done(failed === undefined ? data : null);
  };
  for (const field of fields) {
    if (field.kind === 'typename') {
      data[field.key] = type.name;
      continue;
    }
    if (field.kind === 'stream') continue;
    const value = source[field.name];
    if (!isPromiseLike(value)) {
      try {
        data[field.key] = writeField(type, field, value, path, errors, context);
      } catch (error) {
        // As the executor's executeFields: fields already waiting are waited for, then the fragment is null.
        failed = error as GraphQLError;
        break;
      }
      continue;
    }
    waiting++;
    const complete = (settled: unknown): void => {
      if (failed === undefined) {
        try {
          data[field.key] = writeField(type, field, settled, path, errors, context);
        } catch (error) {
          failed = error as GraphQLError;
        }
      }
      settledOne();
    };
    value.then(complete, (rejected: unknown) => complete(coerceError(rejected)));
  }
  settledOne();
}

/**
 * One field of the object at `path`, as the executor's executeField and handleFieldError: its value,
 * or null with the error kept, or the error thrown (non-null).
 */
function writeField(
  parent: GraphQLObjectType,
  field: Exclude<FieldWriter, { kind: 'typename' | 'stream' }>,
  value: unknown,
  path: readonly (string | number)[],
  errors: GraphQLError[],
  context: unknown,
): unknown {
  try {
    return complete(parent, field, value, path, errors, context);
  } catch (raw) {
    // (An error of a non-null field below is already located there, and stays so.)
    const error = locatedError(coerceError(raw), field.nodes, [...path, field.key]);
    if (field.nonNull) throw error;
    errors.push(error);
    return null;
  }
}

function complete(
  parent: GraphQLObjectType,
  field: Exclude<FieldWriter, { kind: 'typename' | 'stream' }>,
  value: unknown,
  path: readonly (string | number)[],
  errors: GraphQLError[],
  context: unknown,
): unknown {
  if (value instanceof Error) throw value;
  if (value == null) {
    if (field.nonNull) throw new Error(`Cannot return null for non-nullable field ${parent.name}.${field.name}.`);
    return null;
  }
  if (field.kind === 'leaf') return completeLeaf(field.type, value);
  const type = field.type;
  const concrete = isAbstractType(type)
    ? runtimeWriter(field.objects, type, parent, field.name, field.nodes, value, context)
    : field.objects.get(type.name)!;
  return writeFields(concrete, value as Record<string, unknown>, [...path, field.key], errors, context);
}

/** A leaf's value serialized, with the executor's errors (its completeLeafValue). */
export function completeLeaf(type: GraphQLLeafType, value: unknown): unknown {
  let serialized: unknown;
  try {
    serialized = type.serialize(value);
  } catch (error) {
    // As the executor's: a bare Error (with a cause, the error logged would differ between the executors).
    // eslint-disable-next-line preserve-caught-error
    if (error instanceof GraphQLError) throw new Error(error.message);
    throw error;
  }
  if (serialized == null) {
    throw new Error(
      `Expected \`${inspect(type)}.serialize(${inspect(value)})\` to return non-nullable value, returned: ` +
        `${inspect(serialized)}`,
    );
  }
  return serialized;
}

/**
 * The writer of a value of an abstract type: its type named by the type's resolveType, checked as
 * the executor checks it (its ensureValidRuntimeType), with the same errors. The plan requires a
 * resolveType that answers at once and reads only the value and the context (the schema's, for the
 * view's objects, reads the value's `__typename` or `code`); it is given no resolve info.
 */
export function runtimeWriter(
  writers: ReadonlyMap<string, ObjectWriter>,
  type: GraphQLAbstractType,
  parent: GraphQLObjectType,
  fieldName: string,
  nodes: readonly FieldNode[],
  value: unknown,
  context: unknown,
): ObjectWriter {
  const name: unknown = type.resolveType!(value, context, undefined as never, type);
  if (name == null) {
    throw new GraphQLError(
      `Abstract type "${type.name}" must resolve to an Object type at runtime for field ` +
        `"${parent.name}.${fieldName}". Either the "${type.name}" type should provide a "resolveType" function or ` +
        `each possible type should provide an "isTypeOf" function.`,
      { nodes },
    );
  }
  if (typeof name !== 'string') {
    throw new GraphQLError(
      `Abstract type "${type.name}" must resolve to an Object type at runtime for field ` +
        `"${parent.name}.${fieldName}" with value ${inspect(value)}, received "${inspect(name)}".`,
    );
  }
  const writer = writers.get(name);
  if (writer !== undefined) return writer;
  // (The executor tells apart a name the schema does not have, a type that is not an object and
  // one that is not a possible type; the schema's resolvers name possible types only.)
  throw new GraphQLError(`Runtime Object type "${name}" is not a possible type for "${type.name}".`, { nodes });
}

/** The executor's coerceError: anything thrown, as an Error. */
export function coerceError(error: unknown): Error {
  if (error instanceof Error) return error;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    const cause = 'cause' in error ? { cause: (error as { cause: unknown }).cause } : undefined;
    const coerced = new Error((error as { message: string }).message, cause);
    if (typeof (error as { stack?: unknown }).stack === 'string') coerced.stack = (error as { stack: string }).stack;
    if (typeof (error as { name?: unknown }).name === 'string') coerced.name = (error as { name: string }).name;
    return coerced;
  }
  return new Error(String(error));
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
