import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import WebSocket from 'ws';
import { ERROR_CODES } from '../../src/core/errors.js';
import { runInput, userMessage } from './harness.js';

/**
 * The client side of the fuzz tests: raw HTTP and graphql-ws requests with a time limit (a hang is a
 * failure with a clear message, never a slow test), parsers for every answer format the gateway
 * speaks (JSON, multipart/mixed, GraphQL SSE, AG-UI SSE), and the oracle that every error is coded.
 */

export const KNOWN_CODES: ReadonlySet<string> = new Set(Object.keys(ERROR_CODES));

/** Generous: a loopback answer takes milliseconds; this only turns a hang into a failure. */
export const ANSWER_TIMEOUT_MS = 15_000;

/** A failed expectation, with the evidence (abridged) in its message. */
export class FuzzFailure extends Error {
  constructor(message: string, evidence?: unknown) {
    super(evidence === undefined ? message : `${message}\n  evidence: ${abridge(evidence)}`);
    this.name = 'FuzzFailure';
  }
}

export function abridge(value: unknown, max = 1500): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) return String(value);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

export function check(condition: unknown, message: string, evidence?: unknown): asserts condition {
  if (!condition) throw new FuzzFailure(message, evidence);
}

export interface RawAnswer {
  status: number;
  contentType: string;
  text: string;
}

