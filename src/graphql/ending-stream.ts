import type { ExecutionResult } from 'graphql';

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;

/**
 * An operation's results as graphql-ws iterates them, with `onEnd` called once however they end (their last
 * result, an error, or the reader leaving): the WebSocket transport's queries and mutations, and the stock
 * executor's subscriptions. graphql-ws always has a `next()` pending, and
 * an async generator would queue `return()` behind it: the run would hear of a `complete` or a closed
 * socket only when its next event arrived, or never. So `return()` ends the operation at once (its
 * signal aborts the run) and anything the ending run still produces is not passed on. Written with
 * `then` and handlers made once per operation: an operation spends its life waiting for its next
 * result, and an awaiting async method holds a frame, two closures and two promises for it.
 */
export class EndingStream implements AsyncGenerator<ExecutionResult> {
  private ended = false;

  constructor(
    private readonly results: AsyncIterator<ExecutionResult>,
    private readonly onEnd: () => void,
  ) {}

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.ended) return Promise.resolve(DONE);
    return this.results.next().then(this.onResult, this.onError);
  }

  private readonly onResult = (result: IteratorResult<ExecutionResult>): IteratorResult<ExecutionResult> => {
    if (this.ended) return DONE;
    if (result.done) this.end();
    return result;
  };

  private readonly onError = (error: unknown): never => {
    this.end();
    throw error;
  };

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.end();
    await this.results.return?.();
    return DONE;
  }

  async throw(error?: unknown): Promise<IteratorResult<ExecutionResult>> {
    this.end();
    await this.results.return?.();
    throw error;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }
}
