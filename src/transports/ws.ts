// graphql-ws over `ws`, one concern per file (in the manner of graphql-ws's own `use/ws.ts`):
// ws/server.ts       the WebSocket server on the HTTP server: the upgrade's checks, graphql-ws's hooks, dispose
// ws/connection.ts   one socket served by graphql-ws's protocol: its messages, its credentials' expiry
// ws/keep-alive.ts   pings every socket, drops those that stop answering
// ws/admission.ts    who may connect, and which operations (authentication, expiry, requests per minute)
// ws/operations.ts   serving one operation: its context, its results, its run's end
// ws/messages.ts     what a client is sent: a pushed subscription's `next` messages, errors as it gets them
// ws/slim-subscribe.ts  a subscribe message handed to graphql-ws without its (large) payload
export { attachWebSocketTransport, type WsTransportOptions } from './ws/server.js';