/** POSTs exactly these bytes; fails (as a hang) if the whole answer has not arrived in time. */
export async function post(
  url: string,
  body: string | undefined,
  headers: Record<string, string | undefined>,
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<RawAnswer> {
  const signal = AbortSignal.timeout(timeoutMs);
  const clean = Object.fromEntries(
    Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  try {
    const response = await fetch(url, { method: 'POST', headers: clean, body, signal });
    const text = await response.text();
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', text };
  } catch (error) {
    if (signal.aborted)
      throw new FuzzFailure(`No complete answer within ${timeoutMs} ms (a hang) for POST ${url}`, {
        headers: clean,
        body,
      });
    throw new FuzzFailure(
      `The request failed at the transport level (connection reset or refused?): ${(error as Error)?.message} / ${String((error as { cause?: unknown })?.cause)}`,
      { url, headers: clean },
    );
  }
}

// --- GraphQL over HTTP ---------------------------------------------------------------------------

export type GraphQLError = {
  message?: unknown;
  extensions?: { code?: unknown; [key: string]: unknown };
  [key: string]: unknown;
};

/** The payloads of an answer: one for JSON, each part of multipart/mixed, each `next` of SSE. */
export function payloadsOf(answer: RawAnswer): { format: 'json' | 'multipart' | 'sse'; payloads: any[] } {
  const type = answer.contentType.toLowerCase();
  if (/^application\/(graphql-response\+)?json/.test(type)) {
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      throw new FuzzFailure(`HTTP ${answer.status} answered ${type} that is not JSON`, answer.text);
    }
    return { format: 'json', payloads: [body] };
  }
  if (type.startsWith('multipart/mixed')) {
    check(answer.status === 200, `A multipart answer with HTTP ${answer.status}`, answer.text);
    check(
      answer.text.startsWith('\r\n---\r\n'),
      'A multipart answer that does not open with \\r\\n---\\r\\n',
      answer.text,
    );
    check(
      answer.text.endsWith('\r\n-----\r\n'),
      'A multipart answer that does not end with the closing boundary (cut short?)',
      answer.text.slice(-500),
    );
    const inner = answer.text.slice('\r\n---\r\n'.length, -'\r\n-----\r\n'.length);
    const payloads = inner.split('\r\n---\r\n').map((part) => {
      const at = part.indexOf('\r\n\r\n');
      check(at >= 0, 'A multipart part without headers', part);
      try {
        return JSON.parse(part.slice(at + 4));
      } catch {
        throw new FuzzFailure('A multipart part that is not JSON', part);
      }
    });
    check(
      payloads.at(-1)?.hasNext === false,
      'The last multipart payload does not say hasNext: false',
      payloads.at(-1),
    );
    return { format: 'multipart', payloads };
  }
  if (type.startsWith('text/event-stream')) {
    check(answer.status === 200, `An SSE answer with HTTP ${answer.status}`, answer.text);
    const payloads: any[] = [];
    let completed = false;
    for (const block of answer.text.split('\n\n')) {
      const lines = block.split('\n').filter((line) => line !== '' && !line.startsWith(':'));
      if (lines.length === 0) continue;
      check(!completed, 'SSE after event: complete', block);
      const event = lines
        .find((line) => line.startsWith('event:'))
        ?.slice(6)
        .trim();
      const data = lines
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (event === 'complete') {
        completed = true;
        continue;
      }
      check(event === 'next', 'An SSE event other than next/complete', block);
      try {
        payloads.push(JSON.parse(data));
      } catch {
        throw new FuzzFailure('An SSE next event that is not JSON', block);
      }
    }
    check(completed, 'An SSE answer without event: complete (cut short?)', answer.text.slice(-500));
    return { format: 'sse', payloads };
  }
  throw new FuzzFailure(`An answer of HTTP ${answer.status} with content type "${answer.contentType}"`, answer.text);
}

/** Every GraphQL error of a payload, its incremental entries' included. */
export function errorsOf(payload: any): GraphQLError[] {
  const errors: GraphQLError[] = [];
  if (payload && Array.isArray(payload.errors)) errors.push(...payload.errors);
  if (payload && Array.isArray(payload.incremental)) {
    for (const entry of payload.incremental) if (Array.isArray(entry?.errors)) errors.push(...entry.errors);
  }
  return errors;
}

/**
 * Each error has a message and a code of ERROR_CODES, never INTERNAL_SERVER_ERROR and never a stack
 * trace. Returns the codes.
 */
export function checkCoded(errors: readonly GraphQLError[], where: string, evidence: unknown): string[] {
  return errors.map((error) => {
    check(error && typeof error === 'object', `${where}: an error that is not an object`, evidence);
    check(
      typeof error.message === 'string' && error.message.length > 0,
      `${where}: an error without a message`,
      evidence,
    );
    const code = error.extensions?.code;
    check(
      typeof code === 'string',
      `${where}: an uncoded error (no extensions.code): "${String(error.message).slice(0, 300)}"`,
      evidence,
    );
    check(KNOWN_CODES.has(code), `${where}: an error with code ${code}, which is not in ERROR_CODES`, evidence);
    check(code !== 'INTERNAL_SERVER_ERROR', `${where}: INTERNAL_SERVER_ERROR ("${String(error.message)}")`, evidence);
    check(
      !/\n\s+at .+\(.+:\d+:\d+\)/.test(JSON.stringify(error)),
      `${where}: an error carrying a stack trace`,
      evidence,
    );
    return code;
  });
}

/** HTTP statuses an answer carrying this code may have. */
function statusesFor(code: string): number[] {
  const own = (ERROR_CODES as Record<string, { status: number }>)[code]?.status;
  // Apollo's BAD_REQUEST also covers a bad method (405) and the gateway's AG-UI 415.
  if (code === 'BAD_REQUEST') return [400, 405, 415];
  // Errors raised before a run are GraphQL errors with HTTP 200 (§5.1); Apollo's bad variables are 400.
  return [own, 200].filter((status): status is number => status !== undefined);
}

export interface GraphQLAnswerSummary {
  format: 'json' | 'multipart' | 'sse';
  status: number;
  codes: string[];
  /** `generateCopilotResponse.status` when the answer carried it. */
  runStatus?: { code: string; reason?: string; details?: any };
  payloads: any[];
}

/**
 * The oracle for any GraphQL-over-HTTP answer: a JSON body (or stream of payloads) whose errors are
 * all coded, an HTTP status that goes with the codes, and, for a run, a terminal status whose failure
 * code is one of ERROR_CODES other than INTERNAL_SERVER_ERROR.
 */
export function checkGraphQLAnswer(answer: RawAnswer, what: string): GraphQLAnswerSummary {
  check(answer.status !== 500, `${what}: HTTP 500`, answer.text);
  const { format, payloads } = payloadsOf(answer);
  const codes: string[] = [];
  for (const payload of payloads) {
    check(
      payload !== null && typeof payload === 'object' && !Array.isArray(payload),
      `${what}: a payload that is not a JSON object`,
      payload,
    );
    codes.push(...checkCoded(errorsOf(payload), what, payload));
  }
  const first = payloads[0];
  if (answer.status >= 400) {
    check(format === 'json', `${what}: HTTP ${answer.status} with a streamed body`, answer.text);
    check(
      Array.isArray(first.errors) && first.errors.length > 0,
      `${what}: HTTP ${answer.status} without errors`,
      first,
    );
    const code = codes[0];
    check(statusesFor(code).includes(answer.status), `${what}: HTTP ${answer.status} does not go with ${code}`, first);
  } else {
    check(answer.status === 200, `${what}: HTTP ${answer.status}`, answer.text);
    if (format === 'json')
      check(
        'data' in first || (Array.isArray(first.errors) && first.errors.length > 0),
        `${what}: a 200 JSON answer with neither data nor errors`,
        first,
      );
  }
  const runStatus = runStatusOf(payloads);
  if (runStatus) checkRunStatus(runStatus, what);
  return { format, status: answer.status, codes, runStatus, payloads };
}

/** `generateCopilotResponse.status`, wherever a payload delivered it (the first, or a deferred one). */
export function runStatusOf(payloads: any[]): { code: string; reason?: string; details?: any } | undefined {
  let status: any;
  for (const payload of payloads) {
    const direct = payload?.data?.generateCopilotResponse?.status;
    if (direct) status = direct;
    for (const entry of payload?.incremental ?? []) {
      if (
        entry?.data?.status &&
        Array.isArray(entry.path) &&
        entry.path.length === 1 &&
        entry.path[0] === 'generateCopilotResponse'
      )
        status = entry.data.status;
    }
  }
  return status;
}

/** A run's terminal status: Success, or Failed with a reason and a known code that is not INTERNAL_SERVER_ERROR. */
export function checkRunStatus(
  status: { code: string; reason?: string; details?: any },
  what: string,
  options: { forbid?: string[] } = {},
): void {
  check(status.code === 'Success' || status.code === 'Failed', `${what}: a run status "${status.code}"`, status);
  if (status.code === 'Failed') {
    const code = status.details?.code;
    check(
      typeof code === 'string' && KNOWN_CODES.has(code),
      `${what}: a failed run without a known details.code`,
      status,
    );
    check(code !== 'INTERNAL_SERVER_ERROR', `${what}: a run failed with INTERNAL_SERVER_ERROR`, status);
    for (const forbidden of options.forbid ?? [])
      check(code !== forbidden, `${what}: a run failed with ${forbidden}`, status);
    check(
      typeof status.details?.description === 'string' && status.details.description.length > 0,
      `${what}: a failed run without a description`,
      status,
    );
  }
}

// --- graphql-ws ----------------------------------------------------------------------------------

export interface WsOutcome {
  results: FormattedExecutionResult<any, any>[];
  /** What the sink's error got: GraphQL errors (an `error` message), or a close event. */
  error?: unknown;
}

/**
 * One graphql-ws client (the `graphql-ws` package) on one socket kept open (not lazy), recording every
 * close, so a property can check that a socket survives whatever one operation did.
 */
export class WsSession {
  readonly closes: { code: number; reason: string }[] = [];
  readonly client: Client;
  private connected!: Promise<void>;

  constructor(wsUrl: string) {
    let onConnected!: () => void;
    this.connected = new Promise((resolve) => (onConnected = resolve));
    this.client = createClient({
      url: wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => {},
    });
    this.client.on('connected', () => onConnected());
    this.client.on(
      'closed',
      (event: any) => void this.closes.push({ code: event?.code, reason: String(event?.reason ?? '') }),
    );
  }

  ready(): Promise<void> {
    return withTimeout(this.connected, ANSWER_TIMEOUT_MS, 'the graphql-ws connection to be acknowledged');
  }

  /** Runs one operation to its end (complete or error); a hang is a failure. */
  run(payload: { query: string; variables?: any; operationName?: any }): Promise<WsOutcome> {
    let unsubscribe = () => {};
    const outcome = new Promise<WsOutcome>((resolve) => {
      const results: FormattedExecutionResult<any, any>[] = [];
      unsubscribe = this.client.subscribe(payload as any, {
        next: (result) => void results.push(result),
        error: (error) => resolve({ results, error }),
        complete: () => resolve({ results }),
      });
    });
    return withTimeout(outcome, ANSWER_TIMEOUT_MS, 'a graphql-ws operation to complete (a hang)', payload).finally(() =>
      unsubscribe(),
    );
  }

  dispose(): Promise<void> {
    return Promise.resolve(this.client.dispose());
  }
}

/** The GraphQL errors a graphql-ws outcome carries (its `error` message, and those of its `next` results). */
export function wsErrors(outcome: WsOutcome, what: string): GraphQLError[] {
  const errors: GraphQLError[] = [];
  for (const result of outcome.results) errors.push(...errorsOf(result));
  if (outcome.error !== undefined) {
    check(
      Array.isArray(outcome.error),
      `${what}: the operation ended with a socket error or close instead of an error message`,
      describeWsError(outcome.error),
    );
    errors.push(...(outcome.error as GraphQLError[]));
  }
  return errors;
}

export function describeWsError(error: unknown): unknown {
  if (Array.isArray(error)) return error;
  const event = error as { code?: number; reason?: string; message?: string };
  return { code: event?.code, reason: event?.reason, message: event?.message };
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string, evidence?: unknown): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FuzzFailure(`No answer within ${ms} ms waiting for ${what}`, evidence)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One raw graphql-ws socket (the `ws` package), for what the client package cannot send: messages
 * that break the protocol. Sends connection_init, waits for the ack, then the given frames, then a
 * `{ hello }` probe; resolves with how the socket ended and whether the probe was answered.
 */
export async function rawWsExchange(
  wsUrl: string,
  frames: (string | Buffer)[],
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<{ closeCode?: number; closeReason?: string; probe: 'answered' | 'closed'; received: any[] }> {
  const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
  const received: any[] = [];
  let closed: { code: number; reason: string } | undefined;
  const closing = new Promise<void>((resolve) =>
    socket.once('close', (code, reason) => {
      closed = { code, reason: String(reason) };
      resolve();
    }),
  );
  socket.on('error', () => {});
  const waitFor = (predicate: (message: any) => boolean) =>
    new Promise<boolean>((resolve) => {
      const seen = () => received.some(predicate);
      if (seen()) return resolve(true);
      const onMessage = () => {
        if (seen()) {
          socket.off('message', onMessage);
          resolve(true);
        }
      };
      socket.on('message', onMessage);
      void closing.then(() => resolve(seen()));
    });
  socket.on('message', (data) => {
    try {
      received.push(JSON.parse(String(data)));
    } catch {
      received.push({ unparsable: String(data) });
    }
  });
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      }),
      timeoutMs,
      'a WebSocket to open',
    );
    socket.send(JSON.stringify({ type: 'connection_init' }));
    const acked = await withTimeout(
      waitFor((m) => m.type === 'connection_ack'),
      timeoutMs,
      'connection_ack',
    );
    check(acked, 'No connection_ack', received);
    for (const frame of frames) {
      if (closed) break;
      socket.send(frame);
    }
    if (!closed)
      socket.send(JSON.stringify({ id: 'probe-after-fuzz', type: 'subscribe', payload: { query: '{ hello }' } }));
    const answered = await withTimeout(
      waitFor((m) => m.id === 'probe-after-fuzz' && m.type === 'complete'),
      timeoutMs,
      'the probe (or a close) after the fuzzed frames',
      frames.map((frame) => abridge(String(frame), 200)),
    );
    return { closeCode: closed?.code, closeReason: closed?.reason, probe: answered ? 'answered' : 'closed', received };
  } finally {
    socket.terminate();
  }
}

