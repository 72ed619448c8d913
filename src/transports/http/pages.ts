import type { ServerResponse } from 'node:http';

/** What a browser opening the endpoint sees when the explorer is off. */
export function explorerOffPage(path: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Copilot Gateway</title></head><body>
<h1>Copilot Gateway</h1>
<p>This is a GraphQL endpoint (<code>${path}</code>). Send GraphQL requests to it by POST with
<code>content-type: application/json</code>, or subscribe over WebSocket (graphql-ws, subprotocol
<code>graphql-transport-ws</code>) at the same address.</p>
<p>The explorers (Sandbox at this address, the offline explorer at <code>${path}/graphiql</code>) are off.
They are served only when the gateway's <code>sandbox</code> option is on: the default in development, off when
<code>NODE_ENV=production</code>.</p>
</body></html>
`;
}

export function sendPage(res: ServerResponse, html: string, status = 200): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(html);
}
