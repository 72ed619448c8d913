import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { GatewayError, RunNotFoundError, ThreadBusyError, UnauthenticatedError } from '../core/errors.js';
import { DEFAULT_AGENT_ID } from '../core/ids.js';
import type { EventConsumer, EventHandover, SequencedEvent } from '../core/events.js';
import type { Message } from '../core/messages.js';
import type { Principal } from '../core/principal.js';
import { EventFeed } from '../threads/feed.js';
import { idsToCheck } from '../threads/message-ids.js';
import { WholeThreadReads } from './whole-thread-reads.js';
import {
  nameFrom,
  stopError,
  type ClaimDetails,
  type RunRecord,
  type RunLog,
  type ThreadRecord,
  type ThreadStore,
  type StopReason,
  type ThreadRead,
} from '../threads/store.js';
import type { RunRequest } from './request.js';
import type { RunHandle } from './run.js';
import { StoredRun } from './stored-run.js';
import { ThreadList } from './thread-list.js';
import { isHeldOutput, type OutputHolder } from './held-output.js';

/** What to do when a request asks for a thread whose run is still going. */
export type BusyPolicy = 'refuse' | 'interrupt';
/** What to do with new runs while the thread store cannot be reached. */
export type StoreFailurePolicy = 'serve' | 'fail';

export interface ThreadPolicies {
  /** `refuse` (THREAD_BUSY) or `interrupt` (stop the active run, then start). @default "refuse" */
  onBusy: BusyPolicy;
  /** `serve` (run unrecorded, logged) or `fail` (STORE_UNAVAILABLE). @default "serve" */
  onStoreFailure: StoreFailurePolicy;
  /**
   * Whether callers are authenticated: then every request must come with a principal, and what cannot
   * be checked against the store (it is unreachable) is refused rather than served to anyone.
   */
  authenticated?: boolean;
  /**
   * Without authentication, whether the thread list (and its renames, archives, deletes and inspection) is served:
   * one list of every thread that belongs to no one, which is never the silent default. With authentication each
   * caller has a list of its own threads. @default false
   */
  listAnonymous?: boolean;
}

/** A request admitted on its thread: as the run sees it (its run id, the whole conversation). */
export interface Admission {
  request: RunRequest;
  /**
   * Records the run in the store; call before any other view attaches, so the log sees every event
   * first. Returns the run as clients may see it: on a store that writes asynchronously, each event
   * once stored (StoredRun); the run itself otherwise.
   */
  record(run: RunHandle): RunHandle;
  /** The request was refused after admission: the thread is free again. */
  release(): void;
}

/** How long `interrupt` waits for the active run to end before answering THREAD_BUSY. */
const INTERRUPT_WAIT_MS = 5_000;

/**
 * A run admitted this close to its claim's end is refused as if the claim had lapsed: its record's open reaches the
 * store a little later (a round trip to Redis, one whose clock started the claim after ours).
 */
const CLAIM_MARGIN_MS = 1_000;

/** THREAD_BUSY for a run whose admission outlasted its claim on the thread (ThreadService.admit). */
function claimLapsed(threadId: string): ThreadBusyError {
  return new ThreadBusyError(
    `The run's admission (its checks, hooks and agents before it starts) took longer than its claim on thread ` +
      `"${threadId}" lasts; another run may hold the thread now. Send the request again.`,
    { details: { threadId } },
  );
}

/**
 * Threads as the engine uses them: one run per thread, the conversation completed from the store,
 * every run recorded, runs stopped from any instance, and the store's records for the resolvers.
 */
export class ThreadService {
  /** Runs of this process, by thread and run id, so that a stop request finds them. */
  private readonly local = new Map<string, RunHandle>();
  /** Stop requests for runs of this process still being admitted, with when they lapse and why they were asked. */
  private readonly pendingStops = new Map<string, { lapses: number; reason: StopReason }>();
  private lastStoreWarning = 0;
  /** Followers of runs (joins, AG-UI connects), ended by a shutdown. */
  private readonly follows = new Set<AsyncIterableIterator<SequencedEvent>>();
  private ending: GatewayError | undefined;

