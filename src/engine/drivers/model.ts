import type { ActionCatalog } from '../../actions/action.js';
import { mcpInstructions } from '../../actions/mcp.js';
import type { ModelAdapter } from '../../adapters/adapter.js';
import type { AgentEntry } from '../../agents/agent.js';
import { UpstreamError } from '../../core/errors.js';
import type { ContextEntry, Message, ToolDefinition } from '../../core/messages.js';
import { checkModelInput, type ModelLimits } from '../model-limits.js';
import type { RetryObserver } from '../../upstream/attempts.js';
import type { RunRequest } from '../request.js';
import type { RunContext, RunDriver } from '../run.js';
import { driveAgent, recorded, type AgentLoopOptions } from './agent.js';
import { RoundRecorder, executeServerCalls } from './round.js';

export interface ModelDriverOptions extends AgentLoopOptions {
  adapter: ModelAdapter;
  /** A model that sends nothing for this long is cut off and the run fails. */
  modelIdleTimeoutMs: number;
  /** How long the model may take to send its first chunk of each call (it may think first). */
  modelFirstTokenTimeoutMs: number;
  /** Checked before every model call: server-side results may grow the conversation past them. */
  modelLimits: ModelLimits;
  /** Told of each retry of a model call (metrics). */
  onModelRetry?: RetryObserver;
}

/**
 * One run's model plan. `options` is the gateway's own object, shared by every run: a copy per run
 * with the run's catalog and agents spread into it cost a held stream an object and a hidden class
 * of its own (V8 gives each such copy a fresh map).
 */
export interface ModelRunPlan {
  request: RunRequest;
  /** Server-side and remote actions the model may call; the gateway executes them. */
  catalog: ActionCatalog;
  /** Agents the model may hand the conversation to by calling them as tools. */
  agents: readonly AgentEntry[];
  options: ModelDriverOptions;
}

const AGENT_TOOL_PARAMETERS = Object.freeze({ type: 'object', properties: {} });
const NO_AGENTS: ReadonlyMap<string, AgentEntry> = new Map();

/**
 * The model round loop: call the model; execute the server-side and remote actions it called;
 * when every call of the round was one of those, call it again with their results, up to
 * `maxRounds` calls. A frontend action call ends the run (the client executes it and sends its
 * result with the next request). A call naming an agent hands the run over to that agent, as the
 * reference runtime does: the call gets the result "<name> agent started" and the agent answers.
 */
export function modelDriver(plan: ModelRunPlan): RunDriver {
  return (context) => driveModel(context, plan);
}

/** What every round of one run's model loop uses, set up once. */
interface ModelLoop {
  context: RunContext;
  plan: ModelRunPlan;
  /** Kept for the run's life: most gateways have no agent, and share one empty map. */
  agents: ReadonlyMap<string, AgentEntry>;
  tools: ToolDefinition[];
  messages: Message[];
  /** Chunks are kept only when a round may be continued or handed over. */
  keepChunks: boolean;
}

/**
 * The round loop. Not an async function: a run spends its life in a model call, and a suspended frame (its registers,
 * about 1.4 KB) would be held all along; while the model streams, the loop is one callback and its ModelLoop.
 */
function driveModel(context: RunContext, plan: ModelRunPlan): Promise<void> {
  const { request, catalog, options } = plan;
  context.summary.adapter = options.adapter.name;
  const agents: ReadonlyMap<string, AgentEntry> =
    plan.agents.length === 0
      ? NO_AGENTS
      : new Map(plan.agents.filter((agent) => !catalog.has(agent.name)).map((agent) => [agent.name, agent]));
  const tools: ToolDefinition[] = [
    ...catalog.tools(),
    ...[...agents.values()].map((agent) => ({
      name: agent.name,
      description: agent.description || `Hands the conversation over to the agent "${agent.name}".`,
      parameters: AGENT_TOOL_PARAMETERS,
    })),
    ...request.frontendTools.filter((tool) => !catalog.has(tool.name) && !agents.has(tool.name)),
  ];
  const messages = withSystemNote(
    withContext(request.messages, request.context),
    'gateway-mcp-tools',
    mcpInstructions(catalog.actions()),
  );
  return modelRound({ context, plan, agents, tools, messages, keepChunks: catalog.size > 0 || agents.size > 0 }, 1);
}

