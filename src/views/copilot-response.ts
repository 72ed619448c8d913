import { passOverUnknownEvent, type MetaEventPayload, type SequencedEvent } from '../core/events.js';
import { MESSAGE_SUCCESS, failedMessage, failedRun, type MessageStatus, type RunStatus } from '../core/status.js';
import type { RunHandle } from '../engine/run.js';
import type { CopilotResponseModel, MessageOutputModel } from './models.js';
import { SharedStream, SharedTextStream } from './shared-stream.js';

/** An open text message or action call: its chunk stream and the status it will settle with. */
interface OpenMessage {
  chunks: SharedTextStream;
  settle: (status: MessageStatus) => void;
}

/**
 * The mutation's view of a run: message containers streamed in order, each text message and
 * action call with its own chunk stream and deferred status, the meta events, and the run's
 * deferred status. It subscribes to the run before the run starts, so it sees every event.
 */
export function createCopilotResponseView(run: RunHandle): CopilotResponseModel {
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

  const end = (status: RunStatus): void => {
    // The run closes its messages before finishing; anything left open here (the store could not take the rest of
    // the run) would hang a stream: it ends as the run does, with the run's description (PROTOCOL.md §4.5).
    for (const id of [...open.keys()])
      closeMessage(id, status.code === 'Failed' ? failedMessage(status.details.description) : MESSAGE_SUCCESS);
    messages.end();
    metaEvents.end();
    settleRun(status);
  };

  function listen(event: SequencedEvent): void {
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
      // The reference contract's messages have no reasoning: the mutation's answer leaves it out.
      case 'RunStarted':
      case 'ReasoningStart':
      case 'ReasoningContent':
      case 'ReasoningEnd':
        return;
      case 'RunFinished':
        end(event.status);
        return;
      default:
        // Every kind of event has its case: a new one does not compile until it has. One written by a newer instance
        // (a stored run read during a rolling upgrade) is passed over.
        passOverUnknownEvent(event);
    }
  }

  // When the rest of the run cannot be shown (its events cannot be stored), the answer ends failed.
  run.subscribe(listen, (error) => end(failedRun(error, run.requestId)));

  return { threadId: run.threadId, runId: run.runId, status, messages, metaEvents, extensions: null };
}
