import { execute, isIncrementalResults } from '@graphql-tools/executor';
import { defaultFieldResolver, type ExecutionArgs, type GraphQLFieldResolver } from 'graphql';
import { LaterPayloads } from './later-payloads.js';
import { leafStreamPlan } from './leaf-streams.js';
import type { ExecutionOutcome, Replay } from './payloads.js';
import { runByPlan } from './run-by-plan.js';
import { refusedDirectiveArguments } from '../directive-arguments.js';
import { withoutOrphansIn } from '../nulled-paths.js';
import { owningLists } from '../owned-lists.js';
import { withCoercedVariables } from './variables.js';

export { LaterPayloads } from './later-payloads.js';
export type { LeafSink } from './leaf-stream.js';
export type { ExecutionOutcome, LaterPayload, Replay } from './payloads.js';

/** A later payload framed as Apollo frames it in `multipart/mixed; deferSpec=20220824` (its writeMultipartBody). */
export function multipartPart(json: string, hasNext: boolean): string {
  return `content-type: application/json; charset=utf-8\r\n\r\n${json}\r\n---${hasNext ? '' : '--'}\r\n`;
}

/**
 * Runs operations with @defer/@stream on the tools executor for Apollo (its
 * `legacyExperimentalExecuteIncrementally`) and for graphql-ws's queries and mutations, with their
 * variables coerced ahead of it (graphql/fast/variables.ts), and gives an operation's later payloads to
 * its transport when the context carries a `LaterPayloads` (HTTP).
 */
export async function executeIncrementally(args: ExecutionArgs): Promise<ExecutionOutcome> {
  const context = args.contextValue as { laterPayloads?: LaterPayloads; replay?: Replay } | undefined;
  // The transport ran the operation already (a known document, transports/http.ts): Apollo answers with its outcome.
  const replay = context?.replay;
  if (replay !== undefined) {
    if ('error' in replay) throw replay.error;
    return replay.result;
  }
  const later = context?.laterPayloads;
  // A directive's arguments the executor would refuse only once running (graphql/directive-arguments.ts): the client's mistake, before anything runs.
  const refused = refusedDirectiveArguments(args);
  if (refused !== undefined) {
    later?.close();
    return { errors: [refused] };
  }
  // Every list the executor reads from an async iterable, read so that none of its promises floats (graphql/owned-lists.ts).
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
      return fields.has(node) ? later!.leaf((source as Record<string, unknown>)[info.fieldName], info) : base(source, fieldArgs, context, info);
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
