import { expect } from '@jest/globals';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { MemoryThreadStore, type MemoryThreadStoreOptions } from '../../src/threads/memory.js';

// What the thread tests share: GraphQL over HTTP, subscriptions over graphql-ws with a real client, a memory store.

/** A memory thread store with generous bounds (a test narrows the one it is about). */
export function memoryStore(options: Partial<MemoryThreadStoreOptions> = {}): MemoryThreadStore {
  return new MemoryThreadStore({
    ttlSeconds: 3600,
    maxRunsPerThread: 20,
    maxThreads: 1000,
    maxBytes: 1 << 30,
    claimTimeoutMs: 60_000,
    ...options,
  });
}

/** POSTs a GraphQL operation; resolves with the JSON answer. */
export async function gql(url: string, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

/** Every event field a thread test reads. */
const EVENT_FIELDS = /* GraphQL */ `
  __typename
  ... on RunEvent { sequence }
  ... on RunStartedEvent { threadId runId }
  ... on TextMessageStartEvent { messageId }
  ... on TextMessageContentEvent { messageId content }
  ... on TextMessageEndEvent { messageId messageStatus { __typename } }
  ... on AgentStateMessageEvent { agentName state }
  ... on RunFinishedEvent { status { ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } }
`;

export const COPILOT_RUN = /* GraphQL */ `
  subscription Run($data: GenerateCopilotResponseInput!, $onDisconnect: RunDisconnectPolicy) {
    copilotRun(data: $data, onDisconnect: $onDisconnect) { ${EVENT_FIELDS} }
  }
`;

export const JOIN_RUN = /* GraphQL */ `
  subscription Join($threadId: ID!, $runId: ID, $afterSequence: Int) {
    joinCopilotRun(threadId: $threadId, runId: $runId, afterSequence: $afterSequence) { ${EVENT_FIELDS} }
  }
`;

export const THREAD = /* GraphQL */ `
  query Thread($threadId: ID!) {
    copilotThread(threadId: $threadId) {
      threadId
      messages {
        __typename
        id
        ... on TextMessageOutput {
          role
          content
        }
        ... on ActionExecutionMessageOutput {
          name
          arguments
        }
        ... on ResultMessageOutput {
          result
        }
      }
      agentStates {
        agentName
        nodeName
        state
        running
        runId
      }
      runs {
        runId
        lastSequence
        startedAt
        finishedAt
        status {
          ... on BaseResponseStatus {
            code
          }
          ... on FailedResponseStatus {
            reason
            details
          }
        }
      }
    }
  }
`;

export const STOP = /* GraphQL */ `
  mutation Stop($threadId: ID!, $runId: ID) {
    stopCopilotRun(threadId: $threadId, runId: $runId)
  }
`;

/** A subscription's results as they come, with a promise of its end. */
export interface Watch {
  events: any[];
  errors: unknown[];
  /** Resolves when the subscription completes or fails. */
  done: Promise<void>;
  /** Resolves once `count` events have arrived. */
  received(count: number): Promise<void>;
  /** Leaves: the client's socket is closed. */
  leave(): Promise<void>;
}

/** Subscribes with a graphql-ws client of its own (one socket per watch, as separate browsers would). */
export function watch(wsUrl: string, query: string, variables: Record<string, unknown>): Watch {
  const client: Client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
  const events: any[] = [];
  const errors: unknown[] = [];
  let waiters: { count: number; resolve: () => void }[] = [];
  const wake = () => {
    waiters = waiters.filter((waiter) => {
      if (events.length < waiter.count) return true;
      waiter.resolve();
      return false;
    });
  };
  const done = new Promise<void>((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (result: any) => {
          if (result.errors) errors.push(...result.errors);
          else events.push(Object.values(result.data)[0]);
          wake();
        },
        error: (error) => {
          errors.push(error);
          resolve();
        },
        complete: () => resolve(),
      },
    );
  });
  void done.then(() => {
    for (const waiter of waiters) waiter.resolve();
    waiters = [];
    void client.dispose();
  });
  return {
    events,
    errors,
    done,
    received: (count) =>
      new Promise<void>((resolve) => {
        waiters.push({ count, resolve });
        wake();
      }),
    leave: () => Promise.resolve(client.dispose()),
  };
}

/** The text of a run's events: its content chunks joined. */
export function textOfEvents(events: any[]): string {
  return events
    .filter((event) => event.__typename === 'TextMessageContentEvent')
    .map((event) => event.content)
    .join('');
}

/** Polls `read` until `check` holds for what it returns (for effects with no event to await). */
export async function until<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for: ${what} (last: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * A run's events as its Redis log stores them (one entry per write, each a JSON array of events),
 * unmerged: what every join of the run replays.
 */
export async function storedLog(redisUrl: string, keyPrefix: string, threadId: string, runId: string): Promise<any[]> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl);
  try {
    const entries = await redis.xrange(`${keyPrefix}{${threadId}}:log:${runId}`, '-', '+');
    return entries.flatMap(([, fields]) => JSON.parse(fields[1]) as any[]);
  } finally {
    redis.disconnect();
  }
}

/**
 * Events with consecutive chunks of one message (or argument stream) joined, each joined chunk
 * carrying its last part's number, as a client behind the run gets them: so that two views of one
 * log compare whatever their readers' speeds. Takes the stored form (`type`) or a subscription's
 * (`__typename`); keeps the type, sequence, ids and text.
 */
export function compactEvents(events: any[]): { type: string; sequence: number; id?: string; text?: string }[] {
  const compact: { type: string; sequence: number; id?: string; text?: string }[] = [];
  for (const event of events) {
    const type = String(event.type ?? event.__typename).replace(/Event$/, '');
    const id = event.messageId ?? event.actionExecutionId;
    const text =
      type === 'TextMessageContent' ? event.content : type === 'ActionExecutionArgs' ? event.args : undefined;
    const last = compact.at(-1);
    if (text !== undefined && last && last.type === type && last.id === id) {
      last.text += text;
      last.sequence = event.sequence;
    } else {
      compact.push({
        type,
        sequence: event.sequence,
        ...(id === undefined ? {} : { id }),
        ...(text === undefined ? {} : { text }),
      });
    }
  }
  return compact;
}

/**
 * Holds that a run's stored log begins with what a client was shown, sequence for sequence: the
 * stored events up to the last number the client got are, joined as a reader behind would get them,
 * exactly the client's events.
 */
export function expectLogBeginsWith(log: any[], seen: any[]): void {
  const last = seen.at(-1)?.sequence ?? -1;
  expect(compactEvents(log.filter((event) => event.sequence <= last))).toEqual(compactEvents(seen));
}

/**
 * A run over graphql-ws, read for its ids alone: the ids its text messages started with, and the parent message its
 * (first) action call names.
 */
export async function startedIds(
  wsUrl: string,
  data: Record<string, unknown>,
): Promise<{ texts: string[]; callParent: string | null | undefined }> {
  const run = watch(
    wsUrl,
    /* GraphQL */ `
      subscription Run($data: GenerateCopilotResponseInput!) {
        copilotRun(data: $data) {
          __typename
          ... on TextMessageStartEvent {
            messageId
          }
          ... on ActionExecutionStartEvent {
            actionExecutionId
            parentMessageId
          }
        }
      }
    `,
    { data },
  );
  await run.done;
  expect(run.errors).toEqual([]);
  return {
    texts: run.events.filter((e) => e.__typename === 'TextMessageStartEvent').map((e) => e.messageId),
    callParent: run.events.find((e) => e.__typename === 'ActionExecutionStartEvent')?.parentMessageId,
  };
}
