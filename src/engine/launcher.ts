import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ActionCatalog, type ActionSource } from '../actions/action.js';
import { mcpInstructions, type McpServers } from '../actions/mcp.js';
import type { ModelAdapter } from '../adapters/adapter.js';
import type { AgentEntry, AgentThreadState } from '../agents/agent.js';
import type { AgentRegistry } from '../agents/registry.js';
import { storedThreadState } from '../agents/thread-state.js';
import { guardSignal } from '../core/abort.js';
import {
  ClientDisconnectedError,
  GatewayError,
  LimitExceededError,
  MissingPublicApiKeyError,
  NotSupportedError,
  OverloadedError,
  RateLimitedError,
  ShuttingDownError,
} from '../core/errors.js';
import { markDrainRefusal } from './drain.js';
import { agentDriver, type AgentLoopOptions } from './drivers/agent.js';
import { modelDriver, withContext, withSystemNote } from './drivers/model.js';
import { admitForwardedParameters, checkModelInput, type ModelLimits } from './model-limits.js';
import { requestBytes, type RunRequest } from './request.js';
import type { InputBudget } from '../core/input-budget.js';
import { Run, type RunDriver, type RunHandle } from './run.js';
import { repairTranscript } from './transcript.js';
import { guardrailsApply, type Guardrails } from './guardrails.js';
import { afterRequest, beforeRequest, type RequestHooks } from './hooks.js';
import type { Admission, ThreadService } from './thread-service.js';
import type { Principal } from '../core/principal.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { RunTracing } from '../observability/tracing.js';
import type { RetryObserver } from '../upstream/attempts.js';
import { isHeldOutput, type OutputHolder } from './held-output.js';

export type { HeldOutput, OutputHolder } from './held-output.js';

/** Who asked for the run: the request's id and logger, and a signal aborted when the client goes away. */
export interface RunCaller {
  requestId: string;
  logger: Logger;
  /**
   * Fields the run's log lines carry besides those its parent logger (`logParent ?? logger`) already
   * binds. A transport that holds thousands of runs passes its own logger with these instead of a
   * child logger per request, so each run's logger is a child, not a grandchild (a pino grandchild
   * costs a hidden class of its own).
   */
  logBindings?: Record<string, unknown>;
  /**
   * The logger the run's own is a child of, with `logBindings` (default: `logger`). The HTTP
   * transport passes its logger and the request's id here, while `logger` is its request's child
   * logger: the run's logger is then a child with the same fields, not a grandchild.
   */
  logParent?: Logger;
  signal?: AbortSignal;
  /** The request's Copilot Cloud public API key, for guardrails. */
  publicApiKey?: string;
  /** Who is asking, when authentication is on: hooks, actions, agents and the thread store see it. */
  principal?: Principal;
  /** The key the caller's concurrent runs are counted under (its principal's id, or its address). */
  client?: string;
  /** Where the caller's answer counts the output of the runs it starts (see OutputHolder); none: not counted. */
  output?: OutputHolder;
}

export interface LauncherOptions extends AgentLoopOptions {
  adapter: ModelAdapter;
  /** Where server-side actions come from: the local registry and the remote endpoints. */
  actionSources: readonly ActionSource[];
  agents: AgentRegistry;
  modelIdleTimeoutMs: number;
  /** How long the model may take to send its first chunk of each call. */
  modelFirstTokenTimeoutMs: number;
  /** Told of each retry of a model call (metrics). */
  onModelRetry?: RetryObserver;
  /** Runs served at once; one more is refused with OVERLOADED. */
  maxConcurrentRuns: number;
  /** The most output one run may produce (maxRunOutputMb); past it the run fails LIMIT_EXCEEDED. */
  maxRunOutputBytes?: number;
  /** The input runs in flight may hold at once (maxBufferedInputMb); a run that would pass it is refused OVERLOADED. */
  inputBudget?: InputBudget;
  /** What clients may choose and send to the model (models, maxTokens, conversation size). */
  modelLimits: ModelLimits;
  /** MCP servers: the configured ones are among `actionSources`; a request may name more (when allowed). */
  mcp?: McpServers;
  /** Copilot Cloud input guardrails, for requests that set `cloud.guardrails`. */
  guardrails?: Guardrails;
  /** onBeforeRequest / onAfterRequest. */
  hooks?: RequestHooks;
  /** One run per thread, conversations completed from the store, every run recorded. */
  threads?: ThreadService;
  /** Concurrent runs per client (RATE_LIMITED beyond them). */
  limiter?: RateLimiter;
  /** Told of every run that starts, with its kind (metrics). */
  onRunStarted?: (run: RunHandle, kind: 'model' | 'agent') => void;
  /** Runs the run's work in a tracing span (OpenTelemetry), when tracing is on. */
  tracing?: RunTracing;
}

