/**
 * A single-consumer async queue: the run pushes synchronously, one reader pulls with `for await`.
 * Pushing never blocks (a run's output is bounded by the model's output); reading waits for the
 * next item or the end. `onReturn` is called when the reader stops early (client went away).
 */
export class Channel<T> implements AsyncIterableIterator<T> {
  protected buffer: T[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private ended = false;

  constructor(private readonly onReturn?: () => void) {}

  push(item: T): void {
    if (this.ended) return;
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting({ value: item, done: false });
    } else {
      this.buffer.push(item);
    }
  }

  /** No more items; the reader finishes after draining the buffer. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.buffer.length > 0) return Promise.resolve({ value: this.take(), done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<T>> {
    const wasOpen = !this.ended;
    this.buffer = [];
    this.end();
    if (wasOpen) this.onReturn?.();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Takes what the reader gets next from a non-empty buffer. */
  protected take(): T {
    return this.buffer.shift() as T;
  }
}

/**
 * A channel of text chunks that hands the reader everything ready at once, joined: a slow reader
 * gets fewer, larger chunks instead of a backlog of single tokens. Concatenation is unchanged.
 */
export class TextChannel extends Channel<string> {
  protected override take(): string {
    const buffer = this.buffer;
    if (buffer.length === 1) return buffer.pop() as string;
    const joined = buffer.join('');
    this.buffer = [];
    return joined;
  }
}
