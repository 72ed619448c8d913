import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { RunLauncher } from '../src/engine/launcher.js';
import { runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';
import { failOnProcessErrors } from './support/process-errors.js';

// Issue 28 §2: requests that reach the executor the gateway falls back to (@graphql-tools/executor)
// with shapes its own paths do not take. None may end the process, whatever the model streams and
// however the client asks (multipart, SSE, graphql-ws); a client's mistake is the client's code.

// Every uncaught exception and unhandled rejection of the real process fails the test it happened in.
failOnProcessErrors();

/**
 * A model that writes, by the prompt: `tokens`, one text message of 25 tokens, each in a turn of the
 * event loop of its own (as a model's tokens a few milliseconds apart come), then a second message;
 * `bad`, a message whose second chunk is not a string (GraphQL's String refuses it), then another.
 */
class TurnByTurnModel implements ModelAdapter {
  readonly name = 'turn-by-turn';

  async stream(request: ModelRequest, output: ModelOutput): Promise<void> {
    const last = request.messages[request.messages.length - 1];
    const prompt = last && 'content' in last ? String(last.content) : '';
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const chunks: unknown[] =
      prompt === 'bad'
        ? ['fine, ', { not: 'a string' }, 'then fine']
        : Array.from({ length: 25 }, (_, i) => `tok${i} `);
    const first = output.textStart('text-0');
    for (const chunk of chunks) {
      await turn();
      output.textContent(first, chunk as string);
    }
    output.textEnd(first);
    await turn();
    const second = output.textStart('text-1');
    for (const chunk of ['and ', 'a second']) {
      await turn();
      output.textContent(second, chunk);
    }
    output.textEnd(second);
    await turn();
  }
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** Every payload of the answer (a JSON body, each multipart part's, each SSE event's, each graphql-ws result). */
  payloads: any[];
}

const MULTIPART = 'multipart/mixed';
const SSE = 'text/event-stream';

async function overHttp(
  url: string,
  query: string,
  accept: string,
  variables: Record<string, unknown>,
): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  let payloads: any[];
  if (contentType.startsWith('multipart/mixed')) {
    payloads = text
      .split('\r\n---')
      .map((part) => part.slice(part.indexOf('\r\n\r\n') + 4))
      .filter((body) => body.startsWith('{'))
      .map((body) => JSON.parse(body));
  } else if (contentType.startsWith('text/event-stream')) {
    payloads = [...text.matchAll(/^event: next\ndata: (.+)$/gm)].map((match) => JSON.parse(match[1]));
  } else {
    payloads = [JSON.parse(text)];
  }
  return { status: response.status, contentType, text, payloads };
}

async function overWs(wsUrl: string, query: string, variables: Record<string, unknown>): Promise<Answer> {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
  const payloads: any[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      client.subscribe(
        { query, variables },
        {
          next: (result) => void payloads.push(result),
          // An `error` message: its errors are the answer.
          error: (error) => (Array.isArray(error) ? (payloads.push({ errors: error }), resolve()) : reject(error)),
          complete: resolve,
        },
      );
    });
  } finally {
    await client.dispose();
  }
  return { status: 0, contentType: 'graphql-ws', text: JSON.stringify(payloads), payloads };
}

const VIAS = ['multipart', 'sse', 'graphql-ws'] as const;
type Via = (typeof VIAS)[number];

function ask(
  gateway: RunningGateway,
  via: Via,
  query: string,
  prompt: string,
  extra: Record<string, unknown> = {},
): Promise<Answer> {
  const variables = { data: runInput([userMessage(prompt)]), ...extra };
  if (via === 'graphql-ws') return overWs(gateway.wsUrl, query, variables);
  return overHttp(gateway.url, query, via === 'multipart' ? MULTIPART : SSE, variables);
}

const errorsOf = (answer: Answer): any[] =>
  answer.payloads.flatMap((payload) => [
    ...(payload.errors ?? []),
    ...(payload.incremental ?? []).flatMap((entry: any) => entry.errors ?? []),
  ]);

/** The gateway still answers (the process is up, the server serving). */
async function stillServes(gateway: RunningGateway): Promise<void> {
  const answer = await overHttp(gateway.url, '{ hello }', 'application/json', {});
  expect(answer.payloads[0]).toEqual({ data: { hello: 'Hello World' } });
}

/** The request of issue 28 §2: a text `@stream(initialCount: -1)` under messages that are not streamed. */
const NEGATIVE_UNDER_PLAIN = /* GraphQL */ `
  mutation ($data: GenerateCopilotResponseInput!) {
    generateCopilotResponse(data: $data) {
      threadId
      messages {
        ... on TextMessageOutput {
          content @stream(initialCount: -1)
        }
      }
    }
  }
`;

