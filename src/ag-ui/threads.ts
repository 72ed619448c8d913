import type { BaseEvent } from '@ag-ui/core';
import { BadUserInputError, MethodNotAllowedError, NotFoundError, NotSupportedError } from '../core/errors.js';
import { idProblem } from '../core/ids.js';
import type { Message } from '../core/messages.js';
import type { Principal } from '../core/principal.js';
import { isObject } from '../core/values.js';
import type { ThreadService } from '../engine/thread-service.js';
import type { ThreadChange, ThreadSummary } from '../threads/store.js';
import { toAgUiEvent } from './events.js';
import { toAgUiMessages } from './messages.js';

/**
 * The thread list CopilotKit ≥1.50 frontends read (react-core's `useThreads`, @copilotkit/core's thread store) and
 * the thread inspection its web inspector reads, under the runtime URL:
 *
 * - `GET /threads?agentId=…&includeArchived=…&limit=…&cursor=…` → `{threads: ThreadRecord[], nextCursor}`
 * - `GET /threads/:id` → ThreadRecord
 * - `PATCH /threads/:id` `{agentId?, name?, archived?}` → ThreadRecord
 * - `POST /threads/:id/archive` `{agentId?}` → ThreadRecord
 * - `DELETE /threads/:id` `{agentId?}` → `{id, deleted: true}`
 * - `GET /threads/:id/messages` → `{messages}`; `/state` → `{state}`; `/events` → `{events}` (AG-UI events)
 *
 * The same operations come through the single route as `resource/request` envelopes (`params.path`,
 * `params.httpMethod`, `body`). Each caller sees its own threads only (ThreadService); a thread that is not the
 * caller's answers 404 as one that does not exist. `POST /threads/subscribe` (CopilotKit Intelligence's realtime
 * metadata, a Phoenix socket) is not served: 501.
 */
export interface ThreadResourceAnswer {
  status: number;
  body: unknown;
}

/**
 * One thread-resource request: `method` (GET, PATCH, POST, DELETE), `target` (the path under the runtime URL with
 * its query, as `/threads?agentId=a`), `body` (parsed JSON, or undefined). Resolves with the JSON answer; rejects
 * with a GatewayError (its status and code are the answer's).
 */
export async function threadResource(
  threads: ThreadService,
  method: string,
  target: string,
  body: unknown,
  principal: Principal | undefined,
): Promise<ThreadResourceAnswer> {
  // A path under the runtime URL, never one that names a host ("//host/…") or does not parse.
  let url: URL;
  try {
    if (!target.startsWith('/') || target.startsWith('//')) throw new TypeError('not a path');
    url = new URL(target, 'http://gateway');
  } catch {
    throw new BadUserInputError(
      'The resource path is a path under the runtime URL, such as /threads?agentId=default.',
      {
        field: 'params.path',
      },
    );
  }
  const segments = url.pathname.split('/').slice(1);
  if (segments[0] !== 'threads') {
    if (segments[0] === 'memories' || segments[0] === 'annotate')
      throw new NotSupportedError(`This gateway does not serve /${segments[0]} (CopilotKit Intelligence only).`);
    throw new NotFoundError(`No thread resource ${url.pathname}.`);
  }
  if (segments.length === 1) {
    allow(method, 'GET');
    return { status: 200, body: await list(threads, url.searchParams, principal) };
  }
  const threadId = decodeSegment(segments[1]);
  if (segments.length === 2 && threadId === 'subscribe') {
    throw new NotSupportedError(
      'Realtime thread metadata (CopilotKit Intelligence) is not served: /info says realtimeMetadata: false.',
    );
  }
  if (segments.length === 2) {
    allow(method, 'GET', 'PATCH', 'DELETE');
    const agentId = method === 'GET' ? (url.searchParams.get('agentId') ?? undefined) : agentOf(body);
    if (method === 'GET') return { status: 200, body: recordOf(await found(threads, threadId, principal, agentId)) };
    if (method === 'DELETE') {
      if (!(await threads.list.remove(threadId, principal, agentId))) throw notFound(threadId);
      return { status: 200, body: { id: threadId, deleted: true } };
    }
    const updated = await threads.list.update(threadId, changeOf(body), principal, agentId);
    if (!updated) throw notFound(threadId);
    return { status: 200, body: recordOf(updated) };
  }
  if (segments.length === 3 && segments[2] === 'archive') {
    allow(method, 'POST');
    const updated = await threads.list.update(threadId, { archived: true }, principal, agentOf(body));
    if (!updated) throw notFound(threadId);
    return { status: 200, body: recordOf(updated) };
  }
  if (segments.length === 3 && ['messages', 'state', 'events'].includes(segments[2])) {
    allow(method, 'GET');
    const agentId = url.searchParams.get('agentId') ?? undefined;
    const summary = await found(threads, threadId, principal, agentId);
    const record = await threads.thread(threadId, principal);
    if (!record) throw notFound(threadId);
    if (segments[2] === 'messages') return { status: 200, body: { messages: inspectorMessages(record.messages) } };
    if (segments[2] === 'state') {
      const state =
        record.agentStates.find((entry) => entry.agentName === summary.agentId) ?? record.agentStates.at(-1);
      return { status: 200, body: { state: state ? parseState(state.state) : {} } };
    }
    return { status: 200, body: { events: await threadEvents(threads, threadId, record.runs) } };
  }
  throw new NotFoundError(`No thread resource ${url.pathname}.`);
}

