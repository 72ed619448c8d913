import type { SequencedEvent } from './events.js';

// Joining a run's chunks for a reader that is behind: the one merge of adjacent events that the
// store's feeds, the subscription's view (EventQueue) and a finished run's packing (the memory
// store) share.

/**
 * Merges `event` into `last` when both are chunks of the same text message or action call (their
 * concatenation says the same), or both snapshots of one agent's state (the later says everything);
 * undefined otherwise. The merged event carries the later event's sequence. `own` says whether `last`
 * is already a copy this caller made (and may change); events shared with others are never changed.
 */
export function mergeEvents(last: SequencedEvent, event: SequencedEvent, own: boolean): SequencedEvent | undefined {
  if (last.type === 'AgentStateMessage' && event.type === 'AgentStateMessage' && last.agentName === event.agentName) {
    return event;
  }
  if (
    (last.type === 'TextMessageContent' || last.type === 'ReasoningContent') &&
    event.type === last.type &&
    last.messageId === event.messageId
  ) {
    if (!own) return { ...last, content: last.content + event.content, sequence: event.sequence };
    const copy = last as { content: string; sequence: number };
    copy.content += event.content;
    copy.sequence = event.sequence;
    return last;
  }
  if (
    last.type === 'ActionExecutionArgs' &&
    event.type === 'ActionExecutionArgs' &&
    last.actionExecutionId === event.actionExecutionId
  ) {
    if (!own) return { ...last, args: last.args + event.args, sequence: event.sequence };
    const copy = last as { args: string; sequence: number };
    copy.args += event.args;
    copy.sequence = event.sequence;
    return last;
  }
  return undefined;
}

/** Whether `next` is a chunk of the same message (or argument stream) as the chunk `event`. */
export function continuesChunk(event: SequencedEvent, next: SequencedEvent): boolean {
  if (event.type === 'TextMessageContent' || event.type === 'ReasoningContent') {
    return next.type === event.type && next.messageId === event.messageId;
  }
  if (event.type === 'ActionExecutionArgs') {
    return next.type === 'ActionExecutionArgs' && next.actionExecutionId === event.actionExecutionId;
  }
  return false;
}

/** The text a chunk carries (a message's or reasoning's content, a call's arguments); "" for any other event. */
export function chunkText(event: SequencedEvent): string {
  if (event.type === 'TextMessageContent' || event.type === 'ReasoningContent') return event.content;
  return event.type === 'ActionExecutionArgs' ? event.args : '';
}
