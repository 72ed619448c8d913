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
export function driveAgent(context: RunContext, plan: AgentRunPlan): Promise<void> {
  const { agent, request, catalog } = plan;
  context.summary.agent = agent.name;
  context.summary.agentKind = agent.kind;
  const ownState = request.agentStates.find((entry) => entry.agentName === agent.name);
  const tools: ToolDefinition[] = [
    ...request.frontendTools.filter((tool) => !catalog.has(tool.name) && tool.name !== agent.name),
    ...catalog.tools().filter((tool) => tool.name !== agent.name),
  ];
  return agentRound({ context, plan, ownState, tools, messages: [...plan.messages], state: ownState?.state ?? {} }, 1);
}

/**
 * What every round of one run's agent loop uses. The loop is not an async function: a run spends its life in an
 * agent call, and a suspended frame would hold its registers all along (see the model loop).
 */
interface AgentLoop {
  context: RunContext;
  plan: AgentRunPlan;
  ownState: AgentRunPlan['request']['agentStates'][number] | undefined;
  tools: ToolDefinition[];
  messages: readonly Message[];
  state: Record<string, unknown>;
}

/** One round: the agent's call, then what its calls lead to. */
function agentRound(loop: AgentLoop, round: number): Promise<void> {
  const { context, plan, ownState, tools, messages, state } = loop;
  const { agent, request, catalog, options } = plan;
  context.summary.rounds = round;
  const recorder = new RoundRecorder(context.writer, catalog.size > 0);
  // Chunks of one message that arrive together become one chunk (agents send one line per token).
  const out = new CoalescingWriter(recorder);
  const runId = round === 1 ? context.runId : randomUUID();
  return recorded(options, context, `agent:${agent.name}`, () =>
    context.callUpstream(
      {
        firstMs: options.agentFirstEventTimeoutMs,
        idleMs: options.agentIdleTimeoutMs,
        onTimeout: (waited, beforeFirst) =>
          new UpstreamError(
            'UPSTREAM_TIMEOUT',
            `Agent "${agent.name}" sent nothing for ${waited} ms ` +
              (beforeFirst ? 'after it was called (agentFirstEventTimeoutMs)' : 'between events (agentIdleTimeoutMs)') +
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
  ).then(
    () => afterAgentRound(loop, round, recorder, out),
    (error: unknown) => {
      out.discard();
      throw error;
    },
  );
}

/**
 * After the agent's call: the server-side and remote actions it called are executed and, unless it waits for the user
 * or the client, the agent is called again with their results.
 */
async function afterAgentRound(
  loop: AgentLoop,
  round: number,
  recorder: RoundRecorder,
  out: CoalescingWriter,
): Promise<void> {
  const { context, plan } = loop;
  const { request, catalog, options } = plan;
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
  loop.messages = [...loop.messages, ...recorder.messages()];
  loop.state = parseState(recorder.latestState) ?? loop.state;
  return agentRound(loop, round + 1);
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
