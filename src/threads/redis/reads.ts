import type { SequencedEvent } from '../../core/events.js';
import type { Message } from '../../core/messages.js';
import { RUN_SUCCESS, type RunStatus } from '../../core/status.js';
import { OutputCollector, transcriptOf } from '../log.js';
import { PENDING, type AgentStateRecord, type RunRecord, type ThreadRecord } from '../store.js';
import type { LogEntries, ScriptedRedis } from './scripts.js';

// Reads of a thread's records in Redis that must see one moment, each one script (cgReadThread, cgReadRun), and the
// parsing of what Redis keeps (hashes, logs, JSON fields) into the store's records.

/** What the reads take of RedisRecords: its connection, key names and error mapping. */
export interface ReadRecords {
  redis: ScriptedRedis;
  call<T>(command: () => Promise<T>): Promise<T>;
  threadKey(threadId: string, ...parts: string[]): string;
}

/**
 * The thread as it stands at one moment: its transcript, agent states and runs, and, while its latest run is going,
 * what that run has produced so far. Read apart, a run that ended between the reads was shown finished with the
 * transcript from before it.
 */
export async function readThread(
  records: ReadRecords,
  threadId: string,
  runningOutput: boolean,
): Promise<ThreadRecord | undefined> {
  const reply = await records.call(() =>
    records.redis.cgReadThread(
      records.threadKey(threadId, 'meta'),
      records.threadKey(threadId, 'runs'),
      records.threadKey(threadId, 'states'),
      records.threadKey(threadId, ''),
      runningOutput ? '1' : '',
    ),
  );
  if (reply.length === 0) return undefined;
  const [metaList, runIds, stateList, runLists, log] = reply;
  const meta = hashOf(metaList);
  const fields = runLists.map(hashOf);
  // The latest run with a record (the one cgReadThread read the log of).
  const latestFields = fields.findLast((hash) => hash.status !== undefined) ?? {};
  const runs = runIds
    .map((runId, index) => runFrom(runId, fields[index]))
    .filter((run): run is RunRecord => run !== undefined);
  if (runs.length === 0) return undefined;
  let messages = parseMessages(meta.transcript);
  const latest = runs[runs.length - 1];
  if (latest.finishedAt === null) {
    // Running: the transcript is its input (or what came before it, and its new messages: cgOpen's `extends`); what
    // it has produced so far comes from its log.
    if (latestFields.extends === '1') messages = [...messages, ...(latest.newMessages ?? [])];
    if (runningOutput) {
      const output = new OutputCollector();
      for (const event of eventsOf(log)) output.add(event);
      messages = transcriptOf(messages, output.current());
    }
  }
  const agentStates = Object.values(hashOf(stateList)).map((json) => JSON.parse(json) as AgentStateRecord);
  return { threadId, ...(meta.principal ? { owner: meta.principal } : {}), messages, agentStates, runs };
}

/** A run as endRun completes it (readRunToEnd). */
export interface RunToEnd {
  /** Its record; none when gone or not opened. */
  run: RunRecord | undefined;
  /** Its stored events, in order. */
  log: SequencedEvent[];
  /** Its input: the thread's transcript, and the run's new messages when its open sent only those (`extends`). */
  input: Message[];
}

/**
 * A run, its log and its input at one moment. Read apart, a run written again from nothing (a rebuild) between the
 * transcript's read and its new input's could lose that input.
 */
export async function readRunToEnd(records: ReadRecords, threadId: string, runId: string): Promise<RunToEnd> {
  const [transcript, runList, log] = await readRun(records, threadId, runId, true);
  const fields = hashOf(runList);
  const run = runFrom(runId, fields);
  const input = parseMessages(transcript);
  if (fields.extends === '1') input.push(...(run?.newMessages ?? []));
  return { run, log: eventsOf(log), input };
}

/**
 * A run's record and its log at one moment, for a follower that found its log empty: a run that ended meanwhile
 * (every event in one batch, as one that fails at once) has them all in the log read with the record.
 */
export async function readRunNow(
  records: ReadRecords,
  threadId: string,
  runId: string,
): Promise<{ run: RunRecord | undefined; log: SequencedEvent[] }> {
  const [, runList, log] = await readRun(records, threadId, runId, false);
  return { run: runFrom(runId, hashOf(runList)), log: eventsOf(log) };
}

function readRun(records: ReadRecords, threadId: string, runId: string, withTranscript: boolean) {
  return records.call(() =>
    records.redis.cgReadRun(
      records.threadKey(threadId, 'meta'),
      records.threadKey(threadId, 'run', runId),
      records.threadKey(threadId, 'log', runId),
      withTranscript ? '1' : '',
    ),
  );
}

/** A hash from HGETALL's flat field/value list, as a script answers it. */
function hashOf(list: string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) hash[list[i]] = list[i + 1];
  return hash;
}

/** A run's events from its log's entries (each entry a batch: its field `e` holds the batch's JSON). */
export function eventsOf(entries: LogEntries): SequencedEvent[] {
  const events: SequencedEvent[] = [];
  for (const [, fields] of entries) events.push(...(JSON.parse(fields[1]) as SequencedEvent[]));
  return events;
}

/** Messages from a JSON field (the transcript, a run's new input); none when absent or unreadable. */
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

/** A run's record from its hash's fields (none when it has no status: gone, or not opened). */
export function runFrom(runId: string, fields: Record<string, string>): RunRecord | undefined {
  if (!fields.status) return undefined;
  return {
    runId,
    status: fields.status === 'running' ? PENDING : statusFrom(fields.status),
    lastSequence: Number(fields.last),
    startedAt: new Date(Number(fields.startedAt)),
    finishedAt: fields.finishedAt ? new Date(Number(fields.finishedAt)) : null,
    newMessages: parseMessages(fields.newInput),
  };
}
