import type { ModelAdapter, ModelOutput, ModelRequest } from '../../src/adapters/adapter.js';

/**
 * A model the test drives step by step: each `release(token)` lets exactly one token out, and
 * `finish()` ends the answer. Lets a test prove a part reached the client before the next token
 * even existed, without timing.
 */
export class GatedAdapter implements ModelAdapter {
  readonly name = 'gated';
  private pending: ((step: string | null) => void) | undefined;
  private rejectPending: ((reason: unknown) => void) | undefined;
  private queued: (string | null)[] = [];
  started = 0;
  /** Streams that ended because their signal was aborted. */
  aborted = 0;

  release(token: string): void {
    this.push(token);
  }

  finish(): void {
    this.push(null);
  }

  private push(step: string | null): void {
    const pending = this.pending;
    if (pending) {
      this.pending = undefined;
      pending(step);
    } else {
      this.queued.push(step);
    }
  }

  private next(): Promise<string | null> {
    if (this.queued.length) return Promise.resolve(this.queued.shift()!);
    return new Promise((resolve, reject) => {
      this.pending = resolve;
      this.rejectPending = reject;
    });
  }

  async stream(_request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    this.started++;
    // One listener per stream: each aborted stream counts once.
    signal.addEventListener(
      'abort',
      () => {
        this.aborted++;
        this.pending = undefined;
        this.rejectPending?.(signal.reason);
      },
      { once: true },
    );
    const id = output.textStart('gated-message');
    for (;;) {
      const token = await this.next();
      if (token === null) break;
      output.textContent(id, token);
    }
    output.textEnd(id);
  }
}

/** A model that throws an error the gateway does not know. */
export class BrokenAdapter implements ModelAdapter {
  readonly name = 'broken';
  async stream(): Promise<void> {
    throw new Error('secret internal detail: db password is hunter2');
  }
}
