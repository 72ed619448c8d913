import { InstanceLostError, StoreUnavailableError, type GatewayError } from '../../core/errors.js';
import type { SequencedEvent } from '../../core/events.js';
import type { RunStatus } from '../../core/status.js';
import { OutputCollector, agentStateOf, transcriptOf } from '../log.js';
import { joinIds } from '../message-ids.js';
import { stopError, type AgentStateRecord, type RunInput, type RunLog, type StoredEventSink } from '../store.js';
import type { Batch, RedisRecords, RunKeys } from './records.js';

/** What a run's log asks of the store it writes through (RedisThreadStore). */
export interface RunLogStore {
  readonly instanceId: string;
  readonly records: RedisRecords;
  /** Sends the log's waiting events at the end of this turn of the event loop, with other runs' (flushQueuedWrite). */
  flushSoon(log: RedisRunLog): void;
  /** The log has stored its last event, or given up: nothing more to wait for at close. */
  forget(log: RedisRunLog): void;
  /** Ends the run from its stored events, numbered after `after` (see RedisThreadStore.endRun). */
  endRun(threadId: string, runId: string, owner: string, error: GatewayError, after?: number): Promise<boolean>;
  /** Logs a connection problem (throttled). */
  connectionError(error: unknown): void;
  /** Logs what cannot be retried (at `info` when it is what a client asked for, as a delete). */
  recordLost(threadId: string, runId: string, why: string, level?: 'error' | 'info'): void;
  /** Tells every instance's followers of the run that its clients were ended unrecorded (see giveUp). */
  announceGaveUp(threadId: string, runId: string): void;
}

/** A run keeps its events (to write its record again from nothing) up to this many characters of JSON. */
const MAX_KEPT_CHARS = 16 * 1024 * 1024;
/** Rewrites of a record from nothing before the run gives up recording. */
const MAX_REBUILDS = 3;

/** A write to Redis and the events it stores (none for the record's opening). */
export type Write = {
  batch: Batch | undefined;
  events: readonly SequencedEvent[];
  write: () => Promise<unknown>;
  /** A refusal Redis gave it while a write before it was still unanswered: acted on once that one is (confirmed). */
  answer?: unknown;
};

/**
 * One run's events on their way to Redis, and to the run's clients once stored (deliverStored).
 *
 * Written as they come, with no timer between an event and its write: events emitted together (one
 * upstream chunk, a run's closing events) go in one write, sent once the job that emitted them ends
 * (a microtask); while a write is on its way, what comes meanwhile waits and goes in the next one,
 * sent as soon as Redis confirms. One write at a time: batches grow with the rate of events (a burst
 * of tokens costs a few writes, not one each), and an event waits at most two round trips to Redis
 * before its clients see it. Several writes in flight would save at most one round trip per event for
 * a write each (measured in BENCHMARKS.md).
 *
 * A write that fails (Redis unreachable, restarting) is sent again, with every one after it, until
 * Redis takes it, so nothing the run emitted is lost while the process lives; the append script
 * skips batches it already has. When the record in Redis is behind what Redis had confirmed (it came
 * back from an older snapshot) or gone, the run writes it again from nothing with the events it keeps.
 * When events have waited longer than the lease (Redis down, or too slow), the run's clients are told
 * STORE_UNAVAILABLE and the run is ended; its record is completed when Redis answers. When another
 * instance has ended the run (this one's lease ran out), the run and its clients are told
 * INSTANCE_LOST.
 */
export class RedisRunLog implements RunLog {
  private pending: SequencedEvent[] = [];
  private states = new Map<string, AgentStateRecord>();
  /** A write of `pending` is queued for the end of the current job. */
  private flushQueued = false;
  /** Sent and not yet confirmed, in order. */
  private unconfirmed: Write[] = [];
  private retrying: NodeJS.Timeout | undefined;
  private retryDelay = 100;
  private readonly output = new OutputCollector();
  private abandoned = false;
  /** Every event so far (undefined once over MAX_KEPT_CHARS), to write the record again from nothing. */
  private kept: SequencedEvent[] | undefined = [];
  private keptChars = 0;
  private allStates = new Map<string, AgentStateRecord>();
  private rebuilds = 0;
  /** The highest sequence the run has given an event (-1: none). */
  private highest = -1;