/** One round: the model's call, then what its calls lead to. */
function modelRound(loop: ModelLoop, round: number): Promise<void> {
  const { context, plan } = loop;
  context.summary.rounds = round;
  checkModelInput(loop.messages, plan.options.modelLimits);
  const recorder = new RoundRecorder(context.writer, loop.keepChunks);
  const call = { messages: loop.messages, tools: loop.tools, forwardedParameters: plan.request.forwardedParameters };
  return callModel(context, plan.options, call, recorder).then(() => afterRound(loop, round, recorder));
}

/**
 * After the model's call: its server-side and remote actions are executed; a call of an agent hands the run over;
 * when every call was one the gateway executes, the next round.
 */
async function afterRound(loop: ModelLoop, round: number, recorder: RoundRecorder): Promise<void> {
  const { context, plan, agents } = loop;
  const { request, catalog, options } = plan;
  const calls = recorder.calls();
  const serverCalls = await executeServerCalls(context, recorder, calls, catalog, request, options.actionTimeoutMs);

  const agentCall = calls.find((call) => !catalog.has(call.name) && agents.has(call.name));
  if (agentCall) {
    for (const other of calls) {
      if (other !== agentCall && agents.has(other.name) && !catalog.has(other.name)) {
        recorder.actionResult(
          other.id,
          other.name,
          JSON.stringify({
            error: { code: 'BAD_USER_INPUT', message: 'Only one agent can take over a run.' },
            result: '',
          }),
        );
      }
    }
    recorder.actionResult(agentCall.id, agentCall.name, `${agentCall.name} agent started`);
    const agent = agents.get(agentCall.name)!;
    context.logger.info({ agent: agent.name }, 'the model handed the run over to an agent');
    return driveAgent(context, {
      agent,
      request: { ...request, agentSession: { agentName: agent.name, nodeName: null }, metaEvents: [] },
      messages: [...request.messages, ...recorder.messages()],
      catalog,
      options,
    });
  }

  if (serverCalls.length === 0 || serverCalls.length < calls.length) return;
  if (round >= options.maxRounds) {
    context.logger.warn({ maxRounds: options.maxRounds }, 'run stopped after the most rounds allowed');
    return;
  }
  loop.messages.push(...recorder.messages());
  return modelRound(loop, round + 1);
}

/** One model call; an adapter that returns with messages still open has finished them. */
function callModel(
  context: RunContext,
  options: ModelDriverOptions,
  call: {
    messages: readonly Message[];
    tools: readonly ToolDefinition[];
    forwardedParameters: RunRequest['forwardedParameters'];
  },
  recorder: RoundRecorder,
): Promise<void> {
  const request = {
    threadId: context.threadId,
    runId: context.runId,
    messages: call.messages,
    tools: call.tools,
    forwardedParameters: call.forwardedParameters,
    logger: context.logger,
    onRetry: options.onModelRetry,
  };
  return recorded(options, context, `model:${options.adapter.name}`, () =>
    context.callUpstream(
      {
        firstMs: options.modelFirstTokenTimeoutMs,
        idleMs: options.modelIdleTimeoutMs,
        onTimeout: (waited, beforeFirst) =>
          new UpstreamError(
            'UPSTREAM_TIMEOUT',
            beforeFirst
              ? `The model sent nothing for ${waited} ms after it was called (modelFirstTokenTimeoutMs) and was cut ` +
                  `off.`
              : `The model sent nothing for ${waited} ms between chunks (modelIdleTimeoutMs) and was cut off.`,
          ),
      },
      (signal) => options.adapter.stream(request, recorder, signal),
    ),
  ).then(() => context.closeOpenMessages());
}

/**
 * Puts the frontend's readable context in front of the model as one system message, after the
 * conversation's leading system messages.
 */
export function withContext(messages: readonly Message[], context: readonly ContextEntry[]): Message[] {
  if (context.length === 0) return [...messages];
  const lines = context.map((entry) => `- ${entry.description}: ${entry.value}`);
  const content = `Context from the application:\n${lines.join('\n')}`;
  return withSystemNote(messages, 'gateway-context', content);
}

/**
 * Puts a system message of the gateway's after the conversation's leading system messages (none when `content` is
 * undefined).
 */
export function withSystemNote(messages: readonly Message[], id: string, content: string | undefined): Message[] {
  if (content === undefined) return [...messages];
  const firstNonSystem = messages.findIndex(
    (m) => !(m.kind === 'text' && (m.role === 'system' || m.role === 'developer')),
  );
  const at = firstNonSystem === -1 ? messages.length : firstNonSystem;
  return [...messages.slice(0, at), { kind: 'text', id, role: 'system', content }, ...messages.slice(at)];
}
