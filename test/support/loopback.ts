import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts a fake's server on a free loopback port; resolves with `http://127.0.0.1:<port>`. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Stops a fake's server, cutting the connections still open. */
export async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * A fake's request listener around its async `handle`, so that no request ends in an unhandled rejection (which
 * Jest pins on whatever hook or test made the server, failing every test of a file with a bare "aborted"):
 * - a request its client abandoned before its body arrived (the gateway cancelling upstream work it no longer needs,
 *   as it must) ends there: there is no one to answer;
 * - any other failure of the fake answers 500 with the error's message, for the test that met it to show.
 */
export function fakeListener(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      // (Cut short, an answer already begun shows the failure as an upstream that broke off.)
      if (!req.complete || res.destroyed || res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`the fake failed: ${String(error)}`);
    });
  };
}
