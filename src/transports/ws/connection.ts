import type { Socket } from 'node:net';
import { CloseCode, type Server } from 'graphql-ws';
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import { MAX_NESTING } from '../../core/depth.js';
import type { Admitted, ConnectionFacts } from '../access.js';
import type { KeepAlive } from './keep-alive.js';
import { closeReason } from './messages.js';
import { operationMessage, slimSubscribe, type SubscribePayload } from './slim-subscribe.js';

/**
 * What graphql-ws keeps per connection (its `extra`): the socket (subscriptions write their `next`
 * messages to it, WsResultSink), and with access control on the client's address and the upgrade's
 * Authorization header, then who was admitted. Nothing else: thousands are held.
 */
export interface ConnectionExtra {
  socket?: WebSocket;
  /** The connection's TCP socket, where its operations' output is counted (WsTransportOptions.holdOutput). */
  tcp?: Socket;
  facts?: ConnectionFacts;
  admitted?: Admitted;
  /**
   * The payload taken out of the subscribe message graphql-ws is handling (see `slimSubscribe`):
   * set just before the message is handed over, cleared just after. graphql-ws calls onSubscribe
   * synchronously within that call, or refuses the message (4401, 4409) without calling it.
   */
  slot?: SubscribePayload;
  /**
   * graphql-ws's own record of the connection's operations under way (its context's `subscriptions`: an
   * operation is in it from its `subscribe` until its `complete` has been sent), kept at the first `subscribe`.
   */
  operations?: Readonly<Record<string, unknown>>;
}

/**
 * Messages graphql-ws is still handling: a `subscribe` is handled until its operation has ended and
 * its `complete` has been sent. Closing waits for them, so that no client loses the end of its run.
 */
export class OperationCount {
  private open = 0;
  private idle: (() => void)[] = [];

  started(): void {
    this.open++;
  }

  /** Called after each operation has ended, while set (a draining gateway closes the connections left idle). */
  afterEach: (() => void) | undefined;

