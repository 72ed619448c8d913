import type { Logger } from 'pino';
import type { Cluster } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { GatewayError, StoreUnavailableError } from '../../core/errors.js';
import type { SequencedEvent } from '../../core/events.js';
import { DEFAULT_AGENT_ID } from '../../core/ids.js';
import {
  DELETED_MARK_MS,
  threadBusy,
  threadForbidden,
  type Claim,
  type ClaimDetails,
  type RunInput,
  type RunRecord,
  type ThreadRecord,
} from '../store.js';
import { joinIds, splitIds } from '../message-ids.js';
import { eventsOf, parseMessages, readRunNow, readRunToEnd, readThread, runFrom, type RunToEnd } from './reads.js';
import type { ScriptedRedis } from './scripts.js';
import { listKeyPart, writeListEntry } from './list-records.js';
import { UnansweredClaims } from './unanswered-claims.js';

/** What the records take of the store's options. */
export interface RedisRecordsOptions {
  keyPrefix: string;
  ttlSeconds: number;
  maxRunsPerThread: number;
  claimTimeoutMs: number;
  /**
   * Replicas that must have a run's events before they count as stored (WAIT after each write; 0: the primary's
   * answer is enough). @default 0
   */
  waitReplicas?: number;
  /** Where a list entry that could not be written is told (the thread's next run writes it again). */
  logger?: Logger;
}

/** How long a WAIT for replicas waits; a write not replicated in that time is sent again (and WAITed for again). */
const WAIT_TIMEOUT_MS = 1_000;

/** The keys of a run's record, log and live channel. */
export interface RunKeys {
  run: string;
  log: string;
  channel: string;
}

/** A batch of a run's events as the append script takes it. */
export interface Batch {
  owner: string;
  first: number;
  last: number;
  /** JSON array of the events. */
  events: string;
  /** JSON array of [agentName, AgentStateRecord JSON] pairs to store. */
  states: string;
  /** The terminal status (JSON), on the batch with RunFinished. */
  status?: string;
  /** The thread's transcript after the run (JSON), on the batch with RunFinished: the whole, or with `appended`… */
  transcript?: string;
  /** …only the run's output, which Redis puts after the run's input (see cgAppend). */
  appended?: boolean;
  /** The ids of `transcript`'s messages (message-ids.ts), kept beside the thread's transcript. */
  ids?: string;
}

/**
 * The threads' records in Redis, as RedisThreadStore lays them out (see there): the names of their
 * keys and channels, their reads, and the scripts that claim a thread, open a run's record and append
 * its events. Reads and claims go through `call` (a connection problem is STORE_UNAVAILABLE); the
 * writes of a run's log answer what their script answers, and the log deals with failures itself.
 */
export class RedisRecords {
  /** The command connection, once the store has connected. */
  redis!: ScriptedRedis;
  /**
   * A Redis Cluster: a command names keys of one hash slot only (several runs' batches go in one script per node,
   * cgAppendOnNode), and live channels are sharded (SPUBLISH).
   */
  cluster = false;
  /** The releases of claims whose answer never came (unanswered-claims.ts). */
  private readonly unanswered = new UnansweredClaims(this);

  constructor(
    private readonly options: RedisRecordsOptions,
    readonly instanceId: string,
  ) {}

  get ttlSeconds(): number {
    return this.options.ttlSeconds;
  }

  get logger(): Logger | undefined {
    return this.options.logger;
  }

  // --- names ------------------------------------------------------------------------------

  key(...parts: string[]): string {
    return this.options.keyPrefix + parts.join(':');
  }

  /**
   * An instance's keys: `instance:{id}` (its lease) and `instance:{id}:runs` (the runs it owns), in one hash slot per
   * instance, so that no slot takes every instance's beats.
   */
  instanceKey(instanceId: string, ...parts: string[]): string {
    return `${this.options.keyPrefix}instance:{${instanceId}}${parts.map((part) => `:${part}`).join('')}`;
  }

  threadKey(threadId: string, ...parts: string[]): string {
    return `${this.options.keyPrefix}{${threadId}}:${parts.join(':')}`;
  }

  liveChannel(threadId: string, runId: string): string {
    return `${this.options.keyPrefix}live:{${threadId}}:${runId}`;
  }

