import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ForwardedParameters, ModelAdapter, ModelOutput } from '../adapters/adapter.js';
import {
  actionErrorResult,
  parseActionArguments,
  serializeActionResult,
  type ServerActionRegistry,
} from '../actions/server-action.js';
import { GatewayError, UpstreamError, toGatewayError } from '../errors.js';
import type { RuntimeEvent, RuntimeEventListener } from './events.js';
import type { Message, ToolDefinition } from './messages.js';
import { MESSAGE_SUCCESS, RUN_SUCCESS, failedMessage, failedRun, type RunStatus } from './status.js';

/** What one run is asked to do. */
export interface RunInput {
  threadId: string;
  runId: string;
  messages: Message[];
  /** Frontend actions offered to the model (already filtered: no disabled or remote ones). */
  frontendTools: ToolDefinition[];
  forwardedParameters: ForwardedParameters;
  properties: Record<string, unknown>;
}

/** What a run needs from the gateway. */
export interface RunDependencies {
  adapter: ModelAdapter;
  serverActions: ServerActionRegistry;
  /** The most model calls in one run (server-side results are followed by another call). */
  maxRounds: number;
  /** A model that sends nothing for this long is cut off and the run fails. */
  modelIdleTimeoutMs: number;
  /** A server-side action handler that takes longer than this gets an error result. */
  actionTimeoutMs: number;
  logger: Logger;
  requestId?: string;
}

type RunState = 'created' | 'running' | 'finished';

/** What the model produced in one round, in order, for the continuation. */
type RoundItem =
  | { kind: 'text'; id: string; chunks: string[] }
  | { kind: 'call'; id: string; name: string; chunks: string[]; parentMessageId: string | null };

/**
 * One run: drives the model adapter round by round, executes server-side actions, and emits the
 * run's runtime events to one listener. State machines: the run (created → running → finished),
 * and each text message / action call (open → ended). Every run ends with exactly one RunFinished,
 * and every message opened is ended before it (Failed when the run failed).
 */
export class Run implements ModelOutput {
  private state: RunState = 'created';
  private readonly controller = new AbortController();
  private readonly openTexts = new Set<string>();
  private readonly openCalls = new Map<string, RoundItem & { kind: 'call' }>();
  private readonly usedIds = new Set<string>();
  private round: RoundItem[] = [];
  private lastActivity = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly logger: Logger;
  private failureCause: string | undefined;
  /** Chunks are kept for executing and continuing after server-side actions; none are registered, none kept. */
  private readonly keepChunks: boolean;

  constructor(
    private readonly input: RunInput,
    private readonly deps: RunDependencies,
    private readonly listener: RuntimeEventListener,
  ) {
    this.logger = deps.logger.child({ runId: input.runId, threadId: input.threadId });
    this.keepChunks = deps.serverActions.size > 0;
  }

  get runId(): string {
    return this.input.runId;
  }

  get threadId(): string {
    return this.input.threadId;
  }

  /** Aborts the run (client gone, unsubscribed, server shutting down). A finished run ignores it. */
  abort(reason: GatewayError): void {
    if (this.state === 'finished' || this.controller.signal.aborted) return;
    this.controller.abort(reason);
  }

  /** Runs to the end. Resolves with the terminal status; never rejects. */
  async execute(): Promise<RunStatus> {
    if (this.state !== 'created') throw new Error('A run can be executed only once.');
    this.state = 'running';
    const started = performance.now();
    this.emit({ type: 'RunStarted', threadId: this.input.threadId, runId: this.input.runId });
    let status: RunStatus;
    let rounds = 0;
    try {
      rounds = await this.loop();
      status = RUN_SUCCESS;
    } catch (error) {
      const cause = this.controller.signal.aborted ? (this.controller.signal.reason as unknown) : error;
      const gatewayError = toGatewayError(cause);
      // What clients are not shown (a provider's own text, an unexpected error) is logged.
      const inner = gatewayError.cause;
      if (inner !== undefined) this.failureCause = inner instanceof Error ? inner.message : String(inner);
      if (gatewayError.code === 'INTERNAL_SERVER_ERROR') {
        this.logger.error({ err: cause }, 'run failed unexpectedly');
      }
      status = failedRun(gatewayError, this.deps.requestId);
    }
    this.finish(status);
    const durationMs = Math.round(performance.now() - started);
    if (status.code === 'Failed') {
      this.logger.warn({ code: status.details.code, durationMs, rounds, cause: this.failureCause }, `run failed: ${status.details.description}`);
    } else {
      this.logger.info({ durationMs, rounds, adapter: this.deps.adapter.name }, 'run succeeded');
    }
    return status;
  }

