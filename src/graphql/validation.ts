import { GraphQLError, Kind, NoSchemaIntrospectionCustomRule, specifiedRules, type SelectionSetNode, type ValidationRule } from 'graphql';

/** Root fields that start a run (a model call that costs money). */
const RUN_FIELDS = new Set(['generateCopilotResponse', 'copilotRun']);

/** The most lexical tokens a document may have: the stock client's mutation has under 300. */
export const MAX_DOCUMENT_TOKENS = 20_000;

/**
 * One run per operation: aliases could otherwise start any number of model calls with one request.
 */
export const SingleRunPerOperationRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const fragments = new Map(context.getDocument().definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d]] : [])));
    let runs = 0;
    const count = (selectionSet: SelectionSetNode, seen: Set<string>) => {
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) {
          if (RUN_FIELDS.has(selection.name.value)) runs++;
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          count(selection.selectionSet, seen);
        } else if (!seen.has(selection.name.value)) {
          seen.add(selection.name.value);
          const fragment = fragments.get(selection.name.value);
          if (fragment) count(fragment.selectionSet, seen);
        }
      }
    };
    count(operation.selectionSet, new Set());
    if (runs > 1) {
      context.reportError(
        new GraphQLError(`An operation may start one run, but this one selects ${[...RUN_FIELDS].join(' or ')} ${runs} times.`, {
          nodes: operation,
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        }),
      );
    }
  },
});

/** The validation rules of both transports, on top of GraphQL's own. */
export function gatewayValidationRules(introspection: boolean): ValidationRule[] {
  return [SingleRunPerOperationRule, ...(introspection ? [] : [NoSchemaIntrospectionCustomRule])];
}

export const allValidationRules = (introspection: boolean): ValidationRule[] => [...specifiedRules, ...gatewayValidationRules(introspection)];
