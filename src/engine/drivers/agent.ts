import { randomUUID } from 'node:crypto';
import type { ActionCatalog } from '../../actions/action.js';
import type { AgentEntry } from '../../agents/agent.js';
import { UpstreamError } from '../../core/errors.js';
import type { Message, ToolDefinition } from '../../core/messages.js';
import type { RunRequest } from '../request.js';
import type { RunContext, RunDriver } from '../run.js';
import { CoalescingWriter } from '../coalescing.js';
import { RoundRecorder, executeServerCalls } from './round.js';

export type UpstreamCallObserver = (call: {
  threadId: string;
  runId: string;
  upstream: string;
}) => (error: unknown) => void;

export interface AgentLoopOptions {
  /** The most agent calls in one run (server-side results are followed by another call). */
  maxRounds: number;
  /** An agent that sends nothing for this long is cut off and the run fails. */
  agentIdleTimeoutMs: number;
  /** How long an agent may take to send its first event of each call. */
  agentFirstEventTimeoutMs: number;
  /** A server-side or remote action that takes longer gets an ACTION_TIMEOUT error result. */
  actionTimeoutMs: number;
  /**
   * Told of every call of a model or an agent as it starts (the run, and the upstream: "model:openai",
   * "agent:research"); the function it returns is told how the call ended (its error, or undefined).
   */
  onUpstreamCall?: UpstreamCallObserver;
}

export interface AgentRunPlan {
  agent: AgentEntry;
  request: RunRequest;
  /** The conversation the agent gets (the request's, plus a model's hand-over call when there was one). */
  messages: readonly Message[];
  catalog: ActionCatalog;
  options: AgentLoopOptions;
}

/** The agent loop as a run driver (for `agentSession` requests). */
export function agentDriver(plan: AgentRunPlan): RunDriver {
  return (context) => driveAgent(context, plan);
}

/**
 * The agent loop: call the agent with the conversation, its state and config, and the tools it may
 * call (frontend actions plus the gateway's server-side and remote actions, never itself). When it
 * calls server-side or remote actions and leaves no frontend call open, the gateway executes them
 * and calls the agent again with their results, up to `maxRounds` calls. An interrupt, a frontend
 * call or an answer without server-side calls ends the run.
 */
export async function driveAgent(context: RunContext, plan: AgentRunPlan): Promise<void> {
  const { agent, request, catalog, options } = plan;
  context.summary.agent = agent.name;
  context.summary.agentKind = agent.kind;
  const ownState = request.agentStates.find((entry) => entry.agentName === agent.name);
  const tools: ToolDefinition[] = [
    ...request.frontendTools.filter((tool) => !catalog.has(tool.name) && tool.name !== agent.name),
    ...catalog.tools().filter((tool) => tool.name !== agent.name),
  ];
  let messages = [...plan.messages];
  let state = ownState?.state ?? {};

  for (let round = 1; ; round++) {
    context.summary.rounds = round;
    const recorder = new RoundRecorder(context.writer, catalog.size > 0);
    // Chunks of one message that arrive together become one chunk (agents send one line per token).
    const out = new CoalescingWriter(recorder);
    const runId = round === 1 ? context.runId : randomUUID();
    try {
      await recorded(options, context, `agent:${agent.name}`, () =>
        context.callUpstream(
          {
            firstMs: options.agentFirstEventTimeoutMs,
            idleMs: options.agentIdleTimeoutMs,
            onTimeout: (waited, beforeFirst) =>
              new UpstreamError(
                'UPSTREAM_TIMEOUT',
                `Agent "${agent.name}" sent nothing for ${waited} ms ` +
                  (beforeFirst
                    ? 'after it was called (agentFirstEventTimeoutMs)'
                    : 'between events (agentIdleTimeoutMs)') +
                  ' and was cut off.',
                { details: { agentName: agent.name } },
              ),
          },
          (signal) =>
            agent.client.run(
              {
                agentName: agent.name,
                threadId: context.threadId,
                runId,
                nodeName: request.agentSession?.nodeName ?? null,
                messages,
                tools,
                state,
                config: ownState?.config ?? {},
                metaEvents: round === 1 ? request.metaEvents : [],
                context: request.context,
                properties: request.properties,
                principal: request.principal,
                forwardedParameters: request.forwardedParameters,
                logger: context.logger,
              },
              out,
              signal,
            ),
        ),
      );
    } catch (error) {
      out.discard();
      throw error;
    }
    out.flush();
    context.closeOpenMessages();

    const calls = recorder.unansweredCalls();
    const serverCalls = await executeServerCalls(context, recorder, calls, catalog, request, options.actionTimeoutMs);
    if (serverCalls.length === 0) return;
    // The agent waits for the user (an interrupt) or the client (a frontend action): stop here.
    if (recorder.interrupted || serverCalls.length < calls.length) return;
    if (round >= options.maxRounds) {
      context.logger.warn({ maxRounds: options.maxRounds }, 'agent run stopped after the most rounds allowed');
      return;
    }
    messages = [...messages, ...recorder.messages()];
    state = parseState(recorder.latestState) ?? state;
  }
}

function parseState(json: string | undefined): Record<string, unknown> | undefined {
  if (json === undefined) return undefined;
  try {
    const value = JSON.parse(json);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Makes a call of a model or an agent, telling `onUpstreamCall` when it starts and how it ended. */
export function recorded(
  options: { onUpstreamCall?: UpstreamCallObserver },
  run: { threadId: string; runId: string },
  upstream: string,
  call: () => Promise<void>,
): Promise<void> {
  const observe = options.onUpstreamCall;
  if (!observe) return call();
  const ended = observe({ threadId: run.threadId, runId: run.runId, upstream });
  return call().then(
    () => ended(undefined),
    (error: unknown) => {
      ended(error);
      throw error;
    },
  );
}
