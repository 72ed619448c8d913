import { BadUserInputError } from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import { agUiInterrupt, parseEventId, type AgUiInterrupt } from './events.js';

// Resuming an AG-UI stream after the event a client last had (its Last-Event-ID, PROTOCOL §8.3).

/** Which of a run's messages and calls are open (started, not ended), by id. */
export type OpenMessages = Map<string, 'text' | 'call' | 'reasoning'>;

/** Follows which messages and calls of a run are open. */
export function track(open: OpenMessages, event: SequencedEvent): void {
  if (event.type === 'TextMessageStart') open.set(event.messageId, 'text');
  else if (event.type === 'ActionExecutionStart') open.set(event.actionExecutionId, 'call');
  else if (event.type === 'ReasoningStart') open.set(event.messageId, 'reasoning');
  else if (event.type === 'TextMessageEnd' || event.type === 'ReasoningEnd') open.delete(event.messageId);
  else if (event.type === 'ActionExecutionEnd') open.delete(event.actionExecutionId);
}

/** Where a connect resumes: the event its Last-Event-ID names (none without the header); not an id: BAD_USER_INPUT. */
export function resumePoint(lastEventId: string | undefined): { runId: string; sequence: number } | undefined {
  if (lastEventId === undefined) return undefined;
  const point = parseEventId(lastEventId);
  if (point === undefined) {
    throw new BadUserInputError(
      `Last-Event-ID '${lastEventId.slice(0, 200)}' is not an id of this gateway's events (<runId>:<sequence>).`,
    );
  }
  return point;
}

/**
 * What a client resuming after `sequence` already has of a run, read from `feed` (the run from its start) and not
 * sent again: which messages it has open (so that a replay cut short can still end them) and the interrupts raised
 * (so that RUN_FINISHED still carries them). Resolves true when the run ended at or before that event: nothing of
 * it is left to send (an id past the run's end included, which would otherwise wait for events that never come).
 */
export async function readUpTo(
  feed: AsyncIterable<SequencedEvent>,
  sequence: number,
  open: OpenMessages,
  interrupts: AgUiInterrupt[],
): Promise<boolean> {
  for await (const event of feed) {
    if (event.sequence > sequence) return false;
    track(open, event);
    if (event.type === 'MetaEvent') {
      const interrupt = agUiInterrupt(event.event.value);
      if (interrupt) interrupts.push(interrupt);
    }
    if (event.type === 'RunFinished') return true;
  }
  return true;
}
