import type { BaseEvent } from '@ag-ui/core';
import type { SequencedEvent } from '../core/events.js';

/** What RUN_STARTED carries besides the ids: the run's input as AG-UI has it (the client restores messages from it). */
export interface RunStartedInput {
  threadId: string;
  runId: string;
  messages: unknown[];
  tools: unknown[];
  context: unknown[];
  state: unknown;
  forwardedProps: unknown;
}

/**
 * A run's event as AG-UI events (none, for what AG-UI has no word for). The run's own order already
 * obeys AG-UI's lifecycle: one start first, every message and call ended before the end, one end.
 * A run that failed ends with RUN_ERROR (its code and description); a run stopped on request ends
 * with RUN_FINISHED, as CopilotKit's runtime ends it.
 */
export function toAgUiEvent(event: SequencedEvent, run: { threadId: string; runId: string }, input?: RunStartedInput): BaseEvent | undefined {
  switch (event.type) {
    case 'RunStarted':
      return { type: 'RUN_STARTED', threadId: run.threadId, runId: run.runId, ...(input ? { input } : {}) } as BaseEvent;
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
      return { type: 'TOOL_CALL_RESULT', messageId: event.messageId, toolCallId: event.actionExecutionId, content: event.result, role: 'tool' } as BaseEvent;
    case 'AgentStateMessage':
      return { type: 'STATE_SNAPSHOT', snapshot: parseJson(event.state) } as BaseEvent;
    case 'MetaEvent':
      return { type: 'CUSTOM', name: event.event.name, value: event.event.value } as BaseEvent;
    case 'RunFinished': {
      const { status } = event;
      if (status.code !== 'Failed' || status.details.code === 'RUN_STOPPED') {
        return { type: 'RUN_FINISHED', threadId: run.threadId, runId: run.runId } as BaseEvent;
      }
      return { type: 'RUN_ERROR', message: status.details.description, code: status.details.code } as BaseEvent;
    }
  }
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}