let gateway: RunningGateway;
beforeAll(async () => {
  gateway = await startGateway({ adapter: new TurnByTurnModel() });
});
afterAll(async () => {
  await gateway?.close();
});

describe('no request ends the process', () => {
  for (const via of VIAS) {
    it(`issue 28's request, over ${via}: answered, and the process stays up`, async () => {
      // Twice: the second time over HTTP the document is known to the transport (graphql/fast/known-documents.ts).
      for (let i = 0; i < 2; i++) {
        const answer = await ask(gateway, via, NEGATIVE_UNDER_PLAIN, 'tokens');
        expect(errorsOf(answer).length).toBeGreaterThan(0);
      }
      await stillServes(gateway);
    });

    it(`a text chunk GraphQL's String refuses, in messages that are not streamed, over ${via}: its error, and the process stays up`, async () => {
      const query = /* GraphQL */ `
        mutation ($data: GenerateCopilotResponseInput!) {
          generateCopilotResponse(data: $data) {
            threadId
            messages {
              id
              ... on TextMessageOutput {
                content
              }
            }
          }
        }
      `;
      const answer = await ask(gateway, via, query, 'bad');
      // (An error of the gateway's: the adapter wrote what is not text. Masked, and logged.)
      const errors = errorsOf(answer);
      expect(errors).toHaveLength(1);
      expect(errors[0].path).toEqual(['generateCopilotResponse', 'messages', 0, 'content', 1]);
      await stillServes(gateway);
    });

    it(`messages @stream(initialCount: 2) whose first message has a chunk GraphQL's String refuses, over ${via}: its error, and the process stays up`, async () => {
      const query = /* GraphQL */ `
        mutation ($data: GenerateCopilotResponseInput!) {
          generateCopilotResponse(data: $data) {
            threadId
            messages @stream(initialCount: 2) {
              id
              ... on TextMessageOutput {
                content
              }
            }
          }
        }
      `;
      const answer = await ask(gateway, via, query, 'bad');
      const errors = errorsOf(answer);
      expect(errors).toHaveLength(1);
      expect(errors[0].path).toEqual(['generateCopilotResponse', 'messages', 0, 'content', 1]);
      await stillServes(gateway);
    });
  }

  it('a list that is not streamed has the whole text, and a streamed list with initial items has them in its first part', async () => {
    const query = /* GraphQL */ `
      mutation ($data: GenerateCopilotResponseInput!) {
        generateCopilotResponse(data: $data) {
          messages {
            ... on TextMessageOutput {
              content
            }
          }
        }
      }
    `;
    const plain = await ask(gateway, 'multipart', query, 'tokens');
    expect(
      plain.payloads[0].data.generateCopilotResponse.messages.map((message: any) => message.content.join('')),
    ).toEqual([Array.from({ length: 25 }, (_, i) => `tok${i} `).join(''), 'and a second']);
    const streamed = /* GraphQL */ `
      mutation ($data: GenerateCopilotResponseInput!) {
        generateCopilotResponse(data: $data) {
          messages @stream(initialCount: 1) {
            ... on TextMessageOutput {
              content @stream(initialCount: 2)
            }
          }
        }
      }
    `;
    const answer = await ask(gateway, 'multipart', streamed, 'tokens');
    expect(answer.payloads[0].data.generateCopilotResponse.messages).toHaveLength(1);
    expect(answer.payloads[0].data.generateCopilotResponse.messages[0].content.join('')).toMatch(/^tok0 tok1 /);
    expect(errorsOf(answer)).toEqual([]);
    expect(answer.payloads.at(-1).hasNext).toBe(false);
  });
});