// --- AG-UI ---------------------------------------------------------------------------------------

/** The events of an AG-UI SSE answer (`data: <json>` frames; comments skipped). */
export function agUiEventsOf(text: string): any[] {
  const events: any[] = [];
  for (const block of text.split(/\n\n/)) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data === '') continue;
    try {
      events.push(JSON.parse(data));
    } catch {
      throw new FuzzFailure('An AG-UI SSE frame that is not JSON', block);
    }
  }
  return events;
}

// --- health --------------------------------------------------------------------------------------

export const PLAIN_RUN = /* GraphQL */ `
  mutation ($data: GenerateCopilotResponseInput!, $properties: JSONObject) {
    generateCopilotResponse(data: $data, properties: $properties) {
      threadId
      runId
      status {
        ... on BaseResponseStatus {
          code
        }
        ... on FailedResponseStatus {
          reason
          details
        }
      }
      messages {
        __typename
        id
        status {
          __typename
          ... on FailedMessageStatus {
            reason
          }
        }
        ... on TextMessageOutput {
          content
        }
        ... on ActionExecutionMessageOutput {
          name
          arguments
        }
        ... on ResultMessageOutput {
          result
        }
        ... on AgentStateMessageOutput {
          state
        }
      }
    }
  }
`;

/**
 * The gateway is healthy: /health answers 200, a normal run (over HTTP, through whatever model it
 * has) succeeds with text, and a fresh graphql-ws socket answers `{ hello }`.
 */
