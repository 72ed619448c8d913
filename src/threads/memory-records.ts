import type { Message } from '../core/messages.js';
import type { RunStatus } from '../core/status.js';
import type { EventFeed } from './feed.js';
import type { LiveEvents } from './live-events.js';
import { OutputCollector, transcriptOf } from './log.js';
import { RUN_OVERHEAD, THREAD_OVERHEAD } from './memory-bytes.js';
import { stringBytes, unsealEvents } from './sealed-run.js';
import type { AgentStateRecord, RunRecord, ThreadSummary } from './store.js';

// The in-memory store's records (MemoryThreadStore, memory.ts): a thread and its runs as kept, what they count for,
// and how readers get them.

/**
 * A run: while it runs, its events as they come (feeds follow them); once finished, sealed (`seal`): its events one
 * flat string, its status a string unless it succeeded, so that a kept run costs about its bytes.
 */
export interface MemoryRun {
  readonly runId: string;
  /** PENDING while it runs, then its terminal status: RUN_SUCCESS, or any other as its JSON once sealed. */
  status: RunStatus | string;
  lastSequence: number;
  /** Milliseconds since the epoch. */
  readonly startedAt: number;
  finishedAt: number | null;
  /** The messages it brought to the thread, as JSON; undefined while they are the whole of the thread's input. */
  newMessages: string | undefined;
  /** Its events while it runs (live-events.ts); once finished, sealed into one string (sealed-run.ts). */
  events: LiveEvents | string;
  /** Readers following it live; made on the first (most runs never have one). */
  feeds: Set<EventFeed> | undefined;
}

export interface MemoryThread {
  threadId: string;
  /**
   * The latest run's input, as JSON (the transcript is it and what that run produced: see transcriptOfThread). Read
   * only at the next claim and by a thread read.
   */
  input: string;
  /** What `input` counts for (stringBytes), kept so that a long input is not measured again when it is replaced. */
  inputBytes: number;
  /** The ids of `input`'s messages (message-ids.ts; counted in `bytes`): a claim looks for the request's in them. */
  inputIds: string;
  /**
   * What its claim gave the run holding it, while that run has not opened: the transcript's length, its last message
   * (the very object: a later claim's are others), and the JSON of what follows the input in it (the latest run's
   * output), counted in `bytes`. A run whose input extends that transcript (RunInput's `extendsHistory`) has its
   * input's JSON joined from `input`, `output` and its new messages' instead of made again. Unset when the
   * transcript is not the input and the output joined (an id repeated).
   */
  claimed: ClaimedTranscript | undefined;
  /** Made on the first state (most threads never have one). */
  agentStates: Map<string, AgentStateRecord> | undefined;
  runs: MemoryRun[];
  /** The run holding the thread: claimed (until `claimExpires`), or running. */
  active: { runId: string; claimExpires: number | undefined } | undefined;
  bytes: number;
  touched: number;
  /** The principal it belongs to (authentication on), once claimed by one. */
  owner: string | undefined;
  /** Its list entry: the agent of its first run, its name, archived or not, and its times (ms since the epoch). */
  agentId: string;
  name: string | null;
  archived: boolean;
  createdAt: number;
  updatedAt: number;
  lastRunAt: number;
  /** Removed (`remove`) while a run still wrote to it: what it writes counts for nothing. */
  removed: boolean;
}

/** See MemoryThread.claimed. */
export interface ClaimedTranscript {
  runId: string;
  length: number;
  last: Message | undefined;
  output: string;
  /** What `output` counts for (stringBytes). */
  outputBytes: number;
  /** The ids of the output's messages (message-ids.ts). */
  outputIds: string;
  /** What `output` and `outputIds` count for. */
  bytes: number;
}

/**
 * The thread's transcript: its latest run's input and what that run produced, read from its events (kept once: a
 * finished run's text lives only in its sealed events). `inputLength`: how many of its first messages are the input;
 * `joined`: whether it is the input followed by the output (no id repeated), so that its JSON is theirs joined.
 * `output`: the latest run's output (outputOf), when the caller has read it already; `input`: the thread's input
 * parsed, when the caller has parsed it (a long thread's is megabytes of JSON).
 */
