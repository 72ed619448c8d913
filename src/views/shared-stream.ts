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
  /** Readers told synchronously of every push and of the end (see `watch`). */
  private watchers: (() => void)[] | undefined;

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

  /**
   * A reader that reads synchronously instead of through the async iterator: `watcher` is called
   * within every push and at the end, and reads with `available`, `take` and `isEnded`. Returns
   * the function that stops the calls.
   */
  watch(watcher: () => void): () => void {
    (this.watchers ??= []).push(watcher);
    return () => {
      const watchers = this.watchers;
      const at = watchers ? watchers.indexOf(watcher) : -1;
      if (at !== -1) watchers!.splice(at, 1);
    };
  }

  /** Whether a reader at `index` has something to take. */
  available(index: number): boolean {
    return index < this.items.length;
  }

  /** Whether no more items will come. */
  isEnded(): boolean {
    return this.ended;
  }

  /** What a reader at `index` gets next, and where it is after that. */
  take(index: number): [T, number] {
    return [this.items[index], index + 1];
  }

  private wake(): void {
    const watchers = this.watchers;
    if (watchers !== undefined) {
      // A watcher may stop watching when called: call those there were.
      for (const watcher of watchers.length === 1 ? watchers : [...watchers]) watcher();
    }
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
  override take(index: number): [string, number] {
    const items = this.items;
    if (index === items.length - 1) return [items[index], index + 1];
    // Strings only: something else (a plain-JavaScript adapter's mistake) stays an item of its own,
    // for GraphQL's String to refuse, rather than turn into "[object Object]" in the text.
    let end = index;
    while (end < items.length && typeof items[end] === 'string') end++;
    if (end <= index + 1) return [items[index], index + 1];
    return [items.slice(index, end).join(''), end];
  }
}