describe("a directive's arguments the executor would refuse while running are the client's mistake, refused before anything runs", () => {
  const run = (selection: string, variables = '') =>
    /* GraphQL */ `mutation($data: GenerateCopilotResponseInput!${variables}) { generateCopilotResponse(data: $data) { threadId ${selection} } }`;
  const cases: { name: string; query: string; variables?: Record<string, unknown>; message: RegExp; field: string }[] =
    [
      {
        name: "issue 28's request (a text's @stream(initialCount: -1) under messages not streamed)",
        query: NEGATIVE_UNDER_PLAIN,
        message: /^Argument "initialCount" of @stream must be 0 or more .*: it is -1\.$/,
        field: '@stream.initialCount',
      },
      {
        name: '@stream(initialCount: -1) under a streamed messages',
        query: run('messages @stream { ... on TextMessageOutput { content @stream(initialCount: -1) } }'),
        message: /: it is -1\.$/,
        field: '@stream.initialCount',
      },
      {
        name: '@stream(initialCount: null)',
        query: run('messages @stream(initialCount: null) { id }'),
        message: /: it is null\.$/,
        field: '@stream.initialCount',
      },
      {
        name: '@stream(initialCount: $n) with $n -3',
        query: run('messages @stream(initialCount: $n) { id }', ', $n: Int'),
        variables: { n: -3 },
        message: /: \$n is -3\.$/,
        field: '@stream.initialCount',
      },
      {
        name: '@stream(initialCount: $n) with $n null',
        query: run('messages @stream(initialCount: $n) { id }', ', $n: Int = 1'),
        variables: { n: null },
        message: /: \$n is null\.$/,
        field: '@stream.initialCount',
      },
      {
        name: '@include(if: $v) with $v null',
        query: run('messages @stream { id @include(if: $v) }', ', $v: Boolean = true'),
        variables: { v: null },
        message: /^Argument "if" of @include must be true or false: \$v is null\.$/,
        field: '@include.if',
      },
      {
        name: '@skip(if: $v) with $v null, in a fragment',
        query: `${run('...F', ', $v: Boolean = false')} fragment F on CopilotResponse { runId @skip(if: $v) }`,
        variables: { v: null },
        message: /^Argument "if" of @skip must be true or false/,
        field: '@skip.if',
      },
      {
        name: '@defer(if: $v) with $v null',
        query: run('messages @stream { id } ... @defer(if: $v) { status { __typename } }', ', $v: Boolean = true'),
        variables: { v: null },
        message: /^Argument "if" of @defer must be true or false/,
        field: '@defer.if',
      },
    ];
  for (const { name, query, variables, message, field } of cases) {
    for (const via of VIAS) {
      it(`${name}, over ${via}: BAD_USER_INPUT saying what is wrong, and no run`, async () => {
        const started = jest.spyOn(RunLauncher.prototype, 'start');
        try {
          for (let i = 0; i < 2; i++) {
            const answer = await ask(gateway, via, query, 'tokens', variables);
            if (via !== 'graphql-ws') expect(answer.status).toBe(400);
            expect(answer.payloads).toHaveLength(1);
            expect(answer.payloads[0].data).toBeUndefined();
            const errors = errorsOf(answer);
            expect(errors).toHaveLength(1);
            expect(errors[0].message).toMatch(message);
            expect(errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', statusCode: 400, details: { field } });
          }
          expect(started).not.toHaveBeenCalled();
        } finally {
          started.mockRestore();
        }
      });
    }
  }

  it('in a subscription over graphql-ws too (its compiled path would read a null `if` as false)', async () => {
    const answer = await overWs(
      gateway.wsUrl,
      'subscription($data: GenerateCopilotResponseInput!, $v: Boolean = true) { copilotRun(data: $data) { __typename @include(if: $v) } }',
      { data: runInput([userMessage('tokens')]), v: null },
    );
    expect(answer.payloads).toHaveLength(1);
    expect(errorsOf(answer)).toEqual([
      expect.objectContaining({
        message: 'Argument "if" of @include must be true or false: $v is null.',
        extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }),
      }),
    ]);
  });

  it('arguments the executor takes run as before: a variable `if`, a variable initialCount of 0 or more', async () => {
    const query = run(
      'messages @stream(initialCount: $n) { id ... on TextMessageOutput { content @include(if: $v) } }',
      ', $n: Int, $v: Boolean = true',
    );
    for (const via of VIAS) {
      const answer = await ask(gateway, via, query, 'tokens', { n: 1, v: false });
      expect(errorsOf(answer)).toEqual([]);
      expect(answer.payloads[0].data.generateCopilotResponse.messages).toEqual([{ id: 'text-0' }]);
    }
  });
});

