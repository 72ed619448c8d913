import type { IncomingMessage, ServerResponse } from 'node:http';
import { NO_BODY } from '../transports/http/body.js';
import { sendJson } from '../transports/responses.js';
import { BadRequestError, BadUserInputError, MethodNotAllowedError, NotFoundError } from '../core/errors.js';
import { idProblem, isWellFormedText } from '../core/ids.js';
import { DRAIN_REFUSAL_HEADER, drainRefusalStatus, isDrainRefusal } from '../engine/drain.js';
import type { RunStartedInput } from './events.js';
import { DEFAULT_AGENT, parseRunAgentInput, runRequestFromAgUi, type RunAgentInput } from './input.js';
import { RunEventStream } from '../views/run-events.js';
import { isObject } from '../core/values.js';
import { runtimeInfo } from './info.js';
import { threadResource } from './threads.js';
import { loadAgUiSse, type AgUiSse } from './sse.js';
import { transcribeEnvelope, transcribeUpload } from './transcribe.js';
import { answer, methodNotAllowed, sendError, UnknownAgUiAgentError } from './answers.js';
import type { AgUiCaller } from './caller.js';
import { serveConnect, type ConnectContext } from './connect.js';
import type { AgUiTransportOptions } from './options.js';

export type { AgUiCaller } from './caller.js';
export type { AgUiTransportOptions } from './options.js';

/**
 * The AG-UI runtime protocol that CopilotKit ≥1.50 clients speak, under the GraphQL path, in both of
 * its forms: multi-route (`GET {path}/info`, `POST {path}/agent/{id}/run|connect`, `POST
 * {path}/agent/{id}/stop/{threadId}`) and single-route (`POST {path}` with `{method, params, body}`).
 * Runs are the engine's, streamed as AG-UI events over SSE, framed by @ag-ui/encoder.
 */
export class AgUiTransport implements ConnectContext {
  /** Set before the first stream opens (`loadAgUiSse`). */
  private loaded: AgUiSse | undefined;

  constructor(readonly options: AgUiTransportOptions) {}

  /** The SSE writer (@ag-ui/encoder's), loaded on first use. */
  async sse(): Promise<AgUiSse> {
    return (this.loaded ??= await loadAgUiSse(this.options));
  }

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
    if (match[2] === 'connect') return serveConnect(this, res, agentId, body, caller);
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
        if (envelope.method === 'agent/connect') return serveConnect(this, res, agentId, envelope.body, caller);
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
    let sse: AgUiSse;
    try {
      input = await parseRunAgentInput(body);
      sse = await this.sse();
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
        output: this.options.holdOutput?.(res),
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
    await sse.stream(res, stream, startedInput, caller.logger, !unrecorded);
  }

  /**
   * The thread's stored runs replayed (each compacted: chunks merged), then the run in flight, if any,
   * followed live to its end. An unknown thread is an empty stream.
   */
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
      if (error instanceof MethodNotAllowedError) res.setHeader('allow', error.allow);
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

  async checkAgent(agentId: string): Promise<void> {
    if (agentId === DEFAULT_AGENT) return;
    const agents = await this.options.launcher.listAgents();
    if (!agents.some((agent) => agent.name === agentId))
      throw new UnknownAgUiAgentError(agentId, [DEFAULT_AGENT, ...agents.map((a) => a.name)]);
  }
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
