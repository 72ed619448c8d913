import type { Logger } from 'pino';
import { BadUserInputError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { OutputHolder, RunCaller, RunLauncher } from '../engine/launcher.js';
import type { ExecutorName } from './executor-name.js';

/** Shared by every resolution of a run-starting field within one operation. */
export interface RunAllowance {
  used: boolean;
}

/** See GatewayContext.storedReads. */
export interface StoredReads {
  threads: number;
  values: number;
}

/** What every resolver gets: the request's identity and logger, and the gateway's run launcher. */
export interface GatewayContext {
  /**
   * Sent back as `x-request-id` (HTTP), in GraphQL errors and in a failed run's details, so a report can be found in
   * the logs.
   */
  requestId: string;
  logger: Logger;
  /** Fields a run's log lines carry besides those of `logParent ?? logger` (see RunCaller.logBindings). */
  logBindings?: Record<string, unknown>;
  /** The logger a run's logger is a child of, with logBindings (see RunCaller.logParent). */
  logParent?: Logger;
  /**
   * Aborted when the client goes away (HTTP connection closed, WebSocket operation completed).
   * Absent for a WebSocket subscription: ending its event stream stops its run (RunEventStream).
   */
  signal?: AbortSignal;
  launcher: RunLauncher;
  /** One run per operation: set once a run has started. */
  allowance: RunAllowance;
  /**
   * What the operation has read of the store so far, one budget for all its fields (answer-size.ts): whole threads
   * (copilotThread, loadAgentState), and the values its copilotThread answers hold.
   */
  storedReads: StoredReads;
  /** Whether the client takes a streaming format (multipart/mixed or SSE; always over WebSocket). */
  acceptsIncremental: boolean;
  /** The request's Copilot Cloud public API key (X-CopilotCloud-Public-API-Key), for guardrails. */
  publicApiKey?: string;
  /** Who is asking, when authentication is on. */
  principal?: Principal;
  /** The key the client's limits are counted under (its principal's id, or its address). */
  client?: string;
  /** Where the output of the runs the operation starts is counted for its connection (RunCaller.output). */
  output?: OutputHolder;
  /**
   * HTTP: the executor's handle on the operation (made by Executor `prepare`), a token with nothing of the
   * operation on it. Apollo hands resolvers and the executor a copy of the context: the executor finds what it
   * keeps of the operation by this, which the copy shares.
   */
  execution?: ExecutionHandle;
}

/** What an executor made to know one of its operations again (see GatewayContext `execution`): a token. */
export interface ExecutionHandle {
  readonly executor: ExecutorName;
}

/**
 * One request may start one run, however its document repeats the run-starting field (aliases,
 * fragments, @defer). Called by each resolver that starts one.
 */
export function claimRun(context: GatewayContext): RunCaller {
  if (context.allowance.used) {
    throw new BadUserInputError(
      'An operation may start one run; this one asks for another (through aliases, fragments or @defer).',
    );
  }
  context.allowance.used = true;
  return callerOf(context);
}

/** The engine's view of who is asking. */
export function callerOf(context: GatewayContext): RunCaller {
  return {
    requestId: context.requestId,
    logger: context.logger,
    logBindings: context.logBindings,
    logParent: context.logParent,
    signal: context.signal,
    publicApiKey: context.publicApiKey,
    principal: context.principal,
    client: context.client,
    output: context.output,
  };
}
