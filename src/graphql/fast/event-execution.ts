import { createRequire } from 'node:module';
import { execute, type IncrementalExecutionResults } from '@graphql-tools/executor';
import type { CompiledQuery } from 'graphql-jit';
import {
  BREAK,
  getOperationAST,
  visit,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import { expandedFieldCount } from '../validation.js';

// Executing one event of a subscription (see createSubscriber, subscribe.ts): by the event document
// compiled with graphql-jit where it could be compiled, otherwise by the tools executor.

/** What executing one event needs; the event is the root value. */
export type EventExecution = Pick<
  ExecutionArgs,
  'schema' | 'document' | 'contextValue' | 'variableValues' | 'operationName'
> & {
  /** The event document compiled by graphql-jit, when it could be. */
  compiled: CompiledQuery | undefined;
};

export type EventResult = ExecutionResult | IncrementalExecutionResults;

/**
 * One event executed: by the compiled document when there is one and its result has no errors,
 * otherwise (again) by the tools executor, whose result is then the one sent.
 */
export function executeEvent(execution: EventExecution, event: unknown): EventResult | Promise<EventResult> {
  const { compiled } = execution;
  if (!compiled) return execute({ ...execution, rootValue: event });
  const result = compiled.query(event, execution.contextValue, execution.variableValues);
  if (isPromise(result))
    return result.then((settled) => (settled.errors?.length ? execute({ ...execution, rootValue: event }) : settled));
  return result.errors?.length ? execute({ ...execution, rootValue: event }) : result;
}

export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
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
export function compile(
  eventSchema: GraphQLSchema,
  document: DocumentNode,
  operationName: ExecutionArgs['operationName'],
): CompiledQuery | undefined {
  if ((document.loc?.end ?? Infinity) > MAX_COMPILED_DOCUMENT_CHARS || usesIncrementalDelivery(document))
    return undefined;
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