  get highestSequence(): number {
    return this.highest;
  }
  private finalStatus: RunStatus | undefined;
  /** Where stored events go (the run's clients). */
  private sink: StoredEventSink | undefined;
  /** The clients were told the store could not take the run's events in time. */
  /** Its clients were ended STORE_UNAVAILABLE; the log still tries to complete the record (giveUp). */
  gaveUp = false;
  /** Since when events have waited with no write confirmed (0: none waits). */
  stalledSince = 0;
  readonly keys: RunKeys;
  /** When a write last renewed the thread's expiry (0: none has: the first batch does). */
  private renewedAt = 0;
  private readonly renewEveryMs: number;
  /** Settles once the run's last event is stored, or the record abandoned. */
  readonly settled: Promise<void>;
  private settle!: () => void;

  constructor(
    private readonly store: RunLogStore,
    readonly threadId: string,
    readonly runId: string,
    private readonly input: RunInput,
    ttlSeconds: number,
    private readonly onLost: ((error: GatewayError) => void) | undefined,
  ) {
    this.settled = new Promise((resolve) => {
      this.settle = resolve;
    });
    this.keys = store.records.runKeys(threadId, runId);
    this.renewEveryMs = (ttlSeconds * 1000) / 4;
    this.stalledSince = Date.now();
    this.send({
      batch: undefined,
      events: [],
      write: () => this.store.records.openRecord(threadId, runId, input, false),
    });
  }

  deliverStored(sink: StoredEventSink): void {
    this.sink = sink;
  }

  append(event: SequencedEvent): void {
    if (this.abandoned) return;
    this.pending.push(event);
    if (event.sequence > this.highest) this.highest = event.sequence;
    this.output.add(event);
    this.keep(event);
    const state = agentStateOf(event, this.runId);
    if (state) {
      this.states.set(state.agentName, state);
      this.allStates.set(state.agentName, state);
    }
    if (event.type === 'RunFinished') this.finalStatus = event.status;
    if (this.stalledSince === 0) this.stalledSince = Date.now();
    if (this.unconfirmed.length === 0 && !this.flushQueued) {
      this.flushQueued = true;
      this.store.flushSoon(this);
    }
  }

  /**
   * The store's flush of this loop turn (see RedisThreadStore.flushSoon): a write of the waiting
   * events is cut and sent, or, when it is a batch of events alone, returned for the store to send
   * with other runs' (`send`).
   */
  flushQueuedWrite(): Write | undefined {
    this.flushQueued = false;
    if (this.unconfirmed.length > 0) return undefined;
    return this.flush(true);
  }

  private keep(event: SequencedEvent): void {
    if (!this.kept) return;
    this.kept.push(event);
    this.keptChars +=
      event.type === 'TextMessageContent' || event.type === 'ReasoningContent'
        ? event.content.length
        : event.type === 'ActionExecutionArgs'
          ? event.args.length
          : 100;
    if (this.keptChars > MAX_KEPT_CHARS) this.kept = undefined;
  }

  /** Cuts the waiting events into a write and sends it; with `group`, a batch of events alone is returned unsent. */
  private flush(group = false): Write | undefined {
    const events = this.pending;
    if (events.length === 0 || this.abandoned) return undefined;
    const states = this.states;
    const batch = this.batchOf(events, states);
    this.pending = [];
    this.states = new Map();
    // The thread's keys expire ttlSeconds after a write that renews them: the first batch, one with
    // agent states or the run's end, and one a quarter of the TTL after the last renewal; the
    // batches between need only the events (cgAppendEvents).
    const now = Date.now();
    if (batch.status !== undefined || states.size > 0 || now - this.renewedAt > this.renewEveryMs) {
      this.renewedAt = now;
      this.send({ batch, events, write: () => this.store.records.appendBatch(this.threadId, this.runId, batch) });
      return undefined;
    }
    const write: Write = { batch, events, write: () => this.store.records.appendEvents(this.keys, batch) };
    if (group) return write;
    this.send(write);
    return undefined;
  }