  /** The keys a run's every write names, built once per run. */
  runKeys(threadId: string, runId: string): RunKeys {
    return {
      run: this.threadKey(threadId, 'run', runId),
      log: this.threadKey(threadId, 'log', runId),
      channel: this.liveChannel(threadId, runId),
    };
  }

  // --- claims and writes --------------------------------------------------------------------

  /**
   * A scope's list of one agent's threads: `…:all` and `…:active` are its sorted sets (see the `cgClaim` script), in
   * one hash slot (`{scope:agent}`).
   */
  listKey(scope: string, agentId: string): string {
    return `${this.key('list')}:{${listKeyPart(scope)}:${listKeyPart(agentId)}}`;
  }

  /** Takes the thread for a run (see ThreadStore.claim): THREAD_FORBIDDEN, THREAD_BUSY, or the claim. */
  async claim(threadId: string, proposedRunId: string, freshRunId: string, details: ClaimDetails): Promise<Claim> {
    const now = Date.now();
    const reply = await this.call(() =>
      this.redis.cgClaim(
        this.threadKey(threadId, 'lock'),
        this.threadKey(threadId, 'run', proposedRunId),
        this.threadKey(threadId, 'meta'),
        this.threadKey(threadId, 'runs'),
        this.threadKey(threadId, 'deletedRuns'),
        proposedRunId,
        freshRunId,
        this.instanceId,
        this.options.claimTimeoutMs,
        details.owner ?? '',
        this.options.ttlSeconds,
        details.agentId ?? DEFAULT_AGENT_ID,
        details.name ?? '',
        now,
        `${this.key('list')}:`,
        ...(details.checkIds ?? []),
      ),
    ).catch((error: unknown) => {
      // Unanswered (a command timeout: Redis stalled): Redis may still take the claim when it wakes, and hold the
      // thread for claimTimeoutMs for a run that is not coming (found from outside: THREAD_BUSY for a minute after the
      // run, served unrecorded, had ended). A release sent now goes after the claim on the same connection, and frees
      // the thread only if that claim took it (its fresh id is its token). A claim refused unsent needs none.
      this.unanswered.release(error, threadId, freshRunId);
      throw error;
    });
    if (reply[0] === 'forbidden') throw threadForbidden(threadId);
    if (reply[0] === 'busy') throw threadBusy(threadId, lockHolder(reply[1]).runId);
    const [, runId, transcript, list, previous, archived, ids, claim] = reply;
    await writeListEntry(this, threadId, list, now, archived === '1', previous);
    // The request repeats a stored message: the claim read the transcript's ids alone (see Claim.storedIds).
    if (ids) return { runId, history: [], storedIds: splitIds(ids), claim };
    return { runId, history: parseMessages(transcript), claim };
  }

  /**
   * Starts (or, with `reset`, starts again from nothing) a run's record; see the `cgOpen` script. The run is listed
   * among this instance's (another hash slot) by the same call, which succeeds only once both are written, so that a
   * run is not left open without an instance that answers for it: if this instance dies, the one that sweeps its list
   * ends the run. A run that does not open is taken off. The thread's transcript becomes the run's input, sent whole
   * unless the input extends what the record holds (RunInput.extendsHistory; not when written again from nothing):
   * then only the new messages are sent (as the run's `newInput`), and readers add them (see `thread`).
   */
  async openRecord(threadId: string, runId: string, input: RunInput, reset: boolean): Promise<string> {
    const owned = this.instanceKey(this.instanceId, 'runs');
    const entry = `${threadId}\u0000${runId}`;
    // Both sent in this tick, so that the open goes to Redis before any write the log sends after it (a record written
    // again after Redis lost it: the open, then its events). Either failing fails the open, which is sent again (a
    // second open of this instance's record answers ok at once).
    const listed = this.redis.sadd(owned, entry);
    const whole = reset || !input.extendsHistory;
    const now = Date.now();
    const opened = this.redis.cgOpen(
      this.threadKey(threadId, 'lock'),
      this.threadKey(threadId, 'meta'),
      this.threadKey(threadId, 'runs'),
      this.threadKey(threadId, 'run', runId),
      this.threadKey(threadId, 'log', runId),
      runId,
      this.instanceId,
      whole ? JSON.stringify(input.messages) : '',
      now,
      this.options.ttlSeconds,
      this.options.maxRunsPerThread,
      this.threadKey(threadId, ''),
      reset ? '1' : '',
      JSON.stringify(input.newMessages),
      joinIds(whole ? input.messages : input.newMessages),
      DELETED_MARK_MS,
      input.claim ?? '',
      input.owner ?? '',
      input.agentId ?? DEFAULT_AGENT_ID,
      input.name ?? '',
      `${this.key('list')}:`,
    );
    const [, answer] = await Promise.all([listed, opened]);
    // Written again from nothing: listed again in the list the thread's record names (maybe lost with the record).
    if (Array.isArray(answer)) await writeListEntry(this, threadId, answer[1], now, answer[2] === '1');
    const reply = Array.isArray(answer) ? 'ok' : answer;
    // Not when superseded: the thread was claimed again since, maybe by a run of the same id on this instance (a
    // client that sent its request again), whose listing this is too.
    if (reply !== 'ok' && reply !== 'superseded') this.disown(this.instanceId, threadId, runId);
    return reply;
  }

