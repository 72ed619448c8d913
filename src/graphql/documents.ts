import {
  GraphQLError,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { MAX_NESTING, textNestsDeeperThan } from '../core/depth.js';
import { MAX_DOCUMENT_TOKENS, withoutSuggestions } from './validation.js';

/** What a document nested past MAX_NESTING gets, before graphql-js's recursive parser could overflow on it. */
export const TOO_DEEP_DOCUMENT = `Syntax Error: the document nests deeper than ${MAX_NESTING} levels.`;

/** A document parsed and validated once: the document, or the coded errors a client gets for it. */
export type PreparedDocument =
  { document: DocumentNode; errors?: undefined } | { document?: undefined; errors: readonly GraphQLError[] };

/** Documents larger than this are prepared every time rather than kept. */
const MAX_CACHED_QUERY_CHARS = 64 * 1024;

/**
 * Parses and validates GraphQL documents, and keeps the last `capacity` results by query text
 * (least recently used out). Clients send the same few documents over and over (every graphql-ws
 * `copilotRun` of an app has the same text), and a parsed document with its token list weighs
 * tens of kilobytes: kept once, it is shared by every operation that uses it instead of held per
 * stream. Apollo Server keeps such a store for HTTP; this is the WebSocket transport's.
 */
export class DocumentCache {
  private readonly entries = new Map<string, PreparedDocument>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly rules: readonly ValidationRule[],
    /** Whether error messages may keep "Did you mean …" suggestions (introspection on). */
    private readonly suggestions: boolean,
    private readonly capacity = 500,
  ) {}

  prepare(query: string): PreparedDocument {
    const cached = this.entries.get(query);
    if (cached) {
      // Most recently used: to the end of the map's order.
      this.entries.delete(query);
      this.entries.set(query, cached);
      return cached;
    }
    const prepared = this.parseAndValidate(query);
    if (query.length <= MAX_CACHED_QUERY_CHARS) {
      this.entries.set(query, prepared);
      if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    }
    return prepared;
  }

  get size(): number {
    return this.entries.size;
  }

  private parseAndValidate(query: string): PreparedDocument {
    let document: DocumentNode;
    if (textNestsDeeperThan(query))
      return { errors: [new GraphQLError(TOO_DEEP_DOCUMENT, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })] };
    try {
      document = parse(query, { maxTokens: MAX_DOCUMENT_TOKENS });
    } catch (error) {
      return { errors: [codedError(error as GraphQLError, 'GRAPHQL_PARSE_FAILED')] };
    }
    const errors = validate(this.schema, document, this.rules);
    if (errors.length) {
      return {
        errors: errors.map((error) =>
          codedError(
            error,
            'GRAPHQL_VALIDATION_FAILED',
            this.suggestions ? error.message : withoutSuggestions(error.message),
          ),
        ),
      };
    }
    return { document };
  }
}

function codedError(error: GraphQLError, code: string, message = error.message): GraphQLError {
  return new GraphQLError(message, {
    source: error.source,
    positions: error.positions,
    extensions: { ...error.extensions, code },
  });
}

/**
 * A plan the gateway works out once per validated document and operation for running it (the
 * leaf streams, the variables' coercer): `make` is called on first use, and its answer, a plan or
 * none, is kept as long as the document is.
 */
export function perOperation<T>(
  make: (schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode) => T | undefined,
): (schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined) => T | undefined {
  const plans = new WeakMap<DocumentNode, Map<string, T | null>>();
  return (schema, document, operationName) => {
    let byOperation = plans.get(document);
    if (byOperation === undefined) plans.set(document, (byOperation = new Map()));
    const key = operationName ?? '';
    let plan = byOperation.get(key);
    if (plan === undefined) {
      const operation = operationOf(document, operationName);
      byOperation.set(key, (plan = (operation && make(schema, document, operation)) ?? null));
    }
    return plan ?? undefined;
  };
}

/** The operation the executor runs: the one named, or the only one. */
function operationOf(
  document: DocumentNode,
  operationName: string | null | undefined,
): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  if (operationName != null) return operations.find((definition) => definition.name?.value === operationName);
  return operations.length === 1 ? operations[0] : undefined;
}
