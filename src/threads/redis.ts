import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Redis as RedisClient, RedisOptions } from 'ioredis';
import { GatewayError, toGatewayError } from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import type { Message } from '../core/messages.js';
import { RUN_SUCCESS, failedRun, type RunStatus } from '../core/status.js';
import { EventFeed } from './feed.js';
import { OutputCollector, agentStateOf, closingEvents, transcriptOf } from './log.js';
import { threadBusy } from './memory.js';
import { PENDING, type AgentStateRecord, type Claim, type RunLog, type RunRecord, type StopHandler, type ThreadRecord, type ThreadStore, type ThreadStoreOptions } from './store.js';

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
  /** Events are written in batches, at most this long after they happen (a run's last event at once). */
  flushIntervalMs: number;
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
  /** Live listeners by channel. */
  private readonly live = new Map<string, Set<(events: SequencedEvent[]) => void>>();
  private heartbeat: NodeJS.Timeout | undefined;
  private closed = false;
  private lastError = 0;

  private redis!: ScriptedRedis;
  private subscriber!: RedisClient;
  private started: Promise<void> | undefined;

  constructor(private readonly options: RedisThreadStoreOptions) {}

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
    // Loaded only when a Redis store is configured.
    const { Redis } = await import('ioredis');
    const { url } = this.options;
    const base: RedisOptions = {
      lazyConnect: true,
      // Reconnects forever, at most every 2 s.
      retryStrategy: (times) => Math.min(100 * times, 2_000),
      connectTimeout: 5_000,
      maxRetriesPerRequest: 1,
    };
    // Commands fail at once while disconnected: a request waits for no reconnection, and a run's log
    // keeps its batches and writes them again (RedisRunLog). A connected but stuck server times out.
    const redis = new Redis(url, { ...base, enableOfflineQueue: false, commandTimeout: 5_000 }) as ScriptedRedis;
    // The subscriber queues its subscriptions while disconnected and subscribes again after a reconnect.
    const subscriber = new Redis(url, { ...base, enableOfflineQueue: true, autoResubscribe: true });
    for (const [name, [keys, lua]] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: keys, lua });
    this.redis = redis;
    this.subscriber = subscriber;
    redis.on('error', (error) => this.connectionError(error));
    subscriber.on('error', (error) => this.connectionError(error));
    subscriber.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    const connected = await Promise.allSettled([ready(redis), ready(subscriber)]);
    // Subscribed (queued until the subscriber is connected, and again after every reconnection) and
    // beating (each beat retried) whether or not Redis answered yet.
    void subscriber.subscribe(this.key('stop')).catch((error: unknown) => this.connectionError(error));
    this.beat();
    const failed = connected.find((result) => result.status === 'rejected');
    if (failed) {
      const reason = (failed as PromiseRejectedResult).reason as Error;
      throw new GatewayError('STORE_UNAVAILABLE', `Redis at ${redactedUrl(url)} cannot be reached (${reason?.message}); retrying in the background.`, { cause: reason });
    }
  }

  private key(...parts: string[]): string {
    return this.options.keyPrefix + parts.join(':');
  }

  private threadKey(threadId: string, ...parts: string[]): string {
    return `${this.options.keyPrefix}{${threadId}}:${parts.join(':')}`;
  }

  private liveChannel(threadId: string, runId: string): string {
    return `${this.options.keyPrefix}live:{${threadId}}:${runId}`;
  }

  // --- claims and runs -------------------------------------------------------------------

  async claim(threadId: string, proposedRunId: string, freshRunId: string): Promise<Claim> {
    const reply = await this.call(() =>
      this.redis.cgClaim(
        this.threadKey(threadId, 'lock'),
        this.threadKey(threadId, 'run', proposedRunId),
        this.threadKey(threadId, 'meta'),
        proposedRunId,
        freshRunId,
        this.instanceId,
        this.options.claimTimeoutMs,
      ),
    );
    if (reply[0] === 'busy') throw threadBusy(threadId, reply[1].split(' ')[0]);
    return { runId: reply[1], history: parseMessages(reply[2]) };
  }

  release(threadId: string, runId: string): void {
    if (!this.redis) return;
    this.redis.cgRelease(this.threadKey(threadId, 'lock'), runId).catch((error: unknown) => this.connectionError(error));
  }

  open(threadId: string, runId: string, input: readonly Message[]): RunLog {
    const log = new RedisRunLog(this, threadId, runId, input, this.options);
    log.send(() =>
      this.redis.cgOpen(
        this.threadKey(threadId, 'lock'),
        this.threadKey(threadId, 'meta'),
        this.threadKey(threadId, 'runs'),
        this.threadKey(threadId, 'run', runId),
        this.key('instance', this.instanceId, 'runs'),
        this.threadKey(threadId, 'states'),
        runId,
        this.instanceId,
        JSON.stringify(input),
        Date.now(),
        this.options.ttlSeconds,
        this.options.maxRunsPerThread,
        this.threadKey(threadId, ''),
        `${threadId}\u0000${runId}`,
      ),
    );
    return log;
  }

  /** Writes one batch of a run's events (see the `cgAppend` script); resolves with the script's answer. */
  appendBatch(threadId: string, runId: string, batch: Batch): Promise<string> {
    return this.redis.cgAppend(
      this.threadKey(threadId, 'run', runId),
      this.threadKey(threadId, 'log', runId),
      this.threadKey(threadId, 'states'),
      this.threadKey(threadId, 'meta'),
      this.threadKey(threadId, 'lock'),
      this.key('instance', batch.owner, 'runs'),
      this.threadKey(threadId, 'runs'),
      batch.first,
      batch.last,
      batch.events,
      batch.states,
      this.liveChannel(threadId, runId),
      this.options.ttlSeconds,
      batch.status ?? '',
      batch.transcript ?? '',
      Date.now(),
      runId,
      `${threadId}\u0000${runId}`,
    );
  }

  async thread(threadId: string): Promise<ThreadRecord | undefined> {
    const [meta, runIds, states] = await this.call(() =>
      Promise.all([
        this.redis.hgetall(this.threadKey(threadId, 'meta')),
        this.redis.lrange(this.threadKey(threadId, 'runs'), 0, -1),
        this.redis.hgetall(this.threadKey(threadId, 'states')),
      ]),
    );
    if (runIds.length === 0) return undefined;
    const runs = (await Promise.all(runIds.map((runId) => this.run(threadId, runId)))).filter((run): run is RunRecord => run !== undefined);
    let messages = parseMessages(meta.transcript);
    const latest = runs[runs.length - 1];
    if (latest && latest.finishedAt === null) {
      // Running: the transcript is its input; what it has produced so far comes from its log.
      const output = new OutputCollector();
      for (const event of await this.readLog(threadId, latest.runId)) output.add(event);
      messages = transcriptOf(messages, output.current());
    }
    const agentStates = Object.values(states).map((json) => JSON.parse(json) as AgentStateRecord);
    return { threadId, messages, agentStates, runs };
  }

  async run(threadId: string, runId?: string): Promise<RunRecord | undefined> {
    const id = runId ?? (await this.call(() => this.redis.lindex(this.threadKey(threadId, 'runs'), -1)));
    if (!id) return undefined;
    const fields = await this.call(() => this.redis.hgetall(this.threadKey(threadId, 'run', id)));
    if (!fields.status) return undefined;
    return {
      runId: id,
      status: fields.status === 'running' ? PENDING : statusFrom(fields.status),
      lastSequence: Number(fields.last),
      startedAt: new Date(Number(fields.startedAt)),
      finishedAt: fields.finishedAt ? new Date(Number(fields.finishedAt)) : null,
    };
  }

  private async readLog(threadId: string, runId: string): Promise<SequencedEvent[]> {
    const entries = await this.call(() => this.redis.xrange(this.threadKey(threadId, 'log', runId), '-', '+'));
    const events: SequencedEvent[] = [];
    for (const [, fields] of entries) events.push(...(JSON.parse(fields[1]) as SequencedEvent[]));
    return events;
  }

  follow(threadId: string, runId: string, afterSequence: number): AsyncIterableIterator<SequencedEvent> {
    const feed = new EventFeed(afterSequence);
    const channel = this.liveChannel(threadId, runId);
    let reading = true;
    let early: SequencedEvent[][] = [];
    const readAll = async (): Promise<void> => {
      reading = true;
      try {
        const events = await this.readLog(threadId, runId);
        for (const event of events) feed.push(event);
        reading = false;
        const waiting = early;
        early = [];
        for (const batch of waiting) deliver(batch);
      } catch (error) {
        feed.fail(toGatewayError(error));
      }
    };
    const deliver = (events: SequencedEvent[]): void => {
      if (reading) {
        early.push(events);
        return;
      }
      // A batch after a gap (a message lost while the subscriber reconnected): the log has it all.
      if (events.length && events[0].sequence > feed.expected) {
        void readAll();
        return;
      }
      for (const event of events) feed.push(event);
    };
    // Subscribed before reading the log, so that nothing written between the two is missed.
    void this.listen(channel, deliver).then(readAll, (error: unknown) => feed.fail(toGatewayError(error)));
    feed.whenClosed(() => this.unlisten(channel, deliver));
    return feed;
  }

  async requestStop(threadId: string, runId: string | undefined): Promise<string | undefined> {
    const holder = await this.call(() => this.redis.get(this.threadKey(threadId, 'lock')));
    if (!holder) return undefined;
    const [activeRunId, owner] = holder.split(' ');
    if (runId !== undefined && runId !== activeRunId) return undefined;
    const run = await this.run(threadId, activeRunId);
    if (!run || run.finishedAt !== null) return undefined;
    if (await this.call(() => this.redis.exists(this.key('instance', owner)))) {
      await this.call(() => this.redis.publish(this.key('stop'), `${threadId}\u0000${activeRunId}`));
    } else {
      await this.endRun(threadId, activeRunId, owner, new GatewayError('RUN_STOPPED', 'The run was stopped (stopCopilotRun).'));
    }
    return activeRunId;
  }

  onStopRequest(handler: StopHandler): void {
    this.stopHandlers.push(handler);
  }

  healthy(): boolean {
    return this.redis?.status === 'ready';
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.heartbeat);
    if (!this.redis) return;
    // quit() waits for replies; a server that is down would hold it until the reconnection gives up.
    for (const client of [this.redis, this.subscriber]) {
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    }
  }

  // --- live channels ---------------------------------------------------------------------

  private async listen(channel: string, listener: (events: SequencedEvent[]) => void): Promise<void> {
    let listeners = this.live.get(channel);
    if (!listeners) {
      listeners = new Set();
      this.live.set(channel, listeners);
      listeners.add(listener);
      await this.subscriber.subscribe(channel);
    } else {
      listeners.add(listener);
    }
  }

  private unlisten(channel: string, listener: (events: SequencedEvent[]) => void): void {
    const listeners = this.live.get(channel);
    if (!listeners?.delete(listener) || listeners.size > 0) return;
    this.live.delete(channel);
    this.subscriber.unsubscribe(channel).catch(() => {});
  }

  private onMessage(channel: string, message: string): void {
    if (channel === this.key('stop')) {
      const [threadId, runId] = message.split('\u0000');
      for (const handler of this.stopHandlers) handler(threadId, runId);
      return;
    }
    const listeners = this.live.get(channel);
    if (!listeners) return;
    let events: SequencedEvent[];
    try {
      events = JSON.parse(message) as SequencedEvent[];
    } catch {
      return;
    }
    for (const listener of listeners) listener(events);
  }

  // --- instances -------------------------------------------------------------------------

  /** Marks this instance alive, then ends the runs of instances that are not. Repeats every third of the lease. */
  private beat(): void {
    const every = Math.max(10, Math.floor(this.options.leaseMs / 3));
    const tick = async () => {
      try {
        await this.redis
          .multi()
          .set(this.key('instance', this.instanceId), '1', 'PX', this.options.leaseMs)
          .sadd(this.key('instances'), this.instanceId)
          .exec();
        await this.sweep();
      } catch (error) {
        this.connectionError(error);
      }
      if (!this.closed) this.heartbeat = setTimeout(tick, every).unref();
    };
    void tick();
  }

  /** Ends, as INSTANCE_LOST, every run of every instance whose lease has run out. */
  private async sweep(): Promise<void> {
    const instances = await this.redis.smembers(this.key('instances'));
    for (const instance of instances) {
      if (instance === this.instanceId || (await this.redis.exists(this.key('instance', instance)))) continue;
      const runsKey = this.key('instance', instance, 'runs');
      for (const entry of await this.redis.smembers(runsKey)) {
        const [threadId, runId] = entry.split('\u0000');
        await this.endRun(threadId, runId, instance, new GatewayError('INSTANCE_LOST', 'The gateway instance running this run stopped answering; the run was ended with the events it had stored.'));
        this.options.logger.warn({ threadId, runId, instance }, 'a run of a lost instance was ended');
      }
      // Only once it owns nothing (a run it opened meanwhile would still be listed).
      await this.redis.cgForget(this.key('instances'), runsKey, instance);
    }
  }

  /**
   * Ends a run that has no live instance to end it: its open messages closed as Failed, then its
   * terminal event with `error`, the transcript completed from its log, the thread freed. Writes only
   * if the log has not grown meanwhile (the owner was alive after all): then it reads and tries again.
   */
  private async endRun(threadId: string, runId: string, owner: string, error: GatewayError): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const run = await this.run(threadId, runId);
      if (!run || run.finishedAt !== null) {
        // Already ended (or gone): only its listing is left to clear.
        await this.redis.srem(this.key('instance', owner, 'runs'), `${threadId}\u0000${runId}`);
        return;
      }
      const log = await this.readLog(threadId, runId);
      const status = failedRun(error);
      const closing = closingEvents(log, status);
      const output = new OutputCollector();
      for (const event of [...log, ...closing]) output.add(event);
      const input = parseMessages(await this.redis.hget(this.threadKey(threadId, 'meta'), 'transcript'));
      const reply = await this.appendBatch(threadId, runId, {
        owner,
        first: closing[0].sequence,
        last: closing[closing.length - 1].sequence,
        events: JSON.stringify(closing),
        states: '[]',
        status: JSON.stringify(status),
        transcript: JSON.stringify(transcriptOf(input, output.current())),
      });
      if (reply !== 'gap') return;
    }
  }

  // --- errors ------------------------------------------------------------------------------

  /** Runs a read or a claim; a connection problem becomes STORE_UNAVAILABLE. */
  private async call<T>(command: () => Promise<T>): Promise<T> {
    if (!this.redis) throw new GatewayError('STORE_UNAVAILABLE', 'The thread store (Redis) has not been started.');
    try {
      return await command();
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      throw new GatewayError('STORE_UNAVAILABLE', 'The thread store (Redis) cannot be reached; try again shortly.', { cause: error });
    }
  }

  /** Logs connection problems, at most one line every 10 s. */
  connectionError(error: unknown): void {
    const now = Date.now();
    if (now - this.lastError < 10_000 || this.closed) return;
    this.lastError = now;
    this.options.logger.warn({ err: error, redis: redactedUrl(this.options.url) }, 'Redis (thread store) is not answering; retrying');
  }
}

