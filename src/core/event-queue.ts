import { eventBytes } from './event-bytes.js';
import { mergeEvents } from './event-merge.js';
import type { EventConsumer, EventHandover, SequencedEvent } from './events.js';

const DONE: IteratorResult<SequencedEvent> = Object.freeze({
  value: undefined,
  done: true,
}) as IteratorResult<SequencedEvent>;

/**
 * One reader's queue of a run's events: what a run's view (RunEventStream) and a thread store's feed
 * (EventFeed) share. An event goes at once to a reader waiting for one, pulled (`next()`) or pushed
 * (`request()`, EventHandover); otherwise it is queued. While the reader is behind, consecutive
 * chunks of one message (or argument stream) waiting in the queue are merged into one event that
 * carries the number of the last chunk merged into it, so a slow reader gets fewer, larger events
 * rather than a growing backlog. Events may be shared with other readers and are never changed
 * here: a merge makes a copy, which later merges may extend.
 */
export abstract class EventQueue implements AsyncIterableIterator<SequencedEvent>, EventHandover<SequencedEvent> {
  private queue: SequencedEvent[] = [];
  private head = 0;
  /** About what the queued events hold (eventBytes), for the budget of output held for readers (heldBytes). */
  private queuedBytes = 0;
  /** Whether the last queued event is a merged copy of this queue's own (safe to extend). */
  private lastIsOwn = false;
  /** A pulled reader's pending `next()`: its resolving functions, kept apart (no object per wait). */
  private waiting: ((result: IteratorResult<SequencedEvent>) => void) | undefined;
  private rejectWaiting: ((error: unknown) => void) | undefined;
  /** The consumer that asked for the next event (`request`), when it waits for one. */
  private consumer: EventConsumer<SequencedEvent> | undefined;
  /** An error to give the reader once it has taken what was queued. */
  private error: unknown;
  /** No event will be added: RunFinished has come, or the source has ended or failed. */
  protected finished = false;
  /** The reader has left, or the source has closed the queue: nothing more is added (what is queued is still taken). */
  protected closed = false;

  /** `mergeStates`: of consecutive queued AgentStateMessage events of one agent, only the last is kept. */
  constructor(private readonly mergeStates: boolean) {}

  /** Hands `event` to the waiting reader, or queues it (merged with the last queued event when it can be). */
  protected deliver(event: SequencedEvent): void {
    if (event.type === 'RunFinished') this.finished = true;
    const consumer = this.consumer;
    if (consumer) {
      this.consumer = undefined;
      consumer.take(event);
      return;
    }
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = this.rejectWaiting = undefined;
      waiting({ value: event, done: false });
      return;
    }
    const last = this.queue.length > this.head ? this.queue[this.queue.length - 1] : undefined;
    if (last && (this.mergeStates || event.type !== 'AgentStateMessage')) {
      const merged = mergeEvents(last, event, this.lastIsOwn);
      if (merged) {
        this.queue[this.queue.length - 1] = merged;
        this.lastIsOwn = merged !== event; // a copy of this queue's, not the shared event
        this.queuedBytes += eventBytes(event);
        return;
      }
    }
    this.queue.push(event);
    this.lastIsOwn = false;
    this.queuedBytes += eventBytes(event);
  }

  /**
   * About what the events waiting for the reader hold (eventBytes of each as it came; a merge counts what it added):
   * what a reader that does not read holds (RunCaller.output).
   */
  get heldBytes(): number {
    return this.queuedBytes;
  }

  /** No more events: a waiting reader is told now, another once it has taken what is queued. */
  protected finish(): void {
    this.finished = true;
    const { waiting, consumer } = this;
    this.waiting = this.rejectWaiting = undefined;
    this.consumer = undefined;
    waiting?.(DONE);
    consumer?.end();
  }

  /** The source cannot go on: the reader gets `error` once it has taken what was queued. */
  protected failWith(error: unknown): void {
    this.finished = true;
    const { rejectWaiting, consumer } = this;
    this.waiting = this.rejectWaiting = undefined;
    this.consumer = undefined;
    if (rejectWaiting) rejectWaiting(error);
    else if (consumer) consumer.fail(error);
    else this.error = error;
  }

  /** The reader leaves: what is queued is dropped, and a reader still waiting is told the end. */
  protected leave(): void {
    this.closed = true;
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.consumer = undefined; // a pushed reader is the one leaving
    const waiting = this.waiting;
    this.waiting = this.rejectWaiting = undefined;
    waiting?.(DONE);
  }

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.head < this.queue.length) return Promise.resolve({ value: this.shift(), done: false });
    if (this.error !== undefined) return Promise.reject(this.takeError());
    if (this.finished || this.closed) return Promise.resolve(DONE);
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.rejectWaiting = reject;
    });
  }

  /** `next()` without a promise (see EventConsumer): `take`, `fail` or `end`, once. */
  request(consumer: EventConsumer<SequencedEvent>): void {
    if (this.head < this.queue.length) return consumer.take(this.shift());
    if (this.error !== undefined) return consumer.fail(this.takeError());
    if (this.finished || this.closed) return consumer.end();
    this.consumer = consumer;
  }

  abstract return(): Promise<IteratorResult<SequencedEvent>>;

  [Symbol.asyncIterator](): this {
    return this;
  }

  private shift(): SequencedEvent {
    const event = this.queue[this.head++];
    if (this.head === this.queue.length) {
      this.queue.length = 0; // emptied in place: a reader drains its queue on every event
      this.head = 0;
      this.lastIsOwn = false;
      this.queuedBytes = 0;
    } else {
      // A merged event counts about what its parts were counted for (less their overheads): never below nothing.
      this.queuedBytes = Math.max(0, this.queuedBytes - eventBytes(event));
    }
    return event;
  }

  private takeError(): unknown {
    const error = this.error;
    this.error = undefined;
    return error;
  }
}
