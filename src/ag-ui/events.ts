import type { BaseEvent } from '@ag-ui/core';
import { passOverUnknownEvent, type SequencedEvent } from '../core/events.js';
import { LONE_SURROGATE } from '../core/ids.js';

/** What RUN_STARTED carries besides the ids: the run's input as AG-UI has it (the client restores messages from it). */
export interface RunStartedInput {
  threadId: string;
  runId: string;
  messages: unknown[];
  tools: unknown[];
  context: unknown[];
  state: unknown;
  forwardedProps: unknown;
  /** The client's AG-UI version, when it said (RunAgentInput.protocolVersion): what 1.0 adds goes only to it. */
  protocolVersion?: string;
}

/**
 * A run's event as AG-UI events: one, none (for what AG-UI, or this client's version of it, has no word for), or two
 * (a reasoning message's start and end: AG-UI 1.0 brackets each in a reasoning span of its own). The run's own order
 * already obeys AG-UI's lifecycle: one start first, every message and call ended before the end, one end. A run that
 * failed ends with RUN_ERROR (its code and description); a run stopped on request ends with RUN_FINISHED, as
 * CopilotKit's runtime ends it. `agUi1`: the client speaks AG-UI 1.0 (reasoning and the `cancelled` outcome are sent
 * only to it; 0.0.x clients' schemas refuse them).
 */
export function toAgUiEvent(
  event: SequencedEvent,
  run: {
    threadId: string;
    runId: string;
    interrupts?: AgUiInterrupt[];
    /** The run's calls that got no result (frontend tools): a 1.0 client's `pendingToolCallIds`. */
    pendingToolCallIds?: ReadonlySet<string>;
    /** Reasoning goes to this client whatever version it declares (the `agUiReasoning: "always"` option). */
    reasoning?: boolean;
  },
  input?: RunStartedInput,
  agUi1 = speaksAgUi1(input?.protocolVersion),
): BaseEvent | BaseEvent[] | undefined {
  switch (event.type) {
    case 'RunStarted':
      return {
        type: 'RUN_STARTED',
        threadId: run.threadId,
        runId: run.runId,
        ...(input ? { input } : {}),
      } as BaseEvent;
    case 'TextMessageStart':
      return { type: 'TEXT_MESSAGE_START', messageId: event.messageId, role: 'assistant' } as BaseEvent;
    case 'TextMessageContent':
      return { type: 'TEXT_MESSAGE_CONTENT', messageId: event.messageId, delta: event.content } as BaseEvent;
    case 'TextMessageEnd':
      return { type: 'TEXT_MESSAGE_END', messageId: event.messageId } as BaseEvent;
    case 'ActionExecutionStart':
      return {
        type: 'TOOL_CALL_START',
        toolCallId: event.actionExecutionId,
        toolCallName: event.actionName,
        ...(event.parentMessageId ? { parentMessageId: event.parentMessageId } : {}),
      } as BaseEvent;
    case 'ActionExecutionArgs':
      return { type: 'TOOL_CALL_ARGS', toolCallId: event.actionExecutionId, delta: event.args } as BaseEvent;
    case 'ActionExecutionEnd':
      return { type: 'TOOL_CALL_END', toolCallId: event.actionExecutionId } as BaseEvent;
    case 'ActionExecutionResult':
      return {
        type: 'TOOL_CALL_RESULT',
        messageId: event.messageId,
        toolCallId: event.actionExecutionId,
        content: event.result,
        role: 'tool',
      } as BaseEvent;
    case 'AgentStateMessage':
      return { type: 'STATE_SNAPSHOT', snapshot: parseJson(event.state) } as BaseEvent;
    case 'MetaEvent':
      // An AG-UI agent's own interrupt is reported in RUN_FINISHED's outcome (interruptsOf); others as
      // CopilotKit's LangGraph interrupt event, which its useLangGraphInterrupt hook reads.
      if (agUiInterrupt(event.event.value)) return undefined;
      return { type: 'CUSTOM', name: 'on_interrupt', value: event.event.value } as BaseEvent;
    case 'RunFinished': {
      const { status } = event;
      // A stopped run ends as CopilotKit's runtime ends it, RUN_FINISHED; a client that speaks AG-UI 1.0 also gets
      // its `cancelled` outcome (0.0.x clients' schemas refuse any outcome but success and interrupt).
      // AG-UI 1.0's usage: what the run's model calls used, where the providers said.
      const usage = agUi1 && event.usage?.length ? { usage: event.usage } : undefined;
      if (status.code === 'Failed' && status.details.code === 'RUN_STOPPED' && agUi1) {
        return {
          type: 'RUN_FINISHED',
          threadId: run.threadId,
          runId: run.runId,
          outcome: { type: 'cancelled' },
          ...usage,
        } as BaseEvent;
      }
      if (status.code !== 'Failed' || status.details.code === 'RUN_STOPPED') {
        const interrupts = run.interrupts ?? [];
        const pending = run.pendingToolCallIds;
        // A 1.0 client is told which calls the run left for it (CopilotKit then runs those frontend tools, also
        // after a reload); a 0.0.x client's schemas know only success without fields, and the interrupt outcome.
        const outcome = interrupts.length
          ? { type: 'interrupt', interrupts }
          : agUi1 && pending?.size && status.code !== 'Failed'
            ? { type: 'success', pendingToolCallIds: [...pending] }
            : undefined;
        return {
          type: 'RUN_FINISHED',
          threadId: run.threadId,
          runId: run.runId,
          ...(outcome ? { outcome } : {}),
          ...usage,
        } as BaseEvent;
      }
      return { type: 'RUN_ERROR', message: status.details.description, code: status.details.code } as BaseEvent;
    }
    case 'ReasoningStart':
      if (!agUi1 && !run.reasoning) return undefined;
      return [
        { type: 'REASONING_START', messageId: event.messageId } as BaseEvent,
        { type: 'REASONING_MESSAGE_START', messageId: event.messageId, role: 'reasoning' } as BaseEvent,
      ];
    case 'ReasoningContent':
      if (!agUi1 && !run.reasoning) return undefined;
      return { type: 'REASONING_MESSAGE_CONTENT', messageId: event.messageId, delta: event.content } as BaseEvent;
    case 'ReasoningEnd':
      if (!agUi1 && !run.reasoning) return undefined;
      return [
        { type: 'REASONING_MESSAGE_END', messageId: event.messageId } as BaseEvent,
        { type: 'REASONING_END', messageId: event.messageId } as BaseEvent,
      ];
    default:
      // Every kind of event has its case: a new one does not compile until it has. One written by a newer instance
      // (a replay of a stored run during a rolling upgrade) is passed over.
      passOverUnknownEvent(event);
      return undefined;
  }
}

