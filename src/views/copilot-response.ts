import { SharedStream, SharedTextStream } from '../engine/shared-stream.js';
import type { MetaEventPayload, RuntimeEvent } from '../engine/events.js';
import { MESSAGE_SUCCESS, type MessageStatus, type RunStatus } from '../engine/status.js';
import type { CopilotResponseModel, MessageOutputModel } from '../graphql/models.js';

/** An open text message or action call: its chunk stream and the status it will settle with. */
interface OpenMessage {
  chunks: SharedTextStream;
  settle: (status: MessageStatus) => void;
}

/**
 * The mutation's view of a run: message containers streamed in order, each text message and
 * action call with its own chunk stream and deferred status, and the run's deferred status.
 * `listener` is fed the run's events. (The transports abort the run when the client goes away.)
 */
export function createCopilotResponseView(
  threadId: string,
  runId: string,
): { model: CopilotResponseModel; listener: (event: RuntimeEvent) => void } {
  const messages = new SharedStream<MessageOutputModel>();
  const metaEvents = new SharedStream<MetaEventPayload>();
  const open = new Map<string, OpenMessage>();
  let settleRun!: (status: RunStatus) => void;
  const status = new Promise<RunStatus>((resolve) => {
    settleRun = resolve;
  });

  function openMessage(id: string): { chunks: SharedTextStream; status: Promise<MessageStatus> } {
    const chunks = new SharedTextStream();
    let settle!: (status: MessageStatus) => void;
    const messageStatus = new Promise<MessageStatus>((resolve) => {
      settle = resolve;
    });
    open.set(id, { chunks, settle });
    return { chunks, status: messageStatus };
  }

  function closeMessage(id: string, messageStatus: MessageStatus): void {
    const message = open.get(id);
    if (!message) return;
    open.delete(id);
    message.chunks.end();
    message.settle(messageStatus);
  }

  const listener = (event: RuntimeEvent): void => {
    switch (event.type) {
      case 'TextMessageContent':
        open.get(event.messageId)?.chunks.push(event.content);
        return;
      case 'ActionExecutionArgs':
        open.get(event.actionExecutionId)?.chunks.push(event.args);
        return;
      case 'TextMessageStart': {
        const { chunks, status: messageStatus } = openMessage(event.messageId);
        messages.push({
          __typename: 'TextMessageOutput',
          id: event.messageId,
          createdAt: new Date(),
          role: event.role,
          parentMessageId: event.parentMessageId,
          content: chunks,
          status: messageStatus,
        });
        return;
      }
      case 'ActionExecutionStart': {
        const { chunks, status: messageStatus } = openMessage(event.actionExecutionId);
        messages.push({
          __typename: 'ActionExecutionMessageOutput',
          id: event.actionExecutionId,
          createdAt: new Date(),
          name: event.actionName,
          parentMessageId: event.parentMessageId,
          scope: null,
          arguments: chunks,
          status: messageStatus,
        });
        return;
      }
      case 'TextMessageEnd':
        closeMessage(event.messageId, event.status);
        return;
      case 'ActionExecutionEnd':
        closeMessage(event.actionExecutionId, event.status);
        return;
      case 'ActionExecutionResult':
        messages.push({
          __typename: 'ResultMessageOutput',
          id: event.messageId,
          createdAt: new Date(),
          actionExecutionId: event.actionExecutionId,
          actionName: event.actionName,
          result: event.result,
          status: MESSAGE_SUCCESS,
        });
        return;
      case 'AgentStateMessage':
        messages.push({
          __typename: 'AgentStateMessageOutput',
          id: event.messageId,
          createdAt: new Date(),
          threadId: event.threadId,
          agentName: event.agentName,
          nodeName: event.nodeName,
          runId: event.runId,
          active: event.active,
          role: event.role,
          state: event.state,
          running: event.running,
          status: MESSAGE_SUCCESS,
        });
        return;
      case 'MetaEvent':
        metaEvents.push(event.event);
        return;
      case 'RunStarted':
        return;
      case 'RunFinished':
        // The run closes its messages before finishing; anything left open here would hang a stream.
        for (const id of [...open.keys()]) closeMessage(id, event.status.code === 'Failed' ? { code: 'Failed', reason: 'Run ended.' } : MESSAGE_SUCCESS);
        messages.end();
        metaEvents.end();
        settleRun(event.status);
        return;
    }
  };

  return {
    model: { threadId, runId, status, messages, metaEvents, extensions: null },
    listener,
  };
}
