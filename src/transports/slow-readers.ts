import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/** How often the output held for every connection is added up. */
const CHECK_EVERY_MS = 250;
/** A connection holding less than this is never dropped (a reader a little behind is a normal reader). */
const MIN_DROPPED_BYTES = 64 * 1024;
/**
 * How long a connection must take none of what it holds to count as not reading: long enough that a reader on a
 * busy machine (or whose own process is busy) is not taken for one; new replays are refused meanwhile (`admit`).
 */
const STALL_MS = 2_000;
/** Closes are logged at most this often (one line with the counts since the last): an attack is not a log flood. */
const LOG_EVERY_MS = 10_000;

/**
 * A budget for the output the process holds for readers that do not read. Every answer waits for its
 * connection to take what it wrote before writing more (backpressure), but one write can be large: a thread's
 * replay (AG-UI `connect`, `copilotThread`, `loadAgentState`, the thread list's messages) is written as a whole,
 * and a client that sends a short request for a long thread and never reads holds that answer in memory (with the
 * thread's copy its request read) for as long as it keeps the connection open. Enough of them would exhaust the
 * heap and end the process. So every connection's unsent output is added up a few times a second, and while the
 * total is over the budget the connections holding the most (at least 64 KB each) that took nothing for two
 * seconds are closed, largest first: a reader that does not read loses its connection, never the process.
 * Closing one ends its request as a client going away does (its stream and follow stop; a run it started goes on
 * as runs do after a disconnect). And while the total stays over the budget, requests that would read a whole
 * thread are refused (`admit`, ThreadService.limitReads).
 *
 * A replay written a run at a time (AG-UI `connect`) also keeps the messages of the runs it has not yet written:
 * it declares them (`keep`) until it has, and they count as its connection's output, so that what the guard sees
 * is what such a client costs, from the moment its thread is read (not only once its first frame is written).
 */
/** What an answer keeps for its connection besides its unsent output; see SlowReaderGuard.keep. */
export interface KeptOutput {
  /** `bytes` of it are written (or dropped): no longer counted. */
  release(bytes: number): void;
}

/** Declares what an answer keeps to write later (SlowReaderGuard.keep, or nothing when no guard is wired). */
export type KeepOutput = (res: ServerResponse, bytes: number) => KeptOutput;
export class SlowReaderGuard {
  private readonly sockets = new Set<Socket>();
  /** What each connection holding at least MIN_DROPPED_BYTES held at the last check, and since when it took none. */
  private held = new Map<Socket, { bytes: number; since: number }>();
  /** What answers keep to write later, by connection (keep). */
  private readonly kept = new Map<Socket, number>();
  /** Closes not yet logged, and when the last line was. */
  private unlogged = { dropped: 0, freedBytes: 0, heldBytes: 0 };
  private loggedAt = -Infinity;
  private readonly timer: NodeJS.Timeout;

  constructor(
    server: Server,
    private readonly options: {
      budgetBytes: number;
      logger: Logger;
      /** Connections closed by the guard, for metrics. */
      onDropped?: (count: number) => void;
      /** How often the output is added up (tests check by hand: `admit`). */
      checkEveryMs?: number;
      /** How long a connection must take nothing to be closed (tests: 0). */
      stallMs?: number;
    },
  ) {
    const { sockets, kept } = this;
    // One function for every socket (not a closure each: a held WebSocket stream keeps as little as it can).
    function forget(this: Socket) {
      sockets.delete(this);
      kept.delete(this);
    }
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', forget);
    });
    this.timer = setInterval(() => this.check(), options.checkEveryMs ?? CHECK_EVERY_MS).unref();
  }

  /**
   * Whether a request that reads a whole thread may go on: checks now (closing stalled holders if over the
   * budget) and says whether what is held is within it. A burst of such requests would otherwise each add its
   * answer before the next check.
   */
  admit(): boolean {
    return this.check() <= this.options.budgetBytes;
  }

  /**
   * Counts `bytes` for `res`'s connection, as if they were its unsent output, until they are released or `res`
   * closes: what an answer keeps in memory to write later (a replay's runs not yet written).
   */
  keep(res: ServerResponse, bytes: number): KeptOutput {
    const socket = res.socket;
    let left = socket && !socket.destroyed ? bytes : 0;
    const release = (written: number): void => {
      const released = Math.min(left, written);
      if (released <= 0 || !socket) return;
      left -= released;
      const now = (this.kept.get(socket) ?? 0) - released;
      if (now > 0) this.kept.set(socket, now);
      else this.kept.delete(socket);
    };
    if (socket && left > 0) {
      this.kept.set(socket, (this.kept.get(socket) ?? 0) + left);
      res.once('close', () => release(left));
    }
    return { release };
  }

  /**
   * Adds up the output held for every connection (with what its answer keeps to write later); while that is over
   * the budget, closes the connections that hold the most and took none of their unsent output for STALL_MS (a
   * reader that is reading, however slowly, is left to read; one with nothing unsent is not the one holding up).
   */
  check(): number {
    const now = Date.now();
    const stallMs = this.options.stallMs ?? STALL_MS;
    let total = 0;
    const stalled: { socket: Socket; held: number }[] = [];
    const seen = new Map<Socket, { bytes: number; since: number }>();
    for (const socket of this.sockets) {
      const unsent = socket.writableLength;
      const held = unsent + (this.kept.get(socket) ?? 0);
      total += held;
      if (held < MIN_DROPPED_BYTES || unsent === 0) continue;
      const before = this.held.get(socket);
      // Took some since the last check (or newly holding): reading, as of now.
      const since = before !== undefined && unsent >= before.bytes ? before.since : now;
      if (before !== undefined && now - since >= stallMs) stalled.push({ socket, held });
      seen.set(socket, { bytes: unsent, since });
    }
    this.held = seen;
    if (total <= this.options.budgetBytes || stalled.length === 0) {
      this.log(now);
      return total;
    }
    stalled.sort((a, b) => b.held - a.held);
    let dropped = 0;
    let freed = 0;
    for (const { socket, held } of stalled) {
      if (total - freed <= this.options.budgetBytes) break;
      freed += held;
      dropped++;
      this.sockets.delete(socket);
      this.held.delete(socket);
      this.kept.delete(socket);
      socket.destroy();
    }
    this.options.onDropped?.(dropped);
    this.unlogged.dropped += dropped;
    this.unlogged.freedBytes += freed;
    this.unlogged.heldBytes = Math.max(this.unlogged.heldBytes, total);
    this.log(now);
    return total - freed;
  }

  /** Logs the closes since the last line, if any and if that was LOG_EVERY_MS ago (the metric counts every one). */
  private log(now: number): void {
    if (this.unlogged.dropped === 0 || now - this.loggedAt < LOG_EVERY_MS) return;
    this.options.logger.warn(
      { ...this.unlogged, budgetBytes: this.options.budgetBytes },
      'closed connections whose readers did not read: the output held for them was over maxBufferedOutputMb',
    );
    this.loggedAt = now;
    this.unlogged = { dropped: 0, freedBytes: 0, heldBytes: 0 };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
