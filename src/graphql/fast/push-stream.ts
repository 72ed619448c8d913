import type { ExecutionResult } from 'graphql';
import type { EventConsumer, EventHandover } from '../../core/events.js';
import { executeEvent, isPromise, type EventExecution, type EventResult } from './event-execution.js';
import { DONE, ResponseStream } from './response-stream.js';
import type { ResultSink } from '../executor.js';

/**
 * A response stream pushed to a sink (see createSubscriber): the reader's first `next()` starts it
 * and resolves once the stream has ended (the source's end, `return()`), or rejects with an error
 * that executing an event threw, as a pulled stream's `next()` would. Events are executed the way
 * EventResponseStream executes them (compiled documents only: no incremental parts). `onEnd` is
 * called once, however it ends.
 */
export class EventPushStream extends ResponseStream implements EventConsumer<unknown> {
  private started = false;
  private done = false;
  private settle: ((result: IteratorResult<ExecutionResult>) => void) | undefined;
  private reject: ((error: unknown) => void) | undefined;

  constructor(
    private readonly source: AsyncIterator<unknown> & EventHandover<unknown>,
    private readonly execution: EventExecution,
    private readonly sink: ResultSink,
    private readonly onEnd: (() => void) | undefined,
  ) {
    super();
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    // One reader, one call: the stream is pushed from here on.
    if (this.done || this.started) return Promise.resolve(DONE);
    this.started = true;
    return new Promise((resolve, reject) => {
      this.settle = resolve;
      this.reject = reject;
      this.source.request(this);
    });
  }

  /** EventConsumer: the source's next event. */
  take(event: unknown): void {
    if (this.done) return;
    let result: EventResult | Promise<EventResult>;
    try {
      result = executeEvent(this.execution, event);
    } catch (error) {
      return this.failed(error);
    }
    if (isPromise(result)) {
      result.then(
        (settled) => this.send(settled),
        (error: unknown) => this.failed(error),
      );
    } else {
      this.send(result);
    }
  }

  /** EventConsumer: the source has no more events. */
  end(): void {
    if (this.close()) this.settle?.(DONE);
  }

  /** EventConsumer: the source failed (and has ended itself): the reader gets its error, as from a pulled `next()`. */
  fail(error: unknown): void {
    if (this.close()) this.reject?.(error);
  }

  private send(result: EventResult): void {
    if (this.done) return;
    try {
      // A compiled event document has no @defer/@stream: its result is a plain one.
      this.sink.send(result as ExecutionResult, this.written);
    } catch (error) {
      this.failed(error);
    }
  }

  /**
   * The sink has written a result: the next event, please. Called from the socket's write callback,
   * where a throw would be uncaught: nothing may escape.
   */
  private readonly written = (): void => {
    if (this.done) return;
    try {
      this.source.request(this);
    } catch (error) {
      this.failed(error);
    }
  };

  /**
   * Executing an event failed (the executor's or the compiler's own error, not a field error), or
   * the sink threw: the stream ends with it, and the source is told to stop (see
   * EventResponseStream.onExecutionError). `take` runs within the run's own event, so the run is
   * aborted there and then, not a microtask later as on the pulled path; its abort is guarded.
   */
  private failed(error: unknown): void {
    if (!this.close()) return;
    this.reject?.(error);
    try {
      void Promise.resolve(this.source.return?.()).catch(() => {});
    } catch {
      // The source could not be told: it has failed itself.
    }
  }

  /** Ends the stream from the reader's side: the source is told to stop (unless it already had). */
  protected async stop(): Promise<void> {
    const first = this.close();
    this.settle?.(DONE); // settling twice changes nothing
    if (first) await this.source.return?.();
  }

  /**
   * Marks the stream done and tells `onEnd`, once: whether this call was the one. `onEnd` (a log
   * line) must not keep the reader waiting: what it throws is dropped.
   */
  private close(): boolean {
    if (this.done) return false;
    this.done = true;
    try {
      this.onEnd?.();
    } catch {
      // Nothing to tell: the operation's end is its log line.
    }
    return true;
  }
}
