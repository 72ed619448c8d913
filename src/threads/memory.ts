import { RunNotFoundError } from '../core/errors.js';
import { chunkText, continuesChunk } from '../core/event-merge.js';
import type { SequencedEvent } from '../core/events.js';
import type { Message } from '../core/messages.js';
import { RUN_SUCCESS } from '../core/status.js';
import { EventFeed } from './feed.js';
import { OutputCollector, agentStateOf, transcriptOf } from './log.js';
import {
  PENDING,
  threadBusy,
  threadForbidden,
  type AgentStateRecord,
  type Claim,
  type RunInput,
  type RunLog,
  type RunRecord,
  type StopHandler,
  type ThreadRecord,
  type ThreadStore,
  type ThreadStoreOptions,
} from './store.js';

export interface MemoryThreadStoreOptions extends ThreadStoreOptions {
  /** The most threads kept; the least recently used is dropped first. */
  maxThreads: number;
  /**
   * About how much the kept threads may take (their messages and events, counted in UTF-16 code units plus a fixed
   * overhead per item).
   */
  maxBytes: number;
  /** How long a claim holds a thread before its run opens. */
  claimTimeoutMs: number;
}

interface MemoryRun {
  record: RunRecord;
  events: SequencedEvent[];
  /** Readers following it live; made on the first (most runs never have one). */
  feeds: Set<EventFeed> | undefined;
}

interface MemoryThread {
  threadId: string;
  /** The latest run's input (the transcript is it and what that run produced: see `transcript`). */
  input: Message[];
  /** Made on the first state (most threads never have one). */
  agentStates: Map<string, AgentStateRecord> | undefined;
  runs: MemoryRun[];
  /** The run holding the thread: claimed (until `claimExpires`), or running. */
  active: { runId: string; claimExpires: number | undefined } | undefined;
  bytes: number;
  touched: number;
  /** The principal it belongs to (authentication on), once claimed by one. */
  owner: string | undefined;
}

