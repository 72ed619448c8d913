// The floor the benchmark's "first token" figures are read against: a hand-written pass-through with no
// GraphQL. It reads the request, asks the fake model on the gateway's HTTP client (undici `dispatch`, one
// pooled connection), and forwards the model's bytes to the client as they arrive, inside one multipart
// response. Nothing is parsed or checked: it shows what node:http and undici cost on this machine.
//
// Usage: node bench/passthrough.mjs <upstream origin> <port>   → prints "ready", serves until killed.
// Then point bench/load.mjs at http://127.0.0.1:<port>/api/copilotkit (see BENCHMARKS.md).
import { createServer } from 'node:http';
import { Agent } from 'undici';

const [origin, port] = [process.argv[2], Number(process.argv[3])];
const agent = new Agent({ bodyTimeout: 0, headersTimeout: 0 });

createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString());
    const prompt = body.variables?.data?.messages?.at(-1)?.textMessage?.content ?? 'hi';
    res.writeHead(200, { 'content-type': 'multipart/mixed; boundary="-"' });
    const request = { model: 'm', stream: true, messages: [{ role: 'user', content: prompt }] };
    agent.dispatch(
      {
        origin,
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request),
      },
      {
        onRequestStart() {},
        onResponseStart() {},
        onResponseData(_controller, chunk) {
          res.write(chunk);
        },
        onResponseEnd() {
          res.end('\r\n---\r\n{"status":"SuccessResponseStatus","hasNext":false}\r\n-----\r\n');
        },
        onResponseError(_controller, error) {
          res.destroy(error);
        },
      },
    );
  });
}).listen(port, '127.0.0.1', () => console.log('ready'));