/** A batch of a run's events as the append script takes it. */
interface Batch {
  owner: string;
  first: number;
  last: number;
  /** JSON array of the events. */
  events: string;
  /** JSON array of [agentName, AgentStateRecord JSON] pairs to store. */
  states: string;
  /** The terminal status (JSON), on the batch with RunFinished. */
  status?: string;
  /** The thread's transcript after the run (JSON), on the batch with RunFinished. */
  transcript?: string;
}

/**
 * One run's events on their way to Redis: gathered for up to `flushIntervalMs` (the terminal event is
 * written at once), each batch sent as soon as it is cut, in order, on one connection. A batch that
 * fails (Redis unreachable, restarted) is sent again, with every batch after it, until Redis takes it,
 * so nothing the run emitted is lost while the process lives; the append script skips batches it
 * already has and refuses a batch out of order.
 */
class RedisRunLog implements RunLog {
  private pending: SequencedEvent[] = [];
  private states = new Map<string, AgentStateRecord>();
  private timer: NodeJS.Timeout | undefined;
  /** Sent and not yet confirmed, in order. */
  private unconfirmed: { batch: Batch | undefined; write: () => Promise<unknown> }[] = [];
  private retrying: NodeJS.Timeout | undefined;
  private retryDelay = 100;
  private readonly output = new OutputCollector();
  private abandoned = false;
  /** Whether Redis has the run's record (its open confirmed). */
  private opened = false;

