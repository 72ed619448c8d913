import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { InputBudget } from '../../core/input-budget.js';

/** The close code of a socket whose message would pass the input budget (1013: try again later). */
const OVER_BUDGET_CODE = 1013;
/** A client's control frame besides its payload: two bytes of header and four of mask. */
const CONTROL_FRAME_HEADER = 6;
/** How long a socket told so is given to take its close frame before it is dropped. */
const CLOSE_GRACE_MS = 1_000;

/**
 * Counts what a WebSocket connection has sent of a message not yet complete in the input budget (maxBufferedInputMb),
 * as bodies being read are over HTTP: `ws` keeps a message's fragments until its last (up to the message limit), so
 * connections that each send most of a large message and never finish it would otherwise hold that much each, with
 * no bound on how many. Bytes are counted as they arrive (before `ws` reads them) and given back when a message is
 * complete or the connection closes; a connection whose bytes would pass the budget is closed (1013).
 */
export function countWebSocketInput(socket: WebSocket, raw: Socket, budget: InputBudget): void {
  let partial = 0;
  const giveBack = (): void => {
    budget.release(partial);
    partial = 0;
  };
  const onData = (chunk: Buffer): void => {
    if (partial < 0) return;
    if (!budget.take(chunk.length)) {
      giveBack();
      partial = -1; // told to go: nothing more is counted
      raw.removeListener('data', onData);
      // (Under a close reason's 123 bytes whatever the budget: 92 for a budget of 99,999 MiB.)
      socket.close(OVER_BUDGET_CODE, `The gateway holds its most input at once (${budget.name}); try again shortly.`);
      setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
      return;
    }
    partial += chunk.length;
  };
  // Before `ws`'s own listener: a chunk that completes a message is counted before the message is given back.
  raw.prependListener('data', onData);
  socket.on('message', () => {
    if (partial > 0) giveBack();
  });
  // A control frame (a client's ping, or its pong to the keep-alive's) is given back by its own size only: it may come
  // between a message's fragments. Counted until the next message, a long-lived socket's pongs would add up for days.
  const controlFrame = (data: Buffer): void => {
    const size = Math.min(partial, CONTROL_FRAME_HEADER + data.length);
    if (size <= 0) return;
    budget.release(size);
    partial -= size;
  };
  socket.on('ping', controlFrame);
  socket.on('pong', controlFrame);
  socket.once('close', () => {
    raw.removeListener('data', onData);
    if (partial > 0) giveBack();
  });
}
