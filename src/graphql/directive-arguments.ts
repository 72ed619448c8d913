import { GraphQLDeferDirective, GraphQLStreamDirective } from '@graphql-tools/utils';
import {
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  getDirectiveValues,
  getVariableValues,
  locatedError,
  print,
  visit,
  type DirectiveNode,
  type DocumentNode,
  type ExecutionArgs,
  type FragmentDefinitionNode,
  type GraphQLDirective,
  type GraphQLError,
  type OperationDefinitionNode,
} from 'graphql';
import { BadUserInputError } from '../core/errors.js';
import { perOperation } from './documents.js';

/**
 * The arguments of `@include`, `@skip`, `@defer` and `@stream` that validation cannot judge,
 * checked before an operation runs: a client's mistake is answered as one (BAD_USER_INPUT, saying
 * what is wrong), before anything runs.
 *
 * Validation accepts `@include(if: $v)` for a `$v: Boolean = true` given `null`, and
 * `@stream(initialCount: -1)` or `initialCount: null` (the argument is a nullable `Int`). The
 * executor finds out only while it runs: graphql-js's "Argument "if" of non-null type "Boolean!"
 * must not be null." or the tools executor's invariant "initialCount must be a positive integer",
 * which Apollo coded INTERNAL_SERVER_ERROR (the second masked as "Unexpected error."), located deep
 * in the answer, possibly after the run had started and streamed (issue 28 §2).
 *
 * Worked out once per document and operation: the uses of those directives whose arguments are
 * variables, or an `initialCount` that is null or negative as written. Documents without any (the
 * stock client's) cost nothing per request.
 */

/** A directive use to check, with the directive's definition as the executor reads it. */
interface Use {
  readonly directive: GraphQLDirective;
  readonly node: DirectiveNode;
}

const DIRECTIVES: Record<string, GraphQLDirective> = {
  include: GraphQLIncludeDirective,
  skip: GraphQLSkipDirective,
  defer: GraphQLDeferDirective,
  stream: GraphQLStreamDirective,
};

const usesToCheck = perOperation(
  (_schema, document, operation): { operation: OperationDefinitionNode; uses: Use[] } | undefined => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of document.definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    const uses: Use[] = [];
    const seen = new Set<string>();
    const walk = (node: OperationDefinitionNode | FragmentDefinitionNode): void => {
      visit(node, {
        FragmentSpread(spread) {
          const name = spread.name.value;
          const fragment = fragments.get(name);
          if (fragment === undefined || seen.has(name)) return;
          seen.add(name);
          walk(fragment);
        },
        Directive(directiveNode) {
          // An own name only: a document's `@constructor` is not a directive of the table.
          const name = directiveNode.name.value;
          const directive = Object.hasOwn(DIRECTIVES, name) ? DIRECTIVES[name] : undefined;
          if (directive === undefined) return;
          const suspect = directiveNode.arguments?.some(
            (argument) =>
              argument.value.kind === Kind.VARIABLE ||
              (directive === GraphQLStreamDirective &&
                argument.name.value === 'initialCount' &&
                (argument.value.kind === Kind.NULL ||
                  (argument.value.kind === Kind.INT && Number(argument.value.value) < 0))),
          );
          if (suspect) uses.push({ directive, node: directiveNode });
        },
      });
    };
    walk(operation);
    return uses.length > 0 ? { operation, uses } : undefined;
  },
);

/**
 * The error an operation is refused with when a directive's arguments, with the request's
 * variables, are not what the executor takes; undefined when they are (or when the variables
 * themselves are wrong: the executor reports those, as for any operation).
 */
export function refusedDirectiveArguments(
  args: Pick<ExecutionArgs, 'schema' | 'document' | 'operationName' | 'variableValues'>,
): GraphQLError | undefined {
  const found = usesToCheck(args.schema, args.document as DocumentNode, args.operationName);
  if (found === undefined) return undefined;
  const coerced = getVariableValues(
    args.schema,
    found.operation.variableDefinitions ?? [],
    (args.variableValues ?? {}) as Record<string, unknown>,
  );
  if (coerced.errors !== undefined) return undefined;
  const variables = coerced.coerced;
  for (const { directive, node } of found.uses) {
    let values: Record<string, unknown> | undefined;
    try {
      values = getDirectiveValues(
        directive,
        { directives: [node] } as { directives: readonly DirectiveNode[] },
        variables,
      );
    } catch {
      // (Only a null for a non-null argument gets here: the other mistakes are validation's.)
      const argument = node.arguments!.find(
        (each) => each.value.kind === Kind.VARIABLE && variables[each.value.name.value] === null,
      )!;
      return refusal(
        `Argument "${argument.name.value}" of @${directive.name} must be true or false: ${print(argument.value)} is ` +
          `null.`,
        node,
        `@${directive.name}.${argument.name.value}`,
      );
    }
    if (directive === GraphQLStreamDirective && values !== undefined) {
      const count = values.initialCount;
      if (typeof count !== 'number' || count < 0) {
        const written = node.arguments!.find((argument) => argument.name.value === 'initialCount')!;
        const what =
          written.value.kind === Kind.VARIABLE
            ? `${print(written.value)} is ${count === null ? 'null' : count}`
            : `it is ${print(written.value)}`;
        return refusal(
          `Argument "initialCount" of @stream must be 0 or more (the number of items in the first part): ${what}.`,
          node,
          '@stream.initialCount',
        );
      }
    }
  }
  return undefined;
}

function refusal(message: string, node: DirectiveNode, field: string): GraphQLError {
  return locatedError(new BadUserInputError(message, { field }), [node]);
}
