import {
  Kind,
  isInputObjectType,
  isInputType,
  isListType,
  isNonNullType,
  isScalarType,
  typeFromAST,
  valueFromAST,
  type DocumentNode,
  type ExecutionArgs,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';
import { perOperation } from '../documents.js';

/**
 * Variables coerced by code made once per operation, instead of by graphql-js on every request.
 *
 * graphql-js coerces a variable's value by walking its type on every request: for every input
 * object a field list (`Object.values`), a dictionary object and a copy of it, a path record per
 * field and list item, a closure per list. The stock client's `GenerateCopilotResponseInput` is
 * large (every message kind, every field optional), so for a request with two short messages that
 * was about 40 µs on this machine, and 3–4% of an agent request's CPU under load, the largest part
 * of the executor's set-up (BENCHMARKS.md, step 31).
 *
 * So each operation's variables get a coercer made once from their types: the same steps in the
 * same order (`null` for a nullable null, a list of one for a single value, the type's fields in
 * its order with their defaults, every key of the input checked to be a field, each leaf through
 * its type's own `parseValue`), without the paths and with plain objects. The values are the
 * same as graphql-js gives. It makes no errors: on anything it does not accept (a value graphql-js
 * would refuse, or a shape it does not take, such as a non-array iterable or a `@oneOf` type) it
 * gives up, and the executor coerces the request itself, so every error is graphql-js's own.
 * test/variables.test.ts compares the two on accepted and refused values.
 *
 * The executor then runs a copy of the document whose variables are declared `JSON` (the schema's
 * scalar that passes a value through as it is) and without defaults, and is given the coerced
 * values: it hands them to the arguments unchanged, as it hands any variable's value. The
 * operation was validated as it was sent (by Apollo, or the WebSocket transport's DocumentCache);
 * only execution sees the copy: HTTP's and graphql-ws's queries and mutations
 * (incremental.ts `executeIncrementally`), and a subscription's source stream (subscribe.ts).
 */

/** The values an operation's coercer gives up on: the executor coerces those itself. */
const REFUSED: unique symbol = Symbol('refused');
type Coerce = (value: unknown) => unknown;

/** An operation's variables, coerced ahead of the executor. */
export interface VariablePlan {
  /**
   * The document the executor runs with coerced values: the operation's variables declared `JSON`, without defaults.
   */
  readonly document: DocumentNode;
  /**
   * The variables' values as graphql-js coerces them, or undefined where it would refuse them or where the coercer
   * gives up.
   */
  coerce(inputs: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined;
}

/** The scalar the rewritten document declares its variables as. */
const PASS_THROUGH = 'JSON';

/** The variable plan of an operation of a validated document, made once per document and operation. */
export const variablePlan = perOperation(planFor);

/**
 * The execution's arguments with its variables coerced by the operation's coercer: the document's
 * copy and the coerced values; or the arguments as they are, where the coercer gives up (the
 * executor, or graphql-js, then coerces them and reports what it refuses).
 */
export function withCoercedVariables<Args extends ExecutionArgs>(args: Args): Args {
  const plan = variablePlan(args.schema, args.document, args.operationName);
  const coerced = plan?.coerce(args.variableValues ?? {});
  return coerced === undefined ? args : { ...args, document: plan!.document, variableValues: coerced };
}

interface Variable {
  readonly name: string;
  readonly type: GraphQLInputType;
  readonly nonNull: boolean;
  readonly defaultValue: ValueNode | undefined;
  readonly coerce: Coerce;
}

function planFor(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): VariablePlan | undefined {
  const definitions = operation.variableDefinitions;
  if (definitions === undefined || definitions.length === 0) return undefined;
  const passThrough = schema.getType(PASS_THROUGH);
  const probe = {};
  if (!isScalarType(passThrough) || passThrough.parseValue(probe) !== probe) return undefined;

  const variables: Variable[] = [];
  for (const definition of definitions) {
    const type = typeFromAST(schema, definition.type as Parameters<typeof typeFromAST>[1]);
    if (type === undefined || !isInputType(type)) return undefined;
    variables.push({
      name: definition.variable.name.value,
      type,
      nonNull: isNonNullType(type),
      defaultValue: definition.defaultValue,
      coerce: coercerOf(type),
    });
  }

  const passThroughType = { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: PASS_THROUGH } } as const;
  const rewritten: OperationDefinitionNode = {
    ...operation,
    variableDefinitions: definitions.map((definition): VariableDefinitionNode => ({
      ...definition,
      type: passThroughType,
      defaultValue: undefined,
    })),
  };
  const plan: VariablePlan = {
    document: {
      ...document,
      definitions: document.definitions.map((definition) => (definition === operation ? rewritten : definition)),
    },
    coerce: (inputs) => coerceVariables(variables, inputs),
  };
  return plan;
}

/**
 * The executor's variable coercion (its `coerceVariableValues`), on the compiled coercers; undefined where it gives up.
 */
function coerceVariables(
  variables: readonly Variable[],
  inputs: Readonly<Record<string, unknown>>,
): Record<string, unknown> | undefined {
  const coerced: Record<string, unknown> = {};
  for (const variable of variables) {
    if (!Object.prototype.hasOwnProperty.call(inputs, variable.name)) {
      if (variable.defaultValue !== undefined) {
        const value = valueFromAST(variable.defaultValue, variable.type);
        // (The rewritten document would read an undefined value as null.)
        if (value === undefined) return undefined;
        coerced[variable.name] = value;
      } else if (variable.nonNull) {
        return undefined;
      }
      continue;
    }
    const value = variable.coerce(inputs[variable.name]);
    if (value === REFUSED) return undefined;
    coerced[variable.name] = value;
  }
  return coerced;
}

const coercers = new WeakMap<GraphQLInputType, Coerce>();

/**
 * graphql-js's coerceInputValue for one type, made once per type; REFUSED where it would report an error or where this
 * gives up.
 */
function coercerOf(type: GraphQLInputType): Coerce {
  let coerce = coercers.get(type);
  if (coerce === undefined) {
    coerce = makeCoercer(type);
    coercers.set(type, coerce);
  }
  return coerce;
}

function makeCoercer(type: GraphQLInputType): Coerce {
  if (isNonNullType(type)) {
    const inner = coercerOf(type.ofType);
    return (value) => (value == null ? REFUSED : inner(value));
  }
  if (isListType(type)) {
    const item = coercerOf(type.ofType);
    return (value) => {
      if (value == null) return null;
      if (Array.isArray(value)) {
        const items = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i++) {
          const coerced = item(value[i]);
          if (coerced === REFUSED) return REFUSED;
          items[i] = coerced;
        }
        return items;
      }
      // Other iterables are lists to graphql-js too; JSON has none, so they are left to it.
      if (
        typeof value === 'object' &&
        typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function'
      )
        return REFUSED;
      // A single value is a list of one.
      const coerced = item(value);
      return coerced === REFUSED ? REFUSED : [coerced];
    };
  }
  if (isInputObjectType(type)) {
    if (type.isOneOf) return (value) => (value == null ? null : REFUSED);
    const definitions = type.getFields();
    // Made on first use: an input type may hold itself.
    let fields:
      | { readonly name: string; readonly defaultValue: unknown; readonly nonNull: boolean; readonly coerce: Coerce }[]
      | undefined;
    return (value) => {
      if (value == null) return null;
      if (typeof value !== 'object' || Array.isArray(value)) return REFUSED;
      fields ??= Object.values(definitions).map((field) => ({
        name: field.name,
        defaultValue: field.defaultValue,
        nonNull: isNonNullType(field.type),
        coerce: coercerOf(field.type),
      }));
      const input = value as Record<string, unknown>;
      const coerced: Record<string, unknown> = {};
      for (let i = 0; i < fields.length; i++) {
        const field = fields[i];
        const fieldValue = input[field.name];
        if (fieldValue === undefined) {
          if (field.defaultValue !== undefined) coerced[field.name] = field.defaultValue;
          else if (field.nonNull) return REFUSED;
          continue;
        }
        const result = field.coerce(fieldValue);
        if (result === REFUSED) return REFUSED;
        coerced[field.name] = result;
      }
      // Every key of the input must be one of the type's fields.
      for (const key of Object.keys(input)) {
        if (!definitions[key]) return REFUSED;
      }
      return coerced;
    };
  }
  // A leaf: its type's own parseValue, which throws or gives undefined for a value it refuses.
  const leaf = type;
  return (value) => {
    if (value == null) return null;
    try {
      const parsed: unknown = leaf.parseValue(value);
      return parsed === undefined ? REFUSED : parsed;
    } catch {
      return REFUSED;
    }
  };
}
