import { ConfigurationError } from '../core/errors.js';
import type { ActionContext, ActionSource, ExecutableAction } from './action.js';

/** What a server-side action's handler is given besides its arguments. */
export type ServerActionContext = ActionContext;

/** An action declared in code and executed by the gateway when the model (or an agent) calls it. */
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

/** The server-side actions declared in `createGateway({ actions })`, checked once when the gateway is built. */
export class ServerActionRegistry implements ActionSource {
  private readonly list: ExecutableAction[] = [];

  constructor(actions: readonly ServerAction[]) {
    const names = new Set<string>();
    actions.forEach((action, index) => {
      const where = `options.actions[${index}]`;
      if (action === null || typeof action !== 'object') throw new ConfigurationError(`${where} must be an object.`);
      if (typeof action.name !== 'string' || !NAME.test(action.name)) {
        throw new ConfigurationError(
          `${where}.name must be 1 to 64 letters, digits, "_" or "-" (got ${JSON.stringify(action.name)}).`,
        );
      }
      if (names.has(action.name)) {
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
        (parameters === null ||
          typeof parameters !== 'object' ||
          Array.isArray(parameters) ||
          parameters.type !== 'object')
      ) {
        throw new ConfigurationError(
          `${where}.parameters must be a JSON Schema object with type "object" (action "${action.name}").`,
        );
      }
      names.add(action.name);
      const handler = action.handler;
      this.list.push({
        name: action.name,
        description: action.description,
        parameters: parameters ?? EMPTY_OBJECT_SCHEMA,
        source: 'local',
        execute: (args, context) => handler(args, context),
      });
    });
  }

  actions(): readonly ExecutableAction[] {
    return this.list;
  }

  get size(): number {
    return this.list.length;
  }
}
