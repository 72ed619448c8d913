import { OverloadedError } from '../core/errors.js';

/** Whole-thread reads made at once. */
const MAX_READS = 4;
/** Whole-thread reads that may wait for a slot. */
const MAX_WAITING_READS = 1_000;

/**
 * The gate every read of a whole thread (copilotThread, loadAgentState, AG-UI connect, a thread's messages) passes:
 * each makes an answer as large as the thread. MAX_READS run at once, more wait their turn (at most
 * MAX_WAITING_READS, then OVERLOADED), and each is refused OVERLOADED while `admit` says no (the transports' budget
 * for clients that do not read: slow-readers.ts). Read all at once, a burst would each pass that check before any
 * had written its answer; a slot is given back a turn of the event loop after its read, once the caller has made
 * and written its answer.
 */
export class WholeThreadReads {
  private admit: () => boolean = () => true;
  /** Reads under way, and those waiting for a slot. */
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  /** Reads are refused OVERLOADED while `admit` says no. */
  limit(admit: () => boolean): void {
    this.admit = admit;
  }

  async read<T>(read: () => Promise<T>): Promise<T> {
    await this.take();
    try {
      if (!this.admit()) {
        throw new OverloadedError(
          'The gateway holds too much output for clients that are not reading it to read a whole thread now; ' +
            'try again shortly.',
        );
      }
      return await read();
    } finally {
      setImmediate(() => this.give());
    }
  }

  private take(): Promise<void> | void {
    if (this.running < MAX_READS) {
      this.running++;
      return;
    }
    if (this.waiting.length >= MAX_WAITING_READS) {
      throw new OverloadedError('Too many reads of whole threads are waiting; try again shortly.');
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}
