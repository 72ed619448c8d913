import type { ServerResponse } from 'node:http';

/**
 * Writes a streamed HTTP answer's parts (multipart parts, SSE events), joined into as few writes as
 * the stream's pace allows, without changing a byte of what the client reads:
 *
 * - Parts that become ready in the same turn of the event loop leave in one write (one HTTP chunk,
 *   one TCP segment when they fit). They are joined here rather than corked: a corked response
 *   still makes an HTTP chunk, with its bookkeeping, per write.
 * - Once a stream is flowing, its paced parts (a model's tokens) leave at most once every
 *   `intervalMs`: the first at once, then whatever came during the interval in one write. A write to
 *   a socket is the largest single cost of a streamed token (about a third of the gateway's time at a
 *   hundred streams, profiled), and text shown 30 times a second (the default 32 ms) reads as smoothly
 *   as text shown per token: a token waits at most that long, and the first never does. 0 writes every
 *   turn's parts at once.
 * - More than the response's buffer waiting goes at once, so that backpressure (`writableNeedDrain`)
 *   sees it; `flush` (the stream's end) sends what waits without waiting.
 */
export class PartWriter {
  private pending = '';
  /** Whether the pending text holds a paced part (then it waits for the interval). */
  private paced = false;
  /** When the last write of a paced part left (0: none yet, so the first goes at once). */
  private lastPaced = 0;
  /** The write that waits: in this turn (an immediate) or after the interval (a timer). */
  private scheduled: { immediate: NodeJS.Immediate } | { timer: NodeJS.Timeout } | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly intervalMs: number,
  ) {}

  /** Queues a part; `paced` for the parts a stream repeats (later payloads), not its first or last. */
  send(wire: string, paced: boolean): void {
    this.pending += wire;
    if (paced) this.paced = true;
    if (this.pending.length >= this.res.writableHighWaterMark) {
      this.flush();
      return;
    }
    if (this.scheduled !== undefined) return;
    const wait = this.paced && this.intervalMs > 0 ? this.lastPaced + this.intervalMs - performance.now() : 0;
    this.scheduled = wait > 0 ? { timer: setTimeout(this.flush, wait) } : { immediate: setImmediate(this.flush) };
  }

  /** Writes whatever waits, now. */
  readonly flush = (): void => {
    this.unschedule();
    const text = this.pending;
    this.pending = '';
    if (this.paced) this.lastPaced = performance.now();
    this.paced = false;
    if (text && !this.res.destroyed) this.res.write(text);
  };

  private unschedule(): void {
    const scheduled = this.scheduled;
    if (scheduled === undefined) return;
    this.scheduled = undefined;
    if ('timer' in scheduled) clearTimeout(scheduled.timer);
    else clearImmediate(scheduled.immediate);
  }

  /** Drops whatever waits (the answer failed: nothing more is written). */
  discard(): void {
    this.pending = '';
    this.paced = false;
    this.unschedule();
  }
}
