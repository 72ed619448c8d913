import { getFragmentsFromDocument } from '@graphql-tools/executor';
import { collectSubFields } from '@graphql-tools/utils';
import {
  GraphQLObjectType,
  GraphQLSchema,
  Kind,
  isAbstractType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  visit,
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLAbstractType,
  type GraphQLField,
  type GraphQLLeafType,
  type OperationDefinitionNode,
} from 'graphql';

/**
 * The run's messages written by the transport instead of the executor ("the message plan").
 *
 * With the leaf streams (graphql/fast/leaf-streams.ts) the executor no longer made a record per token,
 * but it still made, per message, a stream record, the item's completion (its type resolved, its
 * fields collected and completed), the deferred status's record, and a `Promise.race` over every
 * open record each time the transport asked for a payload; and the run's deferred status at the
 * end. For an agent run of one message that was about 5% of its CPU (BENCHMARKS.md, step 32).
 *
 * So for the stock client's shape (below) the plan works out once per document how each kind of
 * message is written: its fields as the executor collects them for that type (the same
 * `collectSubFields` the executor calls, so the merging and the order are the executor's), each
 * completed as the executor completes a field (`serialize` of its type, the same errors, located
 * at the same path with the same nodes), the streamed texts last (the executor sets a streamed
 * field's key when its first, empty part settles), and the message's deferred status once it
 * settles. The same for the root's deferred status. The transport writes each as the executor's
 * payload for it (graphql/fast/incremental.ts `MessageStream`). The executor still runs the rest of the
 * document, the initial result and `metaEvents` with their payloads, unless the run plan (RunPlan,
 * below) takes those too.
 *
 * The shape: the leaf streams' (one `generateCopilotResponse`, alone in the operation, and its
 * `messages @stream` alone under its key), plus: no named fragment and no variable in a directive
 * anywhere under the run's field (so what is collected does not depend on the request); in a
 * message, only leaf fields, `__typename` and the leaf streams outside `@defer` (its status, a
 * promise until the message ends, only deferred), no arguments, no resolvers of their own (the
 * view's values are read as properties: they hold values, never functions, which the default
 * resolver would call); at most
 * one `@defer` per message and one on the run's field, without label, each selecting only leaf
 * fields, `__typename` and objects of those (the status). Anything else runs on the executor.
 */

/** How one field of an object is written. */
export type FieldWriter =
  | { readonly kind: 'typename'; readonly key: string }
  | {
      readonly kind: 'leaf';
      readonly key: string;
      readonly name: string;
      readonly nodes: readonly FieldNode[];
      readonly nonNull: boolean;
      readonly type: GraphQLLeafType;
    }
  | {
      readonly kind: 'object';
      readonly key: string;
      readonly name: string;
      readonly nodes: readonly FieldNode[];
      readonly nonNull: boolean;
      readonly type: GraphQLObjectType | GraphQLAbstractType;
      /** By concrete type name: how a value of that type is written. */
      readonly objects: ReadonlyMap<string, ObjectWriter>;
    }
  /** A leaf stream (graphql/fast/leaf-streams.ts): written as `[]`, its items by the transport. */
  | { readonly kind: 'stream'; readonly key: string; readonly name: string; readonly nodes: readonly FieldNode[] };

/** How an object of one concrete type is written: its fields in the executor's order, and its deferred fields. */
export interface ObjectWriter {
  readonly type: GraphQLObjectType;
  readonly fields: readonly FieldWriter[];
  /** The fields of its `@defer` (none when it has none). */
  readonly deferred: readonly FieldWriter[] | undefined;
}

/** A document's message plan. */
export interface MessagePlan {
  /** The `messages` field (its node in the document the executor runs). */
  readonly messages: FieldNode;
  /** The messages' abstract type, whose `resolveType` names a message's type. */
  readonly messageType: GraphQLAbstractType;
  /** How a message of each type is written. */
  readonly items: ReadonlyMap<string, ObjectWriter>;
  /** The run field's deferred fields (its status), when the document defers any. */
  readonly runDeferred: readonly FieldWriter[] | undefined;
  /** The run field's type, for errors in its deferred fields. */
  readonly runType: GraphQLObjectType;
  /** Where the document allows it, the run's own field too: the answer's first part (see RunPlan). */
  readonly run: RunPlan | undefined;
}

