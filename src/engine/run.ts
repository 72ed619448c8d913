import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { guardedController } from '../core/abort.js';
import { GatewayError, LimitExceededError, toGatewayError } from '../core/errors.js';
import {
  TOKEN_COUNTS,
  type AgentStateSnapshot,
  type MetaEventPayload,
  type RunListener,
  type RuntimeEvent,
  type TokenUsage,
} from '../core/events.js';
import { idProblem } from '../core/ids.js';
import { childLogger } from '../core/logging.js';
import { MESSAGE_SUCCESS, RUN_SUCCESS, failedMessage, failedRun, type RunStatus } from '../core/status.js';
import type { RunWriter } from '../core/writer.js';
import { eventBytes } from '../core/event-bytes.js';

/** What the resolvers (and later the thread store) see of a run: its ids, its events and its end. */
export interface RunHandle {
  readonly threadId: string;
  readonly runId: string;
  /**
   * Receives every event the run emits from now on, numbered at the source. Subscribers attached
   * before the run starts see all of them, from RunStarted to RunFinished. Returns an unsubscribe.
   * `onFailure` is told when the rest of the run cannot be shown, so the view ends with that error
   * instead of RunFinished: only a run whose events wait for the thread store (StoredRun) does this,
   * when the store cannot take them.
   */
  subscribe(listener: RunListener, onFailure?: (error: GatewayError) => void): () => void;
  /** Aborts the run (client gone, server shutting down). A finished run ignores it. */
  abort(reason: GatewayError): void;
  /** The terminal status, once the run has finished. Never rejects. */
  readonly finished: Promise<RunStatus>;
  /** The request that started it, for a failed status's details (PROTOCOL.md §5.2). */
  readonly requestId?: string | undefined;
}

/** What a driver (the model loop, the agent loop) works with. */
export interface RunContext {
  readonly threadId: string;
  readonly runId: string;
  readonly requestId: string | undefined;
  readonly logger: Logger;
  /** Where everything the run says is written; checks the order of what is written. */
  readonly writer: RunWriter;
  /**
   * The run's signal, aborted when the run is. It is guarded (core/abort.ts): an upstream client or
   * action that adds a throwing abort listener cannot take the process down.
   */
  readonly signal: AbortSignal;
  /** Fields for the run's final log line ("rounds", "agent", …). */
  readonly summary: Record<string, unknown>;
  /**
   * Calls into code the gateway does not own (an adapter, an agent client) with the run's guarded
   * signal, and stops waiting as soon as the run aborts, even if that code ignores its signal; a call
   * that fails aborts the run's signal with its error, so whatever it still has going is told to stop.
   * While it runs, an upstream that writes nothing for `timeouts.firstMs` after the call starts, or
   * for `timeouts.idleMs` between writes after its first, fails the run with the error
   * `timeouts.onTimeout` builds; every write resets the clock.
   */
  callUpstream(timeouts: UpstreamTimeouts, call: (signal: AbortSignal) => Promise<void>): Promise<void>;
  /** Ends, as Success, the text messages and action calls an upstream left open. */
  closeOpenMessages(): void;
}

/** How long an upstream call may be silent: before its first write (a model thinking), and between writes. */
export interface UpstreamTimeouts {
  firstMs: number;
  idleMs: number;
  /** The error the run fails with: `waitedMs` of silence, before the call's first write or after one. */
  onTimeout: (waitedMs: number, beforeFirstWrite: boolean) => GatewayError;
}

/** One way of producing a run's events: the model round loop or the agent loop. */
export type RunDriver = (context: RunContext) => Promise<void>;

export interface RunOptions {
  threadId: string;
  runId: string;
  logger: Logger;
  /** Fields for the run's log lines besides the run's ids (see RunCaller.logBindings). */
  logBindings?: Record<string, unknown>;
  requestId?: string;
  /**
   * The most output the run may produce, counted as the memory thread store counts its events (eventBytes): past it
   * the run is aborted, LIMIT_EXCEEDED. Unbounded when not given.
   */
  maxOutputBytes?: number;
}

type RunState = 'created' | 'running' | 'finished';