  /** Takes a run off its instance's list (it has ended, or never opened); one left there is cleared by a sweep. */
  disown(instanceId: string, threadId: string, runId: string): void {
    this.redis.srem(this.instanceKey(instanceId, 'runs'), `${threadId}\u0000${runId}`).catch(() => {});
  }

  /**
   * Writes one batch of a run's events with nothing else to record (no agent state, not the last, no
   * expiry to renew): the `cgAppendEvents` script, which takes a sixth of `cgAppend`'s arguments and
   * work. A run streaming tokens a few milliseconds apart writes one of these per token (its clients
   * see a token once it is stored), so its cost is the store's cost per token.
   */
  appendEvents(keys: RunKeys, batch: Batch): Promise<string> {
    const args = [keys.run, keys.log, batch.first, batch.last, batch.events] as const;
    if (this.waitReplicas === 0) return this.redis.cgAppendEvents(...args, keys.channel);
    return this.replicated(this.redis.cgAppendEvents(...args, ''), keys.run, [
      { channel: keys.channel, events: batch.events },
    ]);
  }

  private get waitReplicas(): number {
    return this.options.waitReplicas ?? 0;
  }

  /**
   * With `waitReplicas`: the write's answer once that many replicas have it, and only then its events published to
   * followers; rejects with STORE_UNAVAILABLE when the replicas do not have them in time, so that the log sends them
   * again. Answers other than ok and dup (nothing was written) need no wait. The WAIT goes on the connection the write
   * went on (it counts that connection's writes): the one connection to one server, or on a Redis Cluster the
   * connection to the primary that now serves `key`'s slot (a write that went to a primary since failed over is
   * written again: the new primary's WAIT covers it only once it has been).
   */
  private async replicated<T extends string | string[]>(
    pending: Promise<T>,
    key: string,
    publish: readonly { channel: string; events: string }[],
  ): Promise<T> {
    const reply = await pending;
    const answers: string[] = Array.isArray(reply) ? reply : [reply];
    if (!answers.some((answer) => answer === 'ok' || answer === 'dup')) return reply;
    const acknowledged = await this.primaryOf(key).wait(this.waitReplicas, WAIT_TIMEOUT_MS);
    if (acknowledged < this.waitReplicas) {
      throw new StoreUnavailableError(
        `Only ${acknowledged} of the ${this.waitReplicas} Redis replicas REDIS_WAIT_REPLICAS asks for took the run's ` +
          `events within ${WAIT_TIMEOUT_MS} ms.`,
      );
    }
    answers.forEach((answer, index) => {
      // A publish lost (the connection closing) is not lost to followers: one that misses it reads the log again
      // when the next batch shows the gap, or when its subscriber reconnects (live.ts). A batch answered dup was
      // stored by an attempt that failed before it was published (a grouped call a node refused partway): it is
      // published now; a follower takes each sequence once.
      if ((answer === 'ok' || answer === 'dup') && publish[index])
        this.publish(publish[index].channel, publish[index].events);
    });
    return reply;
  }

