import { Server as NetServer, type Socket } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { CopilotKitEndpoint } from '../agents/copilotkit-endpoint.js';
import { ConfigurationError, ShuttingDownError } from '../core/errors.js';
import type { ThreadService } from '../engine/thread-service.js';
import type { ResolvedThreadsOptions } from '../threads/options.js';
import { describeConnection } from '../threads/redis/connection.js';
import type { ThreadStore } from '../threads/store.js';

/**
 * The gateway's states (as Apollo Server's ServerState), each with what the next one needs:
 * created → starting (listen) → listening → [leaving →] draining (shutdown) → closed (close). A start that fails
 * goes back to created; close() from any state goes to closed, and shutdown() outside listening closes.
 */
export type GatewayState =
  /** Not listening; `apolloStarted` once a start has started Apollo (a start that failed after leaves it so). */
  | { phase: 'created'; apolloStarted: boolean }
  /** `listen` under way; `apolloStarted` once its start of Apollo has ended (close() reads it). */
  | { phase: 'starting'; apolloStarted: boolean }
  | { phase: 'listening' }
  /**
   * Shutting down, but first serving everything as before for shutdownDelayMs, not ready, so that load
   * balancers stop sending; then draining. `drained` settles once closed; `endDelay` ends the delay early (close()).
   */
  | { phase: 'leaving'; drained: Promise<void>; endDelay?: () => void }
  /** Runs finishing (no new ones); `drained` settles once closed. */
  | { phase: 'draining'; drained: Promise<void> }
  /** Releasing or released; `closed` settles once everything is; `apolloStarted` as it was then. */
  | { phase: 'closed'; closed: Promise<void>; apolloStarted: boolean };

/** Whether Apollo Server has been started (and not yet stopped by close()) in `state`. */
export function apolloStartedIn(state: GatewayState): boolean {
  return state.phase === 'created' || state.phase === 'closed' || state.phase === 'starting'
    ? state.apolloStarted
    : true;
}

/**
 * A queue of connections not yet accepted as long as the system allows (Linux caps it at
 * net.core.somaxconn, 4096 by default): Node's default of 511 drops connections when thousands of
 * clients reconnect at once (a deploy, a network blip) and the event loop is busy.
 */
export const LISTEN_BACKLOG = 4096;

/** What the runs still going when the gateway closes are ended with. */
export function shutdownError(): ShuttingDownError {
  return new ShuttingDownError(
    'The server is shutting down: the run was ended before it finished. Its events so far are kept; start it again.',
  );
}

/** What joins and AG-UI connects following runs of other instances are ended with when the gateway closes. */
export function followsEndedError(): ShuttingDownError {
  return new ShuttingDownError(
    'This gateway instance is shutting down: follow the run again through another one ' +
      '(joinCopilotRun with afterSequence, or connect).',
  );
}

/**
 * Whether this instance should get traffic. Not while it is not listening (starting, or closed), nor once it
 * is shutting down (leaving or draining). With
 * Redis unreachable it still is when new runs are served regardless (onStoreFailure "serve": taking
 * every instance out of rotation at once would turn a degraded service into an outage), not when they
 * are refused ("fail").
 */
export function readiness(
  state: GatewayState['phase'],
  store: ThreadStore,
  onStoreFailure: 'serve' | 'fail',
  endpoints: readonly CopilotKitEndpoint[],
): { ready: boolean; checks: Record<string, unknown> } {
  const storeHealthy = store.healthy();
  const listening = state === 'listening' || state === 'leaving' || state === 'draining';
  const draining = state === 'draining';
  const ready = state === 'listening' && (storeHealthy || onStoreFailure === 'serve');
  return {
    ready,
    checks: {
      listening,
      // Shutting down, still serving everything until the drain (shutdownDelayMs).
      leaving: state === 'leaving',
      draining,
      threadStore: { kind: store.kind, reachable: storeHealthy, ...(storeHealthy ? {} : { onStoreFailure }) },
      // Reported, not required: one unreachable endpoint must not take every instance out of rotation.
      ...(endpoints.length
        ? {
            remoteEndpoints: endpoints.map((endpoint) => ({
              endpoint: endpoint.label,
              reachable: !endpoint.unreachable,
            })),
          }
        : {}),
    },
  };
}

