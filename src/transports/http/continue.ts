import type { IncomingMessage, Server, ServerResponse } from 'node:http';

// `Expect: 100-continue`: a client asks whether to send its body before it sends it (curl does for bodies over
// 1 MiB). Node answers 100 at once unless the server listens for `checkContinue`; the gateway does, and answers it
// only when a body reader is about to read (readChunks), so that a body refused on its declared length (413), or a
// request refused before its body is read (401, 404, 503), costs the client no upload: found from outside, where a
// declared gigabyte got its 100 first and its 413 only once sent. A request answered without its 100 ends its
// connection after the answer (Node sees to that: the client may send the body anyway, and its bytes would be read
// as a next request).

/** Requests whose client waits for a 100 not yet sent, with their answers. */
const waiting = new WeakMap<IncomingMessage, ServerResponse>();

/**
 * The server's `checkContinue` listener: the request goes on as any other (emitted as `request`, so that every
 * request listener sees it: Apollo's drain counts a connection's requests there, and the listener closer its fresh
 * connections), with the 100 left to the body reader.
 */
export function onCheckContinue(server: Server): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    waiting.set(req, res);
    server.emit('request', req, res);
  };
}

/** Whether the client waits for a 100 before it sends the body (so nothing of it has come yet). */
export function awaitsContinue(req: IncomingMessage): boolean {
  return waiting.has(req);
}

/** Tells a client that waits for it to send its body (100 Continue); nothing for any other, nor once answered. */
export function continueIfAwaited(req: IncomingMessage): void {
  const res = waiting.get(req);
  if (!res) return;
  waiting.delete(req);
  if (!res.headersSent) res.writeContinue();
}
