import { RunNotFoundError, type GatewayError } from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import { DEFAULT_AGENT_ID } from '../core/ids.js';
import type { Message } from '../core/messages.js';
import { RUN_SUCCESS } from '../core/status.js';
import { EventFeed } from './feed.js';
import { agentStateOf } from './log.js';
import { eventBytes } from '../core/event-bytes.js';
import { stateBytes } from './memory-bytes.js';
import { concatIds, includesAny, joinIds, splitIds } from './message-ids.js';
import { flatString, joinedStringBytes, stringBytes, unsealEvents } from './sealed-run.js';
import { LiveEvents } from './live-events.js';
import {
  emptyThread,
  joinArrays,
  outputOf,
  recordOf,
  runBytes,
  summaryOf,
  transcriptOfThread,
  type ClaimedTranscript,
  type MemoryRun,
  type MemoryThread,
} from './memory-records.js';
import {
  PENDING,
  threadBusy,
  threadForbidden,
  DELETED_MARK_MS,
  byRecency,
  stopError,
  isAfter,
  type Claim,
  type ClaimDetails,
  type ThreadChange,
  type ThreadListPage,
  type ThreadListQuery,
  type ThreadSummary,
  type RunInput,
  type RunLog,
  type RunRecord,
  type StopHandler,
  type StopReason,
  type StoreCensus,
  type ThreadRead,
  type ThreadRecord,
  type ThreadStore,
  type ThreadStoreOptions,
} from './store.js';

export interface MemoryThreadStoreOptions extends ThreadStoreOptions {
  /** The most threads kept; the least recently used is dropped first. */
  maxThreads: number;
  /**
   * About how many bytes of memory the kept threads may take: a finished run and a thread's messages are kept as
   * flat strings and counted by their size, a running run's events by their text plus a fixed overhead per event.
   */
  maxBytes: number;
  /** How long a claim holds a thread before its run opens. */
  claimTimeoutMs: number;
}

/**
 * Threads in this process: lost on restart, invisible to other instances (use RedisThreadStore for
 * those). Bounded three ways (threads, bytes, runs per thread) and by age; what is over a bound is
 * dropped least recently used first, never a thread whose run is active or being followed.
 */
