import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ForwardedParameters, ModelAdapter } from '../adapters/adapter.js';
import type { ServerActionRegistry } from '../actions/server-action.js';
import { AgentNotFoundError, BadUserInputError, GatewayError, NotSupportedError } from '../errors.js';
import type { CopilotResponseModel } from '../graphql/models.js';
import { createCopilotResponseView } from '../views/copilot-response.js';
import { RunEventStream } from '../views/run-events.js';
import type { RuntimeEventListener, SequencedEvent } from './events.js';
import { messagesFromInput, parseJsonSchema, withContext, type MessageInputLike, type ToolDefinition } from './messages.js';
import { Run, type RunInput } from './run.js';

/** The parts of GenerateCopilotResponseInput the engine reads (structural, so any caller can build it). */
export interface RunRequestData {
  threadId?: string | null;
  runId?: string | null;
  messages: readonly MessageInputLike[];
  frontend: {
    actions: readonly { name: string; description: string; jsonSchema: string; available?: string | null }[];
  };
  forwardedParameters?: ForwardedParameters | null;
  agentSession?: { agentName: string } | null;
  cloud?: { guardrails?: unknown } | null;
  extensions?: { openaiAssistantAPI?: unknown } | null;
  metaEvents?: readonly unknown[] | null;
  context?: readonly { description: string; value: string }[] | null;
}

/**
 * Who asked for the run: the request's logger and id, a signal aborted when the client goes away,
 * and the operation's one-run allowance (one request may start one model run, however its document
 * repeats the field through aliases, fragments or @defer).
 */
export interface RunCaller {
  requestId: string;
  logger: Logger;
  signal?: AbortSignal;
  allowance: RunAllowance;
}

/** Shared by every resolution of a run-starting field within one operation. */
export interface RunAllowance {
  used: boolean;
}

export interface LauncherOptions {
  adapter: ModelAdapter;
  serverActions: ServerActionRegistry;
  maxRounds: number;
  modelIdleTimeoutMs: number;
  actionTimeoutMs: number;
  /** Runs served at once; one more is refused with OVERLOADED. */
  maxConcurrentRuns: number;
}

/** An agent this gateway can run. */
export interface AgentInfo {
  id: string;
  name: string;
  description: string;
}

const MAX_ID_LENGTH = 256;

/** Validates requests and starts runs, seen through the mutation's or the subscription's view. */
export class RunLauncher {
  /** No agent kinds are wired in yet, so the list is empty and agent requests fail clearly. */
  readonly agents: readonly AgentInfo[] = [];
  private active = 0;

  constructor(private readonly options: LauncherOptions) {}

  /** Starts a run for `generateCopilotResponse`. Bad input throws before anything is streamed. */
  startForMutation(data: RunRequestData, properties: Record<string, unknown> | null | undefined, caller: RunCaller): CopilotResponseModel {
    const input = this.prepare(data, properties, caller);
    const view = createCopilotResponseView(input.threadId, input.runId);
    this.start(input, view.listener, caller);
    return view.model;
  }

  /** Starts a run for the `copilotRun` subscription. */
  startForSubscription(
    data: RunRequestData,
    properties: Record<string, unknown> | null | undefined,
    caller: RunCaller,
  ): AsyncIterableIterator<SequencedEvent> {
    const input = this.prepare(data, properties, caller);
    let run: Run | undefined;
    const stream = new RunEventStream(() => run?.abort(clientGone()));
    run = this.start(input, stream.listener, caller);
    return stream;
  }

  agentNotFound(agentName: string): AgentNotFoundError {
    return new AgentNotFoundError(agentName, this.agents.map((agent) => agent.name));
  }

  private start(input: RunInput, listener: RuntimeEventListener, caller: RunCaller): Run {
    const run = new Run(input, { ...this.options, logger: caller.logger, requestId: caller.requestId }, listener);
    this.active++;
    const signal = caller.signal;
    if (signal) {
      if (signal.aborted) run.abort(clientGone());
      else signal.addEventListener('abort', () => run.abort(clientGone()), { once: true });
    }
    void run.execute().finally(() => this.active--);
    return run;
  }

  private prepare(data: RunRequestData, properties: Record<string, unknown> | null | undefined, caller: RunCaller): RunInput {
    if (caller.allowance.used) {
      throw new BadUserInputError('An operation may start one run; this one asks for another (through aliases, fragments or @defer).');
    }
    caller.allowance.used = true;
    if (this.active >= this.options.maxConcurrentRuns) {
      throw new GatewayError('OVERLOADED', `The gateway is serving its most runs at once (${this.options.maxConcurrentRuns}); try again shortly.`, {
        status: 503,
        severity: 'warning',
      });
    }
    if (data.agentSession) throw this.agentNotFound(data.agentSession.agentName);
    if (data.cloud?.guardrails) throw new NotSupportedError('Copilot Cloud guardrails (cloud.guardrails)');
    if (data.extensions?.openaiAssistantAPI) throw new NotSupportedError('The OpenAI Assistants API (extensions.openaiAssistantAPI)');
    if (data.metaEvents?.length) throw new NotSupportedError('Meta events (agent interrupts)');

    const frontendTools: ToolDefinition[] = [];
    data.frontend.actions.forEach((action, index) => {
      if (action.available === 'disabled' || action.available === 'remote') return;
      frontendTools.push({
        name: action.name,
        description: action.description,
        parameters: parseJsonSchema(action.jsonSchema, `frontend.actions[${index}]`),
      });
    });

    return {
      threadId: checkId(data.threadId, 'threadId') ?? randomUUID(),
      runId: checkId(data.runId, 'runId') ?? randomUUID(),
      messages: withContext(messagesFromInput(data.messages), data.context ?? []),
      frontendTools,
      forwardedParameters: data.forwardedParameters ?? {},
      properties: properties ?? {},
    };
  }
}

function checkId(value: string | null | undefined, field: string): string | undefined {
  if (value == null || value === '') return undefined;
  if (value.length > MAX_ID_LENGTH) {
    throw new BadUserInputError(`${field} is longer than ${MAX_ID_LENGTH} characters.`, { field });
  }
  return value;
}

function clientGone(): GatewayError {
  return new GatewayError('CLIENT_DISCONNECTED', 'The client went away before the run finished.', { status: 499 });
}
