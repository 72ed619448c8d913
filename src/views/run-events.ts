import type { RuntimeEvent, SequencedEvent } from '../engine/events.js';

/**
 * The subscription's view of a run: its events in order, numbered as delivered. When the reader
 * falls behind, consecutive text (or argument) chunks of one message waiting in the queue are merged
 * into one event, so a slow WebSocket gets fewer, larger events rather than a growing backlog.
 */
export class RunEventStream implements AsyncIterableIterator<SequencedEvent> {
  private buffer: RuntimeEvent[] = [];
  private head = 0;
  private waiting: ((result: IteratorResult<SequencedEvent>) => void) | undefined;
  private finished = false;
  private closed = false;
  private sequence = 0;

  /** `onClientGone` is called when the reader stops before the run has finished. */
  constructor(private readonly onClientGone: () => void) {}

  readonly listener = (event: RuntimeEvent): void => {
    if (this.closed) return;
    if (event.type === 'RunFinished') this.finished = true;
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting({ value: this.number(event), done: false });
      return;
    }
    const last = this.buffer.length > this.head ? this.buffer[this.buffer.length - 1] : undefined;
    if (last && mergeInto(last, event)) return;
    this.buffer.push(event);
  };

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.head < this.buffer.length) {
      const event = this.buffer[this.head++];
      if (this.head === this.buffer.length) {
        this.buffer = [];
        this.head = 0;
      }
      return Promise.resolve({ value: this.number(event), done: false });
    }
    if (this.finished || this.closed) {
      this.closed = true;
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<SequencedEvent>> {
    const runStillGoing = !this.finished && !this.closed;
    this.closed = true;
    this.buffer = [];
    this.head = 0;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.({ value: undefined, done: true });
    if (runStillGoing) this.onClientGone();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private number(event: RuntimeEvent): SequencedEvent {
    const sequenced = event as SequencedEvent;
    sequenced.sequence = this.sequence++;
    return sequenced;
  }
}

/** Merges a chunk event into the queued event before it when both are chunks of the same message. */
function mergeInto(last: RuntimeEvent, event: RuntimeEvent): boolean {
  if (last.type === 'TextMessageContent' && event.type === 'TextMessageContent' && last.messageId === event.messageId) {
    last.content += event.content;
    return true;
  }
  if (
    last.type === 'ActionExecutionArgs' &&
    event.type === 'ActionExecutionArgs' &&
    last.actionExecutionId === event.actionExecutionId
  ) {
    last.args += event.args;
    return true;
  }
  return false;
}
