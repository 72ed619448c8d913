import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Redis as RedisClient } from 'ioredis';
import {
  GatewayError,
  InstanceLostError,
  RunNotFoundError,
  RunStoppedError,
  StoreUnavailableError,
  toGatewayError,
} from '../../core/errors.js';
import type { SequencedEvent } from '../../core/events.js';
import { failedRun, type RunStatus } from '../../core/status.js';
import { EventFeed } from '../feed.js';
import { OutputCollector, agentStateOf, closingEvents, transcriptOf } from '../log.js';
import { createClients, ready, redactedUrl } from './connection.js';
import { RedisRecords, parseMessages, type Batch, type RunKeys } from './records.js';
import type {
  AgentStateRecord,
  Claim,
  RunInput,
  RunLog,
  RunRecord,
  StopHandler,
  StoredEventSink,
  ThreadRecord,
  ThreadStore,
  ThreadStoreOptions,
} from '../store.js';

export interface RedisThreadStoreOptions extends ThreadStoreOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  /** Prefix of every key and channel, so that several gateways can share one Redis. @default "cg:" */
  keyPrefix: string;
  /**
   * How long an instance counts as alive after its last heartbeat (it beats every third of this).
   * A run whose instance is gone for longer is ended, from its stored events, by another instance.
   */
  leaseMs: number;
  /** How long a claim holds a thread before its run opens. */
  claimTimeoutMs: number;
  logger: Logger;
}

/**
 * Threads in Redis, shared by every gateway instance on it (a single Redis server or a primary with
 * replicas; not Redis Cluster). Per thread, under `{prefix}{threadId}:`:
 * - `lock`: "runId instanceId" while a run holds the thread (expiring while only claimed);
 * - `meta`: a hash with the transcript (JSON) and the latest run's id;
 * - `runs`: a list of its run ids, oldest first (trimmed to maxRunsPerThread, with their records);
 * - `states`: a hash of each agent's latest state (JSON);
 * - `run:{runId}`: a hash with the run's status ("running" or the terminal status as JSON), last
 *   sequence, times and owning instance;
 * - `log:{runId}`: a stream of the run's events, one entry per batch (`e`: a JSON array of events).
 * Live events are published on `{prefix}live:{threadId}:{runId}` as they are stored; stop requests on
 * `{prefix}stop`. Instances beat `{prefix}instance:{id}` (expiring after the lease) and list the runs
 * they own in `{prefix}instance:{id}:runs`, so that another instance can end them if they die.
 * Every write is a Lua script, so each is atomic; all keys of a thread expire `ttlSeconds` after its
 * last write.
 */
export class RedisThreadStore implements ThreadStore {
  readonly kind = 'redis';
  readonly instanceId = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly stopHandlers: StopHandler[] = [];
  /** The logs of this instance's runs still writing. */
  private readonly logs = new Set<RedisRunLog>();
  /** Logs with events to write at the end of this turn of the event loop (flushSoon). */
  private toFlush: RedisRunLog[] = [];
  /** Live followers by channel, and the channel's subscription. */
  private readonly live = new Map<string, { listeners: Set<LiveListener>; subscribed: Promise<void> }>();
  private heartbeat: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  private lastError = 0;
  private subscriber!: RedisClient;
  private started: Promise<void> | undefined;

  /** Its records in Redis: their keys, reads and writes. */
  readonly records: RedisRecords;

  constructor(private readonly options: RedisThreadStoreOptions) {
    this.records = new RedisRecords(options, this.instanceId);
  }

  /**
   * Connects (a command connection and a subscriber connection) and starts beating. Rejects with
   * STORE_UNAVAILABLE when Redis cannot be reached; the connections then go on trying in the
   * background, and the store works as soon as one succeeds.
   */
  start(): Promise<void> {
    this.started ??= this.connect();
    return this.started;
  }