/**
 * Connects the thread store (Redis). Unreachable at start: with onStoreFailure "serve" the gateway
 * serves (runs unrecorded until Redis answers, logged); with "fail" it does not start.
 */
export async function startThreadStore(
  threads: ThreadService,
  options: ResolvedThreadsOptions,
  logger: Logger,
): Promise<void> {
  try {
    await threads.store.start?.();
    if (options.redis) logger.info({ redis: describeConnection(options.redis) }, 'threads are kept in Redis');
  } catch (error) {
    // A Redis the store cannot work with (a cluster node) is a configuration to correct, whatever the policy.
    if (error instanceof ConfigurationError) throw error;
    // One line each way, naming what to set (npm start's variables; threads.redisUrl and
    // threads.onStoreFailure from code), without the stack of an error whose place says nothing.
    const unreachable = (error as Error).message;
    if (options.onStoreFailure === 'fail') {
      throw new ConfigurationError(
        `${unreachable}: start Redis there or correct REDIS_URL; STORE_FAILURE_POLICY=serve starts without it.`,
      );
    }
    logger.warn(
      { redis: options.redis ? describeConnection(options.redis) : undefined },
      `${unreachable}: runs are served unrecorded until it answers (STORE_FAILURE_POLICY=serve), retrying in the ` +
        'background; start Redis there or correct REDIS_URL.',
    );
  }
}

/** A failed listen, said in one line with what to do. */
export function listenError(error: unknown, port: number, host: string): ConfigurationError | unknown {
  const code = (error as { code?: string })?.code;
  const where = `port ${port} on ${host}`;
  if (code === 'EADDRINUSE') {
    return new ConfigurationError(
      `The ${where} is already in use: stop the process that holds it, or choose another port (PORT).`,
    );
  }
  if (code === 'EACCES') {
    return new ConfigurationError(
      `Not allowed to listen on ${where}: choose a port above 1023 (PORT), or run with the permission to bind it.`,
    );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ConfigurationError(
      `HOST ${JSON.stringify(host)} is not a name this machine can resolve: use 127.0.0.1, 0.0.0.0 or one of its ` +
        `addresses or names.`,
    );
  }
  if (code === 'EADDRNOTAVAIL') {
    return new ConfigurationError(
      `${host} is not an address of this machine (HOST): use 127.0.0.1, 0.0.0.0 or one of its addresses.`,
    );
  }
  return error;
}

/**
 * The end of a drain, before close(): the listener closes (a proxy's next connection is refused, which it
 * counts as a failure and retries elsewhere, POST or not: nothing was sent), and the connections opened just
 * before it, whose first request is still on its way, get that request answered (the draining refusal, with
 * "Connection: close", which a proxy that asked sends on) instead of being ended under it: close() ends every
 * connection with no request in progress, and a POST lost that way is a 502 no proxy re-sends. Those that send
 * nothing are waited for at most `limitMs`.
 */
export function listenerCloser(server: Server): (limitMs: number) => Promise<void> {
  // Only the sockets whose first request (or WebSocket handshake) has not arrived: a few at any time.
  const fresh = new Set<Socket>();
  let emptied: (() => void) | undefined;
  const forget = (socket: Socket) => {
    if (fresh.delete(socket) && fresh.size === 0) emptied?.();
  };
  function onFreshClose(this: Socket) {
    forget(this);
  }
  server.on('connection', (socket: Socket) => {
    fresh.add(socket);
    socket.once('close', onFreshClose);
  });
  const arrived = (req: { socket: Socket }) => {
    req.socket.off('close', onFreshClose);
    forget(req.socket);
  };
  server.on('request', arrived);
  server.on('upgrade', arrived);

  return async (limitMs) => {
    // net.Server's close: the listener only, at once (no callback: that would wait for every connection to
    // end). http.Server's would also end the connections it sees as idle, those whose request is on its way
    // among them. close() later closes the server as usual.
    NetServer.prototype.close.call(server);
    if (fresh.size === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, limitMs);
      emptied = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  };
}