  private batchOf(events: SequencedEvent[], states: Map<string, AgentStateRecord>): Batch {
    const finished = events[events.length - 1].type === 'RunFinished' ? this.finalStatus : undefined;
    return {
      owner: this.store.instanceId,
      first: events[0].sequence,
      last: events[events.length - 1].sequence,
      events: JSON.stringify(events),
      states: JSON.stringify([...states.entries()].map(([name, record]) => [name, JSON.stringify(record)])),
      ...(finished ? { status: JSON.stringify(finished), ...this.transcript() } : {}),
    };
  }

  /**
   * The thread's transcript after the run, for its closing batch: the run's output only (Redis puts it after the run's
   * input, which the open wrote or keeps as the run's new input: cgAppend), unless the input repeats a message id
   * (the transcript keeps each id once): then the whole.
   */
  private transcript(): Pick<Batch, 'transcript' | 'appended' | 'ids'> {
    const input = this.input.messages;
    const transcript = transcriptOf(input, this.output.current());
    // Each input message kept, in place: the transcript starts with the input as it is.
    if (input.length === 0 || transcript[input.length - 1] === input[input.length - 1]) {
      const output = transcript.slice(input.length);
      return { transcript: JSON.stringify(output), appended: true, ids: joinIds(output) };
    }
    return { transcript: JSON.stringify(transcript), ids: joinIds(transcript) };
  }

  /**
   * Sends a write now (unless earlier ones wait to be sent again), keeping it until it is confirmed.
   * `reply`: its answer in a call the store made for several runs' writes (flushAll).
   */
  send(entry: Write, reply?: Promise<unknown>): void {
    this.unconfirmed.push(entry);
    if (!this.retrying) this.attempt(entry, reply);
  }

  private attempt(entry: Write, reply?: Promise<unknown>): void {
    (reply ?? new Promise((resolve) => resolve(entry.write()))).then(
      (reply) => this.confirmed(entry, reply),
      (error: unknown) => {
        // A write since superseded (sent again, or rebuilt) starts no retry of its own.
        if (this.unconfirmed.includes(entry)) this.failed(error);
      },
    );
  }

