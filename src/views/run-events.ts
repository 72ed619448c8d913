import type { SequencedEvent } from '../core/events.js';
import { ClientDisconnectedError } from '../core/errors.js';
import type { RunHandle } from '../engine/run.js';
import { EventQueue } from '../core/event-queue.js';

/**
 * The subscription's view of a run: its events in order, with the numbers the run gave them, read
 * pulled or pushed; a reader that falls behind gets consecutive chunks merged, and of consecutive
 * agent states only the last (EventQueue). Leaving before the run's end aborts the run, unless it
 * is to keep running.
 */
export class RunEventStream extends EventQueue {
  private readonly unsubscribe: () => void;

  /** `keepRunning`: the run goes on when the reader leaves (RunDisconnectPolicy CONTINUE). */
  constructor(
    private readonly run: RunHandle,
    private readonly keepRunning = false,
  ) {
    super(true);
    // The rest of the run cannot be shown (its events cannot be stored): the reader gets the error
    // after what is queued, not a RunFinished of the view's making.
    this.unsubscribe = run.subscribe(this.listener, (error) => {
      if (!this.closed) this.failWith(error);
    });
  }

  private readonly listener = (event: SequencedEvent): void => {
    if (!this.closed) this.deliver(event);
  };

  return(): Promise<IteratorResult<SequencedEvent>> {
    const runStillGoing = !this.finished && !this.closed;
    this.leave();
    this.unsubscribe();
    if (runStillGoing && !this.keepRunning) {
      this.run.abort(new ClientDisconnectedError('The client went away before the run finished.'));
    }
    return Promise.resolve({ value: undefined, done: true });
  }
}