/** Bytes counted per stored message or event besides its strings. */
const ITEM_OVERHEAD = 96;

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
  private readonly stopHandlers: StopHandler[] = [];
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: MemoryThreadStoreOptions) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, options.ttlSeconds * 1000)).unref();
  }

  /** Threads held now, and about how many bytes they take (for tests and health). */
  get size(): { threads: number; bytes: number } {
    return { threads: this.threads.size, bytes: this.bytes };
  }

  async claim(threadId: string, proposedRunId: string, freshRunId: string, owner?: string): Promise<Claim> {
    const now = Date.now();
    let thread = this.live(threadId, now);
    if (owner !== undefined && thread?.owner !== undefined && thread.owner !== owner) throw threadForbidden(threadId);
    const active = thread?.active;
    if (active && (active.claimExpires === undefined || active.claimExpires > now))
      throw threadBusy(threadId, active.runId);
    if (!thread) {
      thread = emptyThread(threadId, now);
      this.threads.set(threadId, thread);
    }
    if (owner !== undefined) thread.owner = owner;
    const runId = thread.runs.some((run) => run.record.runId === proposedRunId) ? freshRunId : proposedRunId;
    thread.active = { runId, claimExpires: now + this.options.claimTimeoutMs };
    this.touch(thread, now);
    this.enforceBounds();
    return { runId, history: this.transcript(thread) };
  }

  release(threadId: string, runId: string): void {
    const thread = this.threads.get(threadId);
    if (thread?.active?.runId === runId) thread.active = undefined;
  }

  open(threadId: string, runId: string, { messages: input, newMessages }: RunInput): RunLog {
    const now = Date.now();
    let thread = this.threads.get(threadId);
    if (!thread) {
      // Dropped since its claim (only possible under a bound far too small): kept again from here.
      thread = emptyThread(threadId, now);
      this.threads.set(threadId, thread);
    }
    const run: MemoryRun = {
      record: {
        runId,
        status: PENDING,
        lastSequence: -1,
        startedAt: new Date(now),
        finishedAt: null,
        newMessages: [...newMessages],
      },
      events: [],
      feeds: undefined,
    };
    thread.active = { runId, claimExpires: undefined };
    this.resize(thread, messagesBytes(input) - messagesBytes(thread.input));
    thread.input = [...input];
    thread.runs.push(run);
    this.resize(thread, messagesBytes(newMessages));
    while (thread.runs.length > this.options.maxRunsPerThread) {
      const dropped = thread.runs.shift()!;
      this.resize(thread, -eventsBytes(dropped.events) - messagesBytes(dropped.record.newMessages ?? []));
    }
    this.touch(thread, now);
    this.enforceBounds();
    return { append: (event) => this.append(thread!, run, event) };
  }

  private append(thread: MemoryThread, run: MemoryRun, event: SequencedEvent): void {
    run.events.push(event);
    run.record.lastSequence = event.sequence;
    this.resize(thread, eventBytes(event));
    const state = agentStateOf(event, run.record.runId);
    if (state) (thread.agentStates ??= new Map()).set(state.agentName, state);
    if (event.type === 'RunFinished') {
      run.record.status = event.status.code === 'Success' ? RUN_SUCCESS : event.status;
      run.record.finishedAt = new Date();
      if (thread.active?.runId === run.record.runId) thread.active = undefined;
      // Finished: its chunks are kept merged (a few events instead of one per token), still replayable from any
      // sequence.
      const before = eventsBytes(run.events);
      run.events = packed(run.events);
      this.resize(thread, eventsBytes(run.events) - before);
      this.touch(thread, Date.now());
    }
    if (run.feeds) for (const feed of run.feeds) feed.push(event);
    if (event.type === 'RunFinished') this.enforceBounds();
  }

  async thread(threadId: string): Promise<ThreadRecord | undefined> {
    const now = Date.now();
    const thread = this.live(threadId, now);
    if (!thread || thread.runs.length === 0) return undefined;
    // Reading a thread (a client restoring it) is a use: it is kept before threads used longer ago.
    this.touch(thread, now);
    const messages = this.transcript(thread);
    return {
      threadId,
      ...(thread.owner !== undefined ? { owner: thread.owner } : {}),
      messages: [...messages],
      agentStates: [...(thread.agentStates?.values() ?? [])],
      runs: thread.runs.map((run) => ({ ...run.record })),
    };
  }

  async owner(threadId: string): Promise<string | undefined> {
    return this.live(threadId, Date.now())?.owner;
  }

  async run(threadId: string, runId?: string): Promise<RunRecord | undefined> {
    const run = this.findRun(threadId, runId);
    return run && { ...run.record };
  }

  follow(threadId: string, runId: string, afterSequence: number): EventFeed {
    const feed = new EventFeed(afterSequence);
    const run = this.findRun(threadId, runId);
    if (!run) {
      feed.fail(new RunNotFoundError(`Thread "${threadId}" has no run "${runId}".`));
      return feed;
    }
    // Events are pushed in order, each at most once (the feed skips what it has); live ones follow.
    for (const event of run.events) {
      if (event.sequence > afterSequence) feed.push(unpackedAfter(event, afterSequence));
    }
    // Joined after the end of a finished run: nothing more will come.
    if (run.record.finishedAt !== null) feed.end();
    if (!feed.done) {
      const feeds = (run.feeds ??= new Set());
      feeds.add(feed);
      feed.whenClosed(() => feeds.delete(feed));
    }
    return feed;
  }

  async requestStop(threadId: string, runId: string | undefined): Promise<string | undefined> {
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
    for (const handler of this.stopHandlers) handler(threadId, active.runId);
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
  private findRun(threadId: string, runId: string | undefined): MemoryRun | undefined {
    const now = Date.now();
    const thread = this.live(threadId, now);
    if (!thread) return undefined;
    this.touch(thread, now);
    if (runId === undefined) return thread.runs[thread.runs.length - 1];
    return thread.runs.find((run) => run.record.runId === runId);
  }

  /** The thread, unless it has outlived its time to live (then it is dropped). */
  private live(threadId: string, now: number): MemoryThread | undefined {
    const thread = this.threads.get(threadId);
    if (thread && this.expired(thread, now)) {
      this.drop(thread);
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
    thread.touched = now;
    this.threads.delete(thread.threadId);
    this.threads.set(thread.threadId, thread);
  }

  /**
   * The thread's transcript: its latest run's input and what that run produced, read from its events
   * (kept once: a finished run's text lives only in its merged events).
   */
  private transcript(thread: MemoryThread): Message[] {
    const latest = thread.runs[thread.runs.length - 1];
    if (!latest) return thread.input;
    // Read from the events (a running run's output is not kept twice while it runs).
    const output = new OutputCollector();
    for (const event of latest.events) output.add(event);
    return transcriptOf(thread.input, output.current());
  }

  private resize(thread: MemoryThread, delta: number): void {
    thread.bytes += delta;
    this.bytes += delta;
  }

  private drop(thread: MemoryThread): void {
    if (this.threads.get(thread.threadId) !== thread) return;
    this.threads.delete(thread.threadId);
    this.bytes -= thread.bytes;
  }

  /** Drops least recently used threads while over a bound (skipping pinned ones). */
  private enforceBounds(): void {
    const { maxThreads, maxBytes } = this.options;
    if (this.threads.size <= maxThreads && this.bytes <= maxBytes) return;
    const now = Date.now();
    for (const thread of this.threads.values()) {
      if (this.threads.size <= maxThreads && this.bytes <= maxBytes) break;
      if (!this.pinned(thread, now)) this.drop(thread);
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const thread of this.threads.values()) {
      // Least recently used first: once one is fresh, the rest are too.
      if (now - thread.touched <= this.options.ttlSeconds * 1000) break;
      if (!this.pinned(thread, now)) this.drop(thread);
    }
  }
}

/** A thread with nothing kept yet. */
function emptyThread(threadId: string, now: number): MemoryThread {
  return {
    threadId,
    input: [],
    agentStates: undefined,
    runs: [],
    active: undefined,
    bytes: 0,
    touched: now,
    owner: undefined,
  };
}

function messagesBytes(messages: readonly Message[]): number {
  let bytes = 0;
  for (const message of messages) {
    bytes += ITEM_OVERHEAD + message.id.length;
    switch (message.kind) {
      case 'text':
        bytes += message.content.length;
        break;
      case 'actionExecution':
        bytes += message.name.length + message.arguments.length;
        break;
      case 'result':
        bytes += message.result.length + message.actionName.length;
        break;
      case 'image':
        bytes += message.bytes.length;
        break;
      case 'agentState':
        bytes += message.state.length;
        break;
    }
  }
  return bytes;
}

/**
 * Merged chunk events of finished runs, with where each original chunk ended in the merged text: the
 * chunk of sequence `first + i` ended at `ends[i]`.
 */
const PACKED = new WeakMap<SequencedEvent, { first: number; ends: Uint32Array }>();

/**
 * A finished run's events with each stretch of consecutive chunks of one message (or argument
 * stream) merged into one event (the last chunk's sequence), remembering where each chunk ended, so
 * that a replay after any sequence still gets exactly the rest (unpackedAfter).
 */
function packed(events: readonly SequencedEvent[]): SequencedEvent[] {
  const out: SequencedEvent[] = [];
  for (let i = 0; i < events.length;) {
    const event = events[i];
    let j = i + 1;
    while (j < events.length && continuesChunk(event, events[j])) j++;
    if (j - i < 2) {
      out.push(event);
      i = j;
      continue;
    }
    const ends = new Uint32Array(j - i);
    const parts: string[] = [];
    let length = 0;
    for (let k = i; k < j; k++) {
      const part = chunkText(events[k]);
      parts.push(part);
      length += part.length;
      ends[k - i] = length;
    }
    // Joined, not concatenated: `+=` would keep a rope holding every chunk (10 KB for 200 tokens).
    const text = parts.join('');
    const last = events[j - 1];
    const merged: SequencedEvent =
      event.type === 'TextMessageContent'
        ? { ...event, content: text, sequence: last.sequence }
        : {
            ...(event as Extract<SequencedEvent, { type: 'ActionExecutionArgs' }>),
            args: text,
            sequence: last.sequence,
          };
    PACKED.set(merged, { first: event.sequence, ends });
    out.push(merged);
    i = j;
  }
  return out;
}

/**
 * The part of a stored event after `afterSequence`: the rest of a merged chunk the reader had begun, else the event.
 */
function unpackedAfter(event: SequencedEvent, afterSequence: number): SequencedEvent {
  const packing = PACKED.get(event);
  if (!packing || afterSequence < packing.first) return event;
  const cut = packing.ends[afterSequence - packing.first];
  if (event.type === 'TextMessageContent') return { ...event, content: event.content.slice(cut) };
  if (event.type === 'ActionExecutionArgs') return { ...event, args: event.args.slice(cut) };
  return event;
}

function eventsBytes(events: readonly SequencedEvent[]): number {
  let bytes = 0;
  for (const event of events) bytes += eventBytes(event);
  return bytes;
}

function eventBytes(event: SequencedEvent): number {
  switch (event.type) {
    case 'TextMessageContent':
      return ITEM_OVERHEAD + event.content.length + (PACKED.get(event)?.ends.byteLength ?? 0);
    case 'ActionExecutionArgs':
      return ITEM_OVERHEAD + event.args.length + (PACKED.get(event)?.ends.byteLength ?? 0);
    case 'ActionExecutionResult':
      return ITEM_OVERHEAD + event.result.length;
    case 'AgentStateMessage':
      return ITEM_OVERHEAD + event.state.length;
    case 'MetaEvent':
      return ITEM_OVERHEAD + event.event.value.length;
    default:
      return ITEM_OVERHEAD;
  }
}
