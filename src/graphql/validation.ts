import {
  GraphQLError,
  Kind,
  specifiedRules,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';

/** Root fields that start a run (a model call that costs money). */
const RUN_FIELDS = new Set(['generateCopilotResponse', 'copilotRun']);

/** The most lexical tokens a document may have: the stock client's mutation has under 300. */
export const MAX_DOCUMENT_TOKENS = 20_000;

/**
 * One run per operation, reported early for the common case: a document that asks for a
 * run-starting field under two response keys (aliases). Selections that GraphQL merges (the same
 * key twice) are one run. Repeats the executor runs separately, such as a fragment spread both
 * plainly and with @defer, are refused when the second run would start (RunLauncher).
 */
const SingleRunPerOperationRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const fragments = new Map(
      context
        .getDocument()
        .definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d]] : [])),
    );
    const keys = new Set<string>();
    const collect = (selectionSet: SelectionSetNode, seen: Set<string>) => {
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) {
          if (RUN_FIELDS.has(selection.name.value)) keys.add(selection.alias?.value ?? selection.name.value);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          collect(selection.selectionSet, seen);
        } else if (!seen.has(selection.name.value)) {
          seen.add(selection.name.value);
          const fragment = fragments.get(selection.name.value);
          if (fragment) collect(fragment.selectionSet, seen);
        }
      }
    };
    collect(operation.selectionSet, new Set());
    if (keys.size > 1) {
      context.reportError(
        new GraphQLError(
          `An operation may start one run, but this one asks for ${keys.size}: ${[...keys].join(', ')}.`,
          {
            nodes: operation,
            extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
          },
        ),
      );
    }
  },
});

/**
 * The most fields an operation may select once its fragments are expanded. Fragments spread under
 * aliases multiply: a document of 1 KB can expand to hundreds of thousands of fields, and work (the
 * executor's per object, graphql-jit's compiler for the whole document) grows with the expansion,
 * not with the text. The stock client's mutation expands to about 150, GraphiQL's introspection
 * query to about 250.
 */
const MAX_EXPANDED_FIELDS = 2_000;

/**
 * The number of fields `operation` selects with its fragments expanded, counted without expanding
 * them (each fragment's count is computed once), so a bomb is measured in time linear in its text.
 */
export function expandedFieldCount(document: DocumentNode, operation: OperationDefinitionNode): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return fieldCounter(fragments)(operation.selectionSet);
}

/**
 * Counts the fields a selection set selects with its fragments (`fragments`, by name) expanded, each fragment's count
 * computed once.
 */
export function fieldCounter(
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): (selectionSet: SelectionSetNode | undefined) => number {
  const counted = new Map<string, number>();
  const counting = new Set<string>();
  const count = (selectionSet: SelectionSetNode | undefined): number => {
    let total = 0;
    for (const selection of selectionSet?.selections ?? []) {
      if (selection.kind === Kind.FIELD) total += 1 + count(selection.selectionSet);
      else if (selection.kind === Kind.INLINE_FRAGMENT) total += count(selection.selectionSet);
      else {
        const name = selection.name.value;
        let fragmentCount = counted.get(name);
        if (fragmentCount === undefined) {
          // A cycle is GraphQL's own validation error (NoFragmentCycles); it counts nothing here.
          if (counting.has(name)) continue;
          counting.add(name);
          fragmentCount = count(fragments.get(name)?.selectionSet);
          counting.delete(name);
          counted.set(name, fragmentCount);
        }
        total += fragmentCount;
      }
    }
    return total;
  };
  return count;
}

/** Refuses operations that select more than MAX_EXPANDED_FIELDS fields once fragments are expanded. */
const ExpandedSizeRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const fields = expandedFieldCount(context.getDocument(), operation);
    if (fields > MAX_EXPANDED_FIELDS) {
      context.reportError(
        new GraphQLError(
          `The operation selects ${fields} fields once its fragments are expanded; the most allowed is ` +
            `${MAX_EXPANDED_FIELDS}.`,
          {
            nodes: operation,
            extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
          },
        ),
      );
    }
  },
});

/**
 * Where the sandbox option is off: `__schema` and `__type` are refused, in the gateway's words (`__typename` is fine).
 */
const IntrospectionOffRule: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value === '__schema' || node.name.value === '__type') {
      context.reportError(
        new GraphQLError(
          `Introspection is off on this gateway (the query asks for ${node.name.value}). It is served only when the ` +
            `gateway's sandbox option is on: the default in development, off when NODE_ENV=production.`,
          { nodes: node, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
        ),
      );
    }
  },
});

/** The validation rules of both transports, on top of GraphQL's own. */
export function gatewayValidationRules(introspection: boolean): ValidationRule[] {
  return [SingleRunPerOperationRule, ExpandedSizeRule, ...(introspection ? [] : [IntrospectionOffRule])];
}

/**
 * A validation message without "Did you mean …?" suggestions (where introspection is off they would reveal the schema).
 */
export function withoutSuggestions(message: string): string {
  return message.replace(/ Did you mean .*\?$/s, '');
}

export const allValidationRules = (introspection: boolean): ValidationRule[] => [
  ...specifiedRules,
  ...gatewayValidationRules(introspection),
];