/**
 * The run's field written by the plan too ("the run plan"), so that the executor does not run at all
 * for the stock client's document: its resolver called with the arguments the executor would give
 * it, the answer's first part written as the executor writes it (the run's fields that are there at
 * once, in the executor's order, then each streamed list's `[]` in order, as the executor sets a
 * key when its value settles), the messages by the message plan, and the meta events by the executor
 * after all, on a document of their own (`metaEvents`), started only once the run raises one (an
 * agent's interrupt: rare).
 *
 * The shape, besides the message plan's: the run's field without directives, alias allowed; at
 * once (outside its `@defer`) only `__typename`, leaf fields and objects of those (`threadId`,
 * `runId`, `extensions`: the view holds their values, never promises), `messages @stream` and
 * `metaEvents @stream` (no arguments), each alone under its key; no variable under `metaEvents`.
 * The run's `status` only deferred (it settles at the run's end). Anything else runs on the executor.
 */
export interface RunPlan {
  /** The run's field in the document the executor would run (errors located at it), and its response key. */
  readonly node: FieldNode;
  readonly key: string;
  readonly definition: GraphQLField<unknown, unknown>;
  /**
   * The mutation type, the operation and the document's fragments (the executor's own object), for the resolver's info.
   */
  readonly parentType: GraphQLObjectType;
  readonly operation: OperationDefinitionNode;
  readonly fragments: Record<string, FragmentDefinitionNode>;
  /** The run's fields that are there at once, in the executor's order (no streams among them). */
  readonly writer: ObjectWriter;
  /** The response keys of the streamed lists, in the executor's order: each `[]` in the first part. */
  readonly streamed: readonly string[];
  /** The `messages` field's response key. */
  readonly messagesKey: string;
  /** The meta events' own execution, when the document selects them. */
  readonly metaEvents: MetaEventsPlan | undefined;
}

/**
 * The meta events' execution: the operation with the run's field selecting only `metaEvents`,
 * without variables, on a schema whose mutation's run field resolves to the run's view it is given
 * as the root value (the same types, so the executor writes each meta event as it would in the
 * whole operation, at the same paths).
 */
export interface MetaEventsPlan {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
}

/** The plan's refusal of a shape it does not take. */
class NotTaken extends Error {}

/**
 * The message plan of an operation whose leaf streams are planned: the document the executor then
 * runs (the run's deferred fragment taken out) and the plan, or undefined.
 */
export function planMessages(
  ...args: Parameters<typeof plan>
): { document: DocumentNode; plan: MessagePlan } | undefined {
  try {
    return plan(...args);
  } catch (error) {
    if (error instanceof NotTaken) return undefined;
    throw error;
  }
}

function plan(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  runFieldName: string,
  messagesFieldName: string,
  streamed: WeakSet<FieldNode>,
): { document: DocumentNode; plan: MessagePlan } {
  const [run, ...others] = operation.selectionSet.selections;
  if (
    others.length > 0 ||
    run.kind !== Kind.FIELD ||
    run.name.value !== runFieldName ||
    run.directives?.length ||
    !run.selectionSet
  )
    throw new NotTaken();
  if (!independentOfRequest(run)) throw new NotTaken();
  const runDefinition = schema.getMutationType()?.getFields()[runFieldName];
  const runType = runDefinition && (isNonNullType(runDefinition.type) ? runDefinition.type.ofType : runDefinition.type);
  if (!isObjectType(runType) || runType.isTypeOf) throw new NotTaken();

  // The run field's deferred fragment comes out of the executor's document: the plan writes it.
  const deferredHere = run.selectionSet.selections.filter(
    (selection) =>
      selection.kind === Kind.INLINE_FRAGMENT &&
      selection.directives?.some((directive) => directive.name.value === 'defer'),
  );
  if (deferredHere.length > 1) throw new NotTaken();
  const runCollected = collectSubFields(schema, {}, {}, runType, [run]);
  if (runCollected.patches.length !== deferredHere.length) throw new NotTaken();
  const runDeferred =
    runCollected.patches.length === 1
      ? writersOf(schema, runType, runCollected.patches[0], streamed, 'deferred')
      : undefined;

  const messagesNodes = runCollected.fields.get(messagesFieldName);
  if (messagesNodes === undefined || messagesNodes.length !== 1) throw new NotTaken();
  const messages = messagesNodes[0];
  if (messages.name.value !== messagesFieldName || messages.arguments?.length) throw new NotTaken();
  const streams = messages.directives?.filter((directive) => directive.name.value === 'stream') ?? [];
  if (streams.length !== 1 || streams[0].arguments?.length || messages.directives!.length !== 1) throw new NotTaken();
  for (const patch of runCollected.patches) if (patch.fields.has(messagesFieldName)) throw new NotTaken();

  // [BaseMessageOutput!]!: each message is written by its own type's writer.
  const listType = runType.getFields()[messagesFieldName]?.type;
  const list = listType && isNonNullType(listType) ? listType.ofType : undefined;
  const itemType = isListType(list) ? list.ofType : undefined;
  const messageType = isNonNullType(itemType) ? itemType.ofType : undefined;
  if (!messageType || !isAbstractType(messageType) || typeof messageType.resolveType !== 'function')
    throw new NotTaken();
  const items = new Map<string, ObjectWriter>();
  for (const type of schema.getPossibleTypes(messageType)) {
    if (type.isTypeOf) throw new NotTaken();
    const collected = collectSubFields(schema, {}, {}, type, [messages]);
    if (collected.patches.length > 1) throw new NotTaken();
    items.set(type.name, {
      type,
      fields: writersOf(schema, type, collected, streamed, 'item'),
      deferred:
        collected.patches.length === 1
          ? writersOf(schema, type, collected.patches[0], streamed, 'deferred')
          : undefined,
    });
  }

  const executed = deferredHere.length === 0 ? document : withoutSelection(document, deferredHere[0]);
  // The messages node is not under the fragment taken out: it is the same node in the executed document.
  const executedOperation = executed.definitions[document.definitions.indexOf(operation)] as OperationDefinitionNode;
  const runPlan = planRun(schema, executed, executedOperation, runDefinition!, runCollected.fields, messages, streamed);
  return { document: executed, plan: { messages, messageType, items, runDeferred, runType, run: runPlan } };
}

