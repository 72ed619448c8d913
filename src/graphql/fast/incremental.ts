import { execute, isIncrementalResults } from '@graphql-tools/executor';
import { getArgumentValues, locatedError } from '@graphql-tools/utils';
import {
  defaultFieldResolver,
  type ExecutionArgs,
  type GraphQLError,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
} from 'graphql';
import { LaterPayloads } from './later-payloads.js';
import { leafStreamPlan, type LeafStreamPlan } from './leaf-streams.js';
import type { RunPlan } from './message-plan.js';
import { coerceError, writeFields } from './message-writing.js';
import type { ExecutionOutcome } from './payloads.js';
import { refusedDirectiveArguments } from '../directive-arguments.js';
import { withoutOrphansIn } from '../nulled-paths.js';
import { owningLists } from '../owned-lists.js';
import { variablePlan, withCoercedVariables } from './variables.js';

/** What the fast executor keeps of one HTTP operation (graphql/fast/http-operation.ts), by its context. */
export interface HttpOperationState {
  /** Where the operation's later payloads go, for the transport to take (see LaterPayloads). */
  readonly later: LaterPayloads;
}

/**
 * Runs operations with @defer/@stream on the tools executor for Apollo (its
 * `legacyExperimentalExecuteIncrementally`) and for graphql-ws's queries and mutations, with their
 * variables coerced ahead of it (graphql/fast/variables.ts), and, for an HTTP operation the fast executor
 * took (`http`), gives its later payloads to its LaterPayloads.
 */
export async function executeIncrementally(args: ExecutionArgs, http?: HttpOperationState): Promise<ExecutionOutcome> {
  const later = http?.later;
  // A directive's arguments the executor would refuse only once running (graphql/directive-arguments.ts): the client's
  // mistake, before anything runs.
  const refused = refusedDirectiveArguments(args);
  if (refused !== undefined) {
    later?.close();
    return { errors: [refused] };
  }
  // Every list the executor reads from an async iterable, read so that none of its promises floats
  // (graphql/owned-lists.ts).
  args = { ...args, fieldResolver: owningLists(args.fieldResolver ?? defaultFieldResolver) };
  const plan = later === undefined ? undefined : leafStreamPlan(args.schema, args.document, args.operationName);
  if (plan !== undefined) {
    // The transport may run this text again without Apollo (graphql/fast/known-documents.ts).
    later!.planned = { document: args.document, operationName: args.operationName ?? undefined };
    const run = plan.messages?.run;
    const byPlan = run === undefined ? undefined : runByPlan(args, plan, run, later!);
    if (byPlan !== undefined) return byPlan;
    // The executor runs the document without the leaf streams' @stream; their fields go to `later`.
    const base: GraphQLFieldResolver<unknown, unknown> = args.fieldResolver ?? defaultFieldResolver;
    const fields = plan.fields;
    const messages = plan.messages;
    const fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, fieldArgs, context, info) => {
      const node = info.fieldNodes[0];
      if (messages !== undefined && node === messages.messages) return later!.messages(messages, source, info, context);
      return fields.has(node)
        ? later!.leaf((source as Record<string, unknown>)[info.fieldName], info)
        : base(source, fieldArgs, context, info);
    };
    args = { ...args, document: plan.document, fieldResolver };
  }
  // Nothing goes out under a path the answer has nulled (graphql/nulled-paths.ts).
  const result = withoutOrphansIn(await execute(withCoercedVariables(args)));
  if (later === undefined) return result;
  if (!isIncrementalResults(result)) {
    // Leaf streams live only inside streamed items, and the message plan's messages are a stream:
    // with no later payloads there are none to write (the run was refused before its messages).
    later.close();
    return result;
  }
  return { initialResult: result.initialResult, subsequentResults: later.adopt(result.subsequentResults) };
}

/** Resolves with `value` in the event loop's check phase, after the immediates already queued. */
function nextTurn<T>(value: T): Promise<T> {
  return new Promise((resolve) => setImmediate(resolve, value));
}