describe('a result with nothing to stream, for a client that takes only a streaming format (§2)', () => {
  it('multipart/mixed only: one multipart part, the last', async () => {
    const response = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
      body: JSON.stringify({ query: '{ hello }' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('multipart/mixed; boundary="-"; deferSpec=20220824');
    expect(await response.text()).toBe(
      '\r\n---\r\ncontent-type: application/json; charset=utf-8\r\n\r\n{"data":{"hello":"Hello World"},"hasNext":false}\r\n-----\r\n',
    );
  });

  it('text/event-stream only: one event, then the end', async () => {
    const response = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: '{ hello }' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(await response.text()).toBe(
      'event: next\ndata: {"data":{"hello":"Hello World"},"hasNext":false}\n\nevent: complete\ndata:\n\n',
    );
  });

  it('a run refused before it streams (a GraphQL error, HTTP 200) comes the same way', async () => {
    const query = /* GraphQL */ `
      mutation ($data: GenerateCopilotResponseInput!) {
        generateCopilotResponse(data: $data) {
          threadId
          messages @stream {
            id
          }
        }
      }
    `;
    const answer = await overHttp(gateway.url, query, MULTIPART, {
      data: runInput([userMessage('tokens')], { agentSession: { agentName: 'nobody' } }),
    });
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^multipart\/mixed/);
    expect(answer.payloads).toHaveLength(1);
    expect(errorsOf(answer).map((error) => error.extensions.code)).toEqual(['AGENT_NOT_FOUND']);
  });

  it('with a JSON type among those accepted, JSON as before; a 4xx refusal is JSON whatever was accepted (§5.4)', async () => {
    for (const accept of [
      'multipart/mixed, application/json',
      'text/event-stream, application/graphql-response+json',
      '*/*',
    ]) {
      const response = await fetch(gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify({ query: '{ hello }' }),
      });
      expect(response.headers.get('content-type')).toMatch(/^application\/(graphql-response\+)?json/);
      await response.text();
    }
    const refused = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
      body: JSON.stringify({ query: '{ hello(' }),
    });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await refused.json()).errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
  });
});

describe('nothing is sent under a path once the answer has nulled it', () => {
  /** Every entry of the answer in order (the first part's data as one at the root), with its path. */
  const entriesOf = (
    answer: Answer,
  ): { path: (string | number)[]; data?: unknown; items?: unknown; errors?: unknown }[] =>
    answer.payloads.flatMap((payload) => [
      ...('data' in payload ? [{ path: [], data: payload.data, errors: payload.errors }] : []),
      ...(payload.incremental ?? []),
    ]);
  const under = (path: (string | number)[], prefix: (string | number)[]) => prefix.every((key, i) => path[i] === key);

  // The run aliased `run`; a deferred fragment streams the messages, each with its own deferred
  // status, and selects them again (`bad`) with their text: the chunk String refuses nulls `bad`, a
  // non-null field, and with it the whole fragment ({"data":null,"path":["run"]}). The messages'
  // stream and their statuses, started inside that fragment, are for paths that no longer exist.
  const NULLED_FRAGMENT = /* GraphQL */ `
    mutation ($data: GenerateCopilotResponseInput!) {
      run: generateCopilotResponse(data: $data) {
        threadId
        ... @defer {
          messages @stream {
            id
            ... @defer {
              status {
                __typename
              }
            }
          }
          bad: messages {
            ... on TextMessageOutput {
              content
            }
          }
        }
      }
    }
  `;
  // A message item nulled by its text: its deferred status does not come either.
  const NULLED_ITEM = /* GraphQL */ `
    mutation ($data: GenerateCopilotResponseInput!) {
      run: generateCopilotResponse(data: $data) {
        threadId
        messages @stream {
          id
          ... @defer {
            status {
              __typename
            }
          }
          ... on TextMessageOutput {
            content
          }
        }
      }
    }
  `;

  for (const via of VIAS) {
    it(`a deferred fragment nulled by an error, over ${via}: nothing more under its path`, async () => {
      const answer = await ask(gateway, via, NULLED_FRAGMENT, 'bad');
      const entries = entriesOf(answer);
      const at = entries.findIndex((entry) => entry.data === null && JSON.stringify(entry.path) === '["run"]');
      expect(at).toBeGreaterThan(0);
      expect(entries.slice(at + 1).filter((entry) => under(entry.path, ['run']))).toEqual([]);
      expect(answer.payloads.at(-1).hasNext).toBe(false);
    });

    it(`a streamed item nulled by an error, over ${via}: nothing more under its path (the executor saw to it already; held here)`, async () => {
      const answer = await ask(gateway, via, NULLED_ITEM, 'bad');
      const entries = entriesOf(answer);
      const at = entries.findIndex((entry) => entry.items === null);
      expect(entries[at].path).toEqual(['run', 'messages', 0]);
      expect(entries.slice(at + 1).filter((entry) => under(entry.path, ['run', 'messages', 0]))).toEqual([]);
      expect(answer.payloads.at(-1).hasNext).toBe(false);
    });
  }
});
