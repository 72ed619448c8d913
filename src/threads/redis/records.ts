import { GatewayError, StoreUnavailableError } from '../../core/errors.js';
import type { SequencedEvent } from '../../core/events.js';
import type { Message } from '../../core/messages.js';
import { RUN_SUCCESS, type RunStatus } from '../../core/status.js';
import { OutputCollector, transcriptOf } from '../log.js';
import {
  PENDING,
  threadBusy,
  threadForbidden,
  type AgentStateRecord,
  type Claim,
  type RunInput,
  type RunRecord,
  type ThreadRecord,
} from '../store.js';
import type { ScriptedRedis } from './scripts.js';

/** What the records take of the store's options. */
export interface RedisRecordsOptions {
  keyPrefix: string;
  ttlSeconds: number;
  maxRunsPerThread: number;
  claimTimeoutMs: number;
}

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
  /** The thread's transcript after the run (JSON), on the batch with RunFinished. */
  transcript?: string;
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

  constructor(
    private readonly options: RedisRecordsOptions,
    readonly instanceId: string,
  ) {}

  // --- names ------------------------------------------------------------------------------

  key(...parts: string[]): string {
    return this.options.keyPrefix + parts.join(':');
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

  /** Takes the thread for a run (see ThreadStore.claim): THREAD_FORBIDDEN, THREAD_BUSY, or the claim. */
  async claim(threadId: string, proposedRunId: string, freshRunId: string, owner?: string): Promise<Claim> {
    const reply = await this.call(() =>
      this.redis.cgClaim(
        this.threadKey(threadId, 'lock'),
        this.threadKey(threadId, 'run', proposedRunId),
        this.threadKey(threadId, 'meta'),
        this.threadKey(threadId, 'runs'),
        proposedRunId,
        freshRunId,
        this.instanceId,
        this.options.claimTimeoutMs,
        owner ?? '',
        this.options.ttlSeconds,
      ),
    );
    if (reply[0] === 'forbidden') throw threadForbidden(threadId);
    if (reply[0] === 'busy') throw threadBusy(threadId, reply[1].split(' ')[0]);
    return { runId: reply[1], history: parseMessages(reply[2]) };
  }

  /** Starts (or, with `reset`, starts again from nothing) a run's record; see the `cgOpen` script. */
  openRecord(threadId: string, runId: string, input: RunInput, reset: boolean): Promise<string> {
    return this.redis.cgOpen(
      this.threadKey(threadId, 'lock'),
      this.threadKey(threadId, 'meta'),
      this.threadKey(threadId, 'runs'),
      this.threadKey(threadId, 'run', runId),
      this.key('instance', this.instanceId, 'runs'),
      this.threadKey(threadId, 'log', runId),
      runId,
      this.instanceId,
      JSON.stringify(input.messages),
      Date.now(),
      this.options.ttlSeconds,
      this.options.maxRunsPerThread,
      this.threadKey(threadId, ''),
      `${threadId}\u0000${runId}`,
      reset ? '1' : '',
      JSON.stringify(input.newMessages),
    );
  }

  /**
   * Writes one batch of a run's events with nothing else to record (no agent state, not the last, no
   * expiry to renew): the `cgAppendEvents` script, which takes a sixth of `cgAppend`'s arguments and
   * work. A run streaming tokens a few milliseconds apart writes one of these per token (its clients
   * see a token once it is stored), so its cost is the store's cost per token.
   */
  appendEvents(keys: RunKeys, batch: Batch): Promise<string> {
    return this.redis.cgAppendEvents(keys.run, keys.log, batch.first, batch.last, batch.events, keys.channel);
  }

  /**
   * Writes a batch of events alone for each of several runs in one script call (`cgAppendMany`);
   * resolves with each run's answer, in order.
   */
  appendMany(writes: readonly { keys: RunKeys; batch: Batch }[]): Promise<string[]> {
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const { keys: run, batch } of writes) {
      keys.push(run.run, run.log);
      args.push(batch.first, batch.last, batch.events, run.channel);
    }
    return this.redis.cgAppendMany(keys.length, ...keys, ...args);
  }

  /** Writes one batch of a run's events (see the `cgAppend` script); resolves with the script's answer. */
  appendBatch(threadId: string, runId: string, batch: Batch, expectedLast?: number): Promise<string> {
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
      expectedLast === undefined ? '' : expectedLast,
      this.threadKey(threadId, ''),
    );
  }

  // --- reads ------------------------------------------------------------------------------

  async thread(threadId: string): Promise<ThreadRecord | undefined> {
    const [meta, runIds, states] = await this.call(() =>
      Promise.all([
        this.redis.hgetall(this.threadKey(threadId, 'meta')),
        this.redis.lrange(this.threadKey(threadId, 'runs'), 0, -1),
        this.redis.hgetall(this.threadKey(threadId, 'states')),
      ]),
    );
    if (runIds.length === 0) return undefined;
    const runs = (await Promise.all(runIds.map((runId) => this.run(threadId, runId)))).filter(
      (run): run is RunRecord => run !== undefined,
    );
    if (runs.length === 0) return undefined;
    let messages = parseMessages(meta.transcript);
    const latest = runs[runs.length - 1];
    if (latest.finishedAt === null) {
      // Running: the transcript is its input; what it has produced so far comes from its log.
      const output = new OutputCollector();
      for (const event of await this.readLog(threadId, latest.runId)) output.add(event);
      messages = transcriptOf(messages, output.current());
    }
    const agentStates = Object.values(states).map((json) => JSON.parse(json) as AgentStateRecord);
    return { threadId, ...(meta.principal ? { owner: meta.principal } : {}), messages, agentStates, runs };
  }

  async owner(threadId: string): Promise<string | undefined> {
    return (await this.call(() => this.redis.hget(this.threadKey(threadId, 'meta'), 'principal'))) ?? undefined;
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
      newMessages: parseMessages(fields.newInput),
    };
  }

  /** The run's stored events, in order. */
  async readLog(threadId: string, runId: string): Promise<SequencedEvent[]> {
    const entries = await this.call(() => this.redis.xrange(this.threadKey(threadId, 'log', runId), '-', '+'));
    const events: SequencedEvent[] = [];
    for (const [, fields] of entries) events.push(...(JSON.parse(fields[1]) as SequencedEvent[]));
    return events;
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

export function parseMessages(json: string | null | undefined): Message[] {
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
