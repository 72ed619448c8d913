import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { execute, subscribe, isIncrementalResults } from '@graphql-tools/executor';
import type { ExecutionArgs, GraphQLError, GraphQLSchema } from 'graphql';
import { CloseCode, handleProtocols, makeServer } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { OPERATION_ENDED } from '../core/abort.js';
import type { RunLauncher } from '../engine/launcher.js';
import type { GatewayContext } from '../graphql/context.js';
import { formatGraphQLError } from '../graphql/errors.js';
import { DocumentCache } from '../graphql/documents.js';
import { allValidationRules } from '../graphql/validation.js';
import type { CorsPolicy } from './cors.js';
import type { HostPolicy } from './hosts.js';

export interface WsTransportOptions {
  server: Server;
  /** Largest accepted WebSocket message, like the HTTP body limit. */
  maxPayloadBytes: number;
  /** Introspection allowed (Sandbox on). */
  introspection: boolean;
  schema: GraphQLSchema;
  launcher: RunLauncher;
  path: string;
  cors: CorsPolicy;
  hosts: HostPolicy;
  logger: Logger;
}

/** The per-operation context plus the controller that aborts the operation's run. */
type OperationContext = GatewayContext & { controller: AbortController };

/**
 * graphql-ws on the same server, port and path as HTTP. Every operation works: the `copilotRun`
 * subscription, and queries and the mutation (with @defer/@stream, delivered as `next` messages).
 * Completing an operation or closing the socket aborts the run it started.
 */
export function attachWebSocketTransport(options: WsTransportOptions): { dispose: () => Promise<void> } {
  const { server, schema, launcher, path, cors, logger } = options;
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

  const protocol = makeServer<Record<string, unknown>, Record<string, never>>(
    {
      schema,
      context: (ctx, id): OperationContext => {
        const requestId = randomUUID();
        const controller = new AbortController();
        return {
          requestId,
          logger: logger.child({ requestId, operationId: id, transport: 'ws' }),
          signal: controller.signal,
          launcher,
          allowance: { used: false },
          acceptsIncremental: true,
          controller,
        };
      },
      // Parse and validate here, so that a bad document gets an `error` message with a code
      // instead of graphql-ws closing the whole socket (4500) on a syntax error.
      // Documents are kept once parsed and validated (DocumentCache), not held per operation.
      onSubscribe: (_ctx, _id, payload) => {
        const prepared = documents.prepare(payload.query);
        if (prepared.errors) return [...prepared.errors];
        return { schema, document: prepared.document, operationName: payload.operationName, variableValues: payload.variables };
      },
      execute: (args) => abortOnReturn(runOperation(args, execute), args),
      subscribe: (args) => abortOnReturn(runOperation(args, subscribe), args),
      onError: (_ctx, _id, _payload, errors) => errors.map((error) => formatGraphQLError(error.toJSON(), error)),
      onNext: (_ctx, _id, _payload, _args, result: any) => {
        const format = (errors: GraphQLError[]) => errors.map((error) => formatGraphQLError(error.toJSON(), error));
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
  wss.on('connection', (socket) => serveSocket(socket, protocol, logger));
  // `ws` re-emits the HTTP server's errors (such as EADDRINUSE, which listen() reports itself);
  // without a listener they would be thrown.
  wss.on('error', (error) => logger.debug({ err: error }, 'WebSocket server error'));

  return {
    dispose: async () => {
      for (const client of wss.clients) client.close(1001, 'Going away');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

const KEEP_ALIVE_MS = 12_000;

/**
 * Connects one WebSocket to graphql-ws's protocol (graphql-ws's own `ws` adapter, in our words,
 * with pino instead of console): pings every 12 s and drops a peer that does not answer; socket
 * errors (an oversize message, a broken frame) are the client's fault, logged and closed by `ws`.
 */
function serveSocket(
  socket: WebSocket,
  protocol: ReturnType<typeof makeServer<Record<string, unknown>, Record<string, never>>>,
  logger: Logger,
): void {
  socket.on('error', (error) => logger.info({ err: error, transport: 'ws' }, 'WebSocket error from a client'));
  let pongWait: NodeJS.Timeout | undefined;
  const ping = setInterval(() => {
    if (socket.readyState !== socket.OPEN) return;
    pongWait = setTimeout(() => socket.terminate(), KEEP_ALIVE_MS);
    socket.once('pong', () => clearTimeout(pongWait));
    socket.ping();
  }, KEEP_ALIVE_MS);

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
      onMessage: (handle) => socket.on('message', (data) => void handleMessage(handle, String(data))),
    },
    // No upgrade request in graphql-ws's `extra`: nothing here reads it, and it would be held per connection.
    {},
  );
  const handleMessage = async (handle: (data: string) => Promise<void>, text: string): Promise<void> => {
    try {
      await handle(text);
    } catch (error) {
      logger.error({ err: error, transport: 'ws' }, 'unexpected error handling a WebSocket message');
      socket.close(CloseCode.InternalServerError, 'Internal server error');
    }
  };
  socket.once('close', (code, reason) => {
    clearInterval(ping);
    clearTimeout(pongWait);
    void closed(code, String(reason));
  });
}

/**
 * graphql-ws always has a `next()` pending on an operation, and an async generator queues
 * `return()` behind it: the run would only hear of a `complete` or a closed socket when its next
 * event arrived, or never (a mutation without @defer/@stream). So `return()` aborts the run first.
 */
function abortOnReturn(generator: AsyncGenerator<any>, args: ExecutionArgs): AsyncGenerator<any> {
  const { controller } = args.contextValue as OperationContext;
  // After `return()`, the result the aborted run still produces must not reach the client.
  let returned = false;
  const DONE: IteratorResult<any> = { value: undefined, done: true };
  return {
    next: (...value: [] | [unknown]) => generator.next(...value).then((result) => (returned ? DONE : result)),
    return: (value?: unknown) => {
      returned = true;
      controller.abort(OPERATION_ENDED);
      return generator.return(value);
    },
    throw: (error?: unknown) => {
      returned = true;
      controller.abort(OPERATION_ENDED);
      return generator.throw(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
    [Symbol.asyncDispose]: async () => {
      controller.abort(OPERATION_ENDED);
      await generator.return(undefined);
    },
  } as AsyncGenerator<any>;
}

/**
 * Runs an operation on the tools executor (which streams @defer/@stream and async-iterable lists)
 * and always hands graphql-ws an async generator, so that graphql-ws calls `return()` when the
 * client completes the operation or the socket closes, which aborts the operation's run.
 */
async function* runOperation(args: ExecutionArgs, run: typeof execute | typeof subscribe): AsyncGenerator<any> {
  const context = args.contextValue as OperationContext;
  const started = performance.now();
  try {
    const result: any = await run(args as any);
    if (isIncrementalResults(result)) {
      // @defer/@stream over graphql-ws: the initial result, then each incremental payload.
      yield result.initialResult;
      yield* result.subsequentResults;
    } else if (result && typeof result[Symbol.asyncIterator] === 'function') {
      yield* result;
    } else {
      yield result;
    }
  } finally {
    context.controller.abort(OPERATION_ENDED);
    context.logger.info(
      { operationName: args.operationName ?? null, durationMs: Math.round(performance.now() - started) },
      'operation completed',
    );
  }
}

function isSameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}
