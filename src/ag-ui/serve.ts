import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../core/principal.js';
import { NO_BODY } from '../transports/http/body.js';
import { drained, sendGatewayError, sendJson } from '../transports/responses.js';
import { toAgUiMessages } from './messages.js';
import type { KeepOutput } from '../transports/slow-readers.js';
import {
  BadRequestError,
  BadUserInputError,
  GatewayError,
  MethodNotAllowedError,
  NotFoundError,
  toGatewayError,
} from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import { idProblem, isWellFormedText } from '../core/ids.js';
import type { RunLauncher } from '../engine/launcher.js';
import { DRAIN_REFUSAL_HEADER, drainRefusalStatus, isDrainRefusal } from '../engine/drain.js';
import type { RunStartedInput } from './events.js';
import { DEFAULT_AGENT, parseRunAgentInput, runRequestFromAgUi, type RunAgentInput } from './input.js';
import { RunEventStream } from '../views/run-events.js';
import { readUpTo, replaysOf, resumePoint, RunProgress, type Replay } from './resume.js';
import { isObject } from '../core/values.js';
import type { Transcriber } from '../adapters/transcription.js';
import { runtimeInfo } from './info.js';
import { threadResource } from './threads.js';
import { loadAgUiSse, type AgUiSse } from './sse.js';
import type { InputBudget } from '../core/input-budget.js';
import { transcribeEnvelope, transcribeUpload } from './transcribe.js';

export interface AgUiTransportOptions {
  launcher: RunLauncher;
  /** The GraphQL path: AG-UI is served under it too. */
  path: string;
  /** Milliseconds between SSE keep-alive comments. */
  keepAliveMs: number;
  /** Shown in /info. */
  version: string;
  /** Told when an SSE stream starts and ends (metrics). */
  onStream?: (delta: 1 | -1) => void;
  /** Voice input (`/transcribe`, the `transcribe` method); none: not offered. */
  transcriber?: Transcriber;
  /** The budget of input held at once (maxBufferedInputMb): an upload counts in it while it is read. */
  inputBudget?: InputBudget;
  /**
   * Which clients get the model's reasoning: `declared`, those that declare AG-UI 1.0 (`protocolVersion`); `always`,
   * every one (GatewayOptions.agUiReasoning). @default "declared"
   */
  reasoning?: 'declared' | 'always';
  /**
   * Declares what a `connect` keeps to write later (its replay's runs not yet written) as its connection's output,
   * for the budget of output held for clients that do not read (SlowReaderGuard.keep); none: not counted.
   */
  keepOutput?: KeepOutput;
}

/** Who asks, as the HTTP transport knows it. */
export interface AgUiCaller {
  requestId: string;
  logger: Logger;
  /**
   * Together: the transport's logger and the fields `logger` adds to it, so that a run's logger is
   * made from the transport's with those fields rather than as a grandchild (see RunCaller.logParent).
   * Given one without the other, a run's lines would lose or repeat fields.
   */
  logParent?: Logger;
  logBindings?: Record<string, unknown>;
  publicApiKey?: string;
  /** Who is asking, when authentication is on: its threads only. */
  principal?: Principal;
  /** The key the caller's limits are counted under. */
  client?: string;
  /**
   * A connect's `Last-Event-ID` header: the SSE id (`<runId>:<sequence>`) of the last event the client
   * has; the connect resumes after it instead of replaying the thread from its start.
   */
  lastEventId?: string;
}

/**
 * The AG-UI runtime protocol that CopilotKit ≥1.50 clients speak, under the GraphQL path, in both of
 * its forms: multi-route (`GET {path}/info`, `POST {path}/agent/{id}/run|connect`, `POST
 * {path}/agent/{id}/stop/{threadId}`) and single-route (`POST {path}` with `{method, params, body}`).
 * Runs are the engine's, streamed as AG-UI events over SSE, framed by @ag-ui/encoder.
 */