  private async connect(): Promise<void> {
    const { url } = this.options;
    const { redis, subscriber } = await createClients(url);
    this.records.redis = redis;
    this.subscriber = subscriber;
    redis.on('error', (error) => this.connectionError(error));
    subscriber.on('error', (error) => this.connectionError(error));
    subscriber.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    subscriber.on('ready', () => this.onSubscriberReady());
    const connected = await Promise.allSettled([ready(redis), ready(subscriber)]);
    // Subscribed (queued until the subscriber is connected, and again after every reconnection) and
    // beating (each beat retried) whether or not Redis answered yet.
    void subscriber.subscribe(this.records.key('stop')).catch((error: unknown) => this.connectionError(error));
    this.beat();
    const failed = connected.find((result) => result.status === 'rejected');
    if (failed) {
      const reason = (failed as PromiseRejectedResult).reason as Error;
      throw new StoreUnavailableError(`Redis at ${redactedUrl(url)} cannot be reached (${reason?.message}); retrying in the background.`, { cause: reason });
    }
  }

  /** The command connection (once started) and the key prefix, for the rate limits shared through the same Redis. */
  get commands(): RedisClient | undefined {
    return this.records.redis;
  }

  get keyPrefix(): string {
    return this.options.keyPrefix;
  }




  // --- claims and runs -------------------------------------------------------------------

  claim(threadId: string, proposedRunId: string, freshRunId: string, owner?: string): Promise<Claim> {
    return this.records.claim(threadId, proposedRunId, freshRunId, owner);
  }


  release(threadId: string, runId: string): void {
    if (!this.records.redis) return;
    this.records.redis.cgRelease(this.records.threadKey(threadId, 'lock'), runId).catch((error: unknown) => this.connectionError(error));
  }

  open(threadId: string, runId: string, input: RunInput, onLost?: (error: GatewayError) => void): RunLog {
    const log = new RedisRunLog(this, threadId, runId, input, this.options.ttlSeconds, onLost);
    this.logs.add(log);
    return log;
  }

  /**
   * Writes `log`'s waiting events at the end of this turn of the event loop (setImmediate: after the
   * I/O callbacks of this turn, no timer), together with every other run's that has some: the
   * writes of every run go to Redis in one pipeline (one system call each way), which is what a
   * store write per streamed token costs least as.
   */
  flushSoon(log: RedisRunLog): void {
    this.toFlush.push(log);
    if (this.toFlush.length === 1) setImmediate(this.flushAll);
  }

  private readonly flushAll = (): void => {
    const logs = this.toFlush;
    this.toFlush = [];
    const group: { log: RedisRunLog; write: Write }[] = [];
    for (const log of logs) {
      try {
        const write = log.flushQueuedWrite();
        if (write) group.push({ log, write });
      } catch (error) {
        // One run's batch that cannot be written (say, a value JSON cannot take) must not stop the others'.
        this.options.logger.error({ err: error }, 'a run\'s events could not be written to Redis');
      }
    }
    if (group.length === 1) group[0].log.send(group[0].write);
    if (group.length < 2) return;
    // Several runs' batches of events alone: one script call for all of them (a streamed token per run
    // and turn would otherwise be a command each: ioredis's cost per command is most of the store's
    // cost per token). A batch sent again after a failure goes on its own (cgAppendEvents).
    const replies = this.records.appendMany(group.map(({ log, write }) => ({ keys: log.keys, batch: write.batch! })));
    group.forEach(({ log, write }, index) => log.send(write, replies.then((answers) => answers[index])));
  };

  /** A run's log has stored its last event (or given up): nothing more to wait for at close. */
  forget(log: RedisRunLog): void {
    this.logs.delete(log);
  }









  thread(threadId: string): Promise<ThreadRecord | undefined> {
    return this.records.thread(threadId);
  }

  owner(threadId: string): Promise<string | undefined> {
    return this.records.owner(threadId);
  }

