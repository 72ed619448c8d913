import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ConfigurationError, StoreUnavailableError, type GatewayError } from '../../core/errors.js';
import type { SequencedEvent } from '../../core/events.js';
import type { EventFeed } from '../feed.js';
import {
  createClients,
  describeConnection,
  describeRedisError,
  isSocketError,
  ready,
  type RedisClient,
  type RedisConnection,
} from './connection.js';
import type { SentinelWatch } from './sentinel-watch.js';
import { InstanceLeases } from './instances.js';
import { GAVE_UP, LiveChannels } from './live.js';
import { lockHolder, RedisRecords } from './records.js';
import { RedisRunLog, type RunLogStore, type Write } from './run-log.js';
import { readListPage, readSummary, removeThread, updateThread } from './list-records.js';
import { stopError } from '../store.js';
import type {
  Claim,
  ClaimDetails,
  ThreadChange,
  ThreadListPage,
  ThreadListQuery,
  ThreadSummary,
  RunInput,
  RunLog,
  RunRecord,
  StopHandler,
  StopReason,
  ThreadRead,
  ThreadRecord,
  ThreadStore,
  ThreadStoreOptions,
} from '../store.js';

export interface RedisThreadStoreOptions extends ThreadStoreOptions {
  /**
   * The Redis to use: `{url}` (`redis://[user:password@]host:port[/db]`, `rediss://…` or `unix:///path[?db=…]`), or
   * Sentinels, or a cluster's nodes.
   */
  connection: RedisConnection;
  /** Prefix of every key and channel, so that several gateways can share one Redis. @default "cg:" */
  keyPrefix: string;
  /**
   * How long an instance counts as alive after its last heartbeat (it beats every third of this).
   * A run whose instance is gone for longer is ended, from its stored events, by another instance.
   */
  leaseMs: number;
  /** How long a claim holds a thread before its run opens. */
  claimTimeoutMs: number;
  /** Replicas that must have a run's events before its clients see them (WAIT; see RedisRecordsOptions). */
  waitReplicas?: number;
  logger: Logger;
}

/**
 * How many ended runs an instance remembers the highest sequence of (forget): enough for every run that could have
 * ended since a snapshot Redis may be restored from, at a few bytes each.
 */
const ENDED_KEPT = 10_000;

/**
 * Threads in Redis, shared by every gateway instance on it (a single Redis server, a primary with
 * replicas behind Sentinel, or a Redis Cluster). Per thread, under `{prefix}{threadId}:` (one hash slot):
 * - `lock`: "runId instanceId" while a run holds the thread (expiring while only claimed);
 * - `meta`: a hash with the transcript (JSON), its message ids (`ids`, with `idsOf`: message-ids.ts), the latest
 *   run's id, and `epoch` (a random id, new each time the thread is made) and `claims` (its count), which name each
 *   claim so that a run's record is not opened once another claim came since (cgOpen);
 * - `runs`: a list of its run ids, oldest first (trimmed to maxRunsPerThread, with their records);
 * - `states`: a hash of each agent's latest state (JSON);
 * - `run:{runId}`: a hash with the run's status ("running" or the terminal status as JSON), last sequence, times,
 *   owning instance and new input with its ids (which, with `extends`, the transcript lacks until the run ends: a run
 *   that extends the transcript sends Redis only its new messages, and at its end only what follows);
 * - `log:{runId}`: a stream of the run's events, one entry per batch (`e`: a JSON array of events).
 * Live events are published on `{prefix}live:{threadId}:{runId}` as they are stored (sharded pub/sub on a
 * cluster); stop requests on `{prefix}stop`. Instances beat `{prefix}instance:{id}` (expiring after the
 * lease) and list the runs they own in `{prefix}instance:{id}:runs` (their own slot), so that another
 * instance can end them if they die; they list themselves in `{prefix}instances`. A thread list is two
 * sorted sets `{prefix}list:{scope:agent}:all|active`. Every write to a thread is a Lua script on its
 * slot, so each is atomic; what goes to another slot (a list entry, a run's listing) is a command of its
 * own beside it. All keys of a thread expire `ttlSeconds` after its last write.
 */
