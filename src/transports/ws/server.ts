// graphql-ws over `ws`, one concern per file (in the manner of graphql-ws's own `use/ws.ts`):
// server.ts          the WebSocket server on the HTTP server: the upgrade's checks, graphql-ws's hooks, dispose
// connection.ts      one socket served by graphql-ws's protocol: its messages, its credentials' expiry
// keep-alive.ts      pings every socket, drops those that stop answering
// admission.ts       who may connect, and which operations (authentication, expiry, requests per minute)
// operations.ts      serving one operation: its context, its results, its run's end
// messages.ts        what a client is sent: a pushed subscription's `next` messages, errors as it gets them
// slim-subscribe.ts  a subscribe message handed to graphql-ws without its (large) payload
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { GraphQLSchema } from 'graphql';
import { handleProtocols, makeServer } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { ShuttingDownError } from '../../core/errors.js';
import { DRAIN_REFUSAL_HEADER, drainRefusalStatus } from '../../engine/drain.js';
import type { RunLauncher } from '../../engine/launcher.js';
import { DocumentCache } from '../../graphql/documents.js';
import type { Executor } from '../../graphql/executor.js';
import { allValidationRules } from '../../graphql/validation.js';
import type { AccessControl } from '../access.js';
import { isSameOrigin, type CorsPolicy } from '../cors.js';
import type { HostPolicy } from '../hosts.js';
import { connectionAuthentication, operationAdmission } from './admission.js';
import {
  OperationCount,
  WsConnection,
  connectionIdle,
  type ConnectionExtra,
  type ConnectionShared,
} from './connection.js';
import { KeepAlive } from './keep-alive.js';
import { countWebSocketInput } from './input.js';
import type { InputBudget } from '../../core/input-budget.js';
import { formatForWs, withWsErrors } from './messages.js';
import { operationContext, serveExecution, serveSubscription } from './operations.js';
import type { AnswerOutput } from '../slow-readers.js';

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
  /** Whether the gateway is draining: new sockets are refused (their runs would be). */
  draining?: () => boolean;
  /** The input held at once (maxBufferedInputMb): messages being received count in it (input.ts). */
  inputBudget?: InputBudget;
  /**
   * Where an operation's runs are counted for its connection's output while its client does not read, until the
   * operation ends (SlowReaderGuard.output); none: not counted.
   */
  holdOutput?: (socket: Socket) => AnswerOutput;
}

/**
 * graphql-ws on the same server, port and path as HTTP. Every operation works: the `copilotRun`
 * subscription, and queries and the mutation (with @defer/@stream, delivered as `next` messages).
 * Completing an operation or closing the socket aborts the run it started.
 */
type VerifyCallback = (ok: boolean, status?: number, body?: string, headers?: Record<string, string>) => void;

/**
 * The answer to a handshake refused while draining: SHUTTING_DOWN in GraphQL's error shape, as over HTTP (the
 * header names as `ws` spells its own, which these replace).
 */
function drainingUpgradeRefusal(): { body: string; headers: Record<string, string> } {
  const refusal = new ShuttingDownError(
    'This gateway instance is shutting down and takes no new WebSocket connections; connect again (another ' +
      'instance will answer).',
    { details: { retryAfterSeconds: 1 } },
  );
  const body = JSON.stringify({
    errors: [{ message: refusal.message, extensions: { code: refusal.code, details: refusal.details } }],
  });
  return { body, headers: { 'Content-Type': 'application/json; charset=utf-8', 'Retry-After': '1' } };
}

export function attachWebSocketTransport(options: WsTransportOptions): {
  dispose: () => Promise<void>;
  drain: () => void;
} {
  const { server, schema, launcher, path, cors, logger, executor } = options;
  const subscribe = executor.subscribe;
  const documents = new DocumentCache(schema, allValidationRules(options.introspection), options.introspection);
  const wss = new WebSocketServer({
    server,
    path,
    maxPayload: options.maxPayloadBytes,
    handleProtocols,
    // Browsers always send Origin; refuse cross-site pages that are not allowed, as for HTTP.
    verifyClient: ({ req }: { req: IncomingMessage }, accept: VerifyCallback) => {
      if (!options.hosts.isAllowed(req.headers.host)) return accept(false);
      const origin = req.headers.origin;
      if (!(origin === undefined || cors.isAllowed(origin) || isSameOrigin(origin, req.headers.host))) {
        return accept(false);
      }
      // Draining: every run this socket asked for would be refused. The handshake is refused instead, before
      // anything was done, so that the client (or a proxy that asked for 421: engine/drain.ts) connects to
      // another instance.
      if (options.draining?.()) {
        const refusal = drainingUpgradeRefusal();
        return accept(false, drainRefusalStatus(req.headers[DRAIN_REFUSAL_HEADER]), refusal.body, refusal.headers);
      }
      accept(true);
    },
  });

  const { access } = options;
  const operations = new OperationCount();
  const protocol = makeServer<Record<string, unknown>, ConnectionExtra>({
    schema,
    onConnect: connectionAuthentication(access, logger),
    context: operationContext(launcher, logger, options.holdOutput),
    onSubscribe: operationAdmission(access, schema, documents),
    execute: (args) => serveExecution(args, executor),
    // Subscriptions: on the fast executor the lean path (graphql/fast/subscribe.ts): one iterator per
    // stream, no per-event variable coercion; events run on the document compiled by graphql-jit.
    subscribe: (args) => serveSubscription(args, subscribe),
    onError: (_ctx, _id, _payload, errors) => errors.map((error) => formatForWs(error, options.introspection)),
    // Pushed subscriptions write their `next` messages themselves (WsResultSink) with this hook.
    // graphql-ws's `jsonMessageReplacer` and `onOperation` are not set: a pushed stream would not
    // see them. Setting one means setting it there too.
    onNext: (_ctx, _id, _payload, _args, result) => withWsErrors(result, options.introspection),
  });
  const needsFacts = access.authenticating || access.limiter !== undefined;
  const keepAlive = new KeepAlive(options.keepAliveMs);
  const shared: ConnectionShared = { protocol, logger, operations, keepAlive, onConnection: options.onConnection };
  wss.on('connection', (socket, request) => {
    if (options.inputBudget) countWebSocketInput(socket, request.socket, options.inputBudget);
    const extra: ConnectionExtra = needsFacts ? { socket, facts: access.connectionFacts(request) } : { socket };
    if (options.holdOutput) extra.tcp = request.socket;
    WsConnection.serve(socket, shared, extra);
  });
  // `ws` re-emits the HTTP server's errors (such as EADDRINUSE, which listen() reports itself);
  // without a listener they would be thrown.
  wss.on('error', (error) => logger.debug({ err: error }, 'WebSocket server error'));

  /** Closes the sockets with no operation under way: told "going away", a client connects again elsewhere. */
  const closeIdle = () => {
    for (const client of wss.clients) {
      if (client.readyState === client.OPEN && connectionIdle(client)) client.close(1001, 'Going away');
    }
  };

  return {
    // Draining: a socket left open would take new operations only to refuse them (SHUTTING_DOWN), so each
    // closes as soon as it has none under way, now or when its last one ends (its run's end and `complete`
    // sent first). A client connects again, through the proxy, to another instance.
    drain: () => {
      operations.afterEach = closeIdle;
      closeIdle();
    },
    dispose: async () => {
      keepAlive.stop();
      // Operations whose runs have ended are still sending their last results: those go out first.
      await operations.settled(2_000);
      for (const client of wss.clients) client.close(1001, 'Going away');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