export function transcriptOfThread(
  thread: MemoryThread,
  output?: readonly Message[],
  input: Message[] = JSON.parse(thread.input) as Message[],
): {
  messages: Message[];
  inputLength: number;
  joined: boolean;
} {
  const latest = thread.runs[thread.runs.length - 1];
  if (!latest) return { messages: input, inputLength: input.length, joined: true };
  const messages = transcriptOf(input, output ?? outputOf(latest));
  // Each input message kept in place (none repeated; JSON.parse made them, so identity says it).
  const joined = input.length === 0 || messages[input.length - 1] === input[input.length - 1];
  return { messages, inputLength: input.length, joined };
}

/** The messages a run produced (read from its events: a running run's output is not kept twice while it runs). */
export function outputOf(run: MemoryRun): Message[] {
  const output = new OutputCollector();
  const events = typeof run.events === 'string' ? unsealEvents(run.events, -1) : run.events.after(-1);
  for (const event of events) output.add(event);
  return output.current();
}

/** A thread with nothing kept yet. */
export function emptyThread(threadId: string, now: number, agentId: string): MemoryThread {
  const input = '[]';
  const inputBytes = stringBytes(input);
  const inputIds = '\u0000';
  return {
    agentId,
    name: null,
    archived: false,
    createdAt: now,
    updatedAt: now,
    lastRunAt: now,
    removed: false,
    threadId,
    input,
    inputBytes,
    inputIds,
    claimed: undefined,
    agentStates: undefined,
    runs: [],
    active: undefined,
    bytes: THREAD_OVERHEAD + stringBytes(threadId) + inputBytes + stringBytes(inputIds),
    touched: now,
    owner: undefined,
  };
}

export function summaryOf(thread: MemoryThread): ThreadSummary {
  return {
    threadId: thread.threadId,
    ...(thread.owner !== undefined ? { owner: thread.owner } : {}),
    agentId: thread.agentId,
    name: thread.name,
    archived: thread.archived,
    createdAt: new Date(thread.createdAt),
    updatedAt: new Date(thread.updatedAt),
    lastRunAt: new Date(thread.lastRunAt),
  };
}

/**
 * The run's record as readers get it (a copy: what they do with it changes nothing here). `threadInput`: the thread's
 * input, as kept or already parsed (a run whose new messages are the whole input has them from it).
 */
export function recordOf(run: MemoryRun, threadInput: string | readonly Message[]): RunRecord {
  return {
    runId: run.runId,
    status: typeof run.status === 'string' ? (JSON.parse(run.status) as RunStatus) : run.status,
    lastSequence: run.lastSequence,
    startedAt: new Date(run.startedAt),
    finishedAt: run.finishedAt === null ? null : new Date(run.finishedAt),
    newMessages:
      run.newMessages !== undefined
        ? (JSON.parse(run.newMessages) as Message[])
        : typeof threadInput === 'string'
          ? (JSON.parse(threadInput) as Message[])
          : [...threadInput],
  };
}

/** Two JSON arrays' texts as one array's: `[a…]` and `[b…]` make `[a…,b…]`. */
export function joinArrays(first: string, second: string): string {
  if (first === '[]') return second;
  if (second === '[]') return first;
  return `${first.slice(0, -1)},${second.slice(1)}`;
}

/** What a run is counted for (its input is counted with the thread's while the two are one string). */
export function runBytes(run: MemoryRun): number {
  return (
    RUN_OVERHEAD +
    stringBytes(run.runId) +
    (typeof run.events === 'string' ? stringBytes(run.events) : run.events.bytes) +
    (run.newMessages !== undefined ? stringBytes(run.newMessages) : 0) +
    (typeof run.status === 'string' ? stringBytes(run.status) : 0)
  );
}
