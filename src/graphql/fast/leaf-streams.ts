import {
  GraphQLString,
  Kind,
  getNamedType,
  isListType,
  isNonNullType,
  isObjectType,
  locatedError,
  visit,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { perOperation } from '../documents.js';
import { planMessages, type MessagePlan } from './message-plan.js';
import { coerceError, completeLeaf } from './message-writing.js';

/**
 * Streamed text written by the transport instead of the executor ("leaf streams").
 *
 * In the stock client's document each message's text is `content @stream`: a list of strings that
 * grows by a token at a time. The tools executor makes every streamed item a record of its own: a
 * promise, an async step, a `Promise.race` over every open record, a path array and an items array,
 * each record chained to the one before until the stream ends. Per token that was about 40% of the
 * gateway's garbage under paced load (BENCHMARKS.md, step 25), for an item that is one string.
 *
 * So for the narrow shape where that item is known to be a string from the run (below), the
 * executor runs the document without that field's `@stream`, the field resolves to `[]` (what the
 * executor writes for a stream with no initial items), and the run's text stream is handed to the
 * operation's `LaterPayloads`, which writes each item as the executor writes one: the same
 * payload, path and index, after the payload that carries the message and before the last one.
 * An item GraphQL's `String` refuses ends the stream with the executor's own error, formatted as
 * Apollo formats a later payload's (direct-answer.ts). test/incremental.test.ts compares whole answers
 * with the executor's, byte for byte, for every streamed document shape the tests use.
 *
 * Where timing decides, the two may cut the same text differently; both are valid answers with the
 * same text at every path. Chunks that wait (a client that reads slowly) are one item here, and
 * one item per chunk that arrived separately for the executor, which reads eagerly; and items of
 * two streams that arrive in one turn are two payloads here, where the executor may put them in
 * one. With chunks that arrive in turns of their own, as a model sends them, the bytes are the same.
 * One more case where timing decides: when the executor nulls a message item, it drops what is still
 * to come under the messages list at once, and the transport does so when that payload goes out
 * (`LaterPayloads.release`); a chunk of another message that arrived in the same turn as the refused
 * item, or was held back by a slow client until then, may go out here and not from the executor.
 *
 * The shape: a mutation's `generateCopilotResponse` field (whose messages are the run's), its
 * `messages @stream`, and in the message items a `@stream` field of type `[String!]!` with no
 * resolver of its own (`content`, `arguments`). No `@stream` argument (label, initialCount, if),
 * no `@defer` above the field, no named fragment at any of those levels, each of those fields
 * alone under its response key, so the executor cannot merge it with another selection, and no
 * message `status` outside `@defer`. Anything else runs on the executor as before.
 */

/**
 * A document's leaf streams: the document the executor runs (without those fields' `@stream`, and,
 * where the message plan takes the document, without the run's `@defer`), and the fields taken out
 * of it (its nodes).
 */
export interface LeafStreamPlan {
  readonly document: DocumentNode;
  readonly fields: WeakSet<FieldNode>;
  /** Where the document allows it, the messages too (graphql/fast/message-plan.ts). */
  readonly messages?: MessagePlan;
}

/** The root field whose messages, and their text streams, come from the run (views/copilot-response.ts). */
const RUN_FIELD = 'generateCopilotResponse';
const MESSAGES_FIELD = 'messages';
/** The one field of a message that settles late (views/copilot-response.ts). */
const LATE_FIELD = 'status';

/** The leaf streams of an operation of a validated document, worked out once per document and operation. */
export const leafStreamPlan = perOperation(planFor);

function planFor(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): LeafStreamPlan | undefined {
  if (operation.operation !== 'mutation') return undefined;
  const mutation = schema.getMutationType();
  const runField = mutation?.getFields()[RUN_FIELD];
  if (runField === undefined) return undefined;

  const taken = new Set<FieldNode>();
  for (const { field: run } of alone(operation.selectionSet)) {
    if (run.name.value !== RUN_FIELD || !run.selectionSet) continue;
    for (const { field: messages } of alone(run.selectionSet)) {
      if (messages.name.value !== MESSAGES_FIELD || !messages.selectionSet || !plainStream(messages)) continue;
      // A message's status settles when the message ends; selected outside @defer, it holds the
      // message's item back until then, and the executor's text items with it.
      if (selectsNow(messages.selectionSet, LATE_FIELD)) continue;
      for (const { field, typeName } of alone(messages.selectionSet)) {
        if (!plainStream(field) || field.selectionSet || typeName === undefined) continue;
        const type = schema.getType(typeName);
        const definition = isObjectType(type) ? type.getFields()[field.name.value] : undefined;
        // `[String!]!`, resolved by the executor's default resolver (a resolver of its own would
        // not see the field resolver this plan gives the executor).
        if (definition === undefined || definition.resolve !== undefined) continue;
        const listType = isNonNullType(definition.type) ? definition.type.ofType : definition.type;
        if (!isListType(listType) || !isNonNullType(listType.ofType) || getNamedType(listType.ofType) !== GraphQLString)
          continue;
        taken.add(field);
      }
    }
  }
  if (taken.size === 0) return undefined;

  const fields = new WeakSet<FieldNode>();
  const rewritten = visit(document, {
    Field(node) {
      if (!taken.has(node)) return undefined;
      const withoutStream: FieldNode = {
        ...node,
        directives: node.directives!.filter((directive) => directive.name.value !== 'stream'),
      };
      fields.add(withoutStream);
      return withoutStream;
    },
  });
  const rewrittenOperation = rewritten.definitions[document.definitions.indexOf(operation)] as OperationDefinitionNode;
  const messages = planMessages(schema, rewritten, rewrittenOperation, RUN_FIELD, MESSAGES_FIELD, fields);
  return messages === undefined
    ? { document: rewritten, fields }
    : { document: messages.document, fields, messages: messages.plan };
}

/** Whether a selection set selects a field of that name outside @defer (through inline fragments). */
function selectsNow(selectionSet: SelectionSetNode, name: string): boolean {
  return selectionSet.selections.some((selection) =>
    selection.kind === Kind.FIELD
      ? selection.name.value === name
      : selection.kind === Kind.INLINE_FRAGMENT &&
        !surelyDeferred(selection.directives) &&
        selectsNow(selection.selectionSet, name),
  );
}

/** A `@defer` that defers whatever the variables: no `if`, or `if: true` written in the document. */
function surelyDeferred(directives: readonly DirectiveNode[] | undefined): boolean {
  return (
    directives?.some((directive) => {
      if (directive.name.value !== 'defer') return false;
      const condition = directive.arguments?.find((argument) => argument.name.value === 'if');
      return condition === undefined || (condition.value.kind === Kind.BOOLEAN && condition.value.value);
    }) ?? false
  );
}

/** `@stream` with no arguments: no label, no initial items, no condition. */
function plainStream(field: FieldNode): boolean {
  const streams = field.directives?.filter((directive) => directive.name.value === 'stream') ?? [];
  return streams.length === 1 && (streams[0].arguments?.length ?? 0) === 0;
}

/**
 * The fields of a selection set that are alone under their response key, seen through inline
 * fragments without `@defer`, each with the type condition it sits under; nothing at all when the
 * set spreads a named fragment (which may add a field under any key).
 */
function alone(selectionSet: SelectionSetNode): { field: FieldNode; typeName: string | undefined }[] {
  const byKey = new Map<string, { field: FieldNode; typeName: string | undefined; deferred: boolean }[]>();
  let spreads = false;
  const collect = (set: SelectionSetNode, typeName: string | undefined, deferred: boolean): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        const list = byKey.get(key) ?? [];
        list.push({ field: selection, typeName, deferred });
        byKey.set(key, list);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const defers = selection.directives?.some((directive) => directive.name.value === 'defer') ?? false;
        collect(selection.selectionSet, selection.typeCondition?.name.value ?? typeName, deferred || defers);
      } else {
        spreads = true;
      }
    }
  };
  collect(selectionSet, undefined, false);
  if (spreads) return [];
  const result: { field: FieldNode; typeName: string | undefined }[] = [];
  for (const list of byKey.values()) {
    if (list.length === 1 && !list[0].deferred) result.push(list[0]);
  }
  return result;
}

/**
 * One item of a leaf stream completed as the executor completes an item of a `[String!]` list:
 * the string, or the error the executor would locate at the item's path.
 */
export function completeLeafItem(
  value: unknown,
  typeName: string,
  fieldName: string,
  nodes: readonly FieldNode[],
  path: readonly (string | number)[],
): string | Error {
  if (typeof value === 'string') return value;
  try {
    if (value instanceof Error) throw value;
    if (value == null) throw new Error(`Cannot return null for non-nullable field ${typeName}.${fieldName}.`);
    return completeLeaf(GraphQLString, value) as string;
  } catch (raw) {
    return locatedError(coerceError(raw), nodes, path);
  }
}
