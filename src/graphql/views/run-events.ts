import type { EventConsumer, EventHandover, SequencedEvent } from '../../core/events.js';
import { GatewayError } from '../../core/errors.js';
import type { RunHandle } from '../../engine/run.js';
import { mergeEvents } from '../../threads/log.js';

/**
 * The subscription's view of a run: its events in order, with the numbers the run gave them. When
 * the reader falls behind, consecutive text (or argument) chunks of one message waiting in the
 * queue are merged into one event that carries the number of the last chunk merged into it, so a
 * slow WebSocket gets fewer, larger events rather than a growing backlog. The run's events are
 * shared with other views and never changed here: a merge makes a new event.
 */
export class RunEventStream implements AsyncIterableIterator<SequencedEvent>, EventHandover<SequencedEvent> {
  private buffer: SequencedEvent[] = [];
  private head = 0;
  /** Whether the last buffered event is a merged copy of this view's own (safe to extend). */
  private lastIsOwn = false;
  private waiting: ((result: IteratorResult<SequencedEvent>) => void) | undefined;
  /** The consumer that asked for the next event (`request`), when it waits for one. */
  private consumer: EventConsumer<SequencedEvent> | undefined;
  private finished = false;
  private closed = false;
  private readonly unsubscribe: () => void;

  /** `keepRunning`: the run goes on when the reader leaves (RunDisconnectPolicy CONTINUE). */
  constructor(
    private readonly run: RunHandle,
    private readonly keepRunning = false,
  ) {
    this.unsubscribe = run.subscribe(this.listener);
  }

  private readonly listener = (event: SequencedEvent): void => {
    if (this.closed) return;
    if (event.type === 'RunFinished') this.finished = true;
    const consumer = this.consumer;
    if (consumer) {
      this.consumer = undefined;
      consumer.take(event);
      return;
    }
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting({ value: event, done: false });
      return;
    }
    const last = this.buffer.length > this.head ? this.buffer[this.buffer.length - 1] : undefined;
    if (last) {
      const merged = mergeEvents(last, event, this.lastIsOwn);
      if (merged) {
        this.buffer[this.buffer.length - 1] = merged;
        this.lastIsOwn = merged !== event; // a copy of this view's, not the run's shared event
        return;
      }
    }
    this.buffer.push(event);
    this.lastIsOwn = false;
  };

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.head < this.buffer.length) return Promise.resolve({ value: this.shift(), done: false });
    if (this.finished || this.closed) {
      this.closed = true;
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  /** `next()` without a promise: `consumer.take` gets the next event, or `consumer.end` is called (see EventConsumer). */
  request(consumer: EventConsumer<SequencedEvent>): void {
    if (this.head < this.buffer.length) return consumer.take(this.shift());
    if (this.finished || this.closed) {
      this.closed = true;
      return consumer.end();
    }
    this.consumer = consumer;
  }

  private shift(): SequencedEvent {
    const event = this.buffer[this.head++];
    if (this.head === this.buffer.length) {
      this.buffer.length = 0; // emptied in place: a stream drains its queue on every event
      this.head = 0;
      this.lastIsOwn = false;
    }
    return event;
  }

  return(): Promise<IteratorResult<SequencedEvent>> {
    const runStillGoing = !this.finished && !this.closed;
    this.closed = true;
    this.buffer = [];
    this.head = 0;
    this.unsubscribe();
    this.consumer = undefined; // the consumer is the one leaving
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.({ value: undefined, done: true });
    if (runStillGoing && !this.keepRunning) {
      this.run.abort(new GatewayError('CLIENT_DISCONNECTED', 'The client went away before the run finished.'));
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