/**
 * One run: the state machines, the writer's checks, idle timers, sequence numbers and fan-out.
 * State machines: the run (created → running → finished) and each text message / action call
 * (open → ended). Every run ends with exactly one RunFinished, and every message opened is ended
 * before it (Failed when the run failed). What to say comes from a driver beside it.
 */
export class Run implements RunHandle, RunWriter, RunContext {
  readonly threadId: string;
  readonly runId: string;
  readonly finished: Promise<RunStatus>;
  private state: RunState = 'created';
  private readonly controller: AbortController;
  /** Ends the upstream call in progress, if any, with the run's abort reason. */
  private endCall: ((error: unknown) => void) | undefined;
  private listeners: RunListener[] = [];
  private sequence = 0;
  /** What the run has produced so far, and the most it may (RunOptions.maxOutputBytes). */
  private outputBytes = 0;
  private readonly maxOutputBytes: number;
  /** Set once the run's status is decided, while the events that close it are emitted. */
  private finishing = false;
  private readonly openTexts = new Set<string>();
  // Created on a run's first action call or result: most runs are text only, and a held stream
  // pays for every empty set it keeps.
  private openCalls: Set<string> | undefined;
  /** What the run's model calls used, per provider and model (RunFinished.usage); made on the first report. */
  private usageByModel: Map<string, TokenUsage> | undefined;
  /** Open reasoning messages; made on the first (most runs never have one). */
  private openReasoning: Set<string> | undefined;
  private results: Set<string> | undefined;
  private readonly usedIds = new Set<string>();
  private lastActivity = 0;
  /** Set when the run's signal aborts: read per token, where the signal's own getter is measurably slower. */
  private abortedWith: { reason: unknown } | undefined;
  /** The run's logger: its ids (and the caller's log bindings) on every line. */
  readonly logger: Logger;
  readonly requestId: string | undefined;
  /** Fields for the run's final log line, filled by the driver. */
  readonly summary: Record<string, unknown> = {};
  private settle!: (status: RunStatus) => void;