export async function assertHealthy(gateway: { url: string; wsUrl: string }, what: string): Promise<void> {
  const origin = new URL(gateway.url).origin;
  const health = await fetch(`${origin}/health`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
  check(health.status === 200, `${what}: GET /health answered ${health.status}`);
  check((await health.json()).status === 'ok', `${what}: GET /health is not {"status":"ok"}`);

  const answer = await post(
    gateway.url,
    JSON.stringify({
      query: PLAIN_RUN,
      variables: { data: runInput([userMessage('Hello, are you there?', 'health-u1')]) },
    }),
    { 'content-type': 'application/json', accept: 'application/json' },
  );
  check(answer.status === 200, `${what}: a normal run answered HTTP ${answer.status}`, answer.text);
  const body = JSON.parse(answer.text);
  const response = body.data?.generateCopilotResponse;
  check(response?.status?.code === 'Success', `${what}: a normal run did not succeed`, body);
  const text = response.messages
    .filter((m: any) => m.__typename === 'TextMessageOutput')
    .flatMap((m: any) => m.content)
    .join('');
  check(text.length > 0, `${what}: a normal run said nothing`, body);

  const session = new WsSession(gateway.wsUrl);
  try {
    const outcome = await session.run({ query: '{ hello }' });
    check(
      outcome.error === undefined && outcome.results[0]?.data?.hello === 'Hello World',
      `${what}: { hello } over graphql-ws failed`,
      outcome,
    );
  } finally {
    await session.dispose();
  }
}

/**
 * A raw graphql-ws socket kept open across operations, sending payloads as given JSON text (variables
 * too deep for JSON.stringify, which the client package would need, go through as they are).
 */
export class RawWs {
  readonly received: any[] = [];
  closed: { code: number; reason: string } | undefined;
  private readonly socket: WebSocket;
  private readonly waiters = new Set<() => void>();
  private next = 0;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data) => {
      try {
        this.received.push(JSON.parse(String(data)));
      } catch {
        this.received.push({ unparsable: String(data) });
      }
      this.wake();
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      this.wake();
    });
    socket.on('error', () => {});
  }

  static async open(wsUrl: string): Promise<RawWs> {
    const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      }),
      ANSWER_TIMEOUT_MS,
      'a WebSocket to open',
    );
    const session = new RawWs(socket);
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await session.until(() => session.received.some((m) => m.type === 'connection_ack'), 'connection_ack');
    return session;
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  private until(done: () => boolean, what: string, evidence?: unknown): Promise<void> {
    return withTimeout(
      new Promise<void>((resolve) => {
        const check = () => {
          if (done() || this.closed) {
            this.waiters.delete(check);
            resolve();
          }
        };
        this.waiters.add(check);
        check();
      }),
      ANSWER_TIMEOUT_MS,
      what,
      evidence,
    );
  }

  /** Subscribes with a payload given as JSON text; resolves with the operation's messages once it ended (or the socket closed). */
  async operation(
    payloadJson: string,
    evidence?: unknown,
  ): Promise<{ messages: any[]; end: 'complete' | 'error' | 'closed' }> {
    const id = `op-${++this.next}`;
    this.socket.send(`{"id":${JSON.stringify(id)},"type":"subscribe","payload":${payloadJson}}`);
    const mine = () => this.received.filter((m) => m.id === id);
    await this.until(
      () => mine().some((m) => m.type === 'complete' || m.type === 'error'),
      `graphql-ws operation ${id} to end (a hang)`,
      evidence,
    );
    const messages = mine();
    const end = messages.some((m) => m.type === 'error')
      ? 'error'
      : messages.some((m) => m.type === 'complete')
        ? 'complete'
        : 'closed';
    return { messages, end };
  }

  close(): void {
    this.socket.terminate();
  }
}

