import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { HeldOutput, OutputHolder } from '../engine/launcher.js';

/** How often the output held for every connection is added up. */
const CHECK_EVERY_MS = 250;
/** A connection holding less than this is never dropped (a reader a little behind is a normal reader). */
const MIN_DROPPED_BYTES = 64 * 1024;
/**
 * How long a connection must take none of what it holds to count as not reading: long enough that a reader on a
 * busy machine (or whose own process is busy), or one whose kernel takes output in steps of a megabyte or more (as
 * on loopback), is not taken for one; new replays are refused meanwhile (`admit`).
 */
const STALL_MS = 5_000;
/**
 * While over the budget, a connection that would take longer than this to take what it holds, at the pace it has
 * been taking output, is closed too, however steadily it reads: a reader of a trickle holds a long replay for hours.
 */
const MAX_DRAIN_MS = 60_000;
/** A connection's pace is what it took over about this long, up to the last check (once watched that long). */
const PACE_MS = 5_000;
/** Closes are logged at most this often (one line with the counts since the last): an attack is not a log flood. */
const LOG_EVERY_MS = 10_000;

/** What an answer keeps for its connection besides its unsent output; see SlowReaderGuard.keep. */
export interface KeptOutput {
  /** `bytes` of it are written (or dropped): no longer counted. */
  release(bytes: number): void;
}

/** Declares what an answer keeps to write later (SlowReaderGuard.keep, or nothing when no guard is wired). */
export type KeepOutput = (res: ServerResponse, bytes: number) => KeptOutput;

/**
 * A budget for the output the process holds for readers that do not read. Every answer waits for its
 * connection to take what it wrote before writing more (backpressure), but one write can be large: a thread's
 * replay (AG-UI `connect`, `copilotThread`, `loadAgentState`, the thread list's messages) is written as a whole,
 * and a client that sends a short request for a long thread and never reads holds that answer in memory (with the
 * thread's copy its request read) for as long as it keeps the connection open. Enough of them would exhaust the
 * heap and end the process. So every connection's unsent output is added up a few times a second, and while the
 * total is over the budget the connections holding the most (at least 64 KB each) that took nothing for five
 * seconds, or that at their pace would take more than a minute to take what they hold, are closed, the slowest
 * first: a reader that does not read (or reads a trickle) loses its connection, never the process.
 * Closing one ends its request as a client going away does (its stream and follow stop; a run it started goes on
 * as runs do after a disconnect). And while the total stays over the budget, requests that would read a whole
 * thread are refused (`admit`, ThreadService.limitReads).
 *
 * A replay written a run at a time (AG-UI `connect`) also keeps the messages of the runs it has not yet written:
 * it declares them (`keep`) until it has, and they count as its connection's output, so that what the guard sees
 * is what such a client costs, from the moment its thread is read (not only once its first frame is written).
 *
 * And a streamed answer stops writing once its socket's buffer is full: what its run says meanwhile waits in its
 * views, not in the socket. So what an answer's views hold (`track`: the output of the runs it started, which the
 * mutation's view keeps until the answer is over; the events an event queue holds for a graphql-ws or AG-UI reader,
 * or for one following a run) counts as its connection's output too, once the connection has taken nothing for five
 * seconds. A reader that keeps reading, however slowly, is judged by its unsent output alone.
 */
