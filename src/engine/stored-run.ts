import type { GatewayError } from '../core/errors.js';
import type { RunListener, SequencedEvent } from '../core/events.js';
import { failedRun, type RunStatus } from '../core/status.js';
import type { StoredEventSink } from '../threads/store.js';
import type { RunHandle } from './run.js';

interface Subscriber {
  listener: RunListener;
  onFailure: ((error: GatewayError) => void) | undefined;
}

/**
 * A run as its clients see it when the thread store writes asynchronously (Redis): each event once
 * the store has it, never before (RunLog.deliverStored). Whatever a client was shown is then a prefix
 * of the stored log, so a join after any failure (this instance killed, and another ending the run
 * from its log) replays what the client saw, numbered the same, and a sequence number names one event
 * forever (unless Redis itself loses part of the log: PROTOCOL.md §7.5). When the store cannot take
 * the rest (see RedisThreadStore), the views end with the store's error, not with a numbered event the
 * log might later give another meaning.
 *
 * Everything else (the run's end for the launcher, metrics, hooks, the log itself) stays on the run.
 */
export class StoredRun implements RunHandle, StoredEventSink {
  readonly threadId: string;
  readonly runId: string;
  readonly requestId: string | undefined;
  /** Settles when the views have had RunFinished, or the store's failure. */
  readonly finished: Promise<RunStatus>;
  private subscribers: Subscriber[] = [];
  /** The sequence of the last event shown. */
  private last = -1;
  private ended = false;
  private settle!: (status: RunStatus) => void;

  constructor(
    private readonly run: RunHandle,
    private readonly onSubscriberError: (error: unknown) => void,
  ) {
    this.threadId = run.threadId;
    this.runId = run.runId;
    this.requestId = run.requestId;
    this.finished = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  subscribe(listener: RunListener, onFailure?: (error: GatewayError) => void): () => void {
    if (this.ended) return () => {};
    const subscriber = { listener, onFailure };
    this.subscribers = [...this.subscribers, subscriber];
    return () => {
      this.subscribers = this.subscribers.filter((s) => s !== subscriber);
    };
  }

  abort(reason: GatewayError): void {
    this.run.abort(reason);
  }

  stored(events: readonly SequencedEvent[]): void {
    for (const event of events) {
      if (this.ended || event.sequence <= this.last) continue;
      this.last = event.sequence;
      for (const subscriber of this.subscribers) {
        try {
          subscriber.listener(event);
        } catch (error) {
          this.onSubscriberError(error);
          this.subscribers = this.subscribers.filter((s) => s !== subscriber);
        }
      }
      if (event.type === 'RunFinished') this.end(event.status);
    }
  }

  failed(error: GatewayError): void {
    if (this.ended) return;
    const subscribers = this.subscribers;
    this.end(failedRun(error, this.requestId));
    for (const subscriber of subscribers) {
      try {
        subscriber.onFailure?.(error);
      } catch (thrown) {
        this.onSubscriberError(thrown);
      }
    }
  }

  private end(status: RunStatus): void {
    this.ended = true;
    this.subscribers = [];
    this.settle(status);
  }
}
