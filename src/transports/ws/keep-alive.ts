import type { WebSocket } from 'ws';

/**
 * Pings every socket every `intervalMs` and drops one that has not answered the previous ping. One
 * timer for all sockets, not one (and a pong timeout) per socket: a gateway holds thousands.
 */
export class KeepAlive {
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