/**
 * Admits runs, routes each to the model or the named agent, and starts it. It knows nothing of the
 * protocols that asked: the caller attaches its own view to the run before the run starts, so the
 * view sees every event from the first.
 */
export class RunLauncher {
  private active = 0;
  /**
   * The runs of this process, for a shutdown that ends those still going, each with what settles
   * once it has finished and its clients have been shown its end (on Redis, once its last event is
   * stored).
   */
  private readonly running = new Map<Run, Promise<unknown>>();
  private draining: GatewayError | undefined;
  /** Set by abortAll: a run that starts after it (it was being admitted) is ended at once. */
  private aborting: GatewayError | undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: LauncherOptions) {}

  /** Runs going (or being admitted) in this process. */
  get activeRuns(): number {
    return this.active;
  }

  /**
   * Refuses every new run from now on with SHUTTING_DOWN, and resolves once no run is going (at
   * once when none is) or `signal` aborts, whichever comes first.
   */
  drain(signal: AbortSignal): Promise<void> {
    this.refuseNewRuns();
    if (this.active === 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      this.idleWaiters.push(done);
    });
  }

  /**
   * Ends every run still going with `reason` (its terminal Failed status), and from now on every run
   * still being admitted as soon as it starts; new runs are refused. Resolves when every run has
   * finished (runs stuck in admission, in a hook say, are waited for at most `admissionWaitMs`).
   */
  async abortAll(reason: GatewayError, admissionWaitMs = 5_000): Promise<void> {
    this.refuseNewRuns();
    this.aborting = reason;
    for (const run of this.running.keys()) run.abort(reason);
    await Promise.all(this.running.values());
    if (this.active === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, admissionWaitMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private refuseNewRuns(): void {
    // Thrown by start() before anything of the run is done: marked, so that the transports may tell a proxy
    // that asked (drain.ts) it is safe to send the request on to another instance.
    this.draining ??= markDrainRefusal(
      new ShuttingDownError(
        'This gateway instance is shutting down and starts no new runs; try again (another instance will answer).',
        { details: { retryAfterSeconds: 1 } },
      ),
    );
  }

  private runEnded(inputBytes: number): void {
    this.options.inputBudget?.release(inputBytes);
    this.active--;
    if (this.active === 0 && this.idleWaiters.length) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Whether the gateway keeps threads (`threadService` throws NOT_SUPPORTED otherwise). */
  get hasThreads(): boolean {
    return this.options.threads !== undefined;
  }

  /** The thread store as the resolvers use it (copilotThread, joinCopilotRun, stopCopilotRun). */
  get threadService(): ThreadService {
    const threads = this.options.threads;
    if (!threads) throw new NotSupportedError('This gateway keeps no threads.');
    return threads;
  }

  /**
   * Starts a run and returns the view `attach` builds over it. Bad requests (an unknown agent, too
   * many runs) throw before anything runs.
   */
  async start<View>(asked: RunRequest, caller: RunCaller, attach: (run: RunHandle) => View): Promise<View> {
    if (this.draining) throw this.draining;
    // Counted from here to the run's end: a run outlives its client, and holds its input until the model answers.
    const inputBytes = this.options.inputBudget ? requestBytes(asked) : 0;
    if (this.options.inputBudget && inputBytes > this.options.inputBudget.limitBytes) {
      // More than the budget holds with nothing else in flight: no wait could admit it, so the answer is final (and
      // comes before any refusal that asks the client to try again).
      const limit = this.options.inputBudget.limitBytes;
      throw new LimitExceededError(
        `The request's input counts about ${inputBytes} bytes as a run holds it, more than the gateway holds for ` +
          `all runs at once (${this.options.inputBudget.name}); send less (fewer or shorter messages, tools, context ` +
          `or state).`,
        { details: { field: 'input', unit: 'bytes', limit, value: inputBytes } },
      );
    }
    if (this.active >= this.options.maxConcurrentRuns) {
      throw new OverloadedError(
        `The gateway is serving its most runs at once (${this.options.maxConcurrentRuns}); try again shortly.`,
      );
    }
    if (this.options.inputBudget && !this.options.inputBudget.take(inputBytes)) {
      throw new OverloadedError(
        `The gateway holds its most input of runs in flight (${this.options.inputBudget.name}); try again shortly.`,
      );
    }
    // The run's place is taken now: the hook and the checks below may wait.
    this.active++;
    const hooks = this.options.hooks ?? {};
    let run: Run;
    let view: View;
    let admission: Admission | undefined;
    let releasePlace: (() => void) | undefined;
    try {
      releasePlace = await this.clientPlace(caller);
      // The thread is taken before anything else is asked (THREAD_BUSY), and the conversation completed from it.
      // An unrecorded run (a suggestion) takes no thread: it runs on a thread id of its own, made here, so that it
      // can neither read nor change a thread the client names (an agent keeps its state by thread id, and the
      // store's checks of owner and busy threads are skipped with the store).
      const own = asked.unrecorded ? { ...asked, threadId: `unrecorded-${randomUUID()}` } : asked;
      const owned = caller.principal ? { ...own, principal: caller.principal } : own;
      admission =
        this.options.threads && !asked.unrecorded ? await this.options.threads.admit(owned, caller.logger) : undefined;
      const admitted = admission?.request ?? owned;
      const request = hooks.onBeforeRequest ? await beforeRequest(hooks, admitted, caller) : admitted;
      const guarded = guardrailsApply(request.guardrails, request.messages);
      if (guarded && !caller.publicApiKey) {
        throw new MissingPublicApiKeyError(
          'cloud.guardrails needs a Copilot Cloud public API key: send it in the X-CopilotCloud-Public-API-Key header.',
        );
      }
      if (guarded && !this.options.guardrails) {
        throw new NotSupportedError('Guardrails are not configured on this gateway.');
      }
      run = new Run({
        threadId: request.threadId,
        runId: request.runId,
        logger: caller.logParent ?? caller.logger,
        logBindings: caller.logBindings,
        requestId: caller.requestId,
        maxOutputBytes: this.options.maxRunOutputBytes,
      });
      let driver = await this.driverFor(request, run.logger);
      if (guarded)
        driver = this.options.guardrails!.guard(driver, request.guardrails!, request.messages, caller.publicApiKey!);
      // First subscriber: the log has each event (and frees the thread at RunFinished) before any client
      // sees it; on Redis, clients see each event once it is stored.
      const visible = admission ? admission.record(run) : run;
      view = attach(visible);
      caller.output?.hold(isHeldOutput(view) ? view : run);
      afterRequest(hooks, request, run, run.logger);
      this.options.onRunStarted?.(run, request.agentSession ? 'agent' : 'model');
      const started = run;
      const release = releasePlace;
      const kind = request.agentSession ? 'agent' : 'model';
      const begin = () => started.start(driver);
      const running = this.options.tracing
        ? this.options.tracing.traceRun(
            run,
            kind,
            { 'copilot.agent': request.agentSession?.agentName, 'enduser.id': request.principal?.id },
            begin,
          )
        : begin();
      // A run holds its place until its clients have been shown its end, so that a drain waits for that too.
      const ended = visible === run ? running : Promise.all([running, visible.finished]);
      this.running.set(run, ended);
      ended.finally(() => {
        this.running.delete(started);
        release?.();
        this.runEnded(inputBytes);
      });
      if (this.aborting) run.abort(this.aborting);
    } catch (error) {
      releasePlace?.();
      this.runEnded(inputBytes);
      admission?.release();
      throw error;
    }
    const signal = caller.signal;
    if (signal) {
      if (signal.aborted) run.abort(clientGone());
      else {
        const onAbort = () => run.abort(clientGone());
        signal.addEventListener('abort', onAbort, { once: true });
        void run.finished.then(() => signal.removeEventListener('abort', onAbort));
      }
    }
    return view;
  }

  /** One of the client's places for a concurrent run (RATE_LIMITED when it has none left). */
  private async clientPlace(caller: RunCaller): Promise<(() => void) | undefined> {
    const limiter = this.options.limiter;
    if (!limiter || limiter.limits.concurrentRuns === 0 || !caller.client) return undefined;
    const place = await limiter.acquireRun(caller.client);
    if (typeof place === 'number') {
      throw new RateLimitedError(
        `This client already has its most runs going at once (${limiter.limits.concurrentRuns}); ` +
          'try again when one has finished.',
        { details: { retryAfterSeconds: Math.max(1, Math.ceil(place / 1000)) } },
      );
    }
    return place;
  }

  /** Every agent a client may ask for. */
  listAgents(): Promise<AgentEntry[]> {
    return this.options.agents.list();
  }

  /**
   * What the gateway knows of an agent's thread: the stored state and transcript when the thread store
   * has the agent's state; otherwise what the owning agent knows, or (when it knows nothing) the
   * stored transcript of a thread the gateway ran; `threadExists: false` when neither has anything.
   */
  async loadAgentState(
    agentName: string,
    threadId: string,
    properties: Record<string, unknown>,
    caller: RunCaller,
  ): Promise<AgentThreadState> {
    // The store unreachable: the agent is asked, as if the store had nothing.
    const threads = this.options.threads;
    const authenticated = threads?.authenticated === true;
    const found = await threads?.threadFor(threadId, caller.principal).catch((error: unknown) => {
      // Unreachable: the agent is asked, as if the store had nothing; not when callers are authenticated,
      // since whose thread it is cannot be checked.
      if (error instanceof GatewayError && error.code === 'STORE_UNAVAILABLE' && !authenticated) return undefined;
      throw error;
    });
    // Another principal's thread, or (with authentication on) one the store has no record of: as if there
    // were none, without asking the agent, which keeps its own state by thread id for everyone.
    if (found?.foreign || (authenticated && !found?.record)) return { threadExists: false, state: {}, messages: [] };
    const stored = found?.record;
    const storedState = stored?.agentStates.find((state) => state.agentName === agentName);
    if (stored && storedState) return storedThreadState(stored.messages, storedState.state);
    const agent = await this.options.agents.resolve(agentName);
    // Handed to the agent client, which may be the application's own: guarded (core/abort.ts).
    const logger = caller.logger;
    const signal = guardSignal(caller.signal ?? new AbortController().signal, (error) =>
      logger.error({ err: error, agentName }, 'an abort listener added by loadState threw; ignored'),
    );
    const known = await agent.client.loadState(
      { agentName, threadId, properties, logger: caller.logger, principal: caller.principal },
      signal,
    );
    if (known.threadExists || !stored) return known;
    return storedThreadState(stored.messages);
  }

  private async driverFor(request: RunRequest, logger: Logger): Promise<RunDriver> {
    const { options } = this;
    // Remote endpoints still on their first discovery get a short wait, so their actions are offered.
    const [, requested] = await Promise.all([
      options.agents.ready(),
      options.mcp?.forRequest(request.properties) ?? [],
    ]);
    const catalog = new ActionCatalog([...options.actionSources, ...requested], logger);
    if (request.agentSession) {
      const agent = await options.agents.resolve(request.agentSession.agentName);
      return agentDriver({ agent, request, messages: request.messages, catalog, options });
    }
    // Before any model call, so that a request the model would refuse (or the limits forbid) fails
    // as a request, with a clear error, and nothing is spent.
    const forwardedParameters = admitForwardedParameters(
      request.forwardedParameters,
      options.modelLimits,
      options.adapter.parameters,
      options.adapter.name,
    );
    const messages = repairTranscript(request.messages, logger);
    // As the model's first call will see it: with the context and the MCP tools' instructions.
    checkModelInput(
      withSystemNote(withContext(messages, request.context), 'gateway-mcp-tools', mcpInstructions(catalog.actions())),
      options.modelLimits,
    );
    return modelDriver({
      request: { ...request, messages, forwardedParameters },
      catalog,
      agents: options.agents.known(),
      options,
    });
  }
}

function clientGone(): ClientDisconnectedError {
  return new ClientDisconnectedError('The client went away before the run finished.');
}