/** The copilotRun subscription every run-level property sends over graphql-ws. */
export const RUN_EVENTS = /* GraphQL */ `
  subscription ($data: GenerateCopilotResponseInput!, $properties: JSONObject) {
    copilotRun(data: $data, properties: $properties) {
      __typename
      ... on RunEvent {
        sequence
      }
      ... on TextMessageStartEvent {
        messageId
      }
      ... on TextMessageEndEvent {
        messageId
        messageStatus {
          __typename
        }
      }
      ... on ActionExecutionStartEvent {
        actionExecutionId
        actionName
      }
      ... on ActionExecutionEndEvent {
        actionExecutionId
        messageStatus {
          __typename
        }
      }
      ... on RunFinishedEvent {
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

/**
 * The oracle for a copilotRun over graphql-ws: either coded errors before the run (an `error` message,
 * or one `next` with errors), or events from RunStartedEvent to exactly one RunFinishedEvent, last,
 * with rising sequence numbers, every message that started ended; returns the run's status.
 */
export function checkRunEvents(
  outcome: { messages: any[]; end: 'complete' | 'error' | 'closed' },
  what: string,
  options: { forbid?: string[] } = {},
): { codes: string[]; status?: { code: string; reason?: string; details?: any } } {
  check(outcome.end !== 'closed', `${what}: the socket closed during the operation`, outcome);
  const codes: string[] = [];
  const errorMessage = outcome.messages.find((m) => m.type === 'error');
  if (errorMessage) {
    check(
      Array.isArray(errorMessage.payload) && errorMessage.payload.length > 0,
      `${what}: an error message without errors`,
      errorMessage,
    );
    codes.push(...checkCoded(errorMessage.payload, what, errorMessage));
    return { codes };
  }
  const nexts = outcome.messages.filter((m) => m.type === 'next').map((m) => m.payload);
  const withErrors = nexts.filter((payload) => errorsOf(payload).length > 0);
  if (withErrors.length) {
    for (const payload of withErrors) codes.push(...checkCoded(errorsOf(payload), what, payload));
    check(nexts.length === 1 && !nexts[0].data?.copilotRun, `${what}: errors in the middle of a run's events`, nexts);
    return { codes };
  }
  const events = nexts.map((payload) => payload?.data?.copilotRun);
  check(events.length >= 2 && events.every(Boolean), `${what}: a run without events`, nexts);
  check(
    events[0].__typename === 'RunStartedEvent',
    `${what}: the first event is not RunStartedEvent`,
    events.slice(0, 3),
  );
  const finished = events.filter((event) => event.__typename === 'RunFinishedEvent');
  check(
    finished.length === 1 && events.at(-1).__typename === 'RunFinishedEvent',
    `${what}: not exactly one RunFinishedEvent, last`,
    events.slice(-3),
  );
  for (let i = 1; i < events.length; i++)
    check(
      events[i].sequence > events[i - 1].sequence,
      `${what}: sequence numbers do not rise`,
      events.map((e) => e.sequence),
    );
  const open = new Set<string>();
  for (const event of events) {
    if (event.__typename === 'TextMessageStartEvent') open.add(event.messageId);
    if (event.__typename === 'TextMessageEndEvent') open.delete(event.messageId);
    if (event.__typename === 'ActionExecutionStartEvent') open.add(event.actionExecutionId);
    if (event.__typename === 'ActionExecutionEndEvent') open.delete(event.actionExecutionId);
  }
  check(open.size === 0, `${what}: messages left open at the end of the run`, [...open]);
  const status = events.at(-1).status;
  checkRunStatus(status, what, options);
  return { codes, status };
}

