/**
 * An append-only stream that any number of readers read from the start, each at its own pace.
 * The run pushes synchronously and never waits; each `for await` gets every item in order. GraphQL
 * may resolve one field several times (aliases such as `a: messages b: messages`), and each of
 * those resolutions must see the whole stream. Items are kept until the stream itself is dropped,
 * which is when the response is done.
 */
export class SharedStream<T> implements AsyncIterable<T> {
  protected readonly items: T[] = [];
  private ended = false;
  private waiters: (() => void)[] = [];

  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    this.wake();
  }

  /** No more items: readers finish once they have read everything. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.wake();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    let index = 0;
    let stopped = false;
    return {
      next: async (): Promise<IteratorResult<T>> => {
        for (;;) {
          if (stopped) return { value: undefined, done: true };
          if (index < this.items.length) {
            const [value, nextIndex] = this.take(index);
            index = nextIndex;
            return { value, done: false };
          }
          if (this.ended) {
            stopped = true;
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => this.waiters.push(resolve));
        }
      },
      return: async (): Promise<IteratorResult<T>> => {
        stopped = true;
        return { value: undefined, done: true };
      },
    };
  }

  /** What a reader at `index` gets next, and where it is after that. */
  protected take(index: number): [T, number] {
    return [this.items[index], index + 1];
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

/**
 * Text chunks: a reader gets everything it has not read yet, joined, so a slow reader gets fewer,
 * larger chunks instead of a backlog of single tokens. Concatenation is unchanged.
 */
export class SharedTextStream extends SharedStream<string> {
  protected override take(index: number): [string, number] {
    const items = this.items;
    if (index === items.length - 1) return [items[index], index + 1];
    return [items.slice(index).join(''), items.length];
  }
}
