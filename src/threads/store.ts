import { RunStoppedError, ThreadBusyError, ThreadForbiddenError, type GatewayError } from '../core/errors.js';
import type { EventHandover, SequencedEvent } from '../core/events.js';
import type { Message } from '../core/messages.js';
import type { RunStatus } from '../core/status.js';

/**
 * What the gateway keeps of its threads, so that a conversation can be restored after a reload, a run
 * outlives its connection, and several instances share their runs. Two implementations:
 * MemoryThreadStore (one process, bounded) and RedisThreadStore (shared by every instance on one Redis).
 *
 * A thread has a transcript (the conversation as of its latest run: that run's input, deduplicated by
 * id, then its output), the latest state of each agent that ran on it, and its runs, oldest first, each
 * with its event log. One run per thread is active at a time: `claim` takes the thread, the run's
 * terminal event frees it.
 */
export interface ThreadStore {
  /** "memory" or "redis", for logs and health. */
  readonly kind: string;
  /**
   * Takes the thread for a new run, or throws THREAD_BUSY (with the active run's id) when another run
   * holds it. Resolves with the id the run gets (the proposed one, or `freshRunId` when the thread
   * already has a run of that id) and the thread's transcript (empty for a new thread). Until `open` or
   * `release`, the claim holds the thread for at most the store's lease. With an `owner` (a principal's
   * id): a thread that belongs to another principal is refused with THREAD_FORBIDDEN, and one that
   * belongs to no one becomes the owner's. The claim is the thread's latest run for its list entry (`lastRunAt`);
   * a new thread gets its agent and creation time from it, and its name from `details.name` until it has one.
   */
  claim(threadId: string, proposedRunId: string, freshRunId: string, details?: ClaimDetails): Promise<Claim>;
  /** How long a claim holds its thread at most before its run must `open` (then another run may take the thread). */
  readonly claimTimeoutMs: number;
  /** The principal the thread belongs to (set by its first claim with an owner), if any. */
  owner(threadId: string): Promise<string | undefined>;
  /** Gives up a claim whose run did not start (the request was refused after the claim). */
  release(threadId: string, runId: string): void;
  /**
   * Starts a claimed run's record with its input (the whole conversation it was given). The log's
   * `append` takes every event of the run, in order, from RunStarted to RunFinished; RunFinished
   * completes the record (status, transcript) and frees the thread. `onLost` is called when the
   * store has ended the run without it (this instance's lease ran out): the run should stop.
   */
  open(threadId: string, runId: string, input: RunInput, onLost?: (error: GatewayError) => void): RunLog;
  /** The thread, or undefined when the store has nothing of it. */
  thread(threadId: string, read?: ThreadRead): Promise<ThreadRecord | undefined>;
  /** A run of the thread (its latest when `runId` is omitted), or undefined. */
  run(threadId: string, runId?: string): Promise<RunRecord | undefined>;
  /**
   * The run's events after `afterSequence` (-1 for all), in order: those stored, then live ones as the
   * run emits them, until its RunFinished. Read them with `next()` or `request()` (EventHandover). The
   * reader leaves with `return()`. The run must exist (see `run`).
   */
  follow(
    threadId: string,
    runId: string,
    afterSequence: number,
  ): AsyncIterableIterator<SequencedEvent> & EventHandover<SequencedEvent>;
  /**
   * The run's stored events up to `untilSequence`, in order: what a reader resuming after that event already has
   * (an AG-UI connect's Last-Event-ID: its open messages, interrupts and calls still count). Whole stretches or
   * batches, so a few events after it may come too; none when the run has no stored events (or no longer exists).
   */
  readUpTo(threadId: string, runId: string, untilSequence: number): Promise<SequencedEvent[]>;
  /**
   * Asks whichever instance runs the thread's active run (the given one, or whichever is running) to
   * stop it; resolves with the id of the run asked, or undefined when none is running. A run whose
   * instance is gone is ended here.
   */
  requestStop(threadId: string, runId: string | undefined, reason?: StopReason): Promise<string | undefined>;
  /** The thread's list entry, or undefined when the store has nothing of it. */
  summary(threadId: string): Promise<ThreadSummary | undefined>;
  /**
   * One page of a scope's threads of one agent, most recently run first (ties by id, descending), after the cursor
   * when one is given: keyset paging, so that threads started meanwhile (they sort first) never shift a page.
   */
  list(query: ThreadListQuery): Promise<ThreadListPage>;
  /**
   * Renames, archives or unarchives the thread, if it belongs to `scope` (its owner, or "" for no one: checked in the
   * same step as the change); resolves with its entry afterwards, or undefined when it is gone or another's.
   */
  update(threadId: string, scope: string, change: ThreadChange): Promise<ThreadSummary | undefined>;
  /**
   * Forgets the thread, if it belongs to `scope` (as `update`): its entry, transcript, states, runs and logs. The run
   * that held it then (its instance did not stop it in time) can no longer write it: its next write ends it as
   * deleted. Runs claimed afterwards make a new thread. Resolves with whether there was anything.
   */
  remove(threadId: string, scope: string): Promise<boolean>;
  /** Called (on the instance running it) when a run is asked to stop, from any instance. */
  onStopRequest(handler: StopHandler): void;
  /** Connects, where there is something to connect to; rejects with STORE_UNAVAILABLE when it cannot. */
  start?(): Promise<void>;
  /** Whether the store can be used now (Redis reachable). */
  healthy(): boolean;
  /** What a store in this process keeps now, for the metrics; a store elsewhere (Redis) has none. */
  census?(): StoreCensus;
  /** Ends timers and connections. */
  close(): Promise<void>;
}