  constructor(
    private readonly store: RedisThreadStore,
    private readonly threadId: string,
    private readonly runId: string,
    private readonly input: readonly Message[],
    private readonly options: RedisThreadStoreOptions,
  ) {}

  append(event: SequencedEvent): void {
    if (this.abandoned) return;
    this.pending.push(event);
    this.output.add(event);
    const state = agentStateOf(event, this.runId);
    if (state) this.states.set(state.agentName, state);
    if (event.type === 'RunFinished') {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.flush(event.status);
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush(undefined);
      }, this.options.flushIntervalMs);
    }
  }

  private flush(status: RunStatus | undefined): void {
    const events = this.pending;
    if (events.length === 0) return;
    this.pending = [];
    const states = [...this.states.entries()].map(([name, record]) => [name, JSON.stringify(record)]);
    this.states.clear();
    const batch: Batch = {
      owner: this.store.instanceId,
      first: events[0].sequence,
      last: events[events.length - 1].sequence,
      events: JSON.stringify(events),
      states: JSON.stringify(states),
      ...(status ? { status: JSON.stringify(status), transcript: JSON.stringify(transcriptOf(this.input, this.output.current())) } : {}),
    };
    this.send(() => this.store.appendBatch(this.threadId, this.runId, batch), batch);
  }

  /** Sends a write now (unless earlier ones wait to be sent again), keeping it until it is confirmed. */
  send(write: () => Promise<unknown>, batch?: Batch): void {
    const entry = { batch, write };
    this.unconfirmed.push(entry);
    if (!this.retrying) this.attempt(entry);
  }

  private attempt(entry: { batch: Batch | undefined; write: () => Promise<unknown> }): void {
    new Promise((resolve) => resolve(entry.write())).then(
      (reply) => this.confirmed(entry, reply),
      (error: unknown) => this.failed(error),
    );
  }

  private confirmed(entry: { batch: Batch | undefined }, reply: unknown): void {
    if (reply === 'gap' || (reply === 'missing' && !this.opened)) return this.failed(new Error(`a batch was refused (${String(reply)})`));
    if (entry.batch === undefined) this.opened = true;
    if (reply === 'finished' || reply === 'missing') {
      // Ended by another instance (this one's lease ran out), or the record is gone (expired, or a
      // Redis restarted without persistence): nothing more of this run can be stored.
      this.abandoned = true;
      this.unconfirmed = [];
      this.store.connectionError(new Error(`run ${this.runId} can no longer be recorded (${String(reply)})`));
      return;
    }
    const index = this.unconfirmed.indexOf(entry as (typeof this.unconfirmed)[number]);
    if (index >= 0) this.unconfirmed.splice(0, index + 1);
    this.retryDelay = 100;
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

/** Connects a client and waits until it takes commands (after its ready check). */
async function ready(client: RedisClient): Promise<void> {
  await client.connect();
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no ready answer within 5 s')), 5_000);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function parseMessages(json: string | null | undefined): Message[] {
  if (!json) return [];
  try {
    const messages = JSON.parse(json) as unknown;
    return Array.isArray(messages) ? (messages as Message[]) : [];
  } catch {
    return [];
  }
}

function statusFrom(json: string): RunStatus {
  try {
    const status = JSON.parse(json) as RunStatus;
    return status.code === 'Success' ? RUN_SUCCESS : status;
  } catch {
    return RUN_SUCCESS;
  }
}

/** The URL without its password, for logs and errors. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured URL';
  }
}

type ScriptedRedis = RedisClient & {
  cgClaim(...args: (string | number)[]): Promise<[string, string, string]>;
  cgRelease(...args: (string | number)[]): Promise<number>;
  cgOpen(...args: (string | number)[]): Promise<string>;
  cgAppend(...args: (string | number)[]): Promise<string>;
  cgForget(...args: (string | number)[]): Promise<number>;
};

/** The store's Lua scripts: [number of keys, source]. */
const SCRIPTS: Record<string, [number, string]> = {
  // KEYS: lock, run (of the proposed id), meta. ARGV: proposed id, fresh id, instance, claim timeout (ms).
  cgClaim: [
    3,
    `local holder = redis.call('GET', KEYS[1])
if holder then return {'busy', holder, ''} end
local runId = ARGV[1]
if redis.call('EXISTS', KEYS[2]) == 1 then runId = ARGV[2] end
redis.call('SET', KEYS[1], runId .. ' ' .. ARGV[3], 'PX', ARGV[4])
return {'ok', runId, redis.call('HGET', KEYS[3], 'transcript') or '[]'}`,
  ],
  // KEYS: lock. ARGV: run id. Frees a claim of that run.
  cgRelease: [
    1,
    `local holder = redis.call('GET', KEYS[1])
if holder and string.sub(holder, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then return redis.call('DEL', KEYS[1]) end
return 0`,
  ],
  // KEYS: lock, meta, runs, run, instance runs, states. ARGV: run id, instance, input (JSON), started at,
  // ttl (s), max runs, thread key prefix, "threadId\\0runId".
  cgOpen: [
    6,
    `redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2])
redis.call('HSET', KEYS[4], 'status', 'running', 'last', -1, 'startedAt', ARGV[4], 'owner', ARGV[2])
redis.call('HSET', KEYS[2], 'transcript', ARGV[3], 'latest', ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[1])
while redis.call('LLEN', KEYS[3]) > tonumber(ARGV[6]) do
  local old = redis.call('LPOP', KEYS[3])
  redis.call('DEL', ARGV[7] .. 'run:' .. old, ARGV[7] .. 'log:' .. old)
end
redis.call('SADD', KEYS[5], ARGV[8])
for _, key in ipairs({KEYS[2], KEYS[3], KEYS[4]}) do redis.call('EXPIRE', key, ARGV[5]) end
return 'ok'`,
  ],
  // KEYS: run, log, states, meta, lock, instance runs, runs. ARGV: first, last, events (JSON), states
  // (JSON pairs), channel, ttl (s), terminal status (JSON or ""), transcript (JSON or ""), now, run id,
  // "threadId\\0runId". Answers ok, dup (already stored), gap (out of order), finished, missing.
  cgAppend: [
    7,
    `local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if status ~= 'running' then return 'finished' end
local last = tonumber(redis.call('HGET', KEYS[1], 'last'))
local first = tonumber(ARGV[1])
if first <= last then return 'dup' end
if first ~= last + 1 then return 'gap' end
redis.call('XADD', KEYS[2], '*', 'e', ARGV[3])
redis.call('HSET', KEYS[1], 'last', ARGV[2])
for _, pair in ipairs(cjson.decode(ARGV[4])) do redis.call('HSET', KEYS[3], pair[1], pair[2]) end
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'status', ARGV[7], 'finishedAt', ARGV[9])
  redis.call('HSET', KEYS[4], 'transcript', ARGV[8])
  local holder = redis.call('GET', KEYS[5])
  if holder and string.sub(holder, 1, #ARGV[10] + 1) == ARGV[10] .. ' ' then redis.call('DEL', KEYS[5]) end
  redis.call('SREM', KEYS[6], ARGV[11])
end
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[6]) end
redis.call('EXPIRE', KEYS[7], ARGV[6])
redis.call('PUBLISH', ARGV[5], ARGV[3])
return 'ok'`,
  ],
  // KEYS: instances, instance runs. ARGV: instance. Forgets a dead instance once it owns no run.
  cgForget: [
    2,
    `if redis.call('SCARD', KEYS[2]) == 0 then return redis.call('SREM', KEYS[1], ARGV[1]) end
return 0`,
  ],
};