  run(threadId: string, runId?: string): Promise<RunRecord | undefined> {
    return this.records.run(threadId, runId);
  }

  /**
   * Subscribes to the run's live channel first, then reads its log, so that nothing written between
   * the two is missed (the feed takes each sequence once). A live batch after a gap (a message lost
   * while the subscriber reconnected), every reconnection of the subscriber, and a quiet spell of a
   * third of the lease each make it read the log again, so a follower never waits on an event it
   * missed.
   */
  follow(threadId: string, runId: string, afterSequence: number): EventFeed {
    const feed = new EventFeed(afterSequence);
    const channel = this.records.liveChannel(threadId, runId);
    let reading = false;
    let readAgain = false;
    let early: SequencedEvent[][] = [];
    let heard = true;
    const deliver = (events: SequencedEvent[]): void => {
      heard = true;
      if (reading) {
        early.push(events);
        return;
      }
      const next = events.find((event) => event.sequence >= feed.expected);
      if (next && next.sequence > feed.expected) {
        void readAll();
        return;
      }
      for (const event of events) feed.push(event);
    };
    const readAll = async (): Promise<void> => {
      if (reading) {
        readAgain = true;
        return;
      }
      reading = true;
      try {
        do {
          readAgain = false;
          const events = await this.records.readLog(threadId, runId);
          for (const event of events) feed.push(event);
          // Joined at (or after) the end of a finished run: nothing more will come.
          if (events.some((event) => event.type === 'RunFinished')) feed.end();
          else if (events.length === 0) {
            // Nothing stored: a run dropped (trimmed, expired) since it was looked up never ends otherwise.
            const record = await this.records.run(threadId, runId);
            if (!record) feed.fail(new RunNotFoundError(`Thread "${threadId}" has no run "${runId}" any more.`));
            else if (record.finishedAt !== null) feed.end();
          }
        } while (readAgain && !feed.done);
      } catch (error) {
        feed.fail(toGatewayError(error));
      } finally {
        reading = false;
      }
      const waiting = early;
      early = [];
      for (const batch of waiting) deliver(batch);
    };
    const listener: LiveListener = { deliver, resync: () => void readAll() };
    const quiet = setInterval(() => {
      if (!heard) void readAll();
      heard = false;
    }, Math.max(250, Math.floor(this.options.leaseMs / 3))).unref();
    feed.whenClosed(() => {
      clearInterval(quiet);
      this.unlisten(channel, listener);
    });
    void this.listen(channel, listener).then(readAll, (error: unknown) => feed.fail(toGatewayError(error)));
    return feed;
  }

  async requestStop(threadId: string, runId: string | undefined): Promise<string | undefined> {
    const holder = await this.records.call(() => this.records.redis.get(this.records.threadKey(threadId, 'lock')));
    if (!holder) return undefined;
    const [activeRunId, owner] = holder.split(' ');
    if (runId !== undefined && runId !== activeRunId) return undefined;
    const run = await this.records.run(threadId, activeRunId);
    if (run && run.finishedAt !== null) return undefined;
    const ownerAlive = (await this.records.call(() => this.records.redis.exists(this.records.key('instance', owner)))) === 1;
    // No record yet: a run still being admitted (claimed, not yet started) on a live instance stops as soon as it starts.
    if (!run && !ownerAlive) return undefined;
    if (ownerAlive) {
      await this.records.call(() => this.records.redis.publish(this.records.key('stop'), `${threadId}\u0000${activeRunId}`));
      return activeRunId;
    }
    const ended = await this.endRun(threadId, activeRunId, owner, new RunStoppedError('The run was stopped (stopCopilotRun).'));
    return ended ? activeRunId : undefined;
  }

  onStopRequest(handler: StopHandler): void {
    this.stopHandlers.push(handler);
  }