/** An interrupt as AG-UI's RUN_FINISHED outcome lists it. */
export interface AgUiInterrupt {
  id: string;
  reason: string;
  [field: string]: unknown;
}

/** The AG-UI interrupt a meta event's value carries (an AG-UI agent's own), if it is one. */
export function agUiInterrupt(value: string): AgUiInterrupt | undefined {
  const parsed = parseJson(value) as Partial<AgUiInterrupt> | undefined;
  return parsed && typeof parsed === 'object' && typeof parsed.id === 'string' && typeof parsed.reason === 'string'
    ? (parsed as AgUiInterrupt)
    : undefined;
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}

/**
 * The SSE id of a run's event: `<runId>:<sequence>`, the run id percent-encoded (so that no id holds a
 * line break, which would end the SSE field, and the last colon always starts the sequence). A
 * connect with this id in `Last-Event-ID` resumes after that event.
 */
export function eventId(runId: string, sequence: number): string {
  let prefix = idPrefixes.get(runId);
  if (prefix === undefined) {
    if (idPrefixes.size >= MAX_ID_PREFIXES) idPrefixes.clear();
    // A lone surrogate (which encodeURIComponent refuses) can reach a run id through GraphQL's JSON: it becomes
    // U+FFFD here, and a resume with that id replays the whole thread instead (its run is not found).
    prefix = `${encodeURIComponent(runId.replace(LONE_SURROGATE, '\uFFFD'))}:`;
    idPrefixes.set(runId, prefix);
  }
  return prefix + sequence;
}

/**
 * Each run's encoded id prefix, made once rather than for every event (every token of a stream has an id); at most
 * MAX_ID_PREFIXES, all dropped when full (streams going on make theirs again at their next event).
 */
const idPrefixes = new Map<string, string>();
const MAX_ID_PREFIXES = 1024;

/** Whether the client declared AG-UI 1.0 or later (RunAgentInput.protocolVersion: "1.0"; 0.0.x clients send none). */
function speaksAgUi1(protocolVersion: string | undefined): boolean {
  const major = /^(\d+)\./.exec(protocolVersion ?? '');
  return major !== null && Number(major[1]) >= 1;
}

/** An SSE id made by `eventId`, read back; undefined when the text is not one. */
export function parseEventId(id: string): { runId: string; sequence: number } | undefined {
  const colon = id.lastIndexOf(':');
  const sequence = id.slice(colon + 1);
  if (colon < 1 || !/^\d{1,15}$/.test(sequence)) return undefined;
  try {
    return { runId: decodeURIComponent(id.slice(0, colon)), sequence: Number(sequence) };
  } catch {
    return undefined;
  }
}