  /**
   * The connection that serves `key`: the command connection, or on a Redis Cluster its connection to the primary of
   * the key's slot as the client last learnt it (ioredis's public slot table).
   */
  private primaryOf(key: string): { wait(replicas: number, timeoutMs: number): Promise<number> } {
    if (!this.cluster) return this.redis;
    const cluster = this.redis as unknown as Cluster;
    const primary = this.nodeOf(key);
    const node = cluster.nodes('master').find(({ options }) => `${options.host}:${options.port}` === primary);
    if (!node) throw new StoreUnavailableError(`No Redis Cluster primary is known for the run's keys now.`);
    return node;
  }

  /** Publishes a batch on a run's live channel (sharded on a Redis Cluster, like the scripts' publishing). */
  private publish(channel: string, message: string): void {
    (this.cluster ? this.redis.spublish(channel, message) : this.redis.publish(channel, message)).catch(() => {});
  }

  /**
   * Writes a batch of events alone for each of several runs in one script call (`cgAppendMany`);
   * resolves with each run's answer, in order.
   */
  appendMany(writes: readonly { keys: RunKeys; batch: Batch }[]): Promise<string[]> {
    const waiting = this.waitReplicas > 0;
    let replies: Promise<string[]>;
    if (this.cluster) {
      // Runs whose slots one node serves (nodeOf): their keys as arguments, the first run's keys routing the call.
      const args: (string | number)[] = [];
      for (const { keys: run, batch } of writes)
        args.push(run.run, run.log, batch.first, batch.last, batch.events, waiting ? '' : run.channel);
      replies = this.redis.cgAppendOnNode(writes[0].keys.run, writes[0].keys.log, ...args);
      // A node that refuses keys it does not serve (a script error, not a redirection) means the slot table is stale:
      // learn it again now rather than at the next periodic refresh, so that the next turn's calls are grouped right.
      replies.catch((error: unknown) => {
        if (/non local key/i.test(String((error as Error)?.message)))
          (this.redis as unknown as Cluster).refreshSlotsCache();
      });
    } else {
      const keys: string[] = [];
      const args: (string | number)[] = [];
      for (const { keys: run, batch } of writes) {
        keys.push(run.run, run.log);
        args.push(batch.first, batch.last, batch.events, waiting ? '' : run.channel);
      }
      replies = this.redis.cgAppendMany(keys.length, ...keys, ...args);
    }
    if (!waiting) return replies;
    // One connection took them all (one server, or one node of a cluster): the first key names it.
    return this.replicated(
      replies,
      writes[0].keys.run,
      writes.map(({ keys: run, batch }) => ({ channel: run.channel, events: batch.events })),
    );
  }

  /**
   * The node that serves `key` as the client last learnt it ("host:port"; on one server, ""): runs of one node can be
   * written in one call (appendMany).
   */
  nodeOf(key: string): string {
    if (!this.cluster) return '';
    return (this.redis as unknown as Cluster).slots[calculateSlot(key)]?.[0] ?? '';
  }

  /** Writes one batch of a run's events (see the `cgAppend` script); resolves with the script's answer. */
  async appendBatch(threadId: string, runId: string, batch: Batch, expectedLast?: number): Promise<string> {
    const waiting = this.waitReplicas > 0;
    const channel = this.liveChannel(threadId, runId);
    const keys = [
      this.threadKey(threadId, 'run', runId),
      this.threadKey(threadId, 'log', runId),
      this.threadKey(threadId, 'states'),
      this.threadKey(threadId, 'meta'),
      this.threadKey(threadId, 'lock'),
      this.threadKey(threadId, 'runs'),
    ];
    const args = (published: string) => [
      batch.first,
      batch.last,
      batch.events,
      batch.states,
      published,
      this.options.ttlSeconds,
      batch.status ?? '',
      batch.transcript ?? '',
      Date.now(),
      runId,
      expectedLast === undefined ? '' : expectedLast,
      this.threadKey(threadId, ''),
      batch.appended ? '1' : '',
      batch.ids ?? '',
    ];
    const reply = waiting
      ? await this.replicated(this.redis.cgAppend(...keys, ...args('')), keys[0], [{ channel, events: batch.events }])
      : await this.redis.cgAppend(...keys, ...args(channel));
    // The run has ended: its instance no longer answers for it.
    if (reply === 'ok' && batch.status) this.disown(batch.owner, threadId, runId);
    return reply;
  }

