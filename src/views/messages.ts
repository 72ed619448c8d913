import type { Message } from '../core/messages.js';
import { MESSAGE_SUCCESS } from '../core/status.js';
import type { MessageOutputModel } from './models.js';
import { UnreachableCaseError } from '../core/errors.js';

/** Finished messages (such as those that come with an interrupt) as message outputs, each Success. */
export function messageOutputs(messages: readonly Message[], createdAt = new Date()): MessageOutputModel[] {
  return messages.map((message): MessageOutputModel => {
    switch (message.kind) {
      case 'text':
        return {
          __typename: 'TextMessageOutput',
          id: message.id,
          createdAt,
          role: message.role,
          content: [message.content],
          parentMessageId: message.parentMessageId ?? null,
          status: MESSAGE_SUCCESS,
        };
      case 'actionExecution':
        return {
          __typename: 'ActionExecutionMessageOutput',
          id: message.id,
          createdAt,
          name: message.name,
          arguments: [message.arguments],
          parentMessageId: message.parentMessageId ?? null,
          scope: null,
          status: MESSAGE_SUCCESS,
        };
      case 'result':
        return {
          __typename: 'ResultMessageOutput',
          id: message.id,
          createdAt,
          actionExecutionId: message.actionExecutionId,
          actionName: message.actionName,
          result: message.result,
          status: MESSAGE_SUCCESS,
        };
      case 'image':
        return {
          __typename: 'ImageMessageOutput',
          id: message.id,
          createdAt,
          format: message.format,
          bytes: message.bytes,
          role: message.role === 'user' ? 'user' : 'assistant',
          parentMessageId: message.parentMessageId ?? null,
          status: MESSAGE_SUCCESS,
        };
      case 'agentState':
        return {
          __typename: 'AgentStateMessageOutput',
          id: message.id,
          createdAt,
          threadId: message.threadId,
          agentName: message.agentName,
          nodeName: message.nodeName,
          runId: message.runId,
          active: message.active,
          role: 'assistant',
          state: message.state,
          running: message.running,
          status: MESSAGE_SUCCESS,
        };
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  });
}
