import type { Logger } from 'pino';
import { guardSignal } from '../core/abort.js';
import { ClientDisconnectedError, ConfigurationError, GatewayError, HookFailedError } from '../core/errors.js';
import type { ContextEntry, Message } from '../core/messages.js';
import type { Principal } from '../core/principal.js';
import { OutputCollector } from '../threads/log.js';
import type { RunRequest } from './request.js';
import type { RunHandle } from './run.js';

/** What `onBeforeRequest` sees. */
export interface RequestHookContext {
  threadId: string;
  runId: string;
  inputMessages: readonly Message[];
  properties: Record<string, unknown>;
  /** The frontend's URL (`frontend.url`), when it sent one. */
  url: string | undefined;
  /** Who is asking, when authentication is on. */
  principal: Principal | undefined;
}

/** What `onBeforeRequest` gets besides: aborted when the client goes away while it runs. */
export interface BeforeRequestHookContext extends RequestHookContext {
  signal: AbortSignal | undefined;
}

/** What `onAfterRequest` sees: the same, and the messages the run produced. */
export interface AfterRequestContext extends RequestHookContext {
  outputMessages: Message[];
  /** How the run ended: `Success`, or `Failed` with the error's code. */
  status: { code: 'Success' } | { code: 'Failed'; errorCode: string };
}

/** What `onBeforeRequest` may answer: more readable context for the model. */
export interface BeforeRequestResult {
  context?: ContextEntry[];
}

/**
 * Request middleware. `onBeforeRequest` runs before the run starts, awaited: it may add context for
 * the model, or refuse the request by throwing a GatewayError (its code and message reach the client;
 * REQUEST_REFUSED is there for this); any other error is logged and the request fails with
 * HOOK_FAILED. `onAfterRequest` runs once the run has finished, awaited off the stream (the client has
 * its answer); what it throws is logged.
 */
export interface RequestHooks {
  onBeforeRequest?(context: BeforeRequestHookContext): BeforeRequestResult | void | Promise<BeforeRequestResult | void>;
  onAfterRequest?(context: AfterRequestContext): void | Promise<void>;
}

export function resolveHooks(hooks: unknown): RequestHooks {
  if (hooks === undefined) return {};
  if (hooks === null || typeof hooks !== 'object')
    throw new ConfigurationError('options.hooks must be an object: {onBeforeRequest?, onAfterRequest?}.');
  for (const [name, value] of Object.entries(hooks)) {
    if (name !== 'onBeforeRequest' && name !== 'onAfterRequest')
      throw new ConfigurationError(`Unknown hook "hooks.${name}". Known: onBeforeRequest, onAfterRequest.`);
    if (value !== undefined && typeof value !== 'function')
      throw new ConfigurationError(`hooks.${name} must be a function.`);
  }
  return hooks as RequestHooks;
}

/** Runs `onBeforeRequest`; resolves with the request as the run should see it. */
export async function beforeRequest(
  hooks: RequestHooks,
  request: RunRequest,
  caller: { logger: Logger; signal?: AbortSignal },
): Promise<RunRequest> {
  if (!hooks.onBeforeRequest) return request;
  const { logger } = caller;
  // Aborted at the end of every request: an abort listener of the hook's that throws is logged, not
  // left to end the process.
  const signal = caller.signal && guardSignal(caller.signal, (error) => abortListenerThrew(logger, error));
  let result: BeforeRequestResult | void;
  try {
    result = await hooks.onBeforeRequest({ ...hookContext(request), signal });
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    logger.error({ err: error }, 'the onBeforeRequest hook threw');
    throw new HookFailedError(
      'The request could not be accepted: a check of this gateway failed. Try again, or report it with the request id.',
    );
  }
  // The client went away while the hook ran: nothing is started for it.
  if (signal?.aborted) throw new ClientDisconnectedError('The client went away before the run started.');
  const extra = result?.context;
  if (!extra?.length) return request;
  const context = extra.filter((entry) => typeof entry?.description === 'string' && typeof entry?.value === 'string');
  return { ...request, context: [...request.context, ...context] };
}

/** Calls `onAfterRequest` once `run` has finished, with the messages it produced. */
export function afterRequest(hooks: RequestHooks, request: RunRequest, run: RunHandle, logger: Logger): void {
  const hook = hooks.onAfterRequest;
  if (!hook) return;
  const collector = new OutputCollector();
  const unsubscribe = run.subscribe((event) => collector.add(event));
  void run.finished.then(async (status) => {
    unsubscribe();
    try {
      await hook({
        ...hookContext(request),
        outputMessages: collector.current(),
        status: status.code === 'Failed' ? { code: 'Failed', errorCode: status.details.code } : { code: 'Success' },
      });
    } catch (error) {
      logger.error({ err: error }, 'the onAfterRequest hook threw');
    }
  });
}

/** What every hook sees of the request. */
function hookContext(request: RunRequest): RequestHookContext {
  return {
    threadId: request.threadId,
    runId: request.runId,
    inputMessages: request.messages,
    properties: request.properties,
    url: request.url,
    principal: request.principal,
  };
}

function abortListenerThrew(logger: Logger, error: unknown): void {
  logger.error({ err: error }, 'an abort listener of the onBeforeRequest hook threw; ignored');
}