export class AgUiTransport {
  /** Set before the first stream opens (`loadAgUiSse`). */
  private sse!: AgUiSse;

  constructor(private readonly options: AgUiTransportOptions) {}

  /** Whether a path is one of the multi-route paths. */
  owns(pathname: string): boolean {
    const { path } = this.options;
    const rest = pathname.startsWith(path) ? pathname.slice(path.length) : '';
    return (
      rest === '/info' ||
      rest === '/transcribe' ||
      rest.startsWith('/agent/') ||
      rest === '/threads' ||
      rest.startsWith('/threads/')
    );
  }

  /** A multi-route request; `readBody` reads its JSON body (undefined when there is none). */
  async route(
    req: IncomingMessage,
    res: ServerResponse,
    pathname: string,
    readBody: () => Promise<unknown>,
    caller: AgUiCaller,
  ): Promise<void> {
    const rest = pathname.slice(this.options.path.length);
    if (rest === '/info') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res, 'GET');
      return sendJson(res, 200, await runtimeInfo(this.options, false));
    }
    if (rest === '/transcribe') {
      return transcribeUpload(req, res, this.options.transcriber, caller, this.options.inputBudget);
    }
    if (rest === '/threads' || rest.startsWith('/threads/')) {
      const method = req.method ?? 'GET';
      const body = method === 'GET' || method === 'HEAD' ? undefined : await readBody();
      if (body === NO_BODY) return;
      const search = req.url?.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
      // HEAD is GET without the body (Node sends none for HEAD), as for /info.
      return this.threadResource(res, method === 'HEAD' ? 'GET' : method, `${rest}${search}`, body, caller);
    }
    const match = /^\/agent\/([^/]+)\/(run|connect|suggest|stop\/([^/]+))$/.exec(rest);
    if (!match) return answer(res, new NotFoundError(`No AG-UI route ${pathname}.`), 'Not found');
    if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
    const agentId = decode(match[1]);
    const body = await readBody();
    if (body === NO_BODY) return;
    if (match[2] === 'run') return this.run(res, agentId, body, caller);
    if (match[2] === 'suggest') return this.run(res, agentId, body, caller, true);
    if (match[2] === 'connect') return this.connect(res, agentId, body, caller);
    return this.stop(res, agentId, decode(match[3]), body, caller);
  }

  /** A single-route envelope `{method, params, body}` posted to the path. */
  async envelope(res: ServerResponse, envelope: Record<string, unknown>, caller: AgUiCaller): Promise<void> {
    const params = isObject(envelope.params) ? envelope.params : {};
    // An id holding a lone surrogate is invalid too: as UTF-8 (a store's key), two such ids would be one.
    const param = (name: string): string | undefined => {
      const value = params[name];
      return typeof value === 'string' && value !== '' && isWellFormedText(value) ? value : undefined;
    };
    const missing = (name: string) =>
      answer(res, new BadRequestError(`Missing or invalid parameter '${name}'.`), 'invalid_request');
    switch (envelope.method) {
      case 'info':
        return sendJson(res, 200, await runtimeInfo(this.options, true));
      case 'transcribe':
        return transcribeEnvelope(res, envelope.body, this.options.transcriber, caller);
      case 'resource/request': {
        const target = param('path');
        if (!target?.startsWith('/')) return missing('path');
        // Absent: GET. Present, it must be a method's name (a number or an empty string is no method).
        if (params.httpMethod !== undefined && !param('httpMethod')) return missing('httpMethod');
        const method = (param('httpMethod') ?? 'GET').toUpperCase();
        return this.threadResource(res, method, target, envelope.body, caller);
      }
      case 'agent/run':
      case 'agent/suggest':
      case 'agent/connect': {
        const agentId = param('agentId');
        if (!agentId) return missing('agentId');
        if (envelope.method === 'agent/connect') return this.connect(res, agentId, envelope.body, caller);
        return this.run(res, agentId, envelope.body, caller, envelope.method === 'agent/suggest');
      }
      case 'agent/stop': {
        const agentId = param('agentId');
        const threadId = param('threadId');
        if (!agentId) return missing('agentId');
        if (!threadId) return missing('threadId');
        return this.stop(res, agentId, threadId, envelope.body, caller);
      }
      default:
        // 400 invalid_request as CopilotKit's runtime answers it; BAD_REQUEST is the table's code for a 400.
        return answer(res, new BadRequestError(`Unsupported method '${String(envelope.method)}'.`), 'invalid_request');
    }
  }

  /**
   * A run, or a suggestion (`suggest`: `/agent/:id/suggest`): the same run of the agent, recorded nowhere. A
   * run whose input is a suggestion's (isSuggestion: how a single-route app asks) is one too.
   */
  private async run(
    res: ServerResponse,
    agentId: string,
    body: unknown,
    caller: AgUiCaller,
    suggest = false,
  ): Promise<void> {
    let input: RunAgentInput;
    let stream: RunEventStream;
    let unrecorded: boolean;
    try {
      input = await parseRunAgentInput(body);
      this.sse ??= await loadAgUiSse(this.options);
      const request = runRequestFromAgUi(agentId, input);
      if (suggest) request.unrecorded = true;
      // A suggestion, however asked (runRequestFromAgUi knows one sent as a plain run).
      unrecorded = request.unrecorded === true;
      // A run has no abort signal: a client that goes away leaves it going (and recorded), as CopilotKit's
      // runtime does; `stop` ends it. A suggestion is nobody's once its client has gone: it ends then.
      let signal: AbortSignal | undefined;
      if (unrecorded) {
        const controller = new AbortController();
        res.once('close', () => controller.abort());
        signal = controller.signal;
      }
      const runCaller = {
        signal,
        requestId: caller.requestId,
        logger: caller.logger,
        logParent: caller.logParent,
        logBindings: { ...caller.logBindings, protocol: 'ag-ui' },
        publicApiKey: caller.publicApiKey,
        principal: caller.principal,
        client: caller.client,
      };
      stream = await this.options.launcher.start(request, runCaller, (run) => new RunEventStream(run, true));
    } catch (error) {
      // Refused by a draining instance before anything ran: 421 to a proxy that asked, which sends it on.
      const status = isDrainRefusal(error) ? drainRefusalStatus(res.req.headers[DRAIN_REFUSAL_HEADER]) : undefined;
      return sendError(res, error, caller, status);
    }
    const startedInput: RunStartedInput = {
      threadId: input.threadId,
      runId: input.runId,
      messages: input.messages,
      tools: input.tools,
      context: input.context,
      state: input.state ?? {},
      forwardedProps: input.forwardedProps ?? {},
      ...(input.protocolVersion ? { protocolVersion: input.protocolVersion } : {}),
    };
    // A suggestion's events carry no SSE ids: it is stored nowhere, so there is nothing to resume.
    await this.sse.stream(res, stream, startedInput, caller.logger, !unrecorded);
  }

  /**
   * The thread's stored runs replayed (each compacted: chunks merged), then the run in flight, if any,
   * followed live to its end. An unknown thread is an empty stream.
   */
  private async connect(res: ServerResponse, agentId: string, body: unknown, caller: AgUiCaller): Promise<void> {
    let input: RunAgentInput;
    let resumeAfter: { runId: string; sequence: number } | undefined;
    let replays: Replay[];
    let resumeAt: number;
    try {
      input = await parseRunAgentInput(body);
      this.sse ??= await loadAgUiSse(this.options);
      await this.checkAgent(agentId);
      resumeAfter = resumePoint(caller.lastEventId);
      // Read apart, so that the thread itself is not kept while the replay is written: only what is left of each run.
      ({ replays, resumed: resumeAt } = await this.replaysOf(input.threadId, caller.principal, resumeAfter?.runId));
    } catch (error) {
      return sendError(res, error, caller);
    }
    if (resumeAfter && resumeAt < 0) {
      caller.logger.info({ lastEventId: caller.lastEventId }, 'Last-Event-ID names no kept run');
    }
    // Each run's messages are let go once its start is written; until then they count as this connection's output
    // (the transports' budget for clients that do not read, slow-readers.ts).
    const kept = this.options.keepOutput?.(
      res,
      replays.reduce((sum, replay) => sum + replay.bytes, 0),
    );
    const threads = this.options.launcher.threadService;
    this.sse.open(res);
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), this.options.keepAliveMs);
    let feed: AsyncIterableIterator<SequencedEvent> | undefined;
    res.once('close', () => void feed?.return?.());
    // Each replayed run is a complete AG-UI run, whatever its stored log holds: a start first, every
    // message ended, one end (a log cut short gets RUN_ERROR).
    let current: { input: RunStartedInput; started: boolean; ended: boolean; progress: RunProgress } | undefined;
    try {
      for (const [index, run] of replays.entries()) {
        const resumed = index === 0 && resumeAt >= 0;
        current = {
          input: {
            threadId: input.threadId,
            runId: run.runId,
            messages: toAgUiMessages(run.messages!),
            tools: [],
            context: [],
            state: {},
            forwardedProps: {},
            ...(input.protocolVersion ? { protocolVersion: input.protocolVersion } : {}),
          },
          started: resumed,
          ended: false,
          progress: new RunProgress(),
        };
        // The run's messages are let go once its start (which carries them) is written, or when it has none to write.
        const letGo = (): void => {
          if (run.messages === undefined) return;
          run.messages = undefined;
          current!.input.messages = [];
          kept?.release(run.bytes);
        };
        if (resumed) {
          letGo();
          // What the client has of the run is read, not sent: its open messages, interrupts and calls still count.
          const had = await threads.readUpTo(input.threadId, run.runId, resumeAfter!.sequence);
          current.ended = readUpTo(had, resumeAfter!.sequence, current.progress);
          if (res.destroyed) break;
          if (current.ended) continue;
        }
        feed = threads.follow(input.threadId, run.runId, resumed ? resumeAfter!.sequence : -1);
        for await (const event of feed) {
          if (res.destroyed) break;
          const starting = !current.started;
          if (starting && event.type !== 'RunStarted') {
            this.sse.write(
              res,
              { type: 'RunStarted', threadId: input.threadId, runId: run.runId, sequence: -1 },
              current.input,
              current.progress,
            );
          }
          current.started = true;
          if (event.type === 'RunFinished') current.ended = true;
          const more = this.sse.write(res, event, current.input, current.progress);
          if (starting) letGo();
          if (!more) await drained(res);
        }
        letGo();
        if (res.destroyed) break;
      }
    } catch (error) {
      caller.logger.warn({ err: error }, 'an AG-UI connect replay failed');
      if (current?.started && !current.ended && !res.destroyed) {
        const reason = toGatewayError(error);
        const message = `The replay was cut short: ${reason.message}`;
        this.sse.endCutShort(res, current.progress, message, reason, current.input);
      }
    } finally {
      clearInterval(keepAlive);
      if (!res.destroyed) res.end();
    }
  }

  /** The runs a `connect` replays (replaysOf), from the thread as the caller may see it. */
  private async replaysOf(
    threadId: string,
    principal: Principal | undefined,
    resumeRunId: string | undefined,
  ): Promise<{ replays: Replay[]; resumed: number }> {
    // A running run is replayed from its log: its output is not read twice (replaysOf cuts the transcript before it).
    const thread = await this.options.launcher.threadService.thread(threadId, principal, { runningOutput: false });
    return replaysOf(thread, resumeRunId);
  }

  /** A thread-list or thread-inspection request, in either form (see threads.ts). */
  private async threadResource(
    res: ServerResponse,
    method: string,
    target: string,
    body: unknown,
    caller: AgUiCaller,
  ): Promise<void> {
    try {
      const { status, body: answer } = await threadResource(
        this.options.launcher.threadService,
        method,
        target,
        body,
        caller.principal,
      );
      return sendJson(res, status, answer);
    } catch (error) {
      const allow = error instanceof GatewayError ? error.details?.allow : undefined;
      if (typeof allow === 'string') res.setHeader('allow', allow);
      return sendError(res, error, caller);
    }
  }

  private async stop(
    res: ServerResponse,
    agentId: string,
    threadId: string,
    body: unknown,
    caller: AgUiCaller,
  ): Promise<void> {
    if (
      body !== undefined &&
      body !== null &&
      (!isObject(body) ||
        Object.keys(body).some((key) => key !== 'runId') ||
        (body.runId !== undefined && (typeof body.runId !== 'string' || idProblem(body.runId) !== undefined)))
    ) {
      const invalid = new BadUserInputError('The body of a stop is {} or {"runId": "…"}.');
      return answer(res, invalid, 'Invalid request body');
    }
    // The thread's id, checked as every id a client names (its path segment may hold anything percent-encoded).
    const problem = idProblem(threadId);
    if (problem)
      return answer(res, new BadUserInputError(`threadId ${problem}.`, { field: 'threadId' }), 'Invalid thread id');
    try {
      await this.checkAgent(agentId);
      const runId = isObject(body) && typeof body.runId === 'string' ? body.runId : undefined;
      const stopped = await this.options.launcher.threadService.stop(threadId, runId, caller.principal);
      return sendJson(
        res,
        200,
        stopped ? { stopped: true } : { stopped: false, message: `No active run for thread '${threadId}'.` },
      );
    } catch (error) {
      return sendError(res, error, caller);
    }
  }

  private async checkAgent(agentId: string): Promise<void> {
    if (agentId === DEFAULT_AGENT) return;
    const agents = await this.options.launcher.listAgents();
    if (!agents.some((agent) => agent.name === agentId))
      throw new UnknownAgUiAgentError(agentId, [DEFAULT_AGENT, ...agents.map((a) => a.name)]);
  }
}