  /** The store is closing: what is unwritten is given up, and no retry is left pending. */
  abandon(): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.unconfirmed = [];
    this.pending = [];
    clearTimeout(this.retrying);
    this.store.recordLost(this.threadId, this.runId, 'the store closed before its last events were written');
    this.end();
  }

  private confirmed(entry: Write, reply: unknown): void {
    if (this.abandoned) return;
    const index = this.unconfirmed.indexOf(entry);
    if (index < 0) return; // an answer to a write since superseded (sent again, or rebuilt)
    // Redis answers in order, but an answer may settle after the next one's (a record's open waits for its listing
    // too): a refusal waits for the answers before it, which decide first (an open refused 'deleted' makes the
    // 'missing' of the batch after it moot).
    if (index > 0 && reply !== 'ok' && reply !== 'dup') {
      entry.answer = reply;
      return;
    }
    if (reply === 'ok' || reply === 'dup') {
      const done = this.unconfirmed.splice(0, index + 1);
      this.retryDelay = 100;
      for (const write of done) if (write.events.length) this.sink?.stored(write.events);
      if (done.some((write) => write.batch?.status !== undefined)) return this.end();
      const next = this.unconfirmed[0];
      if (next?.answer !== undefined) return this.confirmed(next, next.answer);
      // What came meanwhile goes at the end of this turn, with the other runs' (flushSoon).
      if (this.unconfirmed.length === 0 && this.pending.length > 0 && !this.flushQueued) {
        this.flushQueued = true;
        this.store.flushSoon(this);
      }
      this.stalledSince = this.unconfirmed.length === 0 && this.pending.length === 0 ? 0 : Date.now();
      return;
    }
    if (reply === 'finished')
      return this.lose(
        'another instance ended it (this instance lost its lease)',
        'This gateway instance lost the run: it stopped answering for longer than its lease, ' +
          'and another instance ended the run.',
      );
    if (reply === 'deleted') return this.lose('its thread was deleted', stopError('deleted'));
    if (reply === 'lost' || reply === 'superseded')
      return this.lose(
        'another run took its thread (its claim ran out before it started)',
        'This gateway instance lost the run: its claim on the thread ran out before the run started, ' +
          'and another run took the thread.',
      );
    // 'gap' or 'missing': the record is behind what Redis had confirmed, or gone.
    this.rebuild(String(reply));
  }

  /** Writes the record again from nothing: opened afresh, then every event so far in one batch. */
  private rebuild(why: string): void {
    if (!this.kept || ++this.rebuilds > MAX_REBUILDS) {
      this.lose(
        `its record in Redis is ${why === 'gap' ? 'behind' : 'gone'} and cannot be written again`,
        'The run could no longer be recorded; it was ended with the events stored.',
      );
      void this.store
        .endRun(
          this.threadId,
          this.runId,
          this.store.instanceId,
          new InstanceLostError('The run could no longer be recorded; it was ended with the events stored.'),
          // Its clients may have been shown numbers past what Redis kept: the ending must not take them again.
          this.highest,
        )
        .catch(() => {});
      return;
    }
    this.store.connectionError(
      new Error(`the record of run ${this.runId} was ${why === 'gap' ? 'behind' : 'gone'} in Redis; writing it again`),
    );
    this.stalledSince = Date.now(); // Redis answered
    clearTimeout(this.retrying);
    this.retrying = undefined;
    this.unconfirmed = [];
    this.pending = [];
    this.states = new Map();
    this.send({
      batch: undefined,
      events: [],
      write: () => this.store.records.openRecord(this.threadId, this.runId, this.input, true),
    });
    if (this.kept.length) {
      const events = this.kept.slice();
      const batch = this.batchOf(events, new Map(this.allStates));
      this.send({ batch, events, write: () => this.store.records.appendBatch(this.threadId, this.runId, batch) });
    }
  }

  /**
   * The rest of the run will not be recorded here: the run and its clients are told (INSTANCE_LOST),
   * since clients are shown only what is stored.
   */
  private lose(why: string, message: string | GatewayError): void {
    this.abandoned = true;
    this.unconfirmed = [];
    this.pending = [];
    this.kept = undefined;
    clearTimeout(this.retrying);
    this.store.recordLost(this.threadId, this.runId, why, typeof message === 'string' ? 'error' : 'info');
    const error = typeof message === 'string' ? new InstanceLostError(message) : message;
    this.sink?.failed(error);
    this.onLost?.(error);
    this.end();
  }

  /**
   * Events have waited longer than `waitedMs` with no write confirmed: the run's clients are told
   * STORE_UNAVAILABLE (they must not see what is not stored, and must not wait forever) and the run
   * is ended. The log goes on writing: the record is completed, with that failure, once Redis answers.
   */
  giveUp(waitedMs: number): void {
    if (this.gaveUp || this.abandoned) return;
    this.gaveUp = true;
    const error = new StoreUnavailableError(
      `The thread store (Redis) took none of this run's events for ${Math.round(waitedMs / 1000)} s; ` +
        'the run was ended. Its record is completed once the store answers: join the run then to read it.',
    );
    this.store.recordLost(
      this.threadId,
      this.runId,
      `Redis took none of its events for ${waitedMs} ms; ` +
        'the run and its clients were ended (the record is completed once Redis answers)',
    );
    this.sink?.failed(error);
    this.onLost?.(error);
    // Followers on other instances see only what is stored, and the end is not: they are told too (again on every
    // beat while the record stays incomplete, for those who join meanwhile).
    this.store.announceGaveUp(this.threadId, this.runId);
  }

  private end(): void {
    this.stalledSince = 0;
    this.store.forget(this);
    this.settle();
  }

  /** A write failed: everything unconfirmed is sent again, in order, after a growing pause. */
  private failed(error: unknown): void {
    this.store.connectionError(error);
    if (this.retrying || this.abandoned) return;
    this.retrying = setTimeout(() => {
      this.retrying = undefined;
      for (const entry of this.unconfirmed) {
        entry.answer = undefined;
        this.attempt(entry);
      }
    }, this.retryDelay);
    this.retryDelay = Math.min(this.retryDelay * 2, 5_000);
  }
}