  /** The gate of whole-thread reads (threadFor). */
  private readonly wholeReads = new WholeThreadReads();
  /** The thread list and its renames, archives and deletes (thread-list.ts). */
  readonly list: ThreadList;

  /**
   * Reads of a whole thread (copilotThread, loadAgentState, AG-UI connect, a thread's messages) are refused
   * OVERLOADED while `admit` says no: each makes an answer as large as the thread.
   */
  limitReads(admit: () => boolean): void {
    this.wholeReads.limit(admit);
  }

  constructor(
    readonly store: ThreadStore,
    private readonly policies: ThreadPolicies,
    private readonly logger: Logger,
  ) {
    this.list = new ThreadList(store, policies);
    store.onStopRequest((threadId, runId, reason) => {
      const runKey = key(threadId, runId);
      const run = this.local.get(runKey);
      if (run) run.abort(stopError(reason));
      // Not started yet (still being admitted): it is stopped when it starts, if it does within a minute.
      else this.pendingStops.set(runKey, { lapses: Date.now() + 60_000, reason });
    });
  }

  /** Takes the request's thread (or throws THREAD_BUSY) and completes its conversation from the store. */
  async admit(request: RunRequest, logger: Logger): Promise<Admission> {
    if (this.policies.authenticated && !request.principal)
      throw new UnauthenticatedError('This run has no authenticated caller.');
    let claimed;
    // Taken before the claim is sent: the claim lapses no sooner than this plus the store's claim timeout.
    const claimedAt = Date.now();
    const details: ClaimDetails = {
      owner: request.principal?.id,
      agentId: request.agentSession?.agentName ?? DEFAULT_AGENT_ID,
      name: firstUserText(request.messages),
      checkIds: idsToCheck(request.messages),
    };
    try {
      claimed = await this.claim(request, details);
    } catch (error) {
      if (
        !(error instanceof GatewayError) ||
        error.code !== 'STORE_UNAVAILABLE' ||
        this.policies.onStoreFailure === 'fail'
      )
        throw error;
      // An agent keeps its own state by thread id: without the store, whose thread it is cannot be checked.
      if (this.policies.authenticated && request.agentSession) throw error;
      this.warnUnrecorded(logger, error);
      return { request, record: (run) => run, release: () => {} };
    }
    const { runId, history, storedIds, claim } = claimed;
    // With storedIds the request repeats a stored message: it carries the whole conversation (see withHistory).
    const messages = storedIds ? request.messages : withHistory(history, request.messages);
    const admitted =
      runId === request.runId && messages === request.messages ? request : { ...request, runId, messages };
    let settled = false;
    return {
      request: admitted,
      record: (run) => {
        settled = true;
        // Admitted after the claim lapsed (a slow hook or agent start): another run may hold the thread now, even
        // under the same run id (a client sending its request again), and two runs must not share one thread's
        // record. Nothing is released: the claim is no longer this run's.
        if (Date.now() - claimedAt > this.store.claimTimeoutMs - CLAIM_MARGIN_MS) throw claimLapsed(run.threadId);
        const had = storedIds ?? new Set(history.map((message) => message.id));
        const newMessages = admitted.messages.filter((message) => !had.has(message.id));
        const extendsHistory =
          !storedIds &&
          admitted.messages.length === history.length + newMessages.length &&
          history.every((message, i) => admitted.messages[i] === message);
        const log = this.store.open(
          run.threadId,
          run.runId,
          {
            messages: admitted.messages,
            newMessages,
            extendsHistory,
            claim,
            owner: details.owner,
            agentId: details.agentId,
            name: details.name,
          },
          (error) => run.abort(error),
        );
        this.attach(run, log);
        if (!log.deliverStored) return run;
        const stored = new StoredRun(run, (error) =>
          this.logger.error(
            { err: error, threadId: run.threadId, runId: run.runId },
            'a view of a run threw; it was dropped',
          ),
        );
        log.deliverStored(stored);
        return stored;
      },
      release: () => {
        if (settled) return;
        settled = true;
        this.store.release(request.threadId, runId);
      },
    };
  }