export class RedisThreadStore implements ThreadStore, RunLogStore {
  readonly kind = 'redis';
  // (No whitespace: a thread's lock is "<runId> <instance>", read at its last space: lockHolder.)
  readonly instanceId = `${hostname().replace(/\s/g, '_')}-${process.pid}-${randomBytes(4).toString('hex')}`;
  /** The logs of this instance's runs still writing. */
  private readonly logs = new Set<RedisRunLog>();
  /** Runs that ended here lately, by `threadId\u0000runId`, with the highest sequence each gave (forget). */
  private readonly ended = new Map<string, number>();
  /** Logs with events to write at the end of this turn of the event loop (flushSoon). */
  private toFlush: RedisRunLog[] = [];
  private closed = false;
  private lastError = 0;
  /** The last error of a connection itself (refused, unresolvable), which says why commands fail. */
  private lastSocketError: string | undefined;
  /** While the first connection is tried: its failure is reported once, by start(), not logged as well. */
  private starting = false;
  private started: Promise<void> | undefined;
  /** With Sentinels: what moves the connections to a newly promoted primary. */
  private watch: SentinelWatch | undefined;

  /** Its records in Redis: their keys, reads and writes. */
  readonly records: RedisRecords;
  /** Its subscriptions: followers' live channels and stop requests. */
  private readonly live: LiveChannels;
  /** This instance's lease, and the sweeps that end lost instances' runs. */
  private readonly leases: InstanceLeases;

  get claimTimeoutMs(): number {
    return this.options.claimTimeoutMs;
  }

  constructor(private readonly options: RedisThreadStoreOptions) {
    this.records = new RedisRecords(options, this.instanceId);
    this.live = new LiveChannels(this.records, options.leaseMs);
    this.leases = new InstanceLeases(this.records, options, {
      onBeat: () => this.checkStalledLogs(),
      connectionError: (error) => this.connectionError(error),
      ownRuns: () => ({
        live: new Set([...this.logs].map((log) => `${log.threadId}\u0000${log.runId}`)),
        ended: this.ended,
      }),
    });
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
    const { connection } = this.options;
    const { redis, subscriber, cluster, watch } = await createClients(connection);
    this.watch = watch;
    this.records.redis = redis;
    this.records.cluster = cluster;
    redis.on('error', (error) => this.connectionError(error));
    subscriber.on('error', (error) => this.connectionError(error));
    this.live.attach(subscriber, cluster);
    this.starting = true;
    const connected = await Promise.allSettled([ready(redis), ready(subscriber)]);
    this.starting = false;
    if (!cluster && connected[0].status === 'fulfilled' && (await isClusterNode(redis))) {
      redis.disconnect();
      subscriber.disconnect();
      watch?.close();
      this.closed = true;
      throw new ConfigurationError(
        `Redis at ${describeConnection(connection)} is a node of a Redis Cluster: name the cluster's nodes in ` +
          'REDIS_CLUSTER_NODES (options.threads.clusterNodes) instead of REDIS_URL, so that each command goes to the ' +
          'node that serves its keys.',
      );
    }
    // Subscribed (queued until the subscriber is connected, and again after every reconnection) and
    // beating (each beat retried) whether or not Redis answered yet.
    void subscriber.subscribe(this.records.key('stop')).catch((error: unknown) => this.connectionError(error));
    this.leases.start();
    const failed = connected.find((result) => result.status === 'rejected');
    if (failed) {
      const reason = (failed as PromiseRejectedResult).reason as Error;
      // The next "not answering" line comes a while after the one that reports this failure.
      this.lastError = Date.now();
      const why = this.lastSocketError ?? describeRedisError(reason, undefined);
      throw new StoreUnavailableError(`Redis at ${describeConnection(connection)} cannot be reached (${why})`, {
        cause: reason,
      });
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

  claim(threadId: string, proposedRunId: string, freshRunId: string, details: ClaimDetails = {}): Promise<Claim> {
    return this.records.claim(threadId, proposedRunId, freshRunId, details);
  }

  release(threadId: string, runId: string): void {
    if (!this.records.redis) return;
    this.records.redis
      .cgRelease(this.records.threadKey(threadId, 'lock'), runId)
      .catch((error: unknown) => this.connectionError(error));
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
        this.options.logger.error({ err: error }, "a run's events could not be written to Redis");
      }
    }
    // Several runs' batches of events alone: one script call for all of them (a streamed token per run and turn
    // would otherwise be a command each: ioredis's cost per command is most of the store's cost per token); on a
    // Redis Cluster one call per node, for the runs whose slots it serves. A batch sent again after a failure goes
    // on its own (cgAppendEvents).
    const byNode = new Map<string, { log: RedisRunLog; write: Write }[]>();
    for (const entry of group) {
      const node = this.records.nodeOf(entry.log.keys.run);
      const runs = byNode.get(node);
      if (runs) runs.push(entry);
      else byNode.set(node, [entry]);
    }
    for (const [node, runs] of byNode) {
      // A single run, or a slot with no node known now (a failover going on): each on its own.
      if (runs.length === 1 || (this.records.cluster && node === '')) {
        for (const { log, write } of runs) log.send(write);
        continue;
      }
      const replies = this.records.appendMany(runs.map(({ log, write }) => ({ keys: log.keys, batch: write.batch! })));
      runs.forEach(({ log, write }, index) =>
        log.send(
          write,
          replies.then((answers) => answers[index]),
        ),
      );
    }
  };