/** What the memory store keeps, and what it has let go of since it started, by why. */
export interface StoreCensus {
  threads: number;
  /** Counted as its byte bound counts them (MemoryThreadStoreOptions.maxBytes). */
  bytes: number;
  dropped: {
    /** The least recently used, to keep within maxThreads and maxBytes. */
    bound: number;
    /** Not used for ttlSeconds. */
    expired: number;
  };
}

export type StopHandler = (threadId: string, runId: string, reason: StopReason) => void;

/** Why a run is asked to stop: a client's stop, or its thread being deleted. @default "stopped" */
export type StopReason = 'stopped' | 'deleted';

/** What a run was given: the whole conversation, and which of its messages were new to the thread. */
export interface RunInput {
  messages: readonly Message[];
  /** The messages the thread did not have before this run (a replay restores them from the run). */
  newMessages: readonly Message[];
  /**
   * `messages` are the thread's transcript as its claim read it (the same objects, in order), then `newMessages`: a
   * store that keeps the transcript need not be sent it again (RedisThreadStore writes only what is new).
   */
  extendsHistory?: boolean;
  /** The run's Claim.claim, when its store gave one. */
  claim?: string;
  /**
   * The principal whose thread it is (ClaimDetails.owner; authentication on): a record the store writes again from
   * nothing (Redis lost it mid-run) is theirs again, not left without an owner for anyone to take.
   */
  owner?: string;
  /** The agent and name its claim listed the thread under (ClaimDetails): a record written again is listed again. */
  agentId?: string;
  name?: string;
}

/** What a run's claim says of its thread, for the thread's list entry and its access. */
export interface ClaimDetails {
  /** The principal asking (authentication on). */
  owner?: string;
  /** The agent the run is for ("default" for the model); a new thread is listed under it. */
  agentId?: string;
  /** A name for a thread that has none yet (from the first user message). */
  name?: string;
  /**
   * The first of the request's message ids (idsToCheck): when the transcript has one of them, the request carries the
   * whole conversation, and the claim may answer the transcript's ids (`Claim.storedIds`) instead of its messages.
   */
  checkIds?: readonly string[];
}

/** A thread as its list shows it. */
export interface ThreadSummary {
  threadId: string;
  /** The principal it belongs to, if any; threads without one are listed in the scope "". */
  owner?: string;
  /** The agent its first run was for. */
  agentId: string;
  /** From its first user message until renamed; null before it has one. */
  name: string | null;
  archived: boolean;
  createdAt: Date;
  /** Its last change: a run started, a rename or an archive. */
  updatedAt: Date;
  /** When its latest run started. */
  lastRunAt: Date;
}

/** Where a page of a list starts: after this thread (as it sorted when the previous page was read). */
export interface ThreadCursor {
  /** Milliseconds since the epoch. */
  lastRunAt: number;
  threadId: string;
}

export interface ThreadListQuery {
  /** The owner whose threads are listed, or "" for threads that belong to no one. */
  scope: string;
  agentId: string;
  includeArchived: boolean;
  /** At most this many (1 or more). */
  limit: number;
  after?: ThreadCursor;
}

export interface ThreadListPage {
  threads: ThreadSummary[];
  /** Where the next page starts; undefined on the last page. */
  next?: ThreadCursor;
}

/** What a thread's update changes. */
export interface ThreadChange {
  name?: string;
  archived?: boolean;
}

/** Sorts threads as lists show them: most recently run first, then by id descending. */
export function byRecency(a: ThreadSummary, b: ThreadSummary): number {
  const time = b.lastRunAt.getTime() - a.lastRunAt.getTime();
  if (time !== 0) return time;
  return a.threadId < b.threadId ? 1 : a.threadId > b.threadId ? -1 : 0;
}

/** Whether `thread` sorts after the cursor (and so belongs to the page that starts there). */
export function isAfter(thread: ThreadSummary, cursor: ThreadCursor): boolean {
  const time = thread.lastRunAt.getTime();
  return time < cursor.lastRunAt || (time === cursor.lastRunAt && thread.threadId < cursor.threadId);
}