  private async claim(request: RunRequest, details: ClaimDetails) {
    const fresh = randomUUID();
    try {
      return await this.store.claim(request.threadId, request.runId, fresh, details);
    } catch (error) {
      if (this.policies.onBusy !== 'interrupt' || !(error instanceof GatewayError) || error.code !== 'THREAD_BUSY')
        throw error;
    }
    // Interrupt: the active run is asked to stop, and the thread claimed once it has ended.
    await this.store.requestStop(request.threadId, undefined);
    const deadline = Date.now() + INTERRUPT_WAIT_MS;
    for (let wait = 10; ; wait = Math.min(wait * 2, 250)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      try {
        return await this.store.claim(request.threadId, request.runId, fresh, details);
      } catch (error) {
        if (!(error instanceof GatewayError) || error.code !== 'THREAD_BUSY' || Date.now() > deadline) throw error;
      }
    }
  }

  private attach(run: RunHandle, log: RunLog): void {
    const runKey = key(run.threadId, run.runId);
    this.local.set(runKey, run);
    const stopAsked = this.pendingStops.get(runKey);
    if (stopAsked !== undefined) {
      this.pendingStops.delete(runKey);
      if (stopAsked.lapses > Date.now()) run.abort(stopError(stopAsked.reason));
    }
    for (const [pending, { lapses }] of this.pendingStops) if (lapses <= Date.now()) this.pendingStops.delete(pending);
    const unsubscribe = run.subscribe((event) => log.append(event));
    void run.finished.then(() => {
      unsubscribe();
      if (this.local.get(runKey) === run) this.local.delete(runKey);
    });
  }

  private warnUnrecorded(logger: Logger, error: GatewayError): void {
    const now = Date.now();
    if (now - this.lastStoreWarning < 10_000) return;
    this.lastStoreWarning = now;
    logger.warn(
      { err: error, store: this.store.kind },
      'the thread store cannot be reached: runs are served unrecorded (onStoreFailure "serve")',
    );
  }

  /**
   * The thread as `principal` may see it: undefined when the store has nothing of it or it belongs to
   * another principal (indistinguishable, so thread ids reveal nothing). Without authentication
   * (no principal) every thread is visible.
   */
  async thread(threadId: string, principal?: Principal, read?: ThreadRead): Promise<ThreadRecord | undefined> {
    return (await this.threadFor(threadId, principal, read)).record;
  }

  /** The thread, or whether it is another principal's. */
  async threadFor(
    threadId: string,
    principal?: Principal,
    read?: ThreadRead,
  ): Promise<{ record: ThreadRecord | undefined; foreign: boolean }> {
    const record = await this.wholeReads.read(() => this.store.thread(threadId, read));
    if (record && !this.mayUse(record.owner, principal)) return { record: undefined, foreign: true };
    return { record, foreign: false };
  }

  /** Whether callers are authenticated (threads are then their principals'). */
  get authenticated(): boolean {
    return this.policies.authenticated === true;
  }

  /**
   * The run to join (the thread's latest when `runId` is omitted), or RUN_NOT_FOUND (also for another principal's
   * thread).
   */
  async joinable(threadId: string, runId: string | undefined, principal?: Principal): Promise<RunRecord> {
    const run = (await this.owns(threadId, principal)) ? await this.store.run(threadId, runId) : undefined;
    if (!run) {
      throw new RunNotFoundError(
        runId === undefined
          ? `Thread "${threadId}" has no runs on this gateway.`
          : `Thread "${threadId}" has no run "${runId}" on this gateway.`,
        { details: { threadId, ...(runId === undefined ? {} : { runId }) } },
      );
    }
    return run;
  }

