import {
  GraphQLObjectType,
  GraphQLSchema,
  Kind,
  TypeInfo,
  getOperationAST,
  visit,
  visitWithTypeInfo,
  type ASTNode,
  type DocumentNode,
  type ExecutionArgs,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
} from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import { compile } from './event-execution.js';

// A subscription's events are executed against an event document, on an event schema, in which the
// subscription root's fields take no arguments (see createSubscriber, subscribe.ts): both made once
// and kept, with the event document's compiled form.

const eventSchemas = new WeakMap<GraphQLSchema, GraphQLSchema>();

/** The event schema of a schema, made once. */
export function eventSchemaOf(schema: GraphQLSchema): GraphQLSchema {
  let eventSchema = eventSchemas.get(schema);
  if (!eventSchema) {
    eventSchema = withoutRootArguments(schema);
    eventSchemas.set(schema, eventSchema);
  }
  return eventSchema;
}

/** The schema with the subscription root's fields taking no arguments (see createSubscriber). */
function withoutRootArguments(schema: GraphQLSchema): GraphQLSchema {
  const root = schema.getSubscriptionType();
  if (!root) return schema;
  const config = root.toConfig();
  const fields = Object.fromEntries(
    Object.entries(config.fields).map(([name, field]) => [name, { ...field, args: {} }]),
  );
  const eventRoot = new GraphQLObjectType({ ...config, fields });
  const schemaConfig = schema.toConfig();
  return new GraphQLSchema({
    ...schemaConfig,
    subscription: eventRoot,
    types: schemaConfig.types.map((type) => (type === root ? eventRoot : type)),
  });
}

/** An event document, the variables the executed operation still declares in it, and its compiled form. */
export interface EventDocument {
  document: DocumentNode;
  variables: readonly string[];
  compiled: CompiledQuery | undefined;
}

/** Event documents by original document (documents are parsed once and shared: DocumentCache, Apollo's store). */
const eventDocuments = new WeakMap<
  DocumentNode,
  { document: DocumentNode; compiled: Map<string | null, CompiledQuery | undefined> }
>();

export function eventDocumentOf(
  schema: GraphQLSchema,
  eventSchema: GraphQLSchema,
  document: DocumentNode,
  operationName: ExecutionArgs['operationName'],
): EventDocument {
  let entry = eventDocuments.get(document);
  if (!entry) {
    entry = { document: toEventDocument(schema, document), compiled: new Map() };
    eventDocuments.set(document, entry);
  }
  const name = operationName ?? null;
  if (!entry.compiled.has(name)) entry.compiled.set(name, compile(eventSchema, entry.document, operationName));
  const operation = getOperationAST(entry.document, operationName);
  const variables = operation?.variableDefinitions?.map((definition) => definition.variable.name.value) ?? [];
  return { document: entry.document, variables, compiled: entry.compiled.get(name) };
}

/** Whether a subscription's events run on the compiled event document (true) or on the executor alone. */
export function eventsRunCompiled(schema: GraphQLSchema, document: DocumentNode, operationName?: string): boolean {
  return eventDocumentOf(schema, eventSchemaOf(schema), document, operationName).compiled !== undefined;
}

/**
 * The document with the arguments of the subscription root's fields removed (wherever they are
 * selected: the operation, inline fragments, fragments on the subscription type), and each
 * subscription's variable definitions reduced to the variables still used.
 */
export function toEventDocument(schema: GraphQLSchema, document: DocumentNode): DocumentNode {
  const root = schema.getSubscriptionType();
  if (!root) return document;
  const typeInfo = new TypeInfo(schema);
  const stripped: DocumentNode = visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node: FieldNode) {
        if (typeInfo.getParentType() !== root || !node.arguments?.length) return undefined;
        return { ...node, arguments: [] };
      },
    }),
  );
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of stripped.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return {
    ...stripped,
    definitions: stripped.definitions.map((definition) => {
      if (definition.kind !== Kind.OPERATION_DEFINITION || definition.operation !== 'subscription') return definition;
      const used = variablesUsed(definition, fragments);
      const kept = definition.variableDefinitions?.filter((variable) => used.has(variable.variable.name.value));
      return { ...definition, variableDefinitions: kept } satisfies OperationDefinitionNode;
    }),
  };
}

/** Names of the variables an operation refers to, in its selections and the fragments it spreads. */
function variablesUsed(
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): Set<string> {
  const used = new Set<string>();
  const visited = new Set<string>();
  const collect = (node: ASTNode): void => {
    visit(node, {
      VariableDefinition: () => false,
      Variable(variable) {
        used.add(variable.name.value);
      },
      FragmentSpread(spread) {
        const name = spread.name.value;
        const fragment = fragments.get(name);
        if (visited.has(name) || !fragment) return;
        visited.add(name);
        collect(fragment);
      },
    });
  };
  collect(operation);
  return used;
}