/** A thread's name from a user message: its text on one line, at most 100 characters. */
export function nameFrom(text: string): string | undefined {
  const line = text.replace(/\s+/g, ' ').trim();
  if (!line) return undefined;
  if (line.length <= 100) return line;
  // By code point, so that a cut never leaves half a surrogate pair.
  return `${[...line].slice(0, 99).join('').trimEnd()}…`;
}

export interface Claim {
  runId: string;
  /** The thread's transcript, oldest first; empty for a new thread, and when `storedIds` is given instead. */
  history: Message[];
  /**
   * Given only when the transcript has one of `ClaimDetails.checkIds` (the request repeats a stored message, so the
   * run's conversation is the request's): the ids of the transcript's messages, without the transcript itself.
   */
  storedIds?: ReadonlySet<string>;
  /**
   * Names this claim among the thread's, on a store that opens a run's record later than the claim and may try
   * again (Redis): given back in RunInput.claim, so that the record is not opened once another run has claimed the
   * thread since (this claim lapsed).
   */
  claim?: string;
}

/** Where a run's events go; see ThreadStore.open. Never throws: a store that cannot write logs and retries. */
export interface RunLog {
  append(event: SequencedEvent): void;
  /**
   * Present on a log that stores events after `append` returns (Redis): `sink` is told of each event
   * once it is stored, in order, or that the rest never will be. A client must be shown an event only
   * once it is stored (ThreadService hands views the stored events), so that whatever a client saw is
   * a prefix of the log every later reader replays, and a sequence number names one event forever,
   * even when the instance dies and another ends the run from its log (unless Redis itself loses part of
   * the log: PROTOCOL.md §7.5). A log without it has stored an event when `append` returns (memory).
   */
  deliverStored?(sink: StoredEventSink): void;
}

/** What a run's views are fed from, on a store that writes asynchronously (see RunLog.deliverStored). */
export interface StoredEventSink {
  /** These events are stored (in order, after those before; an event told twice is taken once). */
  stored(events: readonly SequencedEvent[]): void;
  /** The rest of the run's events will not be stored (or not in time): its views end with `error`. */
  failed(error: GatewayError): void;
}

/** What a thread read may leave out. */
export interface ThreadRead {
  /**
   * false: the running run's output is left out of `messages` (which then end with that run's input), for a reader
   * that replays the run from its log anyway (an AG-UI connect): it is made from the run's events, every one of them.
   * @default true
   */
  runningOutput?: boolean;
}

export interface ThreadRecord {
  threadId: string;
  /** The principal it belongs to, when authentication was on for its runs. */
  owner?: string;
  /** The transcript: the latest run's input, then what it produced (as far as it has got). */
  messages: Message[];
  /** The latest state of each agent that ran on the thread. */
  agentStates: AgentStateRecord[];
  /** Its runs, oldest first (the most recent ones, up to the store's bound). */
  runs: RunRecord[];
}

export interface RunRecord {
  runId: string;
  /** `Pending` while it runs, then its terminal status. */
  status: RunStatus;
  /** The sequence number of its last stored event (-1 before any). */
  lastSequence: number;
  startedAt: Date;
  finishedAt: Date | null;
  /** The messages this run brought to the thread (its input less what the thread had). */
  newMessages?: Message[];
}

export interface AgentStateRecord {
  agentName: string;
  nodeName: string;
  /** JSON-encoded state. */
  state: string;
  running: boolean;
  active: boolean;
  /** The run that wrote it. */
  runId: string;
}

/** Bounds and timings every store takes. */
export interface ThreadStoreOptions {
  /** How long a thread is kept after its last write. */
  ttlSeconds: number;
  /** The most runs kept per thread; older runs' logs are dropped. */
  maxRunsPerThread: number;
}

/** The status a run asked to stop ends with (RUN_STOPPED), saying why. */
export function stopError(reason: StopReason): RunStoppedError {
  return new RunStoppedError(
    reason === 'deleted' ? 'The thread was deleted; its run was stopped.' : 'The run was stopped (stopCopilotRun).',
  );
}

export function threadForbidden(threadId: string): ThreadForbiddenError {
  return new ThreadForbiddenError(`Thread "${threadId}" belongs to someone else: start a new thread.`, {
    details: { threadId },
  });
}

/** THREAD_BUSY: the thread's active run (`runId`) holds it. */
export function threadBusy(threadId: string, runId: string): ThreadBusyError {
  return new ThreadBusyError(
    `Thread "${threadId}" already has a run in progress ("${runId}"); wait for it to finish, join it with ` +
      `joinCopilotRun, ` +
      'or stop it with stopCopilotRun.',
    { details: { threadId, runId } },
  );
}

/**
 * How long a removed thread's mark holds off the run that held it (ThreadStore.remove), in both stores: longer than
 * any run goes on unnoticed.
 */
export const DELETED_MARK_MS = 10 * 60_000;

export const PENDING: RunStatus = Object.freeze({ code: 'Pending' });
