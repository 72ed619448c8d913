import {
  ConfigurationError,
  NotSupportedError,
  LimitExceededError,
  ModelNotAllowedError,
  UnreachableCaseError,
} from '../core/errors.js';
import type { ForwardedParameters, Message } from '../core/messages.js';

/**
 * What a client may choose and send to the model. Clients pick `forwardedParameters.model` and
 * `maxTokens` and write the conversation, and the gateway's key pays: these bound all three.
 */
export interface ModelLimitsOptions {
  /**
   * Models a client may name in `forwardedParameters.model`, or "*" for any. A request naming no
   * model gets the adapter's own. @default only the adapter's configured model
   */
  allowedModels?: readonly string[] | '*';
  /** The most `forwardedParameters.maxTokens` a client may ask for; sent as the limit when a client sets none. */
  maxTokens?: number;
  /** The most messages sent to the model in one call (the frontend's context counts as one). */
  maxMessages?: number;
  /** The most characters sent to the model in one call: message texts, action arguments and results, images' data. */
  maxInputChars?: number;
}

/** The limits as the engine applies them. */
export interface ModelLimits {
  allowedModels: ReadonlySet<string> | '*';
  maxTokens?: number;
  maxMessages?: number;
  maxInputChars?: number;
}

/** Checks the options (a mistake is a ConfigurationError) and fills in the default allowlist. */
export function resolveModelLimits(
  options: ModelLimitsOptions | undefined,
  adapterModel: string | undefined,
): ModelLimits {
  if (options === undefined) return { allowedModels: new Set(adapterModel ? [adapterModel] : []) };
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError('options.modelLimits must be an object.');
  const known = new Set(['allowedModels', 'maxTokens', 'maxMessages', 'maxInputChars']);
  for (const key of Object.keys(options)) {
    if (!known.has(key))
      throw new ConfigurationError(`Unknown option "modelLimits.${key}". Known: ${[...known].join(', ')}.`);
  }
  const { allowedModels } = options;
  if (
    allowedModels !== undefined &&
    allowedModels !== '*' &&
    (!Array.isArray(allowedModels) || allowedModels.some((model) => typeof model !== 'string' || model.trim() === ''))
  ) {
    throw new ConfigurationError('options.modelLimits.allowedModels must be "*" or an array of model names.');
  }
  const limit = (name: 'maxTokens' | 'maxMessages' | 'maxInputChars') => {
    const value = options[name];
    if (value === undefined) return {};
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new ConfigurationError(
        `options.modelLimits.${name} must be a whole number, 1 or more (got ${JSON.stringify(value)}).`,
      );
    }
    return { [name]: value };
  };
  return {
    allowedModels: allowedModels === '*' ? '*' : new Set(allowedModels ?? (adapterModel ? [adapterModel] : [])),
    ...limit('maxTokens'),
    ...limit('maxMessages'),
    ...limit('maxInputChars'),
  };
}

/**
 * The forwarded parameters a model call may use: a model outside the allowlist is MODEL_NOT_ALLOWED,
 * a `maxTokens` over the ceiling LIMIT_EXCEEDED; with a ceiling and no `maxTokens`, the ceiling.
 */
export function admitForwardedParameters(
  parameters: ForwardedParameters,
  limits: ModelLimits,
  /** The parameters the adapter applies (all when undefined): another one set is NOT_SUPPORTED. */
  supported?: ReadonlySet<keyof ForwardedParameters>,
  adapterName = 'model',
): ForwardedParameters {
  if (supported) {
    for (const [name, value] of Object.entries(parameters) as [keyof ForwardedParameters, unknown][]) {
      if (value == null || (Array.isArray(value) && value.length === 0) || supported.has(name)) continue;
      throw new NotSupportedError(
        `forwardedParameters.${name} is not supported by this gateway's model (${adapterName}): ` +
          `its own setting applies. Send no ${name}.`,
        { details: { field: `forwardedParameters.${name}` } },
      );
    }
  }
  const model = parameters.model;
  if (model != null && model !== '' && limits.allowedModels !== '*' && !limits.allowedModels.has(model)) {
    const allowed = [...limits.allowedModels];
    throw new ModelNotAllowedError(
      allowed.length
        ? `The model "${model}" may not be chosen by clients here. Allowed: ${allowed.join(', ')} (or send no model).`
        : `Clients may not choose the model here: send no forwardedParameters.model.`,
      { details: { field: 'forwardedParameters.model', model, allowedModels: allowed } },
    );
  }
  const ceiling = limits.maxTokens;
  if (ceiling === undefined || (supported && !supported.has('maxTokens'))) return parameters;
  const maxTokens = parameters.maxTokens;
  if (maxTokens == null) return { ...parameters, maxTokens: ceiling };
  if (maxTokens > ceiling) {
    throw new LimitExceededError(
      `forwardedParameters.maxTokens is ${maxTokens}; the most allowed here is ${ceiling}.`,
      { details: { field: 'forwardedParameters.maxTokens', limit: ceiling, value: maxTokens } },
    );
  }
  return parameters;
}

/** Throws LIMIT_EXCEEDED when `messages`, as they would be sent to the model, exceed the limits. */
export function checkModelInput(messages: readonly Message[], limits: ModelLimits): void {
  const { maxMessages, maxInputChars } = limits;
  if (maxMessages === undefined && maxInputChars === undefined) return;
  const sent = messages.filter((message) => message.kind !== 'agentState');
  if (maxMessages !== undefined && sent.length > maxMessages) {
    throw new LimitExceededError(
      `The conversation has ${sent.length} messages for the model; the most allowed here is ${maxMessages}.`,
      { details: { field: 'messages', limit: maxMessages, value: sent.length } },
    );
  }
  if (maxInputChars === undefined) return;
  let chars = 0;
  for (const message of sent) chars += charactersOf(message);
  if (chars > maxInputChars) {
    throw new LimitExceededError(
      `The conversation has ${chars} characters for the model; the most allowed here is ${maxInputChars}.`,
      { details: { field: 'messages', limit: maxInputChars, value: chars } },
    );
  }
}

function charactersOf(message: Message): number {
  switch (message.kind) {
    case 'text':
      return message.content.length;
    case 'actionExecution':
      return message.name.length + message.arguments.length;
    case 'result':
      return message.result.length;
    case 'image':
      return message.bytes.length;
    case 'agentState':
      return 0;
    default:
      // Every kind of message has its case: a new one does not compile until it has.
      throw new UnreachableCaseError(message);
  }
}