export class SlowReaderGuard {
  private readonly sockets = new Set<Socket>();
  /** Each connection holding at least MIN_DROPPED_BYTES with some of it unsent: since when it took none, its pace. */
  private held = new Map<Socket, Watch>();
  /** What answers keep to write later, by connection (keep). */
  private readonly kept = new Map<Socket, number>();
  /** What the answers under way hold, by connection (track). */
  private readonly tracked = new Map<Socket, AnswerOutput | AnswerOutput[]>();
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
      /** Over how long a connection's pace is measured (tests: less). */
      paceMs?: number;
      /** How long a connection may take to take what it holds at its pace, while over the budget (tests: less). */
      maxDrainMs?: number;
    },
  ) {
    const { sockets, kept, tracked } = this;
    // One function for every socket (not a closure each: a held WebSocket stream keeps as little as it can).
    function forget(this: Socket) {
      sockets.delete(this);
      kept.delete(this);
      tracked.delete(this);
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
   * Counts what `held`'s runs produce as `socket`'s output while its reader does not read (see the class), until
   * `untrack`.
   */
  track(socket: Socket, answer: AnswerOutput): void {
    if (socket.destroyed) return;
    const tracked = this.tracked.get(socket);
    if (tracked === undefined) this.tracked.set(socket, answer);
    else if (Array.isArray(tracked)) tracked.push(answer);
    else this.tracked.set(socket, [tracked, answer]);
  }

  untrack(socket: Socket, answer: AnswerOutput): void {
    const tracked = this.tracked.get(socket);
    if (tracked === answer) this.tracked.delete(socket);
    else if (Array.isArray(tracked)) {
      const at = tracked.indexOf(answer);
      if (at !== -1) tracked.splice(at, 1);
      if (tracked.length === 0) this.tracked.delete(socket);
    }
  }

  /**
   * Where an answer's views are held (a WebSocket operation's, an HTTP answer's): tracked for `socket` from its first
   * hold until `release`.
   */
  output(socket: Socket | null): AnswerOutput {
    return new AnswerOutput(this, socket);
  }

  /** Where an HTTP answer's views are held, released when the answer is over (`res` closes). */
  holding(res: ServerResponse): OutputHolder {
    const output = this.output(res.socket);
    res.once('close', () => output.release());
    return output;
  }

  /**
   * Adds up the output held for every connection (with what its answer keeps to write later, and, once it has taken
   * nothing for STALL_MS, what its answers' views hold); while that is over the budget, closes the connections that
   * took none of their unsent output for STALL_MS or would take more than MAX_DRAIN_MS to take what they hold at their
   * pace, slowest (then largest) first. A reader that reads at a reasonable pace is left to read; one with nothing
   * unsent is not the one holding up.
   */
  check(): number {
    const now = Date.now();
    const stallMs = this.options.stallMs ?? STALL_MS;
    const paceMs = this.options.paceMs ?? PACE_MS;
    let total = 0;
    const slow: { socket: Socket; held: number; drainMs: number }[] = [];
    const seen = new Map<Socket, Watch>();
    for (const socket of this.sockets) {
      const unsent = socket.writableLength;
      const written = unsent + (this.kept.get(socket) ?? 0);
      total += written;
      if (unsent === 0) continue;
      // Behind: what its answers' runs produced may wait in their views (counted once it has stalled).
      const runs = this.runsHeldFor(socket);
      if (written + runs < MIN_DROPPED_BYTES) continue;
      const taken = takenBy(socket);
      const before = this.held.get(socket);
      if (before === undefined) {
        seen.set(socket, { since: now, samples: [{ at: now, taken }] });
        continue;
      }
      const samples = before.samples;
      // Took some since the last check: reading, as of now.
      const since = taken > samples[samples.length - 1]!.taken ? now : before.since;
      samples.push({ at: now, taken });
      // The oldest kept is the latest at least PACE_MS old, if any.
      while (samples.length > 2 && now - samples[1]!.at >= paceMs) samples.shift();
      seen.set(socket, { since, samples });
      if (now - since >= stallMs) {
        total += runs;
        slow.push({ socket, held: written + runs, drainMs: Infinity });
      } else if (written >= MIN_DROPPED_BYTES) {
        // A reader that reads is judged by what is written for it (it has taken much of what its runs said).
        const drainMs = drainTime(samples, written, now, paceMs);
        if (drainMs > (this.options.maxDrainMs ?? MAX_DRAIN_MS)) slow.push({ socket, held: written, drainMs });
      }
    }
    this.held = seen;
    if (total <= this.options.budgetBytes || slow.length === 0) {
      this.log(now);
      return total;
    }
    slow.sort((a, b) => b.drainMs - a.drainMs || b.held - a.held);
    let dropped = 0;
    let freed = 0;
    for (const { socket, held } of slow) {
      if (total - freed <= this.options.budgetBytes) break;
      freed += held;
      dropped++;
      this.sockets.delete(socket);
      this.held.delete(socket);
      this.kept.delete(socket);
      this.tracked.delete(socket);
      socket.destroy();
    }
    this.options.onDropped?.(dropped);
    this.unlogged.dropped += dropped;
    this.unlogged.freedBytes += freed;
    this.unlogged.heldBytes = Math.max(this.unlogged.heldBytes, total);
    this.log(now);
    return total - freed;
  }

  /** What the views of `socket`'s answers under way hold. */
  private runsHeldFor(socket: Socket): number {
    const tracked = this.tracked.get(socket);
    if (tracked === undefined) return 0;
    if (!Array.isArray(tracked)) return tracked.bytes;
    let bytes = 0;
    for (const answer of tracked) bytes += answer.bytes;
    return bytes;
  }

  /** Logs the closes since the last line, if any and if that was LOG_EVERY_MS ago (the metric counts every one). */
  private log(now: number): void {
    if (this.unlogged.dropped === 0 || now - this.loggedAt < LOG_EVERY_MS) return;
    this.options.logger.warn(
      { ...this.unlogged, budgetBytes: this.options.budgetBytes },
      'closed connections whose readers did not read (or read a trickle): the output held for them was over ' +
        'maxBufferedOutputMb',
    );
    this.loggedAt = now;
    this.unlogged = { dropped: 0, freedBytes: 0, heldBytes: 0 };
  }

  stop(): void {
    clearInterval(this.timer);
    // The closes not yet logged, whenever the last line was.
    this.log(Infinity);
  }
}

/**
 * What one answer holds, tracked for its connection once it holds something (most answers start no run), until the
 * answer is over (`release`: a WebSocket operation's end, an HTTP answer's).
 */
export class AnswerOutput implements OutputHolder {
  /** What it holds: one view or run (as most answers), or several. */
  private held: HeldOutput | HeldOutput[] | undefined;
  private released = false;

  constructor(
    private readonly guard: SlowReaderGuard,
    private readonly socket: Socket | null,
  ) {}

  hold(held: HeldOutput): void {
    // Once the answer is over, what it held is let go: a run that starts after that (its client completed the
    // operation while the run was being admitted) is not its connection's to hold.
    if (this.released) return;
    const before = this.held;
    if (before === undefined) {
      this.held = held;
      if (this.socket) this.guard.track(this.socket, this);
    } else if (Array.isArray(before)) before.push(held);
    else this.held = [before, held];
  }

  /** What its views hold now. */
  get bytes(): number {
    const held = this.held;
    if (held === undefined) return 0;
    if (!Array.isArray(held)) return held.heldBytes;
    let bytes = 0;
    for (const one of held) bytes += one.heldBytes;
    return bytes;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.held !== undefined && this.socket) this.guard.untrack(this.socket, this);
  }
}

