import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { RUN_SUBSCRIPTION } from './transports.js';

/**
 * Clients written by hand for the fault tests, on node:http and ws directly, so that a test decides
 * what happens on the wire: stop reading (TCP backpressure reaches the gateway), resume, or vanish
 * (the socket destroyed, no polite goodbye: no graphql-ws `complete`, no close frame).
 *   multipart    the generateCopilotResponse mutation with @stream/@defer (multipart/mixed)
 *   graphql-ws   the copilotRun subscription
 *   ag-ui        POST {path}/agent/{id}/run (SSE)
 */
export type RawVia = 'multipart' | 'graphql-ws' | 'ag-ui';

export interface RawRun {
  /** Resolves once the first text has arrived. */
  firstText: Promise<void>;
  /** Resolves when the stream ended (or broke, or was vanished), with what the client saw. */
  done: Promise<RawOutcome>;
  /** Stops reading from the socket (nothing is consumed: the gateway's writes back up). */
  pause(): void;
  resume(): void;
  /** Destroys the socket at once. */
  vanish(): void;
  /** Bytes received so far. */
  received(): number;
}

export interface RawOutcome {
  text: string;
  /** How many pieces the text came in (fewer than the upstream's tokens: the gateway merged them). */
  chunks: number;
  /** `Success`/`Failed` from the run's terminal status; `None` when the stream ended without one. */
  status: string;
  code?: string;
  /** How the stream ended: `end` (cleanly), `error` (broken), `vanished` (by the client), `close <code>` (WebSocket). */
  ending: string;
}

const STREAMED = /* GraphQL */ `
  mutation ($data: GenerateCopilotResponseInput!) {
    generateCopilotResponse(data: $data) {
      threadId
      messages @stream {
        __typename
        id
        ... on TextMessageOutput {
          content @stream
        }
      }
      ... @defer {
        status {
          ... on BaseResponseStatus {
            code
          }
          ... on FailedResponseStatus {
            reason
            details
          }
        }
      }
    }
  }
`;

/** Starts a run over `via`. `input` is a GenerateCopilotResponseInput (GraphQL) or the AG-UI agent id, thread and prompt. */
export function rawRun(
  via: RawVia,
  url: string,
  input: { data: Record<string, unknown>; agentId: string; threadId: string; prompt: string },
): RawRun {
  switch (via) {
    case 'multipart':
      return httpRun(url, { query: STREAMED, variables: { data: input.data } }, 'multipart/mixed', multipartOutcome);
    case 'ag-ui':
      return httpRun(
        `${url}/agent/${encodeURIComponent(input.agentId)}/run`,
        {
          threadId: input.threadId,
          runId: randomUUID(),
          messages: [{ id: randomUUID(), role: 'user', content: input.prompt }],
          tools: [],
          context: [],
          state: {},
          forwardedProps: {},
        },
        'text/event-stream',
        agUiOutcome,
      );
    case 'graphql-ws':
      return wsRun(url.replace(/^http/, 'ws'), input.data);
  }
}

/** Whether some text has arrived: every token the fault upstream sends begins with `t<i>·`. */
const TEXT_MARK = /t\d+·/u;

function httpRun(
  url: string,
  body: unknown,
  accept: string,
  outcomeOf: (raw: string) => Omit<RawOutcome, 'ending'>,
): RawRun {
  const target = new URL(url);
  let raw = '';
  let bytes = 0;
  let response: IncomingMessage | undefined;
  let ending = 'end';
  let sawText!: () => void;
  const firstText = new Promise<void>((resolve) => (sawText = resolve));
  // agent: false — a connection of its own, closed with the answer: nothing pooled outlives the run.
  const req: ClientRequest = httpRequest({
    host: target.hostname,
    port: target.port,
    path: target.pathname + target.search,
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', accept },
  });
  const done = new Promise<RawOutcome>((resolve) => {
    const finish = () => resolve({ ...outcomeOf(raw), ending });
    req.on('error', () => {
      if (ending === 'end') ending = 'error';
      finish();
    });
    req.on('response', (res) => {
      response = res;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        bytes += Buffer.byteLength(chunk);
        if (TEXT_MARK.test(chunk) || TEXT_MARK.test(raw.slice(-64))) sawText();
      });
      res.on('aborted', () => {
        if (ending === 'end') ending = 'error';
      });
      res.on('error', () => {
        if (ending === 'end') ending = 'error';
      });
      res.on('close', finish);
    });
  });
  req.end(JSON.stringify(body));
  return {
    firstText,
    done,
    // Not flowing, the response's buffer fills and Node stops reading the socket: backpressure.
    pause: () => void response?.pause(),
    resume: () => void response?.resume(),
    vanish: () => {
      ending = 'vanished';
      req.destroy();
    },
    received: () => bytes,
  };
}