  // --- reads ------------------------------------------------------------------------------

  /** The thread as it stands at one moment (see readThread). */
  thread(threadId: string, runningOutput: boolean): Promise<ThreadRecord | undefined> {
    return readThread(this, threadId, runningOutput);
  }

  /** A run's record and log at one moment (see readRunNow). */
  runNow(threadId: string, runId: string): Promise<{ run: RunRecord | undefined; log: SequencedEvent[] }> {
    return readRunNow(this, threadId, runId);
  }

  /** A run, its log and its input at one moment, as endRun completes it (see readRunToEnd). */
  runToEnd(threadId: string, runId: string): Promise<RunToEnd> {
    return readRunToEnd(this, threadId, runId);
  }

  async owner(threadId: string): Promise<string | undefined> {
    return (await this.call(() => this.redis.hget(this.threadKey(threadId, 'meta'), 'principal'))) ?? undefined;
  }

  async run(threadId: string, runId?: string): Promise<RunRecord | undefined> {
    const id = runId ?? (await this.call(() => this.redis.lindex(this.threadKey(threadId, 'runs'), -1)));
    if (!id) return undefined;
    return runFrom(id, await this.call(() => this.redis.hgetall(this.threadKey(threadId, 'run', id))));
  }

  /**
   * The run's stored events, in order, from the batch holding the one after `afterSequence` (-1: all of them; a few
   * before it may come too): a follower reads only what it lacks, not the run from its start each time.
   *
   * A batch's entry is numbered "0-" and its first event's sequence + 1 (cgAppend), so the entries from one after a
   * sequence s are those from "0-(s + 2)". Plain XRANGEs, not a script: a script would take every entry it looks at
   * through Lua (a 16 MB event twice), holding Redis meanwhile. A reader after s that is not at a batch's start (a
   * resume in the middle of one) reads the entry before as well: the one holding s + 1. A log an earlier version
   * numbered by time sorts after every "0-" id: it is read whole.
   */
  async readLog(threadId: string, runId: string, afterSequence = -1): Promise<SequencedEvent[]> {
    const log = this.threadKey(threadId, 'log', runId);
    if (afterSequence < 0) return eventsOf(await this.call(() => this.redis.xrange(log, '-', '+')));
    const from = `0-${afterSequence + 2}`;
    const entries = await this.call(() => this.redis.xrange(log, from, '+'));
    if (entries[0]?.[0] === from) return eventsOf(entries);
    const before = await this.call(() => this.redis.xrevrange(log, `(${from}`, '-', 'COUNT', 1));
    return eventsOf([...before, ...entries]);
  }

  /**
   * The run's stored events, in order, up to the batch holding the one after `untilSequence` (a few after it may come
   * too): what a resuming reader has, not the rest of the run. Numbered as readLog says; a log numbered by time (none
   * of its ids is at most "0-(u + 2)") is read whole.
   */
  async readLogUpTo(threadId: string, runId: string, untilSequence: number): Promise<SequencedEvent[]> {
    const log = this.threadKey(threadId, 'log', runId);
    const upTo = await this.call(() => this.redis.xrange(log, '-', `0-${untilSequence + 2}`));
    return eventsOf(upTo.length > 0 ? upTo : await this.call(() => this.redis.xrange(log, '-', '+')));
  }

  /** Runs a read or a claim; a connection problem becomes STORE_UNAVAILABLE. */
  async call<T>(command: () => Promise<T>): Promise<T> {
    if (!this.redis) throw new StoreUnavailableError('The thread store (Redis) has not been started.');
    try {
      return await command();
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      throw new StoreUnavailableError('The thread store (Redis) cannot be reached; try again shortly.', {
        cause: error,
      });
    }
  }
}

/**
 * The run and instance holding a thread's lock, "<runId> <instance>": a run id may hold spaces (a client names it), an
 * instance id holds none, so the instance is what follows the last space (as `lockRun` in the scripts).
 */
export function lockHolder(lock: string): { runId: string; instance: string } {
  const at = lock.lastIndexOf(' ');
  return { runId: lock.slice(0, at), instance: lock.slice(at + 1) };
}