  readonly ended = (): void => {
    this.afterEach?.();
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

/** What every connection of one server shares. */
export interface ConnectionShared {
  protocol: Server<ConnectionExtra>;
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

/**
 * A `subscribe` graphql-ws is still handling (WsConnection.handling): from the message until graphql-ws has ended
 * its operation, its `complete` sent or not.
 */
interface Handling {
  /** The client has sent `complete` for it. */
  completed: boolean;
  /** A `subscribe` the client has sent under the same id since it completed this one, held until this one ends. */
  next: string | undefined;
}

/** The longest delay setTimeout takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Where a socket's shared listeners find its connection. */
const CONNECTION = Symbol('graphql-ws connection');
type ServedSocket = WebSocket & { [CONNECTION]?: WsConnection };

/** Whether the socket's connection has no operation under way (true for a socket not, or no longer, served). */
export function connectionIdle(socket: WebSocket): boolean {
  return (socket as ServedSocket)[CONNECTION]?.idle ?? true;
}

/**
 * The connection's credentials expire at `at` (milliseconds since the epoch): see WsConnection.expireAt.
 * Nothing happens for a socket that is not (or no longer) served.
 */
export function expireConnectionAt(socket: WebSocket, at: number): void {
  (socket as ServedSocket)[CONNECTION]?.expireAt(at);
}

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
export class WsConnection {
  private handle: ((data: string) => Promise<void>) | undefined;
  private readonly closed: (code?: number, reason?: string) => Promise<void>;
  /** Set when the connection's credentials expire (Principal.expiresAt). */
  private expiry: Expiry | undefined;
  /**
   * The `subscribe` messages graphql-ws is still handling, by operation id (made on the first). graphql-ws knows an
   * operation only by its id: an operation the client completed before its run had started, then asked for again
   * under the same id, took the new one's place when its start came, streamed beside it, and was never ended, not
   * even by the socket's close (found from outside: a run per reuse, running to its end, billed). So a `subscribe`
   * under an id whose completed operation graphql-ws is still handling waits until that one has ended.
   */
  private handling: Map<string, Handling> | undefined;

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

  /** No operation under way on this connection (none ever, or every one ended and its `complete` sent). */
  get idle(): boolean {
    for (const _id in this.extra.operations) return false;
    return true;
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
    // graphql-ws's reasons may quote the client (a subscription's id): cut to what a close frame holds, or ws throws.
    this.socket.close(code, closeReason(reason));
  }

  // graphql-ws's handler for a `subscribe` resolves only when the operation ends: only the
  // message's text goes into it, so the frame's buffer is not held for the whole stream.
  onMessage(handle: (data: string) => Promise<void>): void {
    this.handle = handle;
  }

  // Not an async function: its frame would hold the message's text until the operation ends.
  receive(text: string): void {
    if (!this.handle) return;
    const slimmed = slimSubscribe(text);
    const operation =
      typeof slimmed === 'string' ? operationMessage(slimmed) : { type: 'subscribe' as const, id: slimmed.id };
    const handling = operation && this.handling?.get(operation.id);
    if (operation && handling?.completed) {
      if (operation.type === 'subscribe') {
        // As the client sees it, an operation under this id is under way already: graphql-ws's answer to that.
        if (handling.next !== undefined) {
          return this.close(CloseCode.SubscriberAlreadyExists, `Subscriber for ${operation.id} already exists`);
        }
        handling.next = text;
        return;
      }
      // The held `subscribe` is completed before it started: neither goes to graphql-ws, nothing is answered.
      if (handling.next !== undefined) {
        handling.next = undefined;
        return;
      }
    }
    if (handling && operation?.type === 'complete') handling.completed = true;
    // A `subscribe` under an id graphql-ws is handling and the client has not completed: graphql-ws closes (4409).
    this.hand(slimmed, operation?.type === 'subscribe' && !handling ? operation.id : undefined);
  }

  /** Hands a message to graphql-ws; `subscribe`: the id of the new operation it asks for, kept in `handling`. */
  private hand(slimmed: ReturnType<typeof slimSubscribe>, subscribe: string | undefined): void {
    const { handle, extra, shared } = this;
    shared.operations.started();
    const expiry = this.expiry;
    if (expiry) expiry.inProgress++;
    let handled: Promise<void>;
    if (typeof slimmed === 'string') {
      handled = handle!(slimmed);
    } else {
      extra.slot = slimmed.payload;
      handled = handle!(slimmed.text);
      extra.slot = undefined;
    }
    // Made after the call: graphql-ws has taken the id (its own record) within it, before any other message comes.
    const handling: Handling | undefined = subscribe === undefined ? undefined : { completed: false, next: undefined };
    if (handling) (this.handling ??= new Map()).set(subscribe!, handling);
    // Neither an expiry (no authentication, API keys) nor an operation: no second closure per message.
    const handledOk =
      expiry === undefined && handling === undefined
        ? shared.operations.ended
        : () => {
            shared.operations.ended();
            if (expiry) this.onMessageHandled(expiry);
            if (handling) this.operationHandled(subscribe!, handling);
          };
    handled.then(handledOk, (error: unknown) => {
      // Closed first: a `subscribe` held for the operation is then dropped, not started on a socket about to close.
      this.failed(error);
      handledOk();
    });
  }

  /** graphql-ws has ended an operation: a `subscribe` held for its id goes to graphql-ws now, if the socket is open. */
  private operationHandled(id: string, handling: Handling): void {
    if (this.handling?.get(id) !== handling) return;
    this.handling.delete(id);
    // A connection holds no map while it has no operation (thousands are held, most with one stream or none).
    if (this.handling.size === 0) this.handling = undefined;
    const { socket } = this;
    if (handling.next !== undefined && socket.readyState === socket.OPEN) this.receive(handling.next);
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
    expiry.timer = setTimeout(
      () => this.expiryCame(expiry),
      Math.min(Math.max(expiry.at - Date.now(), 0), MAX_TIMER_MS),
    );
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
    shared.logger.info({ transport: 'ws' }, "a WebSocket connection's credentials expired: closed");
    socket.close(CloseCode.Forbidden, 'Forbidden: the credentials have expired');
  }

  private failed(error: unknown): void {
    const { socket, shared } = this;
    // graphql-ws throws this for a message only a server may send (connection_ack, next, error): the client's mistake.
    if (error instanceof Error && /^Unexpected message of type /.test(error.message)) {
      shared.logger.info({ transport: 'ws', reason: error.message }, 'a WebSocket client broke the protocol');
      socket.close(CloseCode.BadRequest, closeReason(error.message));
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
