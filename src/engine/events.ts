import type { MessageStatus, RunStatus } from './status.js';

/** A meta event raised during a run (agent interrupts). */
export type MetaEventPayload =
  | { name: 'LangGraphInterruptEvent'; value: string; response?: string | null }
  | {
      name: 'CopilotKitLangGraphInterruptEvent';
      value: string;
      messages: unknown[];
      response?: string | null;
    };

/**
 * The runtime events of one run, in the order they happen. Both the mutation's message
 * containers and the subscription's event union are views of this one stream.
 */
export type RuntimeEvent =
  | { type: 'RunStarted'; threadId: string; runId: string }
  | { type: 'TextMessageStart'; messageId: string; parentMessageId: string | null; role: 'assistant' }
  | { type: 'TextMessageContent'; messageId: string; content: string }
  | { type: 'TextMessageEnd'; messageId: string; status: MessageStatus }
  | { type: 'ActionExecutionStart'; actionExecutionId: string; actionName: string; parentMessageId: string | null }
  | { type: 'ActionExecutionArgs'; actionExecutionId: string; args: string }
  | { type: 'ActionExecutionEnd'; actionExecutionId: string; status: MessageStatus }
  | {
      type: 'ActionExecutionResult';
      messageId: string;
      actionExecutionId: string;
      actionName: string;
      result: string;
    }
  | {
      type: 'AgentStateMessage';
      messageId: string;
      threadId: string;
      agentName: string;
      nodeName: string;
      runId: string;
      active: boolean;
      role: 'assistant';
      state: string;
      running: boolean;
    }
  | { type: 'MetaEvent'; event: MetaEventPayload }
  | { type: 'RunFinished'; status: RunStatus };

export type RuntimeEventType = RuntimeEvent['type'];

/** An event as delivered to a subscriber, numbered in delivery order. */
export type SequencedEvent = RuntimeEvent & { sequence: number };

export type RuntimeEventListener = (event: RuntimeEvent) => void;