/**
 * The operation run by the run plan (graphql/fast/message-plan.ts RunPlan), without the executor: the
 * run's resolver called as the executor calls it, the answer's first part written as the executor
 * writes it, the messages by the message plan, the meta events by the executor once the run raises
 * one. Undefined, before anything has run, where the executor must run the request: variables the
 * coercer gives up on, or arguments the executor would refuse (it reports them). A run refused by
 * its resolver gives the executor's result for it (the error located at the run's field, `data`
 * null), which is answered as Apollo answers any request's (direct-answer.ts for a known document).
 */
function runByPlan(
  args: ExecutionArgs,
  plan: LeafStreamPlan,
  run: RunPlan,
  later: LaterPayloads,
): Promise<ExecutionOutcome> | undefined {
  const variables = variablePlan(args.schema, plan.document, args.operationName)?.coerce(args.variableValues ?? {});
  if (variables === undefined) return undefined;
  let argumentValues: Record<string, unknown>;
  try {
    argumentValues = getArgumentValues(run.definition, run.node, variables);
  } catch {
    return undefined;
  }
  const context = args.contextValue;
  const info: GraphQLResolveInfo = {
    fieldName: run.definition.name,
    fieldNodes: [run.node],
    returnType: run.definition.type,
    parentType: run.parentType,
    path: { prev: undefined, key: run.key, typename: run.parentType.name },
    schema: args.schema,
    fragments: run.fragments,
    rootValue: args.rootValue,
    operation: run.operation,
    variableValues: variables,
  };
  const resolve = run.definition.resolve ?? args.fieldResolver ?? defaultFieldResolver;
  let value: unknown;
  try {
    value = resolve(args.rootValue, argumentValues, context, info);
  } catch (error) {
    return Promise.resolve(refusedRun(later, run, error));
  }
  // The answer's first part is built a turn of the event loop later. undici writes a request on a
  // reused keep-alive connection in the loop's check phase (its check of an idle socket), after
  // whatever the turn still has to do; the run's model or agent request, made by the resolver, so
  // leaves first, and the first part is built while the upstream works (BENCHMARKS.md, step 36).
  return Promise.resolve(value)
    .then(nextTurn)
    .then(
      (view) => {
        // As the executor completes a non-null object.
        if (view instanceof Error) return refusedRun(later, run, view);
        if (view == null)
          return refusedRun(
            later,
            run,
            new Error(`Cannot return null for non-nullable field ${run.parentType.name}.${run.definition.name}.`),
          );
        const errors: GraphQLError[] = [];
        let object: Record<string, unknown>;
        try {
          object = writeFields(run.writer, view as Record<string, unknown>, [run.key], errors, context);
        } catch (error) {
          // A non-null field of the run failed: the executor nulls the run, and `data` with it.
          later.close();
          errors.push(error as GraphQLError);
          return { errors, data: null };
        }
        // The streamed lists' keys come after the others, as the executor sets a key once its value settles.
        for (const key of run.streamed) object[key] = [];
        later.runPlanned = true;
        const messages = plan.messages!;
        later.writeMessages(messages, view, [run.key, run.messagesKey], context);
        const meta = run.metaEvents;
        if (meta !== undefined) {
          later.awaitMetaEvents((view as { metaEvents?: unknown }).metaEvents, () =>
            execute({
              schema: meta.schema,
              document: meta.document,
              rootValue: view,
              contextValue: context,
              fieldResolver: args.fieldResolver,
            }),
          );
        }
        const data: Record<string, unknown> = Object.create(null);
        data[run.key] = object;
        const initialResult = errors.length === 0 ? { data, hasNext: true } : { errors, data, hasNext: true };
        return { initialResult, subsequentResults: later.adopt(undefined) } as ExecutionOutcome;
      },
      (error: unknown) => refusedRun(later, run, error),
    );
}

/** The executor's result for a run its resolver refused: the error located at the run's field, `data` null. */
function refusedRun(later: LaterPayloads, run: RunPlan, error: unknown): ExecutionOutcome {
  later.close();
  return { errors: [locatedError(coerceError(error), [run.node], [run.key])], data: null };
}