  /** A run's log has stored its last event (or given up): nothing more to wait for at close. */
  forget(log: RedisRunLog): void {
    this.logs.delete(log);
    // Remembered a while (the latest ENDED_KEPT runs): a record restored unfinished is ended after these (sweepOwn).
    const key = `${log.threadId}\u0000${log.runId}`;
    this.ended.delete(key);
    this.ended.set(key, log.highestSequence);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
  }

  thread(threadId: string, read?: ThreadRead): Promise<ThreadRecord | undefined> {
    return this.records.thread(threadId, read?.runningOutput !== false);
  }

  owner(threadId: string): Promise<string | undefined> {
    return this.records.owner(threadId);
  }

  summary(threadId: string): Promise<ThreadSummary | undefined> {
    return readSummary(this.records, threadId);
  }

  list(query: ThreadListQuery): Promise<ThreadListPage> {
    return readListPage(this.records, query);
  }

  update(threadId: string, scope: string, change: ThreadChange): Promise<ThreadSummary | undefined> {
    return updateThread(this.records, threadId, scope, change);
  }

  remove(threadId: string, scope: string): Promise<boolean> {
    return removeThread(this.records, threadId, scope);
  }

  run(threadId: string, runId?: string): Promise<RunRecord | undefined> {
    return this.records.run(threadId, runId);
  }

  readUpTo(threadId: string, runId: string, untilSequence: number): Promise<SequencedEvent[]> {
    return this.records.readLogUpTo(threadId, runId, untilSequence);
  }

  /** The run's events, stored then live (see LiveChannels.follow). */
  follow(threadId: string, runId: string, afterSequence: number): EventFeed {
    return this.live.follow(threadId, runId, afterSequence);
  }

  async requestStop(
    threadId: string,
    runId: string | undefined,
    reason: StopReason = 'stopped',
  ): Promise<string | undefined> {
    const holder = await this.records.call(() => this.records.redis.get(this.records.threadKey(threadId, 'lock')));
    if (!holder) return undefined;
    const { runId: activeRunId, instance: owner } = lockHolder(holder);
    if (runId !== undefined && runId !== activeRunId) return undefined;
    const run = await this.records.run(threadId, activeRunId);
    if (run && run.finishedAt !== null) return undefined;
    // Within a lease of a reconnection a missing lease is not taken for a lost instance (InstanceLeases.judging): the
    // stop is published, and if its instance is really gone, the sweep ends the run once the lease has passed.
    const ownerAlive =
      !this.leases.judging ||
      (await this.records.call(() => this.records.redis.exists(this.records.instanceKey(owner)))) === 1;
    // No record yet: a run still being admitted (claimed, not yet started) on a live instance stops as soon
    // as it starts.
    if (!run && !ownerAlive) return undefined;
    if (ownerAlive) {
      await this.records.call(() =>
        this.records.redis.publish(
          this.records.key('stop'),
          `${threadId}\u0000${activeRunId}${reason === 'stopped' ? '' : `\u0000${reason}`}`,
        ),
      );
      return activeRunId;
    }
    const ended = await this.endRun(threadId, activeRunId, owner, stopError(reason));
    return ended ? activeRunId : undefined;
  }