/** The thread as the list shows it, in CopilotKit's ThreadRecord shape (dates as ISO strings). */
function recordOf(summary: ThreadSummary): Record<string, unknown> {
  return {
    id: summary.threadId,
    // No organisations here: every thread is its owner's alone.
    organizationId: '',
    agentId: summary.agentId,
    createdById: summary.owner ?? '',
    name: summary.name,
    archived: summary.archived,
    createdAt: summary.createdAt.toISOString(),
    updatedAt: summary.updatedAt.toISOString(),
    lastRunAt: summary.lastRunAt.toISOString(),
  };
}

async function list(
  threads: ThreadService,
  query: URLSearchParams,
  principal: Principal | undefined,
): Promise<Record<string, unknown>> {
  const agentId = query.get('agentId');
  if (!agentId) throw new BadUserInputError("The thread list needs the query parameter 'agentId'.");
  const includeArchived = query.get('includeArchived');
  if (includeArchived !== null && includeArchived !== 'true' && includeArchived !== 'false')
    throw new BadUserInputError("includeArchived is 'true' or 'false'.");
  const limit = query.get('limit');
  if (limit !== null && !/^\d{1,6}$/.test(limit))
    throw new BadUserInputError('limit must be a whole number.', { limit: limit.slice(0, 20) });
  const page = await threads.list.page(
    {
      agentId,
      includeArchived: includeArchived === 'true',
      ...(limit !== null ? { limit: Number(limit) } : {}),
      ...(query.get('cursor') ? { cursor: query.get('cursor')! } : {}),
    },
    principal,
  );
  return { threads: page.threads.map(recordOf), nextCursor: page.nextCursor };
}

async function found(
  threads: ThreadService,
  threadId: string,
  principal: Principal | undefined,
  agentId: string | undefined,
): Promise<ThreadSummary> {
  const summary = await threads.list.summary(threadId, principal, agentId);
  if (!summary) throw notFound(threadId);
  return summary;
}

function notFound(threadId: string): NotFoundError {
  return new NotFoundError(`No thread "${threadId}".`, { details: { threadId } });
}

/** The agent a mutation's body names (the stock client sends it with every one), checked. */
function agentOf(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (!isObject(body)) throw new BadUserInputError('The body is a JSON object.');
  if (body.agentId === undefined) return undefined;
  if (typeof body.agentId !== 'string' || body.agentId === '')
    throw new BadUserInputError('agentId is a non-empty string.');
  return body.agentId;
}

/** A PATCH's change: a new name (a non-empty string), archived (a boolean), or both. */
function changeOf(body: unknown): ThreadChange {
  if (!isObject(body)) throw new BadUserInputError('A thread update is a JSON object: {agentId, name?, archived?}.');
  const unknown = Object.keys(body).filter((key) => !['agentId', 'name', 'archived'].includes(key));
  if (unknown.length)
    throw new BadUserInputError(`Unknown field '${unknown[0]}': a thread update takes name and archived.`);
  const change: ThreadChange = {};
  if (body.name !== undefined) {
    // The rest of the rule (trimmed, 1 to 200 characters) is ThreadService's, for every protocol.
    if (typeof body.name !== 'string') throw new BadUserInputError('name is a string.', { field: 'name' });
    change.name = body.name;
  }
  if (body.archived !== undefined) {
    if (typeof body.archived !== 'boolean') throw new BadUserInputError('archived is true or false.');
    change.archived = body.archived;
  }
  if (change.name === undefined && change.archived === undefined)
    throw new BadUserInputError('A thread update changes name, archived, or both.');
  return change;
}

function allow(method: string, ...allowed: string[]): void {
  if (!allowed.includes(method))
    throw new MethodNotAllowedError(
      `Method ${method} is not allowed here: ${allowed.join(', ')}.`,
      allowed.join(', '),
      {
        details: { allow: allowed.join(', ') },
      },
    );
}

function decodeSegment(segment: string): string {
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    throw new BadUserInputError('The thread id in the path is not percent-encoded properly.');
  }
  // The same check as every id a client names (no control character, no lone surrogate, at most 256 characters).
  const problem = idProblem(id);
  if (problem) throw new BadUserInputError(`The thread id in the path ${problem}.`, { field: 'threadId' });
  return id;
}

/**
 * The transcript as CopilotKit's web inspector reads it: AG-UI messages, an assistant's tool calls as
 * `{id, name, args}` (args the JSON text the model wrote).
 */
function inspectorMessages(messages: readonly Message[]): Record<string, unknown>[] {
  return toAgUiMessages(messages).map((message) => {
    if (message.role !== 'assistant' || !message.toolCalls?.length) return { ...message };
    const { toolCalls, ...rest } = message;
    return {
      ...rest,
      toolCalls: toolCalls.map((call) => ({ id: call.id, name: call.function.name, args: call.function.arguments })),
    };
  });
}

function parseState(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return {};
  }
}

/**
 * The thread's kept runs' events as AG-UI events, oldest first, each as far as it is stored (a run going on is read
 * up to its last stored event, not waited for).
 */
async function threadEvents(
  threads: ThreadService,
  threadId: string,
  runs: readonly { runId: string; lastSequence: number }[],
): Promise<BaseEvent[]> {
  const events: BaseEvent[] = [];
  for (const run of runs) {
    if (run.lastSequence < 0) continue;
    const feed = threads.follow(threadId, run.runId, -1);
    try {
      for await (const event of feed) {
        // The inspector is CopilotKit ≥1.50's: AG-UI 1.0 (reasoning included).
        const converted = toAgUiEvent(event, { threadId, runId: run.runId }, undefined, true);
        if (Array.isArray(converted)) events.push(...converted);
        else if (converted) events.push(converted);
        if (event.sequence >= run.lastSequence) break;
      }
    } finally {
      await feed.return?.();
    }
  }
  return events;
}
