import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { isIncrementalResults } from '@graphql-tools/executor';
import { GraphQLError, getOperationAST, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { CloseCode, handleProtocols, makeServer } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { OPERATION_ENDED } from '../core/abort.js';
import { GatewayError } from '../core/errors.js';
import { MAX_NESTING, nestsDeeperThan } from '../core/depth.js';
import type { RunLauncher } from '../engine/launcher.js';
import type { GatewayContext } from '../graphql/context.js';
import { formatGraphQLError } from '../graphql/errors.js';
import { DocumentCache } from '../graphql/documents.js';
import type { Executor } from '../graphql/executor.js';
import type { ResultSink } from '../graphql/fast/subscribe.js';
import { allValidationRules } from '../graphql/validation.js';
import type { AccessControl, Admitted, ConnectionFacts } from './access.js';
import { isSameOrigin, type CorsPolicy } from './cors.js';
import type { HostPolicy } from './hosts.js';
import { isObject } from '../core/values.js';

export interface WsTransportOptions {
  server: Server;
  /** Largest accepted WebSocket message, like the HTTP body limit. */
  maxPayloadBytes: number;
  /** Every socket is pinged this often; one that has not answered the previous ping is dropped. */
  keepAliveMs: number;
  /** Introspection allowed (Sandbox on). */
  introspection: boolean;
  schema: GraphQLSchema;
  /** What runs the operations (graphql/executor.ts). */
  executor: Executor;
  launcher: RunLauncher;
  path: string;
  cors: CorsPolicy;
  hosts: HostPolicy;
  logger: Logger;
  /** Authentication at connection_init, requests per minute per operation. */
  access: AccessControl;
  /** Told when a socket opens and closes (metrics). */
  onConnection?: (delta: 1 | -1) => void;
}

/**
 * What graphql-ws keeps per connection (its `extra`): the socket (subscriptions write their `next`
 * messages to it, WsResultSink), and with access control on the client's address and the upgrade's
 * Authorization header, then who was admitted. Nothing else: thousands are held.
 */
interface ConnectionExtra {
  socket?: WebSocket;
  facts?: ConnectionFacts;
  admitted?: Admitted;
  /**
   * The payload taken out of the subscribe message graphql-ws is handling (see `slimSubscribe`):
   * set just before the message is handed over, cleared just after. graphql-ws calls onSubscribe
   * synchronously within that call, or refuses the message (4401, 4409) without calling it.
   */
  slot?: SubscribePayload;
}

/** A subscribe message's payload, as graphql-ws checks it. */
interface SubscribePayload {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

/**
 * The per-operation context, plus the controller that aborts the operation's run (not for
 * subscriptions), the subscribe message's payload (let go of once a stream exists) and, for
 * subscriptions, where a pushed stream writes.
 */
type OperationContext = GatewayContext & {
  controller: AbortController | undefined;
  /**
   * The payload of the parsed message graphql-ws holds (typed read-only for hooks): the client's
   * own, or an empty one when the transport kept the payload (slimSubscribe). Emptied once a
   * subscription's stream exists (serveSubscription).
   */
  message: { variables?: unknown; query: string } | undefined;
  /** Where a subscription's results go when its stream is pushed (graphql/fast/subscribe.ts). */
  sink: ResultSink | undefined;
};

/**
 * Messages graphql-ws is still handling: a `subscribe` is handled until its operation has ended and
 * its `complete` has been sent. Closing waits for them, so that no client loses the end of its run.
 */
class OperationCount {
  private open = 0;
  private idle: (() => void)[] = [];

  started(): void {
    this.open++;
  }

  readonly ended = (): void => {
    if (--this.open > 0) return;
    for (const wake of this.idle.splice(0)) wake();
  };

  /** Resolves once no operation is in progress, or after `limitMs`. */
  settled(limitMs: number): Promise<void> {
    if (this.open <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, limitMs);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/**
 * graphql-ws on the same server, port and path as HTTP. Every operation works: the `copilotRun`
 * subscription, and queries and the mutation (with @defer/@stream, delivered as `next` messages).
 * Completing an operation or closing the socket aborts the run it started.
 */
export function attachWebSocketTransport(options: WsTransportOptions): { dispose: () => Promise<void> } {
  const { server, schema, launcher, path, cors, logger, executor } = options;
  const subscribe = executor.subscribe;
  const documents = new DocumentCache(schema, allValidationRules(options.introspection), options.introspection);
  const wss = new WebSocketServer({
    server,
    path,
    maxPayload: options.maxPayloadBytes,
    handleProtocols,
    // Browsers always send Origin; refuse cross-site pages that are not allowed, as for HTTP.
    verifyClient: ({ req }: { req: IncomingMessage }) => {
      if (!options.hosts.isAllowed(req.headers.host)) return false;
      const origin = req.headers.origin;
      return origin === undefined || cors.isAllowed(origin) || isSameOrigin(origin, req.headers.host);
    },
  });

  const { access } = options;
  const operations = new OperationCount();
  const protocol = makeServer<Record<string, unknown>, ConnectionExtra>(
    {
      schema,
      // Authentication: a connection without valid credentials is closed with 4403 before any
      // operation runs; one from an address limited for failed logins, with 4429 (graphql-ws's "too
      // many", which its client does not retry) and when to try again; one whose credentials cannot be
      // checked now, with 1013 (try again later).
      onConnect: access.authenticating
        ? async (ctx) => {
            const admission = await access.admitConnection(ctx.connectionParams, ctx.extra.facts ?? { clientAddress: undefined, authorization: undefined });
            if ('error' in admission) {
              if (admission.error.code === 'UNAUTHENTICATED') return false;
              if (admission.error.code === 'RATE_LIMITED') {
                ctx.extra.socket?.close(CloseCode.TooManyInitialisationRequests, `Too many failed logins: try again in ${admission.error.details?.retryAfterSeconds ?? 60} s`);
                return false;
              }
              logger.warn({ code: admission.error.code, transport: 'ws' }, 'a WebSocket connection could not be authenticated now');
              ctx.extra.socket?.close(1013, 'Try again later');
              return false;
            }
            ctx.extra.admitted = admission;
            const expiresAt = admission.principal?.expiresAt;
            if (expiresAt !== undefined) (ctx.extra.socket as ServedSocket | undefined)?.[CONNECTION]?.expireAt(expiresAt);
            return true;
          }
        : undefined,
      context: (ctx, id, payload, args): OperationContext => {
        const requestId = randomUUID();
        const bindings = { requestId, operationId: id, transport: 'ws' };
        // A subscription's stream stops its run when it ends; queries and mutations get a signal.
        // A subscription (held for long, thousands at once) passes its log fields on to its run's
        // logger instead of having a child logger of its own.
        const subscription = getOperationAST(args.document, args.operationName)?.operation === 'subscription';
        const controller = subscription ? undefined : new AbortController();
        return {
          requestId,
          logger: subscription ? logger : logger.child(bindings),
          logBindings: subscription ? bindings : undefined,
          signal: controller?.signal,
          launcher,
          allowance: { used: false },
          acceptsIncremental: true,
          // Browsers cannot set headers on a WebSocket: the key comes in connection_init's payload.
          publicApiKey: stringParam(ctx.connectionParams, 'x-copilotcloud-public-api-key'),
          principal: ctx.extra.admitted?.principal,
          client: ctx.extra.admitted?.client ?? (ctx.extra.facts ? `ip:${ctx.extra.facts.clientAddress ?? 'unknown'}` : undefined),
          controller,
          message: payload as OperationContext['message'],
          sink: subscription && ctx.extra.socket ? new WsResultSink(ctx.extra.socket, id) : undefined,
        };
      },
      // Parse and validate here, so that a bad document gets an `error` message with a code
      // instead of graphql-ws closing the whole socket (4500) on a syntax error.
      // Documents are kept once parsed and validated (DocumentCache), not held per operation.
      onSubscribe: (ctx, _id, handed) => {
        const payload = ctx.extra.slot ?? handed;
        ctx.extra.slot = undefined;
        // As an HTTP request with the same credentials would be: refused once they have expired.
        const expiresAt = ctx.extra.admitted?.principal?.expiresAt;
        if (expiresAt !== undefined && Date.now() >= expiresAt) return [codedError(credentialsExpired())];
        const prepare = () => {
          if (nestsDeeperThan(payload.variables) || nestsDeeperThan(payload.extensions)) {
            return [new GraphQLError(`The variables nest deeper than ${MAX_NESTING} levels.`, { extensions: { code: 'BAD_USER_INPUT' } })];
          }
          const prepared = documents.prepare(payload.query);
          if (prepared.errors) return [...prepared.errors];
          return { schema, document: prepared.document, operationName: payload.operationName, variableValues: payload.variables };
        };
        if (!counting) return prepare();
        // Every operation counts towards the client's requests per minute.
        const client = ctx.extra.admitted?.client ?? `ip:${ctx.extra.facts?.clientAddress ?? 'unknown'}`;
        return access.count(client).then((refused) => (refused ? [codedError(refused)] : prepare()));
      },
      execute: (args) => serveExecution(args, executor),
      // Subscriptions: on the fast executor the lean path (graphql/fast/subscribe.ts): one iterator per
      // stream, no per-event variable coercion; events run on the document compiled by graphql-jit.
      subscribe: (args) => serveSubscription(args, subscribe),
      onError: (_ctx, _id, _payload, errors) => errors.map(formatForWs),
      // Pushed subscriptions write their `next` messages themselves (WsResultSink) with this hook.
      // graphql-ws's `jsonMessageReplacer` and `onOperation` are not set: a pushed stream would not
      // see them. Setting one means setting it there too.
      onNext: (_ctx, _id, _payload, _args, result) => withWsErrors(result),
    },
  );
  const counting = access.limiter !== undefined && access.limiter.limits.requestsPerMinute > 0;
  const needsFacts = access.authenticating || access.limiter !== undefined;
  const keepAlive = new KeepAlive(options.keepAliveMs);
  const shared: ConnectionShared = { protocol, logger, operations, keepAlive, onConnection: options.onConnection };
  wss.on('connection', (socket, request) => {
    const extra: ConnectionExtra = needsFacts ? { socket, facts: access.connectionFacts(request) } : { socket };
    WsConnection.serve(socket, shared, extra);
  });
  // `ws` re-emits the HTTP server's errors (such as EADDRINUSE, which listen() reports itself);
  // without a listener they would be thrown.
  wss.on('error', (error) => logger.debug({ err: error }, 'WebSocket server error'));

  return {
    dispose: async () => {
      keepAlive.stop();
      // Operations whose runs have ended are still sending their last results: those go out first.
      await operations.settled(2_000);
      for (const client of wss.clients) client.close(1001, 'Going away');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/**
 * Pings every socket every `intervalMs` and drops one that has not answered the previous ping. One
 * timer for all sockets, not one (and a pong timeout) per socket: a gateway holds thousands.
 */
class KeepAlive {
  private readonly sockets = new Set<WebSocket>();
  private readonly unanswered = new Set<WebSocket>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly intervalMs: number) {}

  /** Watches a socket; its connection calls `answered` on a pong and `forget` when it closes. */
  watch(socket: WebSocket): void {
    this.sockets.add(socket);
    this.timer ??= setInterval(() => this.sweep(), this.intervalMs);
  }

  answered(socket: WebSocket): void {
    this.unanswered.delete(socket);
  }

  forget(socket: WebSocket): void {
    this.sockets.delete(socket);
    this.unanswered.delete(socket);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    for (const socket of this.sockets) {
      if (this.unanswered.has(socket)) {
        socket.terminate();
        continue;
      }
      if (socket.readyState !== socket.OPEN) continue;
      this.unanswered.add(socket);
      socket.ping();
    }
    if (this.sockets.size === 0) this.stop();
  }
}

/** What every connection of one server shares. */
interface ConnectionShared {
  protocol: ReturnType<typeof makeServer<Record<string, unknown>, ConnectionExtra>>;
  logger: Logger;
  operations: OperationCount;
  keepAlive: KeepAlive;
  onConnection: ((delta: 1 | -1) => void) | undefined;
}

/** A connection's expiring credentials (WsConnection.expireAt). */
interface Expiry {
  /** Milliseconds since the epoch. */
  at: number;
  timer: NodeJS.Timeout | undefined;
  /** The connection's messages in progress since the expiry was set (a `subscribe`: until its operation has ended). */
  inProgress: number;
  /** The time has come: the connection closes once `inProgress` is 0. */
  due: boolean;
}

/** The longest delay setTimeout takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** An operation asked on a connection whose credentials have expired. */
function credentialsExpired(): GatewayError {
  return new GatewayError('UNAUTHENTICATED', 'The connection\'s credentials have expired: connect again with fresh ones.');
}

/** Where a socket's shared listeners find its connection. */
const CONNECTION = Symbol('graphql-ws connection');
type ServedSocket = WebSocket & { [CONNECTION]?: WsConnection };

/**
 * Connects one WebSocket to graphql-ws's protocol (graphql-ws's own `ws` adapter, in our words,
 * with pino instead of console); socket errors (an oversize message, a broken frame) are the
 * client's fault, logged and closed by `ws`.
 *
 * The connection is the socket graphql-ws is given (`send`, `close`, `onMessage` are its methods),
 * and the socket's listeners are functions of this module that find it on the socket: a gateway
 * holds thousands of connections, and a closure (with its scope) per listener and per method was
 * about half a kilobyte of each.
 */
class WsConnection {
  private handle: ((data: string) => Promise<void>) | undefined;
  private readonly closed: (code?: number, reason?: string) => Promise<void>;
  /** Set when the connection's credentials expire (Principal.expiresAt). */
  private expiry: Expiry | undefined;

  static serve(socket: ServedSocket, shared: ConnectionShared, extra: ConnectionExtra): void {
    socket[CONNECTION] = new WsConnection(socket, shared, extra);
  }

  private constructor(
    private readonly socket: ServedSocket,
    private readonly shared: ConnectionShared,
    private readonly extra: ConnectionExtra,
  ) {
    shared.keepAlive.watch(socket);
    shared.onConnection?.(1);
    socket.on('pong', onSocketPong);
    socket.on('error', onSocketError);
    socket.on('message', onSocketMessage);
    socket.once('close', onSocketClose);
    // Not the upgrade request in graphql-ws's `extra`: it would be held per connection. Only the
    // facts access control needs, when it is on.
    this.closed = shared.protocol.opened(this, extra);
  }

  get protocol(): string {
    return this.socket.protocol;
  }

  send(data: string): Promise<void> {
    const socket = this.socket;
    return new Promise<void>((resolve) => {
      if (socket.readyState !== socket.OPEN) return resolve();
      // A failed send means the socket is going away; its close ends the operations.
      socket.send(data, () => resolve());
    });
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }

  // graphql-ws's handler for a `subscribe` resolves only when the operation ends: only the
  // message's text goes into it, so the frame's buffer is not held for the whole stream.
  onMessage(handle: (data: string) => Promise<void>): void {
    this.handle = handle;
  }

  // Not an async function: its frame would hold the message's text until the operation ends.
  receive(text: string): void {
    const { handle, extra, shared } = this;
    if (!handle) return;
    shared.operations.started();
    const expiry = this.expiry;
    if (expiry) expiry.inProgress++;
    const slimmed = slimSubscribe(text);
    let handled: Promise<void>;
    if (typeof slimmed === 'string') {
      handled = handle(slimmed);
    } else {
      extra.slot = slimmed.payload;
      handled = handle(slimmed.text);
      extra.slot = undefined;
    }
    // Without an expiry (no authentication, API keys), no second closure per message of the held streams.
    const handledOk = expiry === undefined ? shared.operations.ended : () => {
      shared.operations.ended();
      this.onMessageHandled(expiry);
    };
    handled.then(handledOk, (error: unknown) => {
      handledOk();
      this.failed(error);
    });
  }

  /**
   * The credentials expire at `at`: operations asked after it are refused (onSubscribe), those under
   * way go on to their end, as an HTTP stream does, and the connection is closed with 4403 as soon as
   * none is left, so that a client (graphql-ws retries 4403) connects again with fresh credentials.
   */
  expireAt(at: number): void {
    // Authentication may end after the socket has closed (graphql-ws does not look): no timer then,
    // which would hold the connection until the expiry.
    const { socket } = this;
    if (socket.readyState !== socket.OPEN) return;
    const expiry: Expiry = { at, timer: undefined, inProgress: 0, due: false };
    this.expiry = expiry;
    this.awaitExpiry(expiry);
  }

  private awaitExpiry(expiry: Expiry): void {
    // setTimeout waits at most 2^31 - 1 ms (about 24.8 days); a later expiry is looked at again then.
    expiry.timer = setTimeout(() => this.expiryCame(expiry), Math.min(Math.max(expiry.at - Date.now(), 0), MAX_TIMER_MS));
    expiry.timer.unref();
  }

  private expiryCame(expiry: Expiry): void {
    if (Date.now() < expiry.at) return this.awaitExpiry(expiry);
    expiry.timer = undefined;
    expiry.due = true;
    if (expiry.inProgress === 0) this.closeExpired();
  }

  /** A message counted under the expiry has been handled (a `subscribe`: its operation has ended). */
  private onMessageHandled(expiry: Expiry): void {
    if (--expiry.inProgress === 0 && expiry.due) this.closeExpired();
  }

  private closeExpired(): void {
    const { socket, shared } = this;
    if (socket.readyState !== socket.OPEN) return;
    shared.logger.info({ transport: 'ws' }, 'a WebSocket connection\'s credentials expired: closed');
    socket.close(CloseCode.Forbidden, 'Forbidden: the credentials have expired');
  }

  private failed(error: unknown): void {
    const { socket, shared } = this;
    // graphql-ws throws this for a message only a server may send (connection_ack, next, error): the client's mistake.
    if (error instanceof Error && /^Unexpected message of type /.test(error.message)) {
      shared.logger.info({ transport: 'ws', reason: error.message }, 'a WebSocket client broke the protocol');
      socket.close(CloseCode.BadRequest, error.message);
      return;
    }
    // A payload graphql-ws echoes (a ping's, in its pong) nested too deep for JSON.stringify.
    if (error instanceof RangeError) {
      shared.logger.info({ transport: 'ws' }, 'a WebSocket message nested too deeply');
      socket.close(CloseCode.BadRequest, `A message nests deeper than ${MAX_NESTING} levels.`);
      return;
    }
    shared.logger.error({ err: error, transport: 'ws' }, 'unexpected error handling a WebSocket message');
    socket.close(CloseCode.InternalServerError, 'Internal server error');
  }

  ended(code: number, reason: string): void {
    const { socket, shared } = this;
    if (this.expiry) clearTimeout(this.expiry.timer);
    shared.onConnection?.(-1);
    shared.keepAlive.forget(socket);
    void this.closed(code, reason);
  }

  answered(): void {
    this.shared.keepAlive.answered(this.socket);
  }

  logError(error: Error): void {
    this.shared.logger.info({ err: error, transport: 'ws' }, 'WebSocket error from a client');
  }
}

function onSocketMessage(this: ServedSocket, data: RawData): void {
  this[CONNECTION]?.receive(String(data));
}

function onSocketClose(this: ServedSocket, code: number, reason: Buffer): void {
  this[CONNECTION]?.ended(code, String(reason));
}

function onSocketPong(this: ServedSocket): void {
  this[CONNECTION]?.answered();
}

function onSocketError(this: ServedSocket, error: Error): void {
  this[CONNECTION]?.logError(error);
}

/**
 * graphql-ws's handler for a message is an async function that runs until the operation ends, and
 * holds the text it was given all that time. A subscribe message carries the whole conversation
 * (a real one is tens of kilobytes), so it goes to graphql-ws without its payload (an empty query),
 * and onSubscribe, which graphql-ws calls within the same call, takes the payload from the
 * connection's slot. Anything that is not a well-formed subscribe message by graphql-ws's own
 * checks goes as it came, for graphql-ws to judge; so do short ones, which hold little.
 */
function slimSubscribe(text: string): string | { text: string; payload: SubscribePayload } {
  if (text.length < 256 || !text.includes('"subscribe"')) return text;
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return text;
  }
  if (!isSubscribeMessage(message)) return text;
  return { text: JSON.stringify({ id: message.id, type: 'subscribe', payload: { query: '' } }), payload: message.payload };
}

/** graphql-ws's checks of a subscribe message (its validateMessage), all of them. */
function isSubscribeMessage(message: unknown): message is { id: string; type: 'subscribe'; payload: SubscribePayload } {
  if (!isObject(message) || message.type !== 'subscribe' || typeof message.id !== 'string' || message.id === '') return false;
  const payload = message.payload;
  return (
    isObject(payload) &&
    typeof payload.query === 'string' &&
    (payload.variables == null || isObject(payload.variables)) &&
    (payload.operationName == null || typeof payload.operationName === 'string') &&
    (payload.extensions == null || isObject(payload.extensions))
  );
}

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;

/**
 * The `next` messages of a pushed subscription (graphql/fast/subscribe.ts), written straight to the
 * socket: graphql-ws's own `next` for a result, with the same hook (`onNext`: errors formatted for
 * the client), the same message (`{"id","type":"next","payload"}`, stringified the same way) and the
 * same pace (the next event is executed once this one is written). What it saves is graphql-ws's
 * loop step per event: a pending promise and its reactions per stream, replaced at every token (and
 * so promoted to the old generation), and an async step with two more per message. graphql-ws still
 * does everything else: the handshake, `complete` and `error` messages, and ending the operation.
 * graphql-ws would check each message before sending it; these always pass (a non-empty id, an
 * object payload). test/ws.test.ts compares the frames with those graphql-ws's own server sends for
 * the same results.
 */
class WsResultSink implements ResultSink {
  constructor(
    private readonly socket: WebSocket,
    private readonly id: string,
  ) {}

  send(result: ExecutionResult, written: () => void): void {
    const socket = this.socket;
    if (socket.readyState !== socket.OPEN) {
      // Going away: its close ends the operation.
      queueMicrotask(written);
      return;
    }
    // `written` ignores the error ws passes a failed write: the socket's close ends the operation.
    socket.send(nextMessage(this.id, result), written);
  }
}

/** A `next` message as graphql-ws makes one: the `onNext` hook's payload, or the result with its errors as JSON. */
export function nextMessage(id: string, result: ExecutionResult): string {
  let payload: unknown = withWsErrors(result);
  if (!payload) {
    if ('errors' in result) {
      const { errors, ...rest } = result;
      payload = errors ? { ...rest, errors: errors.map((error) => error.toJSON()) } : rest;
    } else {
      payload = result;
    }
  }
  return JSON.stringify({ id, type: 'next', payload });
}

/** The `onNext` hook: a result with errors gets them formatted for the client (and coded); others pass (undefined). */
export function withWsErrors(result: ExecutionResult & { incremental?: readonly { errors?: readonly GraphQLError[] }[] }): ExecutionResult | undefined {
  const incremental = result.incremental;
  if (!result.errors?.length && !incremental?.some((entry) => entry.errors?.length)) return undefined;
  const format = (errors: readonly GraphQLError[]) => errors.map(formatForWs);
  return {
    ...result,
    ...(result.errors?.length ? { errors: format(result.errors) } : {}),
    ...(incremental ? { incremental: incremental.map((entry) => (entry.errors ? { ...entry, errors: format(entry.errors) } : entry)) } : {}),
  } as ExecutionResult;
}

/**
 * Called once when an operation ends (its last result, an error, the client's `complete`, a closed
 * socket): a query's or mutation's signal is aborted, which stops the run it started, and one log
 * line says so. Subscriptions have no signal: ending their event stream returns its source, which
 * aborts the run (graphql/fast/subscribe.ts).
 */
function operationEnd(args: ExecutionArgs): () => void {
  const context = args.contextValue as OperationContext;
  const started = performance.now();
  return () => {
    context.controller?.abort(OPERATION_ENDED);
    context.logger.info(
      { ...context.logBindings, operationName: args.operationName ?? null, durationMs: Math.round(performance.now() - started) },
      'operation completed',
    );
  };
}

/**
 * Queries and the mutation: an iterator handed over at once, before the result is ready, so that a
 * `complete` while a plain (not streamed) mutation waits for its run reaches `return()` and stops it.
 */
function serveExecution(args: ExecutionArgs, executor: Executor): AsyncGenerator<ExecutionResult> {
  return new OperationStream(executionParts(args, executor), operationEnd(args));
}

async function* executionParts(args: ExecutionArgs, executor: Executor): AsyncGenerator<ExecutionResult> {
  // The executor as Apollo runs it for HTTP.
  const result = await executor.execute(args);
  if (isIncrementalResults(result)) {
    // @defer/@stream over graphql-ws: the initial result, then each incremental payload.
    yield result.initialResult as ExecutionResult;
    yield* result.subsequentResults as AsyncIterable<ExecutionResult>;
  } else {
    yield result as ExecutionResult;
  }
}

/** Subscriptions: the response stream (or the error result) once the source stream exists. */
async function serveSubscription(
  args: ExecutionArgs,
  subscribe: (args: ExecutionArgs, onEnd: () => void, sink?: ResultSink) => Promise<AsyncGenerator<ExecutionResult> | ExecutionResult>,
): Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
  const context = args.contextValue as OperationContext;
  const end = operationEnd(args);
  let result;
  try {
    // The response stream ends the operation itself (calls `end`) however it ends: no wrapper per stream.
    result = await subscribe(args, end, context.sink);
  } catch (error) {
    end();
    throw error;
  }
  if ('next' in result) {
    // graphql-ws keeps the subscribe message and these arguments until the operation ends. The run
    // has its input now and the event stream what it needs: the variables (the whole conversation,
    // parsed) and the query text are let go instead of being held for the stream's life.
    if (context.message) Object.assign(context.message, { variables: undefined, query: '' });
    context.message = undefined;
    args.variableValues = undefined;
    return result;
  }
  end();
  return result;
}

/**
 * An operation's results as graphql-ws iterates them. graphql-ws always has a `next()` pending, and
 * an async generator would queue `return()` behind it: the run would hear of a `complete` or a closed
 * socket only when its next event arrived, or never. So `return()` ends the operation at once (its
 * signal aborts the run) and anything the ending run still produces is not passed on. Written with
 * `then` and handlers made once per operation: an operation spends its life waiting for its next
 * result, and an awaiting async method holds a frame, two closures and two promises for it.
 */
class OperationStream implements AsyncGenerator<ExecutionResult> {
  private ended = false;

  constructor(
    private readonly results: AsyncIterator<ExecutionResult>,
    private readonly onEnd: () => void,
  ) {}

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.ended) return Promise.resolve(DONE);
    return this.results.next().then(this.onResult, this.onError);
  }

  private readonly onResult = (result: IteratorResult<ExecutionResult>): IteratorResult<ExecutionResult> => {
    if (this.ended) return DONE;
    if (result.done) this.end();
    return result;
  };

  private readonly onError = (error: unknown): never => {
    this.end();
    throw error;
  };

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.end();
    await this.results.return?.();
    return DONE;
  }

  async throw(error?: unknown): Promise<IteratorResult<ExecutionResult>> {
    this.end();
    await this.results.return?.();
    throw error;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }
}

/** An error as a WebSocket client gets it: the gateway's shape, without Apollo's HTTP-only `http` extension. */
function formatForWs(error: GraphQLError) {
  const formatted = formatGraphQLError(error.toJSON(), error);
  if (formatted.extensions && 'http' in formatted.extensions) {
    const { http: _http, ...extensions } = formatted.extensions;
    return { ...formatted, extensions };
  }
  return formatted;
}

/** A refusal as graphql-ws's `error` message carries it: a GraphQLError with the code and details in its extensions. */
function codedError(error: GatewayError): GraphQLError {
  return new GraphQLError(error.message, { extensions: { code: error.code, ...(error.details ? { details: error.details } : {}) } });
}

function stringParam(params: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = params?.[name];
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}
