import { isIncrementalResults } from '@graphql-tools/executor';
import type { ExecutionResult } from 'graphql';
import { executeEvent, isPromise, type EventExecution, type EventResult } from './event-execution.js';

export const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;

/**
 * What a response stream does when its reader ends it (`return()`, `throw()`, disposal): it stops,
 * telling its source (see each stream's `stop`).
 */
export abstract class ResponseStream implements AsyncGenerator<ExecutionResult> {
  abstract next(): Promise<IteratorResult<ExecutionResult>>;

  /** Ends the stream from the reader's side. */
  protected abstract stop(): Promise<void>;

  async return(): Promise<IteratorResult<ExecutionResult>> {
    await this.stop();
    return DONE;
  }

  async throw(error?: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.stop();
    throw error;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/**
 * The response stream: each source event executed as it is read (MapSourceToResponseEvent). An event
 * whose selection uses @defer/@stream yields its initial result, then each subsequent payload, as the
 * tools executor does. `return()` and `throw()` end the source stream (which aborts its run), and
 * nothing the ending source still produces is passed on. `onEnd` is called once, however it ends.
 *
 * Written with `then` and handlers made once per stream rather than as async methods: a stream spends
 * its life waiting for its next event, and an awaiting async method holds a frame, two closures and
 * two promises for it, replaced (and so promoted to the old generation) at every event.
 */
export class EventResponseStream extends ResponseStream {
  private pending: AsyncIterator<ExecutionResult> | undefined;
  private done = false;
  private ended = false;

  constructor(
    private readonly source: AsyncIterator<unknown>,
    private readonly execution: EventExecution,
    private readonly onEnd: (() => void) | undefined,
  ) {
    super();
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.pending) return this.pending.next().then(this.onPart, this.onExecutionError);
    if (this.done) return Promise.resolve(DONE);
    return this.source.next().then(this.onEvent, this.onError);
  }

  private readonly onEvent = (
    event: IteratorResult<unknown>,
  ): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (event.done || this.done) {
      this.done = true;
      this.end();
      return DONE;
    }
    let result: EventResult | Promise<EventResult>;
    try {
      result = executeEvent(this.execution, event.value);
    } catch (error) {
      return this.onExecutionError(error);
    }
    return isPromise(result) ? result.then(this.onResult, this.onExecutionError) : this.onResult(result);
  };

  private readonly onResult = (result: EventResult): IteratorResult<ExecutionResult> => {
    if (this.done) return DONE;
    if (isIncrementalResults(result)) {
      this.pending = result.subsequentResults[Symbol.asyncIterator]() as AsyncIterator<ExecutionResult>;
      return { value: result.initialResult as ExecutionResult, done: false };
    }
    return { value: result as ExecutionResult, done: false };
  };

  private readonly onPart = (
    part: IteratorResult<ExecutionResult>,
  ): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (this.done) return DONE;
    if (!part.done) return part;
    this.pending = undefined;
    return this.next();
  };

  /** The source failed: it has ended itself. */
  private readonly onError = (error: unknown): never => {
    this.done = true;
    this.end();
    throw error;
  };

  /**
   * Executing an event failed (the executor's or the compiler's own error, not a field error): the
   * stream ends with it, and the source is told to stop, as graphql-js does, so that its run does
   * not go on with no reader (graphql-ws does not call `return()` after a rejected `next()`).
   */
  private readonly onExecutionError = (error: unknown): never => {
    const pending = this.pending;
    this.pending = undefined;
    this.done = true;
    this.end();
    void Promise.allSettled([pending?.return?.(), this.source.return?.()]);
    throw error;
  };

  /** Ends the stream from the reader's side: the source is told to stop (unless it already had). */
  protected async stop(): Promise<void> {
    const sourceDone = this.done && !this.pending;
    this.done = true;
    this.end();
    if (sourceDone) return;
    const pending = this.pending;
    this.pending = undefined;
    await Promise.all([pending?.return?.(), this.source.return?.()]);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.();
  }
}
