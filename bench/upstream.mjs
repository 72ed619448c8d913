// The benchmark's upstreams, one process on loopback, shared by both servers under test:
//   POST /v1/chat/completions            an OpenAI-compatible model (Chat Completions streaming, SSE)
//   POST /copilotkit/info                a CopilotKit remote endpoint with one agent, "benchAgent" (crewai dialect)
//   POST /copilotkit/agents/execute      that agent's run: runtime-event JSON Lines
// What they stream is read from directives in the last user message:
//   [tokens=N]   N tokens (default 200)
//   [pace=MS]    MS milliseconds between tokens (default 0: all at once, as fast as the socket takes them)
//   [stamp]      each token is " t<epoch ms with a decimal>", the moment it was written, so a client can
//                measure how long a token took to reach it; otherwise tokens are "tok "
// Usage: node bench/upstream.mjs  → prints {"port":N} on its first line, serves until killed.
import { createServer } from 'node:http';

const now = () => performance.timeOrigin + performance.now();

function directives(prompt) {
  const number = (name, fallback) => {
    const match = prompt.match(new RegExp(`\\[${name}=(\\d+)\\]`));
    return match ? Number(match[1]) : fallback;
  };
  return { tokens: number('tokens', 200), pace: number('pace', 0), stamp: prompt.includes('[stamp]') };
}

const token = (stamp) => (stamp ? ` t${now().toFixed(1)}` : 'tok ');

/** Writes `count` pieces produced by `piece(i)`, all at once or `pace` ms apart, then `end()`. */
function stream(res, { tokens, pace }, piece, end) {
  let i = 0;
  let timer;
  res.on('close', () => clearTimeout(timer));
  const next = () => {
    if (res.destroyed) return;
    if (pace === 0) {
      while (i < tokens) res.write(piece(i++));
      return end();
    }
    res.write(piece(i++));
    if (i < tokens) timer = setTimeout(next, pace);
    else end();
  };
  next();
}

let completions = 0;

function chatCompletion(body, res) {
  const messages = body.messages ?? [];
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const options = directives(typeof lastUser?.content === 'string' ? lastUser.content : '');
  const id = `chatcmpl-bench${++completions}`;
  const created = Math.floor(Date.now() / 1000);
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(body.model)},"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":`;
  const chunk = (delta, finish = null) =>
    `${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk({ role: 'assistant', content: '' }));
  stream(
    res,
    options,
    () => chunk({ content: token(options.stamp) }),
    () => {
      res.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
    },
  );
}

let agentRuns = 0;

function agentExecute(body, res) {
  const messages = body.messages ?? [];
  const lastUser = [...messages].reverse().find((m) => m.type === 'TextMessage' && m.role === 'user');
  const options = directives(lastUser?.content ?? '');
  const messageId = `agent-msg-${++agentRuns}`;
  res.writeHead(200, { 'content-type': 'application/jsonl' });
  res.write(`${JSON.stringify({ type: 'TextMessageStart', messageId })}\n`);
  stream(
    res,
    options,
    () => `${JSON.stringify({ type: 'TextMessageContent', messageId, content: token(options.stamp) })}\n`,
    () => {
      res.end(`${JSON.stringify({ type: 'TextMessageEnd', messageId })}\n`);
    },
  );
}

const info = JSON.stringify({
  actions: [],
  agents: [{ name: 'benchAgent', description: 'Streams tokens for the benchmark.', type: 'crewai' }],
  sdkVersion: '0.1.70',
});

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    let body;
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (req.method !== 'POST') return void res.writeHead(405).end();
    switch (req.url) {
      case '/v1/chat/completions':
        return chatCompletion(body, res);
      case '/copilotkit/info':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(info);
      case '/copilotkit/agents/execute':
        return agentExecute(body, res);
      default:
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
    }
  });
});
server.keepAliveTimeout = 65_000;
server.maxConnections = Infinity;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.on('SIGTERM', () => process.exit(0));