  constructor(options: RunOptions) {
    this.threadId = options.threadId;
    this.runId = options.runId;
    this.requestId = options.requestId;
    this.maxOutputBytes = options.maxOutputBytes ?? Infinity;
    this.logger = childLogger(options.logger, {
      ...options.logBindings,
      runId: options.runId,
      threadId: options.threadId,
    });
    this.controller = guardedController((error) =>
      this.logger.error({ err: error }, 'an abort listener of an upstream client threw; ignored'),
    );
    const signal = this.controller.signal;
    signal.addEventListener('abort', () => (this.abortedWith = { reason: signal.reason }), { once: true });
    this.finished = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  /**
   * What a view that keeps all the run says holds of it (HeldOutput): what the run has produced so far, as its output
   * bound counts it (RunOptions.maxOutputBytes).
   */
  get heldBytes(): number {
    return this.outputBytes;
  }

  subscribe(listener: RunListener): () => void {
    if (this.state === 'finished') return () => {};
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  abort(reason: GatewayError): void {
    if (this.state === 'finished' || this.controller.signal.aborted) return;
    this.controller.abort(reason);
    this.endCall?.(reason);
  }

  /** Starts the run on `driver`. The returned promise (also `finished`) resolves with the terminal status. */
  start(driver: RunDriver): Promise<RunStatus> {
    if (this.state !== 'created') throw new Error('A run can be started only once.');
    this.state = 'running';
    void this.execute(driver).catch((error) => {
      // execute() handles everything it calls; this is the last guard against a logger or listener bug.
      try {
        this.logger.error({ err: error }, 'run engine failed unexpectedly');
      } catch {
        // A logger that throws has nothing more to say.
      }
      if (this.state !== 'finished') this.finish(failedRun(toGatewayError(error), this.requestId));
    });
    return this.finished;
  }

  /**
   * Runs the driver, then ends the run with what it came to. Not an async function: a run spends its life waiting on
   * its driver, and a suspended frame would be held all along.
   */
  private execute(driver: RunDriver): Promise<void> {
    const started = performance.now();
    this.emit({ type: 'RunStarted', threadId: this.threadId, runId: this.runId });
    let driven: Promise<void>;
    try {
      // The run is its driver's context: no context object or closures per run.
      driven = Promise.resolve(driver(this));
    } catch (error) {
      driven = Promise.reject(error);
    }
    return driven.then(
      () => this.driven(started, false, undefined),
      (error: unknown) => this.driven(started, true, error),
    );
  }

  /** The driver has returned (`failed`: with `error`): the run ends, successful unless it failed or was aborted. */
  private driven(started: number, failed: boolean, error: unknown): void {
    const signal = this.controller.signal;
    let status: RunStatus;
    let failureCause: string | undefined;
    if (!failed && !signal.aborted) {
      status = RUN_SUCCESS;
    } else {
      const cause = signal.aborted ? (signal.reason as unknown) : error;
      const gatewayError = toGatewayError(cause);
      // What clients are not shown (an upstream's own text, an unexpected error) is logged.
      const inner = gatewayError.cause;
      if (inner !== undefined) failureCause = inner instanceof Error ? inner.message : String(inner);
      if (gatewayError.code === 'INTERNAL_SERVER_ERROR') this.logger.error({ err: cause }, 'run failed unexpectedly');
      status = failedRun(gatewayError, this.requestId);
    }
    this.finish(status);
    const durationMs = Math.round(performance.now() - started);
    if (status.code === 'Failed') {
      // At the error's severity: a client that went away or a stop asked for (info in the table) is not a warning.
      const level = status.details.originalError.severity === 'info' ? 'info' : 'warn';
      this.logger[level](
        { ...this.summary, code: status.details.code, durationMs, cause: failureCause },
        `run failed: ${status.details.description}`,
      );
    } else {
      this.logger.info({ ...this.summary, durationMs }, 'run succeeded');
    }
  }

  /** The run writes its events itself (RunContext.writer). */
  get writer(): RunWriter {
    return this;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  closeOpenMessages(): void {
    for (const id of this.openTexts) this.textEnd(id);
    if (this.openCalls) for (const id of this.openCalls) this.actionEnd(id);
    if (this.openReasoning) for (const id of this.openReasoning) this.reasoningEnd(id);
  }

  callUpstream(timeouts: UpstreamTimeouts, call: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const signal = this.controller.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      let idleTimer: NodeJS.Timeout | undefined;
      const end = (error?: unknown) => {
        if (this.endCall !== end) return; // already ended: by the run's abort, or by the call
        this.endCall = undefined;
        clearTimeout(idleTimer);
        if (error === undefined) resolve();
        else reject(error);
      };
      this.endCall = end;
      // The idle clock: any write resets it (lastActivity); the timer re-arms for the time left. Until
      // the call's first write the limit is the first-write one, and the timer looks again at least every idleMs,
      // so that once the first write has come the idle limit holds from it (re-armed for all of a long first-write
      // limit, a model that stalled right after its first chunk was held that long: found from outside).
      const started = (this.lastActivity = performance.now());
      const check = () => {
        const beforeFirst = this.lastActivity === started;
        const limit = beforeFirst ? timeouts.firstMs : timeouts.idleMs;
        const idle = performance.now() - this.lastActivity;
        if (idle >= limit) this.abort(timeouts.onTimeout(limit, beforeFirst));
        else idleTimer = setTimeout(check, Math.min(limit - idle, timeouts.idleMs) + 1);
      };
      idleTimer = setTimeout(check, Math.min(timeouts.firstMs, timeouts.idleMs));
      let pending: Promise<void>;
      try {
        // An adapter in plain JavaScript may return nothing: that is a call that has finished.
        pending = Promise.resolve(call(signal));
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        () => end(),
        (error: unknown) => {
          // The call failed: whatever it still has going (a stream, a request) is told to stop. The
          // run fails with this error (the run's abort reason, when the run was aborted first).
          if (!signal.aborted) this.controller.abort(error);
          end(error);
        },
      );
    });
  }

  // --- RunWriter -------------------------------------------------------------

  textStart(proposedId?: string | null, parentMessageId?: string | null): string {
    this.assertWritable();
    const id = this.claimId(proposedId, 'msg');
    this.openTexts.add(id);
    this.emit({ type: 'TextMessageStart', messageId: id, parentMessageId: parentMessageId ?? null, role: 'assistant' });
    return id;
  }

  textContent(messageId: string, content: string): void {
    this.assertWritable();
    if (!this.openTexts.has(messageId)) throw new Error(`Text message "${messageId}" is not open.`);
    if (content.length === 0) return;
    this.emit({ type: 'TextMessageContent', messageId, content });
  }

  textEnd(messageId: string): void {
    this.assertWritable();
    if (!this.openTexts.delete(messageId)) return;
    this.emit({ type: 'TextMessageEnd', messageId, status: MESSAGE_SUCCESS });
  }

  actionStart(proposedId: string | null | undefined, actionName: string, parentMessageId?: string | null): string {
    this.assertWritable();
    const id = this.claimId(proposedId, 'call');
    (this.openCalls ??= new Set()).add(id);
    this.emit({
      type: 'ActionExecutionStart',
      actionExecutionId: id,
      actionName,
      parentMessageId: parentMessageId ?? null,
    });
    return id;
  }

  actionArgs(actionExecutionId: string, args: string): void {
    this.assertWritable();
    if (!this.openCalls?.has(actionExecutionId))
      throw new Error(`Action execution "${actionExecutionId}" is not open.`);
    if (args.length === 0) return;
    this.emit({ type: 'ActionExecutionArgs', actionExecutionId, args });
  }

  actionEnd(actionExecutionId: string): void {
    this.assertWritable();
    if (!this.openCalls?.delete(actionExecutionId)) return;
    this.emit({ type: 'ActionExecutionEnd', actionExecutionId, status: MESSAGE_SUCCESS });
  }

  usage(report: TokenUsage): void {
    if (this.state !== 'running') return; // a late report changes nothing already told
    const key = `${report.provider ?? ''}\u0000${report.model ?? ''}`;
    const total = (this.usageByModel ??= new Map()).get(key);
    // Only the counts TokenUsage has, whatever else a report carries.
    const first: TokenUsage = {
      ...(report.provider !== undefined ? { provider: report.provider } : {}),
      ...(report.model !== undefined ? { model: report.model } : {}),
    };
    this.usageByModel.set(key, addUsage(total ?? first, report));
  }

  reasoningStart(proposedId?: string | null): string {
    this.assertWritable();
    const id = this.claimId(proposedId, 'reasoning');
    (this.openReasoning ??= new Set()).add(id);
    this.emit({ type: 'ReasoningStart', messageId: id });
    return id;
  }

  reasoningContent(messageId: string, content: string): void {
    this.assertWritable();
    if (!this.openReasoning?.has(messageId)) throw new Error(`Reasoning message "${messageId}" is not open.`);
    if (content.length === 0) return;
    this.emit({ type: 'ReasoningContent', messageId, content });
  }

  reasoningEnd(messageId: string): void {
    this.assertWritable();
    if (!this.openReasoning?.delete(messageId)) return;
    this.emit({ type: 'ReasoningEnd', messageId });
  }

  actionResult(actionExecutionId: string, actionName: string, result: string): void {
    this.assertWritable();
    if (this.openCalls?.has(actionExecutionId))
      throw new Error(`Action execution "${actionExecutionId}" is still open.`);
    if (this.results?.has(actionExecutionId)) {
      // An agent repeating a result it was given (or the gateway executed) changes nothing.
      this.logger.debug({ actionExecutionId, actionName }, 'a second result for an action call was ignored');
      return;
    }
    (this.results ??= new Set()).add(actionExecutionId);
    this.emit({
      type: 'ActionExecutionResult',
      messageId: `result-${actionExecutionId}`,
      actionExecutionId,
      actionName,
      result,
    });
  }

  agentState(snapshot: AgentStateSnapshot): void {
    this.assertWritable();
    this.emit({
      type: 'AgentStateMessage',
      messageId: `state_${randomUUID()}`,
      threadId: snapshot.threadId ?? this.threadId,
      agentName: snapshot.agentName,
      nodeName: snapshot.nodeName,
      runId: snapshot.runId ?? this.runId,
      active: snapshot.active,
      role: 'assistant',
      state: snapshot.state,
      running: snapshot.running,
    });
  }

  metaEvent(event: MetaEventPayload): void {
    this.assertWritable();
    this.emit({ type: 'MetaEvent', event });
  }

  // --- internals ------------------------------------------------------------

  private assertWritable(): void {
    if (this.state !== 'running') throw new Error('The run has finished.');
    if (this.abortedWith !== undefined) throw this.abortedWith.reason;
    this.lastActivity = performance.now();
  }

  private claimId(proposed: string | null | undefined, prefix: string): string {
    // An id an upstream proposed is used once, and only when it is a string that would pass as a client's id (at most
    // 256 characters, no control character or lone surrogate: found from outside, an agent's 8 MiB message id was
    // repeated in every event of the message, 436 MB to the client).
    const id =
      typeof proposed === 'string' && proposed && !this.usedIds.has(proposed) && idProblem(proposed) === undefined
        ? proposed
        : `${prefix}_${randomUUID()}`;
    this.usedIds.add(id);
    return id;
  }

  private finish(status: RunStatus): void {
    // Its status is decided: the events that close it count, and end nothing (outputOverLimit).
    this.finishing = true;
    const messageStatus = status.code === 'Failed' ? failedMessage(status.details.description) : MESSAGE_SUCCESS;
    for (const messageId of this.openTexts) this.emit({ type: 'TextMessageEnd', messageId, status: messageStatus });
    if (this.openCalls)
      for (const actionExecutionId of this.openCalls)
        this.emit({ type: 'ActionExecutionEnd', actionExecutionId, status: messageStatus });
    if (this.openReasoning) for (const messageId of this.openReasoning) this.emit({ type: 'ReasoningEnd', messageId });
    this.openTexts.clear();
    this.openCalls?.clear();
    this.openReasoning?.clear();
    this.state = 'finished';
    this.emit(
      this.usageByModel
        ? { type: 'RunFinished', status, usage: [...this.usageByModel.values()] }
        : { type: 'RunFinished', status },
    );
    this.listeners = [];
    this.settle(status);
  }

  /**
   * The run has produced more than it may: it is ended (its upstream call too), LIMIT_EXCEEDED. An upstream that never
   * stops (or a flood of events) would otherwise fill the heap: the run's record and every client's view hold it all.
   */
  private outputOverLimit(): void {
    if (this.abortedWith !== undefined || this.state !== 'running' || this.finishing) return;
    const limitMb = Math.round((this.maxOutputBytes / 1024 / 1024) * 100) / 100;
    this.logger.warn(
      { outputBytes: this.outputBytes, limitBytes: this.maxOutputBytes },
      'a run produced more output than maxRunOutputMb allows; it was ended',
    );
    this.abort(
      new LimitExceededError(
        `The run produced more than ${limitMb} MiB of output (maxRunOutputMb, MAX_RUN_OUTPUT_MB); it was ended.`,
        {
          details: { limit: 'maxRunOutputMb', limitBytes: this.maxOutputBytes },
        },
      ),
    );
  }

  /** Numbers the event and hands it to every subscriber; a subscriber that throws is dropped, not the run. */
  private emit(event: RuntimeEvent): void {
    const sequenced = event as RuntimeEvent & { sequence: number };
    sequenced.sequence = this.sequence++;
    this.outputBytes += eventBytes(sequenced);
    if (this.outputBytes > this.maxOutputBytes) this.outputOverLimit();
    for (const listener of this.listeners) {
      try {
        listener(sequenced);
      } catch (error) {
        this.logger.error({ err: error, event: event.type }, 'a run subscriber threw; it was dropped');
        this.listeners = this.listeners.filter((l) => l !== listener);
      }
    }
  }
}

/** Two usages of one provider and model added up: a count either has is kept, one both have summed. */
function addUsage(total: TokenUsage, report: TokenUsage): TokenUsage {
  const sum: TokenUsage = { ...total };
  for (const field of TOKEN_COUNTS) {
    const count = report[field];
    // Whole numbers only (a custom adapter's report is not checked elsewhere), capped where JSON numbers stop being
    // exact (AG-UI's schema refuses more).
    if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 0)
      sum[field] = Math.min((sum[field] ?? 0) + count, Number.MAX_SAFE_INTEGER);
  }
  return sum;
}