/** HTTP statuses an AG-UI JSON error with this code may have (PROTOCOL.md §8.1, §8.2). */
function agUiStatusesFor(code: string): number[] {
  if (code === 'BAD_REQUEST') return [400, 405, 415];
  const own = (ERROR_CODES as Record<string, { status: number }>)[code]?.status;
  return own === undefined ? [] : [own];
}

export interface AgUiSummary {
  kind: 'error' | 'stream' | 'json';
  code?: string;
  /** The JSON body, for a JSON answer. */
  body?: any;
  /** The terminal events of the runs in a stream (one per run). */
  terminals: any[];
  events: any[];
}

/**
 * The oracle for an AG-UI answer: a JSON error `{error, message, code}` with a known code (never
 * INTERNAL_SERVER_ERROR) and the status that goes with it; or an SSE stream whose runs each open with
 * RUN_STARTED and end with exactly one RUN_FINISHED or RUN_ERROR (a known code, never
 * INTERNAL_SERVER_ERROR), nothing after it; or, for stop and info, JSON.
 */
export function checkAgUiAnswer(
  answer: RawAnswer,
  what: string,
  options: { expectRun?: boolean; forbid?: string[] } = {},
): AgUiSummary {
  check(answer.status !== 500, `${what}: HTTP 500`, answer.text);
  if (answer.contentType.startsWith('text/event-stream')) {
    check(answer.status === 200, `${what}: an event stream with HTTP ${answer.status}`, answer.text);
    const events = agUiEventsOf(answer.text);
    if (options.expectRun)
      check(
        events.length > 0,
        `${what}: an empty event stream for a run (no RUN_STARTED, no terminal event)`,
        answer.text,
      );
    const terminals: any[] = [];
    let open = false;
    for (const [index, event] of events.entries()) {
      check(event && typeof event.type === 'string', `${what}: an event without a type`, event);
      if (!open) {
        check(
          event.type === 'RUN_STARTED',
          `${what}: ${event.type} outside a run (event ${index})`,
          events.slice(Math.max(0, index - 2), index + 2),
        );
        open = true;
        continue;
      }
      check(
        event.type !== 'RUN_STARTED',
        `${what}: RUN_STARTED inside a run that has not ended`,
        events.slice(Math.max(0, index - 2), index + 2),
      );
      if (event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR') {
        open = false;
        terminals.push(event);
        if (event.type === 'RUN_ERROR') {
          check(
            typeof event.message === 'string' && event.message.length > 0,
            `${what}: RUN_ERROR without a message`,
            event,
          );
          check(KNOWN_CODES.has(event.code), `${what}: RUN_ERROR with code ${event.code}, not in ERROR_CODES`, event);
          check(event.code !== 'INTERNAL_SERVER_ERROR', `${what}: RUN_ERROR INTERNAL_SERVER_ERROR`, event);
          for (const forbidden of options.forbid ?? [])
            check(event.code !== forbidden, `${what}: RUN_ERROR ${forbidden}`, event);
        }
      }
    }
    check(!open, `${what}: a run without RUN_FINISHED or RUN_ERROR (cut short?)`, events.slice(-3));
    if (options.expectRun)
      check(
        terminals.length === 1,
        `${what}: ${terminals.length} runs in the stream of one run`,
        events.map((event) => event.type),
      );
    return { kind: 'stream', terminals, events };
  }
  check(
    /^application\/json/.test(answer.contentType),
    `${what}: HTTP ${answer.status} with content type "${answer.contentType}"`,
    answer.text,
  );
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    throw new FuzzFailure(`${what}: HTTP ${answer.status} JSON that does not parse`, answer.text);
  }
  if (answer.status >= 400) {
    // AG-UI's form {error, message, code}; or the transport's own {errors: [{extensions: {code}}]} (a path
    // that is no AG-UI route, such as one a client normalised: /agent/../run).
    const code = body?.code ?? body?.errors?.[0]?.extensions?.code;
    check(typeof code === 'string' && KNOWN_CODES.has(code), `${what}: an AG-UI error without a known code`, body);
    check(code !== 'INTERNAL_SERVER_ERROR', `${what}: an AG-UI INTERNAL_SERVER_ERROR`, body);
    check(
      typeof (body.message ?? body.errors?.[0]?.message) === 'string' || code === 'BAD_REQUEST',
      `${what}: an AG-UI error without a message`,
      body,
    );
    check(
      agUiStatusesFor(code).includes(answer.status),
      `${what}: HTTP ${answer.status} does not go with ${code}`,
      body,
    );
    return { kind: 'error', code, body, terminals: [], events: [] };
  }
  check(
    answer.status === 200 && !options.expectRun,
    `${what}: HTTP ${answer.status} JSON where a run's event stream was expected`,
    body,
  );
  return { kind: 'json', body, terminals: [], events: [] };
}

/** The oracle for a query or mutation over graphql-ws: coded errors, and a run's terminal status when it ran. */
export function checkWsResult(
  outcome: { messages: any[]; end: 'complete' | 'error' | 'closed' },
  what: string,
  options: { forbid?: string[] } = {},
): { codes: string[]; status?: { code: string; reason?: string; details?: any } } {
  check(outcome.end !== 'closed', `${what}: the socket closed during the operation`, outcome);
  const codes: string[] = [];
  let status: any;
  for (const message of outcome.messages) {
    if (message.type === 'error') {
      check(
        Array.isArray(message.payload) && message.payload.length > 0,
        `${what}: an error message without errors`,
        message,
      );
      codes.push(...checkCoded(message.payload, what, message));
    } else if (message.type === 'next') {
      codes.push(...checkCoded(errorsOf(message.payload), what, message));
      status = runStatusOf([message.payload]) ?? status;
    }
  }
  if (status) checkRunStatus(status, what, options);
  return { codes, status };
}