  // --- rounds -------------------------------------------------------------

  private async loop(): Promise<number> {
    const messages = [...this.input.messages];
    const tools = this.toolsForModel();
    for (let round = 1; ; round++) {
      this.round = [];
      await this.callModel(messages, tools);
      const calls = this.round.filter((item): item is RoundItem & { kind: 'call' } => item.kind === 'call');
      const serverCalls = calls.filter((call) => this.deps.serverActions.has(call.name));
      if (serverCalls.length === 0) return round;

      const results: Message[] = [];
      for (const call of serverCalls) {
        const result = await this.executeServerAction(call);
        const messageId = `result-${call.id}`;
        this.emit({ type: 'ActionExecutionResult', messageId, actionExecutionId: call.id, actionName: call.name, result });
        results.push({ kind: 'result', id: messageId, actionExecutionId: call.id, actionName: call.name, result });
      }
      // A frontend action is executed by the client, which sends its result with the next request.
      if (serverCalls.length < calls.length) return round;
      if (round >= this.deps.maxRounds) {
        this.logger.warn({ maxRounds: this.deps.maxRounds }, 'run stopped after the most rounds allowed');
        return round;
      }
      messages.push(...this.roundMessages(), ...results);
    }
  }

  private toolsForModel(): ToolDefinition[] {
    const serverTools = this.deps.serverActions.tools();
    const frontend = this.input.frontendTools.filter((tool) => !this.deps.serverActions.has(tool.name));
    return [...serverTools, ...frontend];
  }

