import type { EventConsumer, EventHandover, SequencedEvent } from '../core/events.js';
import { mergeEvents } from './log.js';

/**
 * One reader's feed of a run's events: a store pushes the stored ones, then the live ones, and the
 * reader takes them in order until RunFinished. Each sequence number is taken once (a store may push
 * an event twice, from its log and from its live channel); while the reader is behind, consecutive
 * chunks of one message waiting in the queue are merged (lossless, the last chunk's sequence).
 * `return()` (the reader leaving) calls `onClose` so the store stops feeding it.
 */
export class EventFeed implements AsyncIterableIterator<SequencedEvent>, EventHandover<SequencedEvent> {
  private queue: SequencedEvent[] = [];
  private head = 0;
  private lastIsOwn = false;
  private waiting: { resolve: (result: IteratorResult<SequencedEvent>) => void; reject: (error: unknown) => void } | undefined;
  /** The consumer that asked for the next event (`request`), when it waits for one. */
  private consumer: EventConsumer<SequencedEvent> | undefined;
  private finished = false;
  private closed = false;
  private error: unknown;
  /** The sequence of the last event taken in. */
  private last: number;
  private onClose: (() => void) | undefined;

  constructor(afterSequence: number) {
    this.last = afterSequence;
  }

  /** What the store calls when the reader leaves (or the feed ends). */
  whenClosed(onClose: () => void): void {
    if (this.closed) onClose();
    else this.onClose = onClose;
  }

  /** The sequence the feed takes next: anything lower has been taken. */
  get expected(): number {
    return this.last + 1;
  }

  get done(): boolean {
    return this.finished || this.closed;
  }

  push(event: SequencedEvent): void {
    if (this.finished || this.closed || event.sequence <= this.last) return;
    this.last = event.sequence;
    if (event.type === 'RunFinished') this.finished = true;
    const consumer = this.consumer;
    const waiting = this.waiting;
    if (consumer) {
      this.consumer = undefined;
      consumer.take(event);
    } else if (waiting) {
      this.waiting = undefined;
      waiting.resolve({ value: event, done: false });
    } else {
      const last = this.queue.length > this.head ? this.queue[this.queue.length - 1] : undefined;
      const merged = last && event.type !== 'AgentStateMessage' ? mergeEvents(last, event, this.lastIsOwn) : undefined;
      if (merged) {
        this.queue[this.queue.length - 1] = merged;
        this.lastIsOwn = true;
      } else {
        this.queue.push(event);
        this.lastIsOwn = false;
      }
    }
    if (this.finished) this.close();
  }

  /**
   * The run has ended and the reader has everything it asked for (it joined after the run's last
   * event): the feed ends once what is queued has been taken.
   */
  end(): void {
    if (this.finished || this.closed) return;
    this.finished = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve({ value: undefined, done: true });
    const consumer = this.consumer;
    this.consumer = undefined;
    consumer?.end();
    this.close();
  }

  /** The store cannot go on: the reader gets `error` once it has taken what was queued. */
  fail(error: unknown): void {
    if (this.finished || this.closed) return;
    this.finished = true;
    const waiting = this.waiting;
    const consumer = this.consumer;
    this.waiting = undefined;
    this.consumer = undefined;
    if (waiting) waiting.reject(error);
    else if (consumer) consumer.fail(error);
    else this.error = error;
    this.close();
  }

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.head < this.queue.length) return Promise.resolve({ value: this.shift(), done: false });
    if (this.error !== undefined) {
      const error = this.error;
      this.error = undefined;
      return Promise.reject(error);
    }
    if (this.finished || this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** `next()` without a promise (see EventConsumer): `take`, `fail` or `end`, once. */
  request(consumer: EventConsumer<SequencedEvent>): void {
    if (this.head < this.queue.length) return consumer.take(this.shift());
    if (this.error !== undefined) {
      const error = this.error;
      this.error = undefined;
      return consumer.fail(error);
    }
    if (this.finished || this.closed) return consumer.end();
    this.consumer = consumer;
  }

  private shift(): SequencedEvent {
    const event = this.queue[this.head++];
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
      this.lastIsOwn = false;
    }
    return event;
  }

  return(): Promise<IteratorResult<SequencedEvent>> {
    this.queue = [];
    this.head = 0;
    this.consumer = undefined; // the consumer is the one leaving
    this.close();
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve({ value: undefined, done: true });
    return Promise.resolve({ value: undefined, done: true });
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    const onClose = this.onClose;
    this.onClose = undefined;
    onClose?.();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