/** The run plan (see RunPlan), or undefined where the document asks for more than it takes. */
function planRun(
  schema: GraphQLSchema,
  executed: DocumentNode,
  operation: OperationDefinitionNode,
  definition: GraphQLField<unknown, unknown>,
  fields: Map<string, FieldNode[]>,
  messages: FieldNode,
  streamed: WeakSet<FieldNode>,
): RunPlan | undefined {
  const parentType = schema.getMutationType()!;
  const run = operation.selectionSet.selections[0] as FieldNode;
  const runType = (isNonNullType(definition.type) ? definition.type.ofType : definition.type) as GraphQLObjectType;
  if (run.directives?.length || !isNonNullType(definition.type)) return undefined;
  const now = new Map<string, FieldNode[]>();
  const lists: string[] = [];
  let messagesKey: string | undefined;
  let metaEvents: FieldNode | undefined;
  for (const [key, nodes] of fields) {
    if (nodes.length === 1 && nodes[0] === messages) {
      messagesKey = key;
      lists.push(key);
    } else if (nodes[0].name.value === 'metaEvents') {
      const node = nodes[0];
      // One key for the meta events (their execution writes one).
      if (
        metaEvents !== undefined ||
        nodes.length !== 1 ||
        node.arguments?.length ||
        node.directives?.length !== 1 ||
        node.directives[0].name.value !== 'stream' ||
        node.directives[0].arguments?.length
      )
        return undefined;
      if (usesVariables(node)) return undefined;
      metaEvents = node;
      lists.push(key);
    } else {
      now.set(key, nodes);
    }
  }
  if (messagesKey === undefined) return undefined;
  let writer: ObjectWriter;
  try {
    // The view's other fields are values (threadId, runId, extensions), but its status, a promise until the run's end.
    for (const nodes of now.values()) if (nodes[0].name.value === 'status') throw new NotTaken();
    writer = {
      type: runType,
      fields: writersOf(schema, runType, { fields: now }, streamed, 'nested'),
      deferred: undefined,
    };
  } catch (error) {
    if (error instanceof NotTaken) return undefined;
    throw error;
  }
  const key = run.alias?.value ?? run.name.value;
  return {
    node: run,
    key,
    definition,
    parentType,
    operation,
    fragments: getFragmentsFromDocument(executed),
    writer,
    streamed: lists,
    messagesKey,
    metaEvents: metaEvents && {
      schema: metaEventsSchema(schema, definition),
      document: metaEventsDocument(operation, run, metaEvents),
    },
  };
}

/** Whether a variable appears under the node. */
function usesVariables(node: ASTNode): boolean {
  let found = false;
  visit(node, {
    Variable() {
      found = true;
    },
  });
  return found;
}

/** The operation with the run's field (without arguments) selecting only its meta events, and no variables. */
function metaEventsDocument(operation: OperationDefinitionNode, run: FieldNode, metaEvents: FieldNode): DocumentNode {
  return {
    kind: Kind.DOCUMENT,
    definitions: [
      {
        ...operation,
        variableDefinitions: [],
        directives: [],
        selectionSet: {
          kind: Kind.SELECTION_SET,
          selections: [{ ...run, arguments: [], selectionSet: { kind: Kind.SELECTION_SET, selections: [metaEvents] } }],
        },
      },
    ],
  };
}