  private async callModel(messages: readonly Message[], tools: readonly ToolDefinition[]): Promise<void> {
    const signal = this.controller.signal;
    signal.throwIfAborted();
    this.armIdleTimer();
    let onAbort: (() => void) | undefined;
    // Settles on abort even if an adapter ignores its signal, so no run can hang.
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([
        this.deps.adapter.stream(
          {
            threadId: this.input.threadId,
            runId: this.input.runId,
            messages,
            tools,
            forwardedParameters: this.input.forwardedParameters,
            logger: this.logger,
          },
          this,
          signal,
        ),
        aborted,
      ]);
      // An adapter that returns with messages still open has finished them.
      for (const id of this.openTexts) this.textEnd(id);
      for (const id of [...this.openCalls.keys()]) this.actionEnd(id);
    } finally {
      signal.removeEventListener('abort', onAbort!);
      aborted.catch(() => {});
      this.disarmIdleTimer();
    }
  }

  private roundMessages(): Message[] {
    return this.round.map((item): Message =>
      item.kind === 'text'
        ? { kind: 'text', id: item.id, role: 'assistant', content: item.chunks.join('') }
        : {
            kind: 'actionExecution',
            id: item.id,
            name: item.name,
            arguments: item.chunks.join(''),
            parentMessageId: item.parentMessageId,
          },
    );
  }

  private async executeServerAction(call: RoundItem & { kind: 'call' }): Promise<string> {
    const action = this.deps.serverActions.get(call.name)!;
    const parsed = parseActionArguments(call.chunks.join(''), action.parameters);
    if (!parsed.ok) return actionErrorResult('INVALID_ARGUMENTS', parsed.message);

    const controller = new AbortController();
    const runSignal = this.controller.signal;
    // An aborted run stops waiting for the handler at once, even if the handler ignores its signal.
    let onRunAbort!: () => void;
    const runAborted = new Promise<never>((_, reject) => {
      onRunAbort = () => {
        controller.abort(runSignal.reason);
        reject(runSignal.reason);
      };
    });
    runAborted.catch(() => {});
    runSignal.addEventListener('abort', onRunAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new GatewayError('UPSTREAM_TIMEOUT', `Action "${call.name}" did not finish within ${this.deps.actionTimeoutMs} ms.`);
        controller.abort(error);
        reject(error);
      }, this.deps.actionTimeoutMs);
    });
    try {
      const value = await Promise.race([
        Promise.resolve().then(() =>
          action.handler(parsed.args, {
            threadId: this.input.threadId,
            runId: this.input.runId,
            properties: this.input.properties,
            signal: controller.signal,
            logger: this.logger,
          }),
        ),
        timeout,
        runAborted,
      ]);
      runSignal.throwIfAborted();
      return serializeActionResult(value);
    } catch (error) {
      runSignal.throwIfAborted();
      if (error instanceof GatewayError && error.code === 'UPSTREAM_TIMEOUT') {
        return actionErrorResult('ACTION_TIMEOUT', error.message);
      }
      this.logger.warn({ err: error, action: call.name }, 'server-side action failed');
      const message = error instanceof Error ? error.message : String(error);
      return actionErrorResult('ACTION_FAILED', message);
    } finally {
      clearTimeout(timer);
      runSignal.removeEventListener('abort', onRunAbort);
    }
  }

  // --- idle timeout ---------------------------------------------------------

  private armIdleTimer(): void {
    this.lastActivity = performance.now();
    const timeoutMs = this.deps.modelIdleTimeoutMs;
    const check = () => {
      const idle = performance.now() - this.lastActivity;
      if (idle >= timeoutMs) {
        this.abort(new UpstreamError('UPSTREAM_TIMEOUT', `The model sent nothing for ${timeoutMs} ms and was cut off.`, { status: 504 }));
      } else {
        this.idleTimer = setTimeout(check, timeoutMs - idle + 1);
      }
    };
    this.idleTimer = setTimeout(check, timeoutMs);
  }

  private disarmIdleTimer(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  // --- ModelOutput: what the adapter writes ----------------------------------

  textStart(proposedId?: string | null): string {
    this.assertWritable();
    const id = this.claimId(proposedId, 'msg');
    this.openTexts.add(id);
    this.round.push({ kind: 'text', id, chunks: [] });
    this.emit({ type: 'TextMessageStart', messageId: id, parentMessageId: null, role: 'assistant' });
    return id;
  }

  textContent(messageId: string, content: string): void {
    this.assertWritable();
    if (!this.openTexts.has(messageId)) throw new Error(`Text message "${messageId}" is not open.`);
    if (content.length === 0) return;
    if (this.keepChunks) {
      const item = this.round[this.round.length - 1];
      if (item?.id === messageId) item.chunks.push(content);
      else (this.round.find((i) => i.id === messageId) as RoundItem).chunks.push(content);
    }
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
    const item = { kind: 'call' as const, id, name: actionName, chunks: [] as string[], parentMessageId: parentMessageId ?? null };
    this.openCalls.set(id, item);
    this.round.push(item);
    this.emit({ type: 'ActionExecutionStart', actionExecutionId: id, actionName, parentMessageId: parentMessageId ?? null });
    return id;
  }

  actionArgs(actionExecutionId: string, args: string): void {
    this.assertWritable();
    const call = this.openCalls.get(actionExecutionId);
    if (!call) throw new Error(`Action execution "${actionExecutionId}" is not open.`);
    if (args.length === 0) return;
    if (this.keepChunks) call.chunks.push(args);
    this.emit({ type: 'ActionExecutionArgs', actionExecutionId, args });
  }

  actionEnd(actionExecutionId: string): void {
    this.assertWritable();
    if (!this.openCalls.delete(actionExecutionId)) return;
    this.emit({ type: 'ActionExecutionEnd', actionExecutionId, status: MESSAGE_SUCCESS });
  }

  // --- internals ------------------------------------------------------------

  private assertWritable(): void {
    if (this.state !== 'running') throw new Error('The run has finished.');
    const signal = this.controller.signal;
    if (signal.aborted) throw signal.reason;
    this.lastActivity = performance.now();
  }

  private claimId(proposed: string | null | undefined, prefix: string): string {
    const id = proposed && !this.usedIds.has(proposed) ? proposed : `${prefix}_${randomUUID()}`;
    this.usedIds.add(id);
    return id;
  }

  private finish(status: RunStatus): void {
    this.disarmIdleTimer();
    const messageStatus = status.code === 'Failed' ? failedMessage(status.details.description) : MESSAGE_SUCCESS;
    for (const messageId of this.openTexts) this.emit({ type: 'TextMessageEnd', messageId, status: messageStatus });
    for (const actionExecutionId of this.openCalls.keys()) {
      this.emit({ type: 'ActionExecutionEnd', actionExecutionId, status: messageStatus });
    }
    this.openTexts.clear();
    this.openCalls.clear();
    this.state = 'finished';
    this.emit({ type: 'RunFinished', status });
  }

  private emit(event: RuntimeEvent): void {
    this.listener(event);
  }
}
