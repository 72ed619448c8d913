import type { Logger } from 'pino';
import { guardedChild } from '../core/abort.js';
import { ActionTimeoutError, GatewayError, type ErrorCode } from '../core/errors.js';
import type { ExecutableAction } from './action.js';
import type { Principal } from '../core/principal.js';

/** Who executes an action, and for which run. */
export interface ExecutionContext {
  threadId: string;
  runId: string;
  properties: Record<string, unknown>;
  principal?: Principal;
  logger: Logger;
  /** The run's signal: when it aborts, the action's own signal aborts and the execution stops waiting. */
  signal: AbortSignal;
  /** The longest an action may take before its result is ACTION_TIMEOUT. */
  timeoutMs: number;
}

/** The timeout this module raises; told apart from a handler's own errors by identity, never by code. */
class ActionTimeout extends Error {}

/**
 * Executes one action call: checks the arguments against the action's schema, runs the action with
 * a signal of its own (aborted on timeout and when the run aborts), and turns what it returns or
 * throws into the result string the client and the model see. A failing action never fails the
 * run: its result is the reference runtime's error form `{"error":{code,message},"result":""}`.
 * The one thing this throws is the run's abort reason, once the run has been aborted.
 */
export async function executeAction(
  action: ExecutableAction,
  rawArguments: string,
  context: ExecutionContext,
): Promise<string> {
  const runSignal = context.signal;
  runSignal.throwIfAborted();
  const parsed = parseActionArguments(rawArguments, action.parameters);
  if (!parsed.ok) return actionErrorResult('INVALID_ARGUMENTS', parsed.message);

  const logger = context.logger;
  const child = guardedChild(runSignal, (error) =>
    logger.error({ err: error, action: action.name }, 'an abort listener of an action threw; ignored'),
  );
  // Settles when the run aborts or the action times out, even if the action ignores its signal.
  let stop!: (reason: unknown) => void;
  const stopped = new Promise<never>((_, reject) => {
    stop = reject;
  });
  stopped.catch(() => {});
  const onRunAbort = () => stop(runSignal.reason);
  runSignal.addEventListener('abort', onRunAbort, { once: true });
  const timeout = new ActionTimeout();
  const timer = setTimeout(() => {
    child.abort(new ActionTimeoutError(`Action "${action.name}" did not finish within ${context.timeoutMs} ms.`));
    stop(timeout);
  }, context.timeoutMs);
  try {
    const value = await Promise.race([
      Promise.resolve().then(() =>
        action.execute(parsed.args, {
          threadId: context.threadId,
          runId: context.runId,
          properties: context.properties,
          principal: context.principal,
          signal: child.signal,
          logger,
        }),
      ),
      stopped,
    ]);
    runSignal.throwIfAborted();
    return serializeActionResult(value);
  } catch (error) {
    runSignal.throwIfAborted();
    if (error === timeout) {
      logger.warn({ action: action.name, timeoutMs: context.timeoutMs }, 'action timed out');
      return actionErrorResult(
        'ACTION_TIMEOUT',
        `Action "${action.name}" did not finish within ${context.timeoutMs} ms.`,
      );
    }
    if (error instanceof GatewayError) {
      logger.warn(
        { action: action.name, code: error.code, cause: (error.cause as Error | undefined)?.message },
        `action failed: ${error.message}`,
      );
      return actionErrorResult(error.code, error.message);
    }
    logger.warn({ err: error, action: action.name }, 'server-side action failed');
    return actionErrorResult('ACTION_FAILED', error instanceof Error ? error.message : String(error));
  } finally {
    clearTimeout(timer);
    child.release();
    runSignal.removeEventListener('abort', onRunAbort);
  }
}

/** The reference runtime's form of a failed action: the run goes on, the model reads the error. */
function actionErrorResult(code: ErrorCode, message: string): string {
  return JSON.stringify({ error: { code, message }, result: '' });
}

/** Parses and checks a call's arguments against the action's schema (top level: required and types). */
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
  // Own properties only: "constructor" or "toString" are not arguments because every object inherits them.
  const missing = required.filter((key) => typeof key === 'string' && !Object.hasOwn(record, key));
  if (missing.length) return { ok: false, message: `Missing required argument(s): ${missing.join(', ')}.` };
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  for (const [key, value] of Object.entries(record)) {
    const expected = Object.hasOwn(properties, key) ? properties[key]?.type : undefined;
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

/**
 * An action's value as the result string the client and the model see: a string as it is,
 * `undefined` as "", anything else (numbers, booleans, null, objects) as JSON.
 */
function serializeActionResult(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value) ?? '';
}