/** A request AG-UI's runtime refuses, answered as CopilotKit's runtime answers it: `title` is its `error`. */
function answer(res: ServerResponse, error: GatewayError, title: string): void {
  sendGatewayError(res, error, { agUi: true, title });
}

/** A run, connect or stop that failed: the error's code is its `error`, with the request id (the unexpected logged). */
function sendError(res: ServerResponse, error: unknown, caller: AgUiCaller | undefined, status?: number): void {
  const gatewayError = toGatewayError(error);
  if (gatewayError.code === 'INTERNAL_SERVER_ERROR') {
    caller?.logger.error({ err: error }, 'an AG-UI request failed unexpectedly');
  }
  sendGatewayError(res, gatewayError, { agUi: true, requestId: caller?.requestId, detailsFirst: true, status });
}

/**
 * AGENT_NOT_FOUND as AG-UI clients get it: CopilotKit's runtime's wording, and only the name in details (the GraphQL
 * side's AgentNotFoundError lists the agents in its details).
 */
class UnknownAgUiAgentError extends GatewayError {
  declare readonly code: 'AGENT_NOT_FOUND';
  constructor(agentId: string, available: readonly string[]) {
    super('AGENT_NOT_FOUND', `Agent '${agentId}' does not exist. Available: ${available.join(', ')}.`, {
      details: { agentName: agentId },
    });
    this.name = 'AgentNotFoundError';
  }
}

function methodNotAllowed(res: ServerResponse, allow: string): void {
  const refused = new MethodNotAllowedError('Method not allowed', allow);
  res.setHeader('allow', refused.allow);
  sendGatewayError(res, refused, { agUi: true, title: 'Method not allowed', withoutMessage: true });
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