function wsRun(wsUrl: string, data: Record<string, unknown>): RawRun {
  const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
  let text = '';
  let chunks = 0;
  let bytes = 0;
  let status = 'None';
  let code: string | undefined;
  let ending = 'end';
  let sawText!: () => void;
  const firstText = new Promise<void>((resolve) => (sawText = resolve));
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
  const done = new Promise<RawOutcome>((resolve) => {
    socket.on('message', (message) => {
      bytes += (message as Buffer).length;
      const parsed = JSON.parse(String(message));
      if (parsed.type === 'connection_ack') {
        socket.send(
          JSON.stringify({ id: '1', type: 'subscribe', payload: { query: RUN_SUBSCRIPTION, variables: { data } } }),
        );
      } else if (parsed.type === 'next') {
        const event = parsed.payload.data?.copilotRun;
        if (event?.__typename === 'TextMessageContentEvent') {
          text += event.content;
          chunks++;
          sawText();
        }
        if (event?.__typename === 'RunFinishedEvent') {
          status = event.status.code;
          code = event.status.details?.code;
        }
      } else if (parsed.type === 'complete' || parsed.type === 'error') {
        if (parsed.type === 'error') code = parsed.payload?.[0]?.extensions?.code;
        socket.close(1000);
      }
    });
    socket.on('error', () => {});
    socket.on('close', (closeCode) => {
      if (ending !== 'vanished') ending = closeCode === 1000 ? 'end' : `close ${closeCode}`;
      resolve({ text, chunks, status, ...(code ? { code } : {}), ending });
    });
  });
  return {
    firstText,
    done,
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    vanish: () => {
      ending = 'vanished';
      socket.terminate();
    },
    received: () => bytes,
  };
}

/** The text and status of a multipart/mixed answer to STREAMED (graphql-js's incremental format). */
export function multipartOutcome(raw: string): Omit<RawOutcome, 'ending'> {
  const payloads = raw
    .split(/\r\n---/)
    .map((part) => part.slice(part.indexOf('\r\n\r\n') + 4).trim())
    .filter((part) => part.startsWith('{'))
    .flatMap((part) => {
      try {
        return [JSON.parse(part)];
      } catch {
        return []; // a part cut off by a broken stream
      }
    });
  const messages: string[][] = [];
  let status: { code: string; details?: any } | undefined;
  for (const payload of payloads) {
    for (const message of payload.data?.generateCopilotResponse?.messages ?? [])
      messages.push([...(message.content ?? [])]);
    for (const increment of payload.incremental ?? []) {
      const path: (string | number)[] = increment.path ?? [];
      // The response's status (path [generateCopilotResponse]), not a message's.
      if (increment.data?.status && path.length === 1) status = increment.data.status;
      if (!increment.items) continue;
      const at = path.indexOf('messages');
      if (path.length === at + 2) {
        for (const message of increment.items) messages.push([...(message.content ?? [])]);
      } else if (path[at + 2] === 'content') {
        (messages[path[at + 1] as number] ??= []).push(...increment.items);
      }
    }
  }
  return {
    text: messages.map((content) => content.join('')).join(''),
    chunks: messages.reduce((sum, content) => sum + content.length, 0),
    status: status?.code ?? 'None',
    ...(status?.details?.code ? { code: status.details.code } : {}),
  };
}

/** The text and terminal event of an AG-UI SSE answer. */
export function agUiOutcome(raw: string): Omit<RawOutcome, 'ending'> {
  if (!raw.startsWith('data:') && !raw.startsWith(':') && raw.trim().startsWith('{')) {
    // A JSON error before the stream.
    const error = JSON.parse(raw);
    return { text: '', chunks: 0, status: 'Refused', code: error.code };
  }
  let text = '';
  let chunks = 0;
  let status = 'None';
  let code: string | undefined;
  for (const frame of raw.split('\n\n')) {
    const line = frame.split('\n').find((l) => l.startsWith('data: '));
    if (!line) continue;
    let event: any;
    try {
      event = JSON.parse(line.slice(6));
    } catch {
      continue; // a frame cut off by a broken stream
    }
    if (event.type === 'TEXT_MESSAGE_CONTENT') {
      text += event.delta;
      chunks++;
    }
    if (event.type === 'RUN_FINISHED') status = 'Success';
    if (event.type === 'RUN_ERROR') {
      status = 'Failed';
      code = event.code;
    }
  }
  return { text, chunks, status, ...(code ? { code } : {}) };
}
