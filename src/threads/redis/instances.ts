import type { Logger } from 'pino';
import { InstanceLostError, type GatewayError } from '../../core/errors.js';
import { failedRun } from '../../core/status.js';
import { OutputCollector, closingEvents, transcriptOf } from '../log.js';
import { joinIds } from '../message-ids.js';
import type { RedisRecords } from './records.js';

/** What the leases ask of their store. */
export interface LeaseHooks {
  /** Called on every beat (the store ends the clients of runs whose events wait too long). */
  onBeat(): void;
  /** Logs a connection problem (throttled). */
  connectionError(error: unknown): void;
  /**
   * The runs going on here, and those that ended here lately with the highest sequence each gave, by
   * `threadId\u0000runId` (as this instance's list names them; see sweepOwn).
   */
  ownRuns(): { live: ReadonlySet<string>; ended: ReadonlyMap<string, number> };
}

/**
 * The instances' leases: this instance beats `{prefix}instance:{id}` (expiring after the lease) and
 * lists itself in `{prefix}instances`; each instance sweeps that list for instances whose lease has
 * run out and ends their runs, from what they stored, as INSTANCE_LOST. On a Redis Cluster each instance's
 * keys are a hash slot of their own (`{id}`): the only key every instance writes is the small `instances` set,
 * once a beat, and a sweep reads that set and the lost instances' own lists, never the keyspace.
 */
export class InstanceLeases {
  private heartbeat: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private stopped = false;
  /** No instance is taken for lost before this time (a lease after the connection came back: see start). */
  private quietUntil = 0;

  constructor(
    private readonly records: RedisRecords,
    private readonly options: { leaseMs: number; logger: Logger },
    private readonly hooks: LeaseHooks,
  ) {}

  /**
   * Starts marking this instance alive every third of the lease, on a timer of its own (a slow sweep
   * never delays it); sweeps for lost instances as often, one sweep at a time.
   */
  start(): void {
    const every = Math.max(10, Math.floor(this.options.leaseMs / 3));
    const tick = () => {
      this.hooks.onBeat();
      // Two slots: two commands (the lease first; a lease without its listing is listed on the next beat).
      const { redis } = this.records;
      redis
        .set(this.records.instanceKey(this.records.instanceId), '1', 'PX', this.options.leaseMs)
        .then(() => redis.sadd(this.records.key('instances'), this.records.instanceId))
        .catch((error: unknown) => this.hooks.connectionError(error));
      if (!this.stopped) this.heartbeat = setTimeout(tick, every).unref();
    };
    const sweep = () => {
      this.sweep()
        .catch((error: unknown) => this.hooks.connectionError(error))
        .finally(() => {
          if (!this.stopped) this.sweeper = setTimeout(sweep, every).unref();
        });
    };
    tick();
    this.sweeper = setTimeout(sweep, every).unref();
    // Each time the connection comes back, no instance is taken for lost for a whole lease. A Redis that restarted,
    // or failed over to a replica, may have lost every instance's lease, and live instances beat again within a third
    // of it: ended at once, their runs would be ended from logs that may be behind what their clients were shown
    // (writes lost, an older snapshot). Their own instances write those records again, or end them after every
    // number shown (RedisRunLog.rebuild); an instance that is really gone is taken for lost a lease later.
    this.records.redis.on('ready', () => {
      this.quietUntil = Date.now() + this.options.leaseMs;
    });
  }

  /** Whether an instance whose lease is missing may be taken for lost now (not within a lease of a reconnection). */
  get judging(): boolean {
    return this.records.redis.status === 'ready' && Date.now() >= this.quietUntil;
  }