/** What the guard knows of a connection behind by at least MIN_DROPPED_BYTES, views included (SlowReaderGuard.held). */
interface Watch {
  /** Since when it took none. */
  since: number;
  /** What the kernel had taken of its output (takenBy) at each check, back to the latest at least PACE_MS old. */
  samples: { at: number; taken: number }[];
}

/**
 * How long a connection would take to take `held` at the pace it took output over the last `paceMs` (0 until it has
 * been watched that long: not judged yet).
 */
function drainTime(
  samples: readonly { at: number; taken: number }[],
  held: number,
  now: number,
  paceMs: number,
): number {
  const oldest = samples[0]!;
  const windowMs = now - oldest.at;
  if (windowMs <= 0 || windowMs < paceMs) return 0;
  const pace = (samples[samples.length - 1]!.taken - oldest.taken) / windowMs;
  return pace > 0 ? held / pace : Infinity;
}

/**
 * What the kernel has taken of all a connection was given. Node's public figures (bytesWritten, writableLength) move
 * only as whole writes complete, and a long replay is one write: its reader would look stalled until it had taken
 * all of it. The socket's count of bytes handed to its handle, less the handle's writeQueueSize (libuv's bytes not
 * yet in the kernel), moves as the kernel takes them. Neither is public API (both are on Node 20 and 24); without
 * them, the public, whole-write figure.
 */
function takenBy(socket: Socket): number {
  const internals = socket as unknown as { _bytesDispatched?: unknown; _handle?: { writeQueueSize?: unknown } | null };
  const dispatched = internals._bytesDispatched;
  const queued = internals._handle?.writeQueueSize;
  if (typeof dispatched === 'number' && typeof queued === 'number') return dispatched - queued;
  return socket.bytesWritten - socket.writableLength;
}
