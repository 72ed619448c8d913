import { EventQueue } from '../core/event-queue.js';
import type { SequencedEvent } from '../core/events.js';

/**
 * One reader's feed of a run's events: a store pushes the stored ones, then the live ones, and the
 * reader takes them in order until RunFinished, pulled or pushed (EventQueue). Each sequence number
 * is taken once (a store may push an event twice, from its log and from its live channel); while the
 * reader is behind, consecutive chunks of one message waiting in the queue are merged (lossless, the
 * last chunk's sequence); agent states are all kept. `return()` (the reader leaving) calls `onClose`
 * so the store stops feeding it.
 */
export class EventFeed extends EventQueue {
  /** The sequence of the last event taken in. */
  private last: number;
  private onClose: (() => void) | undefined;

  constructor(afterSequence: number) {
    super(false);
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
    if (this.finished || this.closed) return;
    if (event.sequence <= this.last) {
      // The run ended at or before where the reader joined (a join after a sequence the run never reached): nothing
      // more will come, so the feed ends as a join after a finished run's end does.
      if (event.type === 'RunFinished') this.end();
      return;
    }
    this.last = event.sequence;
    this.deliver(event);
    if (this.finished) this.close();
  }

  /**
   * The run has ended and the reader has everything it asked for (it joined after the run's last
   * event): the feed ends once what is queued has been taken.
   */
  end(): void {
    if (this.finished || this.closed) return;
    this.finish();
    this.close();
  }

  /** The store cannot go on: the reader gets `error` once it has taken what was queued. */
  fail(error: unknown): void {
    if (this.finished || this.closed) return;
    this.failWith(error);
    this.close();
  }

  return(): Promise<IteratorResult<SequencedEvent>> {
    this.leave();
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Tells the store, once, that the feed needs nothing more (its end, a failure, or the reader leaving). */
  private close(): void {
    const onClose = this.onClose;
    this.onClose = undefined;
    this.closed = true;
    onClose?.();
  }
}
