import { GraphQLError, Kind, specifiedRules, type SelectionSetNode, type ValidationRule } from 'graphql';

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
export const SingleRunPerOperationRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const fragments = new Map(context.getDocument().definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d]] : [])));
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
        new GraphQLError(`An operation may start one run, but this one asks for ${keys.size}: ${[...keys].join(', ')}.`, {
          nodes: operation,
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        }),
      );
    }
  },
});

/** Where the sandbox option is off: `__schema` and `__type` are refused, in the gateway's words (`__typename` is fine). */
export const IntrospectionOffRule: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value === '__schema' || node.name.value === '__type') {
      context.reportError(
        new GraphQLError(
          `Introspection is off on this gateway (the query asks for ${node.name.value}). It is served only when the gateway's sandbox option is on: the default in development, off when NODE_ENV=production.`,
          { nodes: node, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
        ),
      );
    }
  },
});

/** The validation rules of both transports, on top of GraphQL's own. */
export function gatewayValidationRules(introspection: boolean): ValidationRule[] {
  return [SingleRunPerOperationRule, ...(introspection ? [] : [IntrospectionOffRule])];
}

/** A validation message without "Did you mean …?" suggestions (where introspection is off they would reveal the schema). */
export function withoutSuggestions(message: string): string {
  return message.replace(/ Did you mean .*\?$/s, '');
}

export const allValidationRules = (introspection: boolean): ValidationRule[] => [...specifiedRules, ...gatewayValidationRules(introspection)];