  healthy(): boolean {
    return this.records.redis?.status === 'ready';
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.heartbeat);
    clearTimeout(this.sweeper);
    if (!this.records.redis) return;
    // Runs' last events still on their way (written one batch after another) are waited for, a while;
    // what is still unwritten then is given up (no retry outlives the store).
    if (this.logs.size && this.records.redis.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([...this.logs].map((log) => log.settled)), new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
      clearTimeout(timer);
    }
    for (const log of this.logs) log.abandon();
    // quit() waits for replies; a server that is down would hold it until the reconnection gives up.
    for (const client of [this.records.redis, this.subscriber]) {
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    }
  }

  // --- live channels ---------------------------------------------------------------------

  /** Adds a listener to a channel; resolves once the subscription is active (for every listener, not just the first). */
  private listen(channel: string, listener: LiveListener): Promise<void> {
    let entry = this.live.get(channel);
    if (!entry) {
      const subscribed = this.subscriber.subscribe(channel).then(() => {});
      entry = { listeners: new Set(), subscribed };
      this.live.set(channel, entry);
      subscribed.catch(() => this.live.get(channel) === entry && this.live.delete(channel));
    }
    entry.listeners.add(listener);
    return entry.subscribed;
  }

  private unlisten(channel: string, listener: LiveListener): void {
    const entry = this.live.get(channel);
    if (!entry?.listeners.delete(listener) || entry.listeners.size > 0) return;
    this.live.delete(channel);
    this.subscriber.unsubscribe(channel).catch(() => {});
  }

  /** The subscriber (re)connected: what was published meanwhile is lost, so every follower reads its log again. */
  private onSubscriberReady(): void {
    for (const entry of this.live.values()) for (const listener of entry.listeners) listener.resync();
  }

  private onMessage(channel: string, message: string): void {
    if (channel === this.records.key('stop')) {
      const [threadId, runId] = message.split('\u0000');
      for (const handler of this.stopHandlers) handler(threadId, runId);
      return;
    }
    const entry = this.live.get(channel);
    if (!entry) return;
    let events: SequencedEvent[];
    try {
      events = JSON.parse(message) as SequencedEvent[];
    } catch {
      return;
    }
    for (const listener of entry.listeners) listener.deliver(events);
  }

  // --- instances -------------------------------------------------------------------------

  /**
   * Marks this instance alive every third of the lease, on a timer of its own (a slow sweep never
   * delays it); sweeps for lost instances as often, one sweep at a time.
   */
  private beat(): void {
    const every = Math.max(10, Math.floor(this.options.leaseMs / 3));
    const tick = () => {
      this.checkStalledLogs();
      this.records.redis
        .multi()
        .set(this.records.key('instance', this.instanceId), '1', 'PX', this.options.leaseMs)
        .sadd(this.records.key('instances'), this.instanceId)
        .exec()
        .catch((error: unknown) => this.connectionError(error));
      if (!this.closed) this.heartbeat = setTimeout(tick, every).unref();
    };
    const sweep = () => {
      this.sweep()
        .catch((error: unknown) => this.connectionError(error))
        .finally(() => {
          if (!this.closed) this.sweeper = setTimeout(sweep, every).unref();
        });
    };
    tick();
    this.sweeper = setTimeout(sweep, every).unref();
  }

  /**
   * Runs whose events have waited longer than the lease for Redis: their clients are ended (see
   * RedisRunLog.giveUp). Past the lease another instance may end the run anyway; a client is never
   * held longer than that.
   */
  private checkStalledLogs(): void {
    const now = Date.now();
    for (const log of this.logs) {
      const waited = log.stalledSince === 0 ? 0 : now - log.stalledSince;
      if (waited > this.options.leaseMs) log.giveUp(waited);
    }
  }

  /** Ends, as INSTANCE_LOST, every run of every instance whose lease has run out. */
  private async sweep(): Promise<void> {
    if (this.records.redis.status !== 'ready') return;
    const instances = await this.records.redis.smembers(this.records.key('instances'));
    for (const instance of instances) {
      if (instance === this.instanceId || (await this.records.redis.exists(this.records.key('instance', instance)))) continue;
      const runsKey = this.records.key('instance', instance, 'runs');
      for (const entry of await this.records.redis.smembers(runsKey)) {
        const [threadId, runId] = entry.split('\u0000');
        const ended = await this.endRun(threadId, runId, instance, new InstanceLostError('The gateway instance running this run stopped answering; the run was ended with the events it had stored.'));
        if (ended) this.options.logger.warn({ threadId, runId, instance }, 'a run of a lost instance was ended');
      }
      // Only once it owns nothing (a run it opened meanwhile would still be listed).
      await this.records.redis.cgForget(this.records.key('instances'), runsKey, instance);
    }
  }

  /**
   * Ends a run that has no live instance to end it (or whose record its own instance can no longer
   * keep): its open messages closed as Failed, then its terminal event with `error`, the transcript
   * completed from its log, the thread freed. Writes only if the log has not grown since it was read
   * (then it reads and tries again). Resolves with whether this call ended it.
   */
  async endRun(threadId: string, runId: string, owner: string, error: GatewayError): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const run = await this.records.run(threadId, runId);
      if (!run || run.finishedAt !== null) {
        // Already ended (or gone): only its listing is left to clear.
        await this.records.redis.srem(this.records.key('instance', owner, 'runs'), `${threadId}\u0000${runId}`);
        return false;
      }
      const log = await this.records.readLog(threadId, runId);
      const last = log.length ? log[log.length - 1].sequence : -1;
      const status = failedRun(error);
      const closing = closingEvents(log, status);
      const output = new OutputCollector();
      for (const event of [...log, ...closing]) output.add(event);
      const input = parseMessages(await this.records.redis.hget(this.records.threadKey(threadId, 'meta'), 'transcript'));
      const reply = await this.records.appendBatch(
        threadId,
        runId,
        {
          owner,
          first: closing[0].sequence,
          last: closing[closing.length - 1].sequence,
          events: JSON.stringify(closing),
          states: '[]',
          status: JSON.stringify(status),
          transcript: JSON.stringify(transcriptOf(input, output.current())),
        },
        last,
      );
      if (reply === 'ok') return true;
      if (reply !== 'gap') return false;
    }
    return false;
  }

  // --- errors ------------------------------------------------------------------------------


  /** Logs connection problems, at most one line every 10 s. */
  connectionError(error: unknown): void {
    const now = Date.now();
    if (now - this.lastError < 10_000 || this.closed) return;
    this.lastError = now;
    this.options.logger.warn({ err: error, redis: redactedUrl(this.options.url) }, 'Redis (thread store) is not answering; retrying');
  }

  /** Logs what cannot be retried, every time. */
  recordLost(threadId: string, runId: string, why: string): void {
    this.options.logger.error({ threadId, runId }, `the run can no longer be recorded: ${why}`);
  }
}