  /** Stops beating and sweeping (the store is closing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.heartbeat);
    clearTimeout(this.sweeper);
  }

  /** Ends, as INSTANCE_LOST, every run of every instance whose lease has run out, and this instance's orphans. */
  private async sweep(): Promise<void> {
    if (!this.judging) return;
    await this.sweepOwn();
    const instances = await this.records.redis.smembers(this.records.key('instances'));
    for (const instance of instances) {
      if (instance === this.records.instanceId || (await this.records.redis.exists(this.records.instanceKey(instance))))
        continue;
      const runsKey = this.records.instanceKey(instance, 'runs');
      for (const entry of await this.records.redis.smembers(runsKey)) {
        const [threadId, runId] = entry.split('\u0000');
        const ended = await this.endRun(
          threadId,
          runId,
          instance,
          new InstanceLostError(
            'The gateway instance running this run stopped answering; the run was ended with the events it had stored.',
          ),
        );
        if (ended) this.options.logger.warn({ threadId, runId, instance }, 'a run of a lost instance was ended');
      }
      // Only once it owns nothing (a run it opened meanwhile would still be listed). Not atomic (two slots): an
      // instance that was only paused, and opens a run in between, lists itself again on its next beat.
      if ((await this.records.redis.scard(runsKey)) === 0)
        await this.records.redis.srem(this.records.key('instances'), instance);
    }
  }

  /**
   * Ends the runs this instance's list names that are not going on here: a Redis restored from a snapshot taken
   * while they ran brings back their records unfinished, with the thread locked by this instance, which lives on and
   * will never end them (found from outside: THREAD_BUSY, joins that never end, stops that do nothing, for good).
   * Their endings are numbered after the highest sequence each gave, when it ended here lately, so that no number
   * names two events. A run listed just before its log exists, or just after it ended, is none: the listing is made
   * after the log, and an ended run is only taken off the list.
   */
  private async sweepOwn(): Promise<void> {
    const own = this.records.instanceId;
    const listed = await this.records.redis.smembers(this.records.instanceKey(own, 'runs'));
    if (listed.length === 0) return;
    const { live, ended } = this.hooks.ownRuns();
    for (const entry of listed) {
      if (live.has(entry)) continue;
      const [threadId, runId] = entry.split('\u0000');
      const highest = ended.get(entry);
      const error = new InstanceLostError(
        "The run's record came back unfinished (the thread store was restored from an older copy) after it had " +
          'ended; it was ended with the events stored.',
      );
      // One run that cannot be ended (its record unreadable) keeps neither the others nor the lost instances' sweep.
      const endedHere = await this.endRun(threadId, runId, own, error, highest).catch((failure: unknown) => {
        this.hooks.connectionError(failure);
        return false;
      });
      if (endedHere) {
        this.options.logger.warn(
          { threadId, runId },
          'a run restored unfinished in Redis after it had ended was ended',
        );
      }
    }
  }

  /**
   * Ends a run that has no live instance to end it (or whose record its own instance can no longer
   * keep): its open messages closed as Failed, then its terminal event with `error`, the transcript
   * completed from its log, the thread freed. Writes only if the log has not grown since it was read
   * (then it reads and tries again). The ending events are numbered after `after` too: the run's own
   * instance, ending a record Redis lost part of (an older snapshot), gives the highest number it gave,
   * and the log then skips the numbers of the part lost (their events were shown under them). Resolves
   * with whether this call ended it.
   */
  async endRun(threadId: string, runId: string, owner: string, error: GatewayError, after = -1): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      // The run, its log and its input as they stand at one moment (cgReadRun).
      const { run, log, input } = await this.records.runToEnd(threadId, runId);
      if (!run || run.finishedAt !== null) {
        // Already ended (or gone): only its listing is left to clear.
        await this.records.redis.srem(this.records.instanceKey(owner, 'runs'), `${threadId}\u0000${runId}`);
        return false;
      }
      const last = log.length ? log[log.length - 1].sequence : -1;
      const status = failedRun(error);
      const closing = closingEvents(log, status, after);
      const output = new OutputCollector();
      for (const event of [...log, ...closing]) output.add(event);
      const transcript = transcriptOf(input, output.current());
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
          transcript: JSON.stringify(transcript),
          ids: joinIds(transcript),
        },
        last,
      );
      if (reply === 'ok') return true;
      if (reply !== 'gap') return false;
    }
    return false;
  }
}
