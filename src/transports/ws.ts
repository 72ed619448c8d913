import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { execute, isIncrementalResults } from '@graphql-tools/executor';
import { GraphQLError, getOperationAST, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { CloseCode, handleProtocols, makeServer } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { OPERATION_ENDED } from '../core/abort.js';
import type { GatewayError } from '../core/errors.js';
import { MAX_NESTING, nestsDeeperThan } from '../core/depth.js';
import type { RunLauncher } from '../engine/launcher.js';
import type { GatewayContext } from '../graphql/context.js';
import { formatGraphQLError } from '../graphql/errors.js';
import { DocumentCache } from '../graphql/documents.js';
import { createSubscriber } from '../graphql/subscribe.js';
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
 * What graphql-ws keeps per connection (its `extra`): with access control on, the client's address
 * and the upgrade's Authorization header, then who was admitted. Empty otherwise: thousands are held.
 */
interface ConnectionExtra {
  facts?: ConnectionFacts;
  admitted?: Admitted;
  close?: (code: number, reason: string) => void;
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
 * subscriptions) and a way to let go of the subscribe message's variables and query.
 */
type OperationContext = GatewayContext & { controller: AbortController | undefined; releaseMessage: () => void };

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
  const { server, schema, launcher, path, cors, logger } = options;
  const subscribe = createSubscriber(schema);
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
      // operation runs; one whose credentials cannot be checked now, with 1013 (try again later).
      onConnect: access.authenticating
        ? async (ctx) => {
            const admission = await access.admitConnection(ctx.connectionParams, ctx.extra.facts ?? { clientAddress: undefined, authorization: undefined });
            if ('error' in admission) {
              if (admission.error.code === 'UNAUTHENTICATED') return false;
              logger.warn({ code: admission.error.code, transport: 'ws' }, 'a WebSocket connection could not be authenticated now');
              ctx.extra.close?.(1013, 'Try again later');
              return false;
            }
            ctx.extra.admitted = admission;
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
          // The payload of the parsed message graphql-ws holds (typed read-only for hooks): the
          // client's own, or an empty one when the transport kept the payload (slimSubscribe).
          releaseMessage: () => Object.assign(payload, { variables: undefined, query: '' }),
        };
      },
      // Parse and validate here, so that a bad document gets an `error` message with a code
      // instead of graphql-ws closing the whole socket (4500) on a syntax error.
      // Documents are kept once parsed and validated (DocumentCache), not held per operation.
      onSubscribe: (ctx, _id, handed) => {
        const payload = ctx.extra.slot ?? handed;
        ctx.extra.slot = undefined;
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
      execute: (args) => serveExecution(args),
      // Subscriptions on the lean path (graphql/subscribe.ts): one iterator per stream, no
      // per-event variable coercion; events run on the document compiled by graphql-jit.
      subscribe: (args) => serveSubscription(args, subscribe),
      onError: (_ctx, _id, _payload, errors) => errors.map(formatForWs),
      onNext: (_ctx, _id, _payload, _args, result: any) => {
        const format = (errors: GraphQLError[]) => errors.map(formatForWs);
        const incremental: any[] | undefined = result.incremental;
        if (!result.errors?.length && !incremental?.some((entry) => entry.errors?.length)) return undefined;
        return {
          ...result,
          ...(result.errors?.length ? { errors: format(result.errors) } : {}),
          ...(incremental ? { incremental: incremental.map((entry) => (entry.errors ? { ...entry, errors: format(entry.errors) } : entry)) } : {}),
        };
      },
    },
  );
  const counting = access.limiter !== undefined && access.limiter.limits.requestsPerMinute > 0;
  const needsFacts = access.authenticating || access.limiter !== undefined;
  const keepAlive = new KeepAlive(options.keepAliveMs);
  wss.on('connection', (socket, request) => {
    keepAlive.watch(socket);
    options.onConnection?.(1);
    socket.once('close', () => options.onConnection?.(-1));
    const extra: ConnectionExtra = needsFacts ? { facts: access.connectionFacts(request) } : {};
    if (access.authenticating) extra.close = (code, reason) => socket.close(code, reason);
    serveSocket(socket, protocol, logger, extra, operations);
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

  watch(socket: WebSocket): void {
    this.sockets.add(socket);
    socket.on('pong', () => this.unanswered.delete(socket));
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.unanswered.delete(socket);
    });
    this.timer ??= setInterval(() => this.sweep(), this.intervalMs);
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

/**
 * Connects one WebSocket to graphql-ws's protocol (graphql-ws's own `ws` adapter, in our words,
 * with pino instead of console); socket errors (an oversize message, a broken frame) are the
 * client's fault, logged and closed by `ws`.
 */
function serveSocket(
  socket: WebSocket,
  protocol: ReturnType<typeof makeServer<Record<string, unknown>, ConnectionExtra>>,
  logger: Logger,
  extra: ConnectionExtra,
  operations: OperationCount,
): void {
  socket.on('error', (error) => logger.info({ err: error, transport: 'ws' }, 'WebSocket error from a client'));

  const closed = protocol.opened(
    {
      protocol: socket.protocol,
      send: (data) =>
        new Promise<void>((resolve) => {
          if (socket.readyState !== socket.OPEN) return resolve();
          // A failed send means the socket is going away; its close ends the operations.
          socket.send(data, () => resolve());
        }),
      close: (code, reason) => socket.close(code, reason),
      // graphql-ws's handler for a `subscribe` resolves only when the operation ends: only the
      // message's text goes into it, so the frame's buffer is not held for the whole stream.
      onMessage: (handle) => socket.on('message', (data) => handleMessage(handle, String(data))),
    },
    // Not the upgrade request in graphql-ws's `extra`: it would be held per connection. Only the
    // facts access control needs, when it is on.
    extra,
  );
  // Not an async function: its frame would hold the message's text until the operation ends.
  const handleMessage = (handle: (data: string) => Promise<void>, text: string): void => {
    operations.started();
    const slimmed = slimSubscribe(text);
    let handled: Promise<void>;
    if (typeof slimmed === 'string') {
      handled = handle(slimmed);
    } else {
      extra.slot = slimmed.payload;
      handled = handle(slimmed.text);
      extra.slot = undefined;
    }
    handled.then(operations.ended, (error: unknown) => {
      operations.ended();
      // graphql-ws throws this for a message only a server may send (connection_ack, next, error): the client's mistake.
      if (error instanceof Error && /^Unexpected message of type /.test(error.message)) {
        logger.info({ transport: 'ws', reason: error.message }, 'a WebSocket client broke the protocol');
        socket.close(CloseCode.BadRequest, error.message);
        return;
      }
      // A payload graphql-ws echoes (a ping's, in its pong) nested too deep for JSON.stringify.
      if (error instanceof RangeError) {
        logger.info({ transport: 'ws' }, 'a WebSocket message nested too deeply');
        socket.close(CloseCode.BadRequest, `A message nests deeper than ${MAX_NESTING} levels.`);
        return;
      }
      logger.error({ err: error, transport: 'ws' }, 'unexpected error handling a WebSocket message');
      socket.close(CloseCode.InternalServerError, 'Internal server error');
    });
  };
  socket.once('close', (code, reason) => void closed(code, String(reason)));
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
 * Called once when an operation ends (its last result, an error, the client's `complete`, a closed
 * socket): a query's or mutation's signal is aborted, which stops the run it started, and one log
 * line says so. Subscriptions have no signal: ending their event stream returns its source, which
 * aborts the run (graphql/subscribe.ts).
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
function serveExecution(args: ExecutionArgs): AsyncGenerator<ExecutionResult> {
  return new OperationStream(executionParts(args), operationEnd(args));
}

async function* executionParts(args: ExecutionArgs): AsyncGenerator<ExecutionResult> {
  const result = await execute(args as Parameters<typeof execute>[0]);
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
  subscribe: (args: ExecutionArgs, onEnd: () => void) => Promise<AsyncGenerator<ExecutionResult> | ExecutionResult>,
): Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
  const end = operationEnd(args);
  let result;
  try {
    // The response stream ends the operation itself (calls `end`) however it ends: no wrapper per stream.
    result = await subscribe(args, end);
  } catch (error) {
    end();
    throw error;
  }
  if ('next' in result) {
    // graphql-ws keeps the subscribe message and these arguments until the operation ends. The run
    // has its input now and the event stream what it needs: the variables (the whole conversation,
    // parsed) and the query text are let go instead of being held for the stream's life.
    (args.contextValue as OperationContext).releaseMessage();
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