export class MemoryThreadStore implements ThreadStore {
  readonly kind = 'memory';
  /** By thread id, least recently used first (a touched thread is moved to the end). */
  private readonly threads = new Map<string, MemoryThread>();
  private bytes = 0;
  /** Threads let go of since the store started, by why (not those removed on request). */
  private readonly dropped = { bound: 0, expired: 0 };
  private readonly stopHandlers: StopHandler[] = [];
  /** Threads removed while a run held them, with that run: it may not open or write them again (see remove). */
  private readonly deleted = new Map<string, { runId: string; until: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: MemoryThreadStoreOptions) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, options.ttlSeconds * 1000)).unref();
  }

  get claimTimeoutMs(): number {
    return this.options.claimTimeoutMs;
  }

  /** Threads held now, and about how many bytes they take (for tests and health). */
  get size(): { threads: number; bytes: number } {
    return { threads: this.threads.size, bytes: this.bytes };
  }

  census(): StoreCensus {
    return { threads: this.threads.size, bytes: this.bytes, dropped: { ...this.dropped } };
  }

  async claim(threadId: string, proposedRunId: string, freshRunId: string, details: ClaimDetails = {}): Promise<Claim> {
    const now = Date.now();
    const { owner } = details;
    let thread = this.live(threadId, now);
    if (owner !== undefined && thread?.owner !== undefined && thread.owner !== owner) throw threadForbidden(threadId);
    const active = thread?.active;
    if (active && (active.claimExpires === undefined || active.claimExpires > now))
      throw threadBusy(threadId, active.runId);
    thread ??= this.create(threadId, now, details.agentId);
    if (owner !== undefined) thread.owner = owner;
    if (thread.name === null && details.name !== undefined) {
      thread.name = details.name;
      this.resize(thread, stringBytes(details.name));
    }
    thread.lastRunAt = thread.updatedAt = now;
    const runId = thread.runs.some((run) => run.runId === proposedRunId) ? freshRunId : proposedRunId;
    thread.active = { runId, claimExpires: now + this.options.claimTimeoutMs };
    this.touch(thread, now);
    this.enforceBounds();
    const latest = thread.runs[thread.runs.length - 1];
    // The latest run's output, read once from its events (small: one run's), for the ids and for the transcript.
    const output = latest ? outputOf(latest) : [];
    const checkIds = details.checkIds;
    if (
      latest &&
      checkIds?.length &&
      thread.inputIds !== '' &&
      (includesAny(thread.inputIds, checkIds) || output.some((message) => checkIds.includes(message.id)))
    ) {
      // The request repeats a stored message: its run needs only the transcript's ids (see Claim.storedIds).
      const storedIds = splitIds(thread.inputIds);
      for (const message of output) storedIds.add(message.id);
      this.setClaimed(thread, undefined);
      return { runId, history: [], storedIds };
    }
    const { messages: history, inputLength, joined } = transcriptOfThread(thread, output);
    // Kept for the run's open (see MemoryThread.claimed).
    let claimed: ClaimedTranscript | undefined;
    if (joined) {
      const produced = history.slice(inputLength);
      const json = JSON.stringify(produced);
      const outputIds = joinIds(produced);
      const outputBytes = stringBytes(json);
      const bytes = outputBytes + stringBytes(outputIds);
      claimed = { runId, length: history.length, last: history.at(-1), output: json, outputBytes, outputIds, bytes };
    }
    this.setClaimed(thread, claimed);
    return { runId, history };
  }

  release(threadId: string, runId: string): void {
    const thread = this.threads.get(threadId);
    if (thread?.active?.runId !== runId) return;
    thread.active = undefined;
    this.setClaimed(thread, undefined);
  }

  open(
    threadId: string,
    runId: string,
    { messages: input, newMessages, extendsHistory }: RunInput,
    onLost?: (error: GatewayError) => void,
  ): RunLog {
    const now = Date.now();
    const mark = this.deleted.get(threadId);
    if (mark?.runId === runId && mark.until > now && this.threads.get(threadId)?.active?.runId !== runId) {
      // Removed between its claim and now: the run records nothing, and is ended.
      onLost?.(stopError('deleted'));
      return { append: () => {} };
    }
    // Dropped since its claim (only possible under a bound far too small): kept again from here.
    const thread = this.threads.get(threadId) ?? this.create(threadId, now, undefined);
    // A new thread's first run brings all of its input: the two are one string until the next run's input
    // replaces the thread's, which then stays that run's.
    const wholeInput = newMessages.length === input.length && newMessages.every((message, i) => message === input[i]);
    const newJson = JSON.stringify(newMessages);
    const run: MemoryRun = {
      runId: flatString(runId),
      status: PENDING,
      lastSequence: -1,
      startedAt: now,
      finishedAt: null,
      newMessages: wholeInput ? undefined : newJson,
      events: new LiveEvents(),
      feeds: undefined,
    };
    thread.active = { runId, claimExpires: undefined };
    const previous = thread.runs[thread.runs.length - 1];
    if (previous && previous.newMessages === undefined) previous.newMessages = thread.input;
    else this.resize(thread, -thread.inputBytes);
    // The input's JSON: for a run that sends only what is new, the stored input's, the last output's (both as its
    // claim read them) and the new messages' joined, not the whole history made JSON again; otherwise the whole.
    const claimed = thread.claimed;
    this.setClaimed(thread, undefined);
    const extendsClaim =
      extendsHistory &&
      claimed?.runId === runId &&
      input.length === claimed.length + newMessages.length &&
      (claimed.length === 0 || input[claimed.length - 1] === claimed.last);
    const newIds = joinIds(newMessages);
    this.resize(thread, -stringBytes(thread.inputIds));
    if (wholeInput) {
      thread.input = newJson;
      thread.inputBytes = stringBytes(newJson);
      thread.inputIds = newIds;
    } else if (extendsClaim) {
      const parts = [
        { text: thread.input, bytes: thread.inputBytes },
        { text: claimed.output, bytes: claimed.outputBytes },
        { text: newJson, bytes: stringBytes(newJson) },
      ];
      thread.input = joinArrays(joinArrays(thread.input, claimed.output), newJson);
      thread.inputBytes = joinedStringBytes(thread.input, parts);
      thread.inputIds = concatIds(concatIds(thread.inputIds, claimed.outputIds), newIds);
    } else {
      thread.input = JSON.stringify(input);
      thread.inputBytes = stringBytes(thread.input);
      thread.inputIds = joinIds(input);
    }
    this.resize(thread, thread.inputBytes + stringBytes(thread.inputIds));
    // A new list rather than a push (or a spread): those keep room for 16 more runs (128 bytes) most threads never
    // have.
    thread.runs = thread.runs.concat([run]);
    this.resize(thread, runBytes(run));
    while (thread.runs.length > this.options.maxRunsPerThread) this.resize(thread, -runBytes(thread.runs.shift()!));
    this.touch(thread, now);
    this.enforceBounds();
    return { append: (event) => this.append(thread, run, event) };
  }

  private append(thread: MemoryThread, run: MemoryRun, event: SequencedEvent): void {
    // Sealed: RunFinished was its last event (nothing follows it, see RunLog.append).
    if (typeof run.events === 'string') return;
    // Removed while it ran: its followers still get the rest (the run was asked to stop), nothing is kept.
    if (thread.removed) {
      if (run.feeds) for (const feed of run.feeds) feed.push(event);
      return;
    }
    run.events.push(event);
    run.lastSequence = event.sequence;
    this.resize(thread, eventBytes(event));
    const state = agentStateOf(event, run.runId);
    if (state) {
      const states = (thread.agentStates ??= new Map());
      const replaced = states.get(state.agentName);
      this.resize(thread, stateBytes(state) - (replaced ? stateBytes(replaced) : 0));
      states.set(state.agentName, state);
    }
    if (event.type === 'RunFinished') {
      run.status = event.status.code === 'Success' ? RUN_SUCCESS : event.status;
      run.finishedAt = Date.now();
      if (thread.active?.runId === run.runId) thread.active = undefined;
      this.seal(thread, run);
      this.touch(thread, Date.now());
    }
    if (run.feeds) for (const feed of run.feeds) feed.push(event);
    if (event.type === 'RunFinished') this.enforceBounds();
  }

  /**
   * A finished run kept compactly: its events one flat string (its chunks merged, still replayable from any
   * sequence), its status too unless it succeeded (RUN_SUCCESS is shared), each decoded when read.
   */
  private seal(thread: MemoryThread, run: MemoryRun): void {
    const before = runBytes(run);
    run.events = (run.events as LiveEvents).seal();
    if (run.status !== RUN_SUCCESS) run.status = JSON.stringify(run.status);
    this.resize(thread, runBytes(run) - before);
  }

  async thread(threadId: string, read?: ThreadRead): Promise<ThreadRecord | undefined> {
    const now = Date.now();
    const thread = this.live(threadId, now);
    if (!thread || thread.runs.length === 0) return undefined;
    // Reading a thread (a client restoring it) is a use: it is kept before threads used longer ago.
    this.touch(thread, now);
    const running = thread.runs[thread.runs.length - 1].finishedAt === null;
    // Parsed once: the transcript starts with it, and a run whose new messages are the whole input has them from it
    // (the two share message objects, as a claim's record does; the store keeps none of them).
    const input = JSON.parse(thread.input) as Message[];
    const { messages } = transcriptOfThread(thread, running && read?.runningOutput === false ? [] : undefined, input);
    return {
      threadId,
      ...(thread.owner !== undefined ? { owner: thread.owner } : {}),
      messages: [...messages],
      agentStates: [...(thread.agentStates?.values() ?? [])],
      runs: thread.runs.map((run) => recordOf(run, input)),
    };
  }

  async summary(threadId: string): Promise<ThreadSummary | undefined> {
    const thread = this.live(threadId, Date.now());
    return thread && thread.runs.length > 0 ? summaryOf(thread) : undefined;
  }

  /** Sorted when asked: the store is bounded (maxThreads), so a page costs at most a pass over what it keeps. */
  async list({ scope, agentId, includeArchived, limit, after }: ThreadListQuery): Promise<ThreadListPage> {
    const now = Date.now();
    const found: ThreadSummary[] = [];
    for (const thread of this.threads.values()) {
      if ((thread.owner ?? '') !== scope || thread.agentId !== agentId || (thread.archived && !includeArchived))
        continue;
      if (thread.runs.length === 0) continue; // claimed, its first run not started (or refused)
      if (this.expired(thread, now)) continue;
      const summary = summaryOf(thread);
      if (!after || isAfter(summary, after)) found.push(summary);
    }
    found.sort(byRecency);
    const threads = found.slice(0, limit);
    const last = threads[threads.length - 1];
    return {
      threads,
      ...(found.length > limit ? { next: { lastRunAt: last.lastRunAt.getTime(), threadId: last.threadId } } : {}),
    };
  }

  async update(threadId: string, scope: string, { name, archived }: ThreadChange): Promise<ThreadSummary | undefined> {
    const now = Date.now();
    const thread = this.live(threadId, now);
    if (!thread || thread.runs.length === 0 || (thread.owner ?? '') !== scope) return undefined;
    if (name !== undefined) {
      this.resize(thread, stringBytes(name) - (thread.name === null ? 0 : stringBytes(thread.name)));
      thread.name = name;
    }
    if (archived !== undefined) thread.archived = archived;
    thread.updatedAt = now;
    this.touch(thread, now);
    return summaryOf(thread);
  }

  async remove(threadId: string, scope: string): Promise<boolean> {
    const now = Date.now();
    const thread = this.live(threadId, now);
    if (!thread || (thread.owner ?? '') !== scope) return false;
    // The run that holds the thread, if it has not ended in time, must not make it again when it opens or writes.
    if (thread.active) {
      this.deleted.set(threadId, { runId: thread.active.runId, until: now + DELETED_MARK_MS });
      for (const [id, mark] of this.deleted) if (mark.until <= now) this.deleted.delete(id);
    }
    this.drop(thread);
    return true;
  }

  async owner(threadId: string): Promise<string | undefined> {
    return this.live(threadId, Date.now())?.owner;
  }

  async run(threadId: string, runId?: string): Promise<RunRecord | undefined> {
    const found = this.findRun(threadId, runId);
    return found && recordOf(found.run, found.thread.input);
  }

  follow(threadId: string, runId: string, afterSequence: number): EventFeed {
    const feed = new EventFeed(afterSequence);
    const run = this.findRun(threadId, runId)?.run;
    if (!run) {
      feed.fail(new RunNotFoundError(`Thread "${threadId}" has no run "${runId}".`));
      return feed;
    }
    // Events are pushed in order, each at most once (the feed skips what it has); live ones follow.
    const events =
      typeof run.events === 'string' ? unsealEvents(run.events, afterSequence) : run.events.after(afterSequence);
    for (const event of events) feed.push(event);
    // Joined after the end of a finished run: nothing more will come.
    if (run.finishedAt !== null) feed.end();
    if (!feed.done) {
      const feeds = (run.feeds ??= new Set());
      feeds.add(feed);
      feed.whenClosed(() => feeds.delete(feed));
    }
    return feed;
  }

  async readUpTo(threadId: string, runId: string, untilSequence: number): Promise<SequencedEvent[]> {
    const run = this.findRun(threadId, runId)?.run;
    if (!run) return [];
    return typeof run.events === 'string' ? unsealEvents(run.events, -1) : run.events.upTo(untilSequence);
  }

  async requestStop(
    threadId: string,
    runId: string | undefined,
    reason: StopReason = 'stopped',
  ): Promise<string | undefined> {
    const thread = this.live(threadId, Date.now());
    const active = thread?.active;
    const now = Date.now();
    if (
      !active ||
      (active.claimExpires !== undefined && active.claimExpires <= now) ||
      (runId !== undefined && runId !== active.runId)
    )
      return undefined;
    // A run still being admitted (claimed, not yet started) is told too: it stops as soon as it starts.
    for (const handler of this.stopHandlers) handler(threadId, active.runId, reason);
    return active.runId;
  }

  onStopRequest(handler: StopHandler): void {
    this.stopHandlers.push(handler);
  }

  healthy(): boolean {
    return true;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  // --- bounds -------------------------------------------------------------------------

  /** A run of a live thread; finding it (to join or read it) is a use of the thread. */
  private findRun(threadId: string, runId: string | undefined): { thread: MemoryThread; run: MemoryRun } | undefined {
    const now = Date.now();
    const thread = this.live(threadId, now);
    if (!thread) return undefined;
    this.touch(thread, now);
    const run = runId === undefined ? thread.runs[thread.runs.length - 1] : thread.runs.find((r) => r.runId === runId);
    return run && { thread, run };
  }

  /** The thread, unless it has outlived its time to live (then it is dropped). */
  private live(threadId: string, now: number): MemoryThread | undefined {
    const thread = this.threads.get(threadId);
    if (thread && this.expired(thread, now)) {
      if (this.drop(thread)) this.dropped.expired++;
      return undefined;
    }
    return thread;
  }

  private expired(thread: MemoryThread, now: number): boolean {
    return now - thread.touched > this.options.ttlSeconds * 1000 && !this.pinned(thread, now);
  }

  /** A thread with an active run, or a reader following one of its runs, is never dropped. */
  private pinned(thread: MemoryThread, now: number): boolean {
    const active = thread.active;
    if (active && (active.claimExpires === undefined || active.claimExpires > now)) return true;
    return thread.runs.some((run) => (run.feeds?.size ?? 0) > 0);
  }

  private touch(thread: MemoryThread, now: number): void {
    if (thread.removed) return; // never put back
    thread.touched = now;
    this.threads.delete(thread.threadId);
    this.threads.set(thread.threadId, thread);
  }

  /** Sets (or clears) what the thread's claim read (MemoryThread.claimed), counting its bytes. */
  private setClaimed(thread: MemoryThread, claimed: ClaimedTranscript | undefined): void {
    this.resize(thread, (claimed?.bytes ?? 0) - (thread.claimed?.bytes ?? 0));
    thread.claimed = claimed;
  }

  /** A new thread, kept (its id made one piece: it is the map's key too). */
  private create(threadId: string, now: number, agentId: string | undefined): MemoryThread {
    const thread = emptyThread(flatString(threadId), now, agentId ?? DEFAULT_AGENT_ID);
    this.threads.set(thread.threadId, thread);
    this.bytes += thread.bytes;
    return thread;
  }

  private resize(thread: MemoryThread, delta: number): void {
    // Every count is a finite number (core/event-bytes.ts, memory-bytes.ts); one that is not would poison the total
    // for good.
    if (!Number.isFinite(delta)) return;
    thread.bytes += delta;
    if (!thread.removed) this.bytes += delta;
  }

  /** Whether it was kept until now. */
  private drop(thread: MemoryThread): boolean {
    if (this.threads.get(thread.threadId) !== thread) return false;
    this.threads.delete(thread.threadId);
    this.bytes -= thread.bytes;
    thread.removed = true;
    return true;
  }

  /** Drops least recently used threads while over a bound (skipping pinned ones). */
  private enforceBounds(): void {
    const { maxThreads, maxBytes } = this.options;
    if (this.threads.size <= maxThreads && this.bytes <= maxBytes) return;
    const now = Date.now();
    for (const thread of this.threads.values()) {
      if (this.threads.size <= maxThreads && this.bytes <= maxBytes) break;
      if (!this.pinned(thread, now) && this.drop(thread)) this.dropped.bound++;
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const thread of this.threads.values()) {
      // Least recently used first: once one is fresh, the rest are too.
      if (now - thread.touched <= this.options.ttlSeconds * 1000) break;
      if (!this.pinned(thread, now) && this.drop(thread)) this.dropped.expired++;
    }
  }
}