  onStopRequest(handler: StopHandler): void {
    this.live.onStopRequest(handler);
  }

  healthy(): boolean {
    return this.records.redis?.status === 'ready';
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.leases.stop();
    if (!this.records.redis) return;
    // Runs' last events still on their way (written one batch after another) are waited for, a while;
    // what is still unwritten then is given up (no retry outlives the store).
    if (this.logs.size && this.records.redis.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...this.logs].map((log) => log.settled)),
        new Promise((resolve) => (timer = setTimeout(resolve, 5_000))),
      ]);
      clearTimeout(timer);
    }
    for (const log of this.logs) log.abandon();
    this.watch?.close();
    // quit() waits for replies; a server that is down would hold it until the reconnection gives up.
    for (const client of [this.records.redis, this.live.subscriber]) {
      if (client.status === 'ready') await client.quit().catch(() => {});
      // Also after a quit: a connection still reconnecting (Redis down) ends only so.
      client.disconnect();
    }
  }

  /**
   * Runs whose events have waited longer than the lease for Redis: their clients are ended (see
   * RedisRunLog.giveUp). Past the lease another instance may end the run anyway; a client is never
   * held longer than that.
   */
  private checkStalledLogs(): void {
    const now = Date.now();
    for (const log of this.logs) {
      if (log.gaveUp) {
        this.announceGaveUp(log.threadId, log.runId);
        continue;
      }
      const waited = log.stalledSince === 0 ? 0 : now - log.stalledSince;
      if (waited > this.options.leaseMs) log.giveUp(waited);
    }
  }

  /**
   * Tells the followers of a run, on every instance, that its clients were ended STORE_UNAVAILABLE with its end not
   * stored (RedisRunLog.giveUp): a notice on the stop channel (plain pub/sub, which needs no replica to take a write,
   * and reaches every instance on a cluster too), which ends their streams the same way (LiveChannels).
   */
  announceGaveUp(threadId: string, runId: string): void {
    this.records.redis
      ?.publish(this.records.key('stop'), `${threadId}\u0000${runId}\u0000${GAVE_UP}`)
      .catch((error: unknown) => this.connectionError(error));
  }

  /** Ends a run from its stored events, with no instance to end it (see InstanceLeases.endRun). */
  endRun(threadId: string, runId: string, owner: string, error: GatewayError, after?: number): Promise<boolean> {
    return this.leases.endRun(threadId, runId, owner, error, after);
  }

  // --- errors ------------------------------------------------------------------------------

  /**
   * Logs connection problems, at most one line every 10 s, in one line: what ioredis says while
   * disconnected is replaced by why (describeRedisError), and no stack (the place in ioredis says nothing).
   */
  connectionError(error: unknown): void {
    if (isSocketError(error)) this.lastSocketError = error.message;
    const now = Date.now();
    if (this.starting || now - this.lastError < 10_000 || this.closed) return;
    this.lastError = now;
    const redis = describeConnection(this.options.connection);
    const reason = describeRedisError(error, this.lastSocketError);
    this.options.logger.warn(
      { redis, reason },
      `Redis (thread store) at ${redis} is not answering (${reason}); retrying`,
    );
  }

  /** Logs what cannot be retried, every time. */
  recordLost(threadId: string, runId: string, why: string, level: 'error' | 'info' = 'error'): void {
    this.options.logger[level]({ threadId, runId }, `the run can no longer be recorded: ${why}`);
  }
}

/** Whether the server is a Redis Cluster node (INFO's cluster section); a server that cannot say is taken as not. */
async function isClusterNode(redis: { info(section: string): Promise<string> }): Promise<boolean> {
  try {
    return /^cluster_enabled:1\b/m.test(await redis.info('cluster'));
  } catch {
    return false;
  }
}