  /**
   * The run's events after `afterSequence`, stored then live (see ThreadStore.follow). Followers are
   * tracked, so that a shutdown can end them (`endFollows`) instead of holding the process open. `output`: where the
   * answer following it counts what waits for its reader.
   */
  follow(
    threadId: string,
    runId: string,
    afterSequence: number,
    output?: OutputHolder,
  ): AsyncIterableIterator<SequencedEvent> & Partial<EventHandover<SequencedEvent>> {
    const feed = this.store.follow(threadId, runId, afterSequence);
    // What waits in the feed for its reader is held for the answer following it (a client that stops reading).
    if (output && isHeldOutput(feed)) output.hold(feed);
    if (this.ending) {
      void feed.return?.();
      const ending = this.ending;
      return failedIterator(ending);
    }
    const follows = this.follows;
    follows.add(feed);
    const release = () => follows.delete(feed);
    // A pushed reader (graphql/fast/subscribe.ts) takes the events without promises; the feed is let go
    // of, as for a pulled one, when it ends or fails. One tracking consumer per follow, not per
    // request: it hands over to whoever asked last.
    let current: EventConsumer<SequencedEvent> | undefined;
    let tracked: EventConsumer<SequencedEvent> | undefined;
    return {
      request: (consumer: EventConsumer<SequencedEvent>) => {
        current = consumer;
        tracked ??= {
          take: (event) => current?.take(event),
          end: () => {
            release();
            current?.end();
          },
          fail: (error) => {
            release();
            current?.fail(error);
          },
        };
        feed.request(tracked);
      },
      next: () =>
        feed.next().then(
          (result) => {
            if (result.done) release();
            return result;
          },
          (error: unknown) => {
            release();
            throw error;
          },
        ),
      return: () => {
        release();
        return feed.return ? feed.return() : Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** The run's stored events up to `untilSequence`: what a reader resuming after it has (ThreadStore.readUpTo). */
  readUpTo(threadId: string, runId: string, untilSequence: number): Promise<SequencedEvent[]> {
    return this.store.readUpTo(threadId, runId, untilSequence);
  }

  /** Ends every follower with `reason` after what it has queued (a shutdown); later follows fail at once. */
  endFollows(reason: GatewayError): void {
    this.ending = reason;
    for (const feed of this.follows) {
      if (feed instanceof EventFeed) feed.fail(reason);
      else void feed.return?.();
    }
    this.follows.clear();
  }

  /**
   * Stops the thread's running run (that one, when `runId` is given); whether one was running (never for another
   * principal's thread).
   */
  async stop(threadId: string, runId: string | undefined, principal?: Principal): Promise<boolean> {
    if (!(await this.owns(threadId, principal))) return false;
    return (await this.store.requestStop(threadId, runId)) !== undefined;
  }

  /** Whether `principal` may use the thread (always without authentication, or for a thread no one owns). */
  private async owns(threadId: string, principal: Principal | undefined): Promise<boolean> {
    if (!principal) return !this.authenticated;
    return this.mayUse(await this.store.owner(threadId), principal);
  }

  /**
   * A thread with an owner is that principal's alone; one without (made before authentication was on) is
   * anyone's. With authentication on, a caller without a principal may use none.
   */
  private mayUse(owner: string | undefined, principal: Principal | undefined): boolean {
    if (principal === undefined) return !this.authenticated;
    return owner === undefined || owner === principal.id;
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

function failedIterator(error: GatewayError): AsyncIterableIterator<SequencedEvent> {
  return {
    next: () => Promise.reject(error),
    return: () => Promise.resolve({ value: undefined, done: true }),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** A name for a thread: its first user message's text, on one line and cut short (nameFrom). */
function firstUserText(messages: readonly Message[]): string | undefined {
  for (const message of messages) {
    if (message.kind === 'text' && message.role === 'user') {
      const name = nameFrom(message.content);
      if (name !== undefined) return name;
    }
  }
  return undefined;
}

function key(threadId: string, runId: string): string {
  return `${threadId}\u0000${runId}`;
}

/**
 * The conversation a run gets: a request that repeats any message the thread has carries the whole
 * conversation and is taken as it is (the stock client sends everything, and may leave messages out on
 * purpose, as when regenerating); one with only new messages gets the thread's transcript before them,
 * its system messages replaced by the request's when the request has some.
 */
export function withHistory(history: readonly Message[], messages: Message[]): Message[] {
  if (history.length === 0) return messages;
  const known = new Set<string>();
  for (const message of history) known.add(message.id);
  if (messages.some((message) => known.has(message.id))) return messages;
  const hasSystem = messages.some(
    (message) => message.kind === 'text' && (message.role === 'system' || message.role === 'developer'),
  );
  const kept = hasSystem
    ? history.filter(
        (message) => !(message.kind === 'text' && (message.role === 'system' || message.role === 'developer')),
      )
    : history;
  return [...kept, ...messages];
}