/** A follower of a live channel: takes published batches, and reads the log again when told. */
interface LiveListener {
  deliver(events: SequencedEvent[]): void;
  resync(): void;
}

/** A run keeps its events (to write its record again from nothing) up to this many characters of JSON. */
const MAX_KEPT_CHARS = 16 * 1024 * 1024;
/** Rewrites of a record from nothing before the run gives up recording. */
const MAX_REBUILDS = 3;

/** A write to Redis and the events it stores (none for the record's opening). */
export type Write = { batch: Batch | undefined; events: readonly SequencedEvent[]; write: () => Promise<unknown> };

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
class RedisRunLog implements RunLog {
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
  private finalStatus: RunStatus | undefined;
  /** Where stored events go (the run's clients). */
  private sink: StoredEventSink | undefined;
  /** The clients were told the store could not take the run's events in time. */
  private gaveUp = false;
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
    private readonly store: RedisThreadStore,
    private readonly threadId: string,
    private readonly runId: string,
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
    this.send({ batch: undefined, events: [], write: () => this.store.records.openRecord(threadId, runId, input, false) });
  }

  deliverStored(sink: StoredEventSink): void {
    this.sink = sink;
  }

  append(event: SequencedEvent): void {
    if (this.abandoned) return;
    this.pending.push(event);
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
    this.keptChars += event.type === 'TextMessageContent' ? event.content.length : event.type === 'ActionExecutionArgs' ? event.args.length : 100;
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
      ...(finished ? { status: JSON.stringify(finished), transcript: JSON.stringify(transcriptOf(this.input.messages, this.output.current())) } : {}),
    };
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
    if (reply === 'ok' || reply === 'dup') {
      const done = this.unconfirmed.splice(0, index + 1);
      this.retryDelay = 100;
      for (const write of done) if (write.events.length) this.sink?.stored(write.events);
      if (done.some((write) => write.batch?.status !== undefined)) return this.end();
      // What came meanwhile goes at the end of this turn, with the other runs' (flushSoon).
      if (this.unconfirmed.length === 0 && this.pending.length > 0 && !this.flushQueued) {
        this.flushQueued = true;
        this.store.flushSoon(this);
      }
      this.stalledSince = this.unconfirmed.length === 0 && this.pending.length === 0 ? 0 : Date.now();
      return;
    }
    if (reply === 'finished') return this.lose('another instance ended it (this instance lost its lease)', 'This gateway instance lost the run: it stopped answering for longer than its lease, and another instance ended the run.');
    if (reply === 'lost') return this.lose('another run holds its thread (its claim ran out before it started)', 'This gateway instance lost the run: its claim on the thread ran out before the run started, and another run holds the thread.');
    // 'gap' or 'missing': the record is behind what Redis had confirmed, or gone.
    this.rebuild(String(reply));
  }

  /** Writes the record again from nothing: opened afresh, then every event so far in one batch. */
  private rebuild(why: string): void {
    if (!this.kept || ++this.rebuilds > MAX_REBUILDS) {
      this.lose(`its record in Redis is ${why === 'gap' ? 'behind' : 'gone'} and cannot be written again`, 'The run could no longer be recorded; it was ended with the events stored.');
      void this.store.endRun(this.threadId, this.runId, this.store.instanceId, new InstanceLostError('The run could no longer be recorded; it was ended with the events stored.')).catch(() => {});
      return;
    }
    this.store.connectionError(new Error(`the record of run ${this.runId} was ${why === 'gap' ? 'behind' : 'gone'} in Redis; writing it again`));
    this.stalledSince = Date.now(); // Redis answered
    clearTimeout(this.retrying);
    this.retrying = undefined;
    this.unconfirmed = [];
    this.pending = [];
    this.states = new Map();
    this.send({ batch: undefined, events: [], write: () => this.store.records.openRecord(this.threadId, this.runId, this.input, true) });
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
  private lose(why: string, message: string): void {
    this.abandoned = true;
    this.unconfirmed = [];
    this.pending = [];
    this.kept = undefined;
    clearTimeout(this.retrying);
    this.store.recordLost(this.threadId, this.runId, why);
    const error = new InstanceLostError(message);
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
      `The thread store (Redis) took none of this run's events for ${Math.round(waitedMs / 1000)} s; the run was ended. Its record is completed once the store answers: join the run then to read it.`,
    );
    this.store.recordLost(this.threadId, this.runId, `Redis took none of its events for ${waitedMs} ms; the run and its clients were ended (the record is completed once Redis answers)`);
    this.sink?.failed(error);
    this.onLost?.(error);
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
      for (const entry of this.unconfirmed) this.attempt(entry);
    }, this.retryDelay);
    this.retryDelay = Math.min(this.retryDelay * 2, 5_000);
  }
}