/** By schema: the meta events' schema (see MetaEventsPlan), made once. */
const metaEventsSchemas = new WeakMap<GraphQLSchema, GraphQLSchema>();

function metaEventsSchema(schema: GraphQLSchema, definition: GraphQLField<unknown, unknown>): GraphQLSchema {
  let made = metaEventsSchemas.get(schema);
  if (made === undefined) {
    const config = schema.toConfig();
    const mutation = config.mutation!;
    const root = new GraphQLObjectType({
      name: mutation.name,
      fields: { [definition.name]: { type: definition.type, resolve: (view: unknown) => view } },
    });
    // The same types (one schema's types may be another's), the run's field alone on the mutation; valid as the schema
    // is.
    made = new GraphQLSchema({
      ...config,
      mutation: root,
      types: config.types.filter((type) => type !== mutation),
      assumeValid: true,
    });
    metaEventsSchemas.set(schema, made);
  }
  return made;
}

/**
 * The writers of a selection's fields for one concrete type, in the executor's order. Where: a
 * message's own fields (read at once: leaves, `__typename` and its text streams; its objects, the
 * status, are promises until the message ends), a deferred fragment's (objects too: a promise is
 * waited for), or an object's inside those (read at once: the settled status's).
 */
function writersOf(
  schema: GraphQLSchema,
  type: GraphQLObjectType,
  collected: { fields: Map<string, FieldNode[]>; label?: string },
  streamed: WeakSet<FieldNode>,
  where: 'item' | 'deferred' | 'nested',
): FieldWriter[] {
  if (collected.label !== undefined) throw new NotTaken();
  const writers: FieldWriter[] = [];
  for (const [key, nodes] of collected.fields) {
    const name = nodes[0].name.value;
    if (name === '__typename') {
      writers.push({ kind: 'typename', key });
      continue;
    }
    if (
      nodes.some(
        (node) =>
          node.arguments?.length ||
          node.directives?.some((directive) => directive.name.value === 'stream' || directive.name.value === 'defer'),
      )
    )
      throw new NotTaken();
    const definition = type.getFields()[name];
    if (definition === undefined || definition.resolve !== undefined) throw new NotTaken();
    if (nodes.length === 1 && streamed.has(nodes[0])) {
      if (where !== 'item') throw new NotTaken();
      writers.push({ kind: 'stream', key, name, nodes });
      continue;
    }
    const nonNull = isNonNullType(definition.type);
    const inner = nonNull ? (definition.type as { ofType: unknown }).ofType : definition.type;
    if (isLeafType(inner)) {
      writers.push({ kind: 'leaf', key, name, nodes, nonNull, type: inner });
    } else if (isObjectType(inner) || isAbstractType(inner)) {
      if (where === 'item' || (isAbstractType(inner) && typeof inner.resolveType !== 'function')) throw new NotTaken();
      const objects = new Map<string, ObjectWriter>();
      for (const concrete of isObjectType(inner) ? [inner] : schema.getPossibleTypes(inner)) {
        if (concrete.isTypeOf) throw new NotTaken();
        const sub = collectSubFields(schema, {}, {}, concrete, nodes);
        if (sub.patches.length > 0) throw new NotTaken();
        objects.set(concrete.name, {
          type: concrete,
          fields: writersOf(schema, concrete, sub, streamed, 'nested'),
          deferred: undefined,
        });
      }
      writers.push({ kind: 'object', key, name, nodes, nonNull, type: inner, objects });
    } else {
      // Lists: not in a message.
      throw new NotTaken();
    }
  }
  return writers;
}

/** No named fragment and no variable in a directive under the node: what is collected is the same for every request. */
function independentOfRequest(node: ASTNode): boolean {
  let independent = true;
  visit(node, {
    FragmentSpread() {
      independent = false;
    },
    Directive(directive) {
      if (
        directive.arguments?.some(
          (argument) =>
            argument.value.kind !== Kind.BOOLEAN &&
            argument.value.kind !== Kind.STRING &&
            argument.value.kind !== Kind.INT,
        )
      )
        independent = false;
    },
  });
  return independent;
}

function withoutSelection(document: DocumentNode, removed: ASTNode): DocumentNode {
  return visit(document, {
    InlineFragment(node) {
      return node === removed ? null : undefined;
    },
  });
}
