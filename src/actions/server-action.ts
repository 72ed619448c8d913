import type { Logger } from 'pino';
import { ConfigurationError } from '../errors.js';
import type { ToolDefinition } from '../engine/messages.js';

/** What a server-side action's handler is given besides its arguments. */
export interface ServerActionContext {
  threadId: string;
  runId: string;
  /** The request's `properties` argument. */
  properties: Record<string, unknown>;
  /** Aborted when the client goes away or the action times out. */
  signal: AbortSignal;
  logger: Logger;
}

/** An action declared in code and executed by the gateway when the model calls it. */
export interface ServerAction<Args extends Record<string, unknown> = Record<string, any>> {
  /** The tool name the model sees: letters, digits, `_` and `-`, at most 64 characters. */
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). Defaults to an object with no properties. */
  parameters?: Record<string, unknown>;
  /** Returns the result: a string is sent as it is, anything else JSON-encoded. */
  handler: (args: Args, context: ServerActionContext) => unknown | Promise<unknown>;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const EMPTY_OBJECT_SCHEMA = Object.freeze({ type: 'object', properties: {} });

/** Validated server-side actions, by name. */
export class ServerActionRegistry {
  private readonly byName = new Map<string, ServerAction>();

  constructor(actions: readonly ServerAction[]) {
    actions.forEach((action, index) => {
      const where = `options.actions[${index}]`;
      if (action === null || typeof action !== 'object') throw new ConfigurationError(`${where} must be an object.`);
      if (typeof action.name !== 'string' || !NAME.test(action.name)) {
        throw new ConfigurationError(
          `${where}.name must be 1 to 64 letters, digits, "_" or "-" (got ${JSON.stringify(action.name)}).`,
        );
      }
      if (this.byName.has(action.name)) {
        throw new ConfigurationError(`${where}.name "${action.name}" is declared twice; action names must be unique.`);
      }
      if (typeof action.description !== 'string') {
        throw new ConfigurationError(`${where}.description must be a string (action "${action.name}").`);
      }
      if (typeof action.handler !== 'function') {
        throw new ConfigurationError(`${where}.handler must be a function (action "${action.name}").`);
      }
      const parameters = action.parameters;
      if (
        parameters !== undefined &&
        (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters) || parameters.type !== 'object')
      ) {
        throw new ConfigurationError(
          `${where}.parameters must be a JSON Schema object with type "object" (action "${action.name}").`,
        );
      }
      this.byName.set(action.name, action);
    });
  }

  get(name: string): ServerAction | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  get size(): number {
    return this.byName.size;
  }

  tools(): ToolDefinition[] {
    return [...this.byName.values()].map((action) => ({
      name: action.name,
      description: action.description,
      parameters: action.parameters ?? EMPTY_OBJECT_SCHEMA,
    }));
  }
}

/** The reference runtime's form of a failed action: the run goes on, the model reads the error. */
export function actionErrorResult(code: string, message: string): string {
  return JSON.stringify({ error: { code, message }, result: '' });
}

/** Parses and checks the model's arguments against the action's schema (top level: required and types). */
export function parseActionArguments(
  raw: string,
  schema: Record<string, unknown> | undefined,
): { ok: true; args: Record<string, unknown> } | { ok: false; message: string } {
  let args: unknown;
  try {
    args = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    return { ok: false, message: 'The arguments are not valid JSON.' };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return { ok: false, message: 'The arguments must be a JSON object.' };
  }
  const record = args as Record<string, unknown>;
  if (!schema) return { ok: true, args: record };
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
  const missing = required.filter((key) => typeof key === 'string' && !(key in record));
  if (missing.length) return { ok: false, message: `Missing required argument(s): ${missing.join(', ')}.` };
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  for (const [key, value] of Object.entries(record)) {
    const expected = properties[key]?.type;
    if (typeof expected === 'string' && !matchesType(value, expected)) {
      return { ok: false, message: `Argument "${key}" must be of type ${expected}.` };
    }
  }
  return { ok: true, args: record };
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number';
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'null':
      return value === null;
    default:
      return true;
  }
}

/** A handler's return value as the result string the client and the model see. */
export function serializeActionResult(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value) ?? '';
}
