import { passOverUnknownEvent, type SequencedEvent } from '../core/events.js';
import type { Message } from '../core/messages.js';
import { failedMessage, type RunStatus } from '../core/status.js';
import type { AgentStateRecord } from './store.js';

/**
 * What a run's event log says: the messages it produced (texts, action calls with their arguments,
 * results), in the order they started; reasoning is not among them (it is never sent back to the model).
 * Fed one event at a time; `messages` is current at any point (a text still streaming has the content so far).
 */
export class OutputCollector {
  readonly messages: Message[] = [];
  private readonly open = new Map<string, { message: Message; parts: string[] }>();

  add(event: SequencedEvent): void {
    switch (event.type) {
      case 'TextMessageStart': {
        const message: Message = {
          kind: 'text',
          id: event.messageId,
          role: 'assistant',
          content: '',
          ...(event.parentMessageId ? { parentMessageId: event.parentMessageId } : {}),
        };
        this.messages.push(message);
        this.open.set(event.messageId, { message, parts: [] });
        break;
      }
      case 'ActionExecutionStart': {
        const message: Message = {
          kind: 'actionExecution',
          id: event.actionExecutionId,
          name: event.actionName,
          arguments: '',
          parentMessageId: event.parentMessageId,
        };
        this.messages.push(message);
        this.open.set(event.actionExecutionId, { message, parts: [] });
        break;
      }
      case 'TextMessageContent':
        this.open.get(event.messageId)?.parts.push(event.content);
        break;
      case 'ActionExecutionArgs':
        this.open.get(event.actionExecutionId)?.parts.push(event.args);
        break;
      case 'TextMessageEnd':
      case 'ActionExecutionEnd': {
        const id = event.type === 'TextMessageEnd' ? event.messageId : event.actionExecutionId;
        this.settle(id);
        this.open.delete(id);
        break;
      }
      case 'ActionExecutionResult':
        this.messages.push({
          kind: 'result',
          id: event.messageId,
          actionExecutionId: event.actionExecutionId,
          actionName: event.actionName,
          result: event.result,
        });
        break;
      // Not part of the conversation: the run's bounds, reasoning, states, meta events.
      case 'RunStarted':
      case 'RunFinished':
      case 'ReasoningStart':
      case 'ReasoningContent':
      case 'ReasoningEnd':
      case 'AgentStateMessage':
      case 'MetaEvent':
        break;
      default:
        passOverUnknownEvent(event);
    }
  }

  /** The messages with the text and arguments streamed so far. */
  current(): Message[] {
    for (const id of this.open.keys()) this.settle(id);
    return this.messages;
  }

  private settle(id: string): void {
    const open = this.open.get(id);
    if (!open) return;
    const joined = open.parts.join('');
    if (open.message.kind === 'text') open.message.content = joined;
    else if (open.message.kind === 'actionExecution') open.message.arguments = joined;
  }
}

/** A run's input followed by its output, each id once (the first occurrence wins). */
export function transcriptOf(input: readonly Message[], output: readonly Message[]): Message[] {
  const seen = new Set<string>();
  const transcript: Message[] = [];
  for (const message of [...input, ...output]) {
    if (seen.has(message.id)) continue;
    seen.add(message.id);
    transcript.push(message);
  }
  return transcript;
}

/** The agent state an event records, if it is an AgentStateMessage. */
export function agentStateOf(event: SequencedEvent, runId: string): AgentStateRecord | undefined {
  if (event.type !== 'AgentStateMessage') return undefined;
  return {
    agentName: event.agentName,
    nodeName: event.nodeName,
    state: event.state,
    running: event.running,
    active: event.active,
    runId,
  };
}

/**
 * The events that end a run cut short (its instance lost, or stopped with no instance to tell): every
 * text message and action call left open ended as Failed, then RunFinished with `status`, numbered
 * after the log's last event, and after `after` (a number the run may have shown from a part of its log
 * Redis has since lost: no number may name two events).
 */
export function closingEvents(log: readonly SequencedEvent[], status: RunStatus, after = -1): SequencedEvent[] {
  const open = new Map<string, 'text' | 'call' | 'reasoning'>();
  let sequence = after;
  for (const event of log) {
    sequence = Math.max(sequence, event.sequence);
    if (event.type === 'TextMessageStart') open.set(event.messageId, 'text');
    else if (event.type === 'ActionExecutionStart') open.set(event.actionExecutionId, 'call');
    else if (event.type === 'ReasoningStart') open.set(event.messageId, 'reasoning');
    else if (event.type === 'TextMessageEnd' || event.type === 'ReasoningEnd') open.delete(event.messageId);
    else if (event.type === 'ActionExecutionEnd') open.delete(event.actionExecutionId);
  }
  const reason = status.code === 'Failed' ? status.details.description : 'The run ended.';
  const closing: SequencedEvent[] = [];
  for (const [id, kind] of open) {
    closing.push(
      kind === 'text'
        ? { type: 'TextMessageEnd', messageId: id, status: failedMessage(reason), sequence: ++sequence }
        : kind === 'reasoning'
          ? { type: 'ReasoningEnd', messageId: id, sequence: ++sequence }
          : { type: 'ActionExecutionEnd', actionExecutionId: id, status: failedMessage(reason), sequence: ++sequence },
    );
  }
  closing.push({ type: 'RunFinished', status, sequence: sequence + 1 });
  return closing;
}
