import { BadUserInputError } from '../core/errors.js';
import { passOverUnknownEvent, type SequencedEvent } from '../core/events.js';
import { messagesBytes, type Message } from '../core/messages.js';
import type { ThreadRecord } from '../threads/store.js';
import { agUiInterrupt, parseEventId, type AgUiInterrupt } from './events.js';

// Resuming an AG-UI stream after the event a client last had (its Last-Event-ID, PROTOCOL §8.3).

/** Which of a run's messages, calls and reasoning are open (started, not ended), by id. */
export type OpenMessages = Map<string, 'text' | 'call' | 'reasoning'>;

/**
 * What an AG-UI stream has shown of one run so far: what it must still end if the stream is cut short, and what the
 * run's RUN_FINISHED reports (its interrupts; the calls it left unanswered). Fed every event of the run, in order.
 */
export class RunProgress {
  readonly open: OpenMessages = new Map();
  /** The run's AG-UI interrupts: RUN_FINISHED's `interrupt` outcome. */
  readonly interrupts: AgUiInterrupt[] = [];
  /**
   * Calls started that got no result in the run (frontend tools, for the client to answer), in the order made:
   * AG-UI 1.0's `pendingToolCallIds`. Made on the first call.
   */
  pendingCalls: Set<string> | undefined;

  see(event: SequencedEvent): void {
    switch (event.type) {
      case 'RunStarted':
        this.interrupts.length = 0;
        this.pendingCalls?.clear();
        return;
      case 'TextMessageStart':
        this.open.set(event.messageId, 'text');
        return;
      case 'ReasoningStart':
        this.open.set(event.messageId, 'reasoning');
        return;
      case 'TextMessageEnd':
      case 'ReasoningEnd':
        this.open.delete(event.messageId);
        return;
      case 'ActionExecutionStart':
        this.open.set(event.actionExecutionId, 'call');
        (this.pendingCalls ??= new Set()).add(event.actionExecutionId);
        return;
      case 'ActionExecutionEnd':
        this.open.delete(event.actionExecutionId);
        return;
      case 'ActionExecutionResult':
        this.pendingCalls?.delete(event.actionExecutionId);
        return;
      case 'MetaEvent': {
        const interrupt = agUiInterrupt(event.event.value);
        if (interrupt) this.interrupts.push(interrupt);
        return;
      }
      // Nothing opened or closed, called or answered.
      case 'TextMessageContent':
      case 'ActionExecutionArgs':
      case 'ReasoningContent':
      case 'AgentStateMessage':
      case 'RunFinished':
        return;
      default:
        passOverUnknownEvent(event);
    }
  }
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
 * What a client resuming after `sequence` already has of a run, from `stored` (the run's stored events up to it:
 * ThreadStore.readUpTo) and not sent again, into `progress`: which messages it has open (so that a replay cut short
 * can still end them), the interrupts raised and the calls left unanswered (so that RUN_FINISHED still reports them).
 * True when the run ended at or before that event: nothing of it is left to send (an id past the run's end included,
 * which would otherwise wait for events that never come).
 */
export function readUpTo(stored: readonly SequencedEvent[], sequence: number, progress: RunProgress): boolean {
  for (const event of stored) {
    if (event.sequence > sequence) return false;
    progress.see(event);
    if (event.type === 'RunFinished') return true;
  }
  return false;
}

/** A stored run as a `connect` replays it: its id, and the messages its start carries until that is written. */
export interface Replay {
  runId: string;
  /** Let go (undefined) once written. */
  messages: Message[] | undefined;
  /** About what `messages` keep in memory (messagesBytes). */
  bytes: number;
}

/**
 * The runs a `connect` replays, each with the messages its start carries; with a Last-Event-ID's run (`resumeRunId`)
 * the runs before it are left out (`resumed`: its place in the thread, -1 when the thread no longer keeps it, or
 * never had it: the whole thread is replayed, as without the header). The first run's start also carries what the
 * thread had before it (older runs are dropped past maxRunsPerThread), so a reload never loses the start of a long
 * conversation.
 */
export function replaysOf(
  thread: ThreadRecord | undefined,
  resumeRunId: string | undefined,
): { replays: Replay[]; resumed: number } {
  let runs = thread?.runs ?? [];
  const resumed = resumeRunId === undefined ? -1 : runs.findIndex((run) => run.runId === resumeRunId);
  if (resumed >= 0) runs = runs.slice(resumed);
  const firstNew = runs[0]?.newMessages?.[0]?.id;
  const cut = firstNew === undefined ? -1 : (thread?.messages ?? []).findIndex((message) => message.id === firstNew);
  const replays = runs.map((run, index) => {
    // A resumed run's start is not written again (the client has it): nothing of it to keep.
    if (index === 0 && resumed >= 0) return { runId: run.runId, messages: [], bytes: 0 };
    const messages = [...(index === 0 && cut > 0 ? thread!.messages.slice(0, cut) : []), ...(run.newMessages ?? [])];
    return { runId: run.runId, messages, bytes: messagesBytes(messages) };
  });
  return { replays, resumed };
}
