import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { pino } from 'pino';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import type { AgentDefinition } from '../src/agents/definitions.js';
import type { MetaEventPayload } from '../src/core/events.js';
import type { RunWriter } from '../src/core/writer.js';
import { ApolloServer } from '@apollo/server';
import { LaterPayloads } from '../src/graphql/fast/later-payloads.js';
import { KnownDocuments } from '../src/graphql/fast/known-documents.js';
import { ErrorLog } from './support/error-log.js';
import { HTTP_STREAMED } from './support/documents.js';
import { STOCK_DOCUMENT } from './support/fuzz-documents.js';
import { runInput, startGateway, userMessage, type RunningGateway } from './support/harness.js';

// These tests are of the fast executor's own paths (graphql/executor.ts): they run on it whatever
// GATEWAY_EXECUTOR says.
const FAST = 'fast' as const;

// Over HTTP the transport takes an operation's later payloads straight from the executor and frames
// them itself, errors formatted as Apollo formats them (src/graphql/fast/direct-answer.ts).
// Here one gateway does that and another leaves every payload to Apollo (as it does when APOLLO_KEY
// is set, for Apollo's usage reporting), and every answer must be the same bytes: every streamed
// document shape the other tests use, in both streaming formats, with and without errors. The first
// gateway also writes the run's text streams itself where the document allows it (leaf streams,
// src/graphql/fast/leaf-streams.ts), and the other leaves them to the executor: the bytes must not differ.

/** What a scripted model writes: each step in a turn of its own, so the executor batches the same way on every run. */
// A text step's second element is its parent message id ('' for none); `textOpen` leaves it open at the end.
type Step =
  | ['text' | 'textOpen', unknown, ...unknown[]]
  | ['call', string, ...string[]]
  | ['fail', string]
  | ['callInsideText', unknown, string, string];

class ScriptedAdapter implements ModelAdapter {
  readonly name = 'scripted';
  constructor(private readonly script: (prompt: string) => Step[]) {}

  async stream(request: ModelRequest, output: ModelOutput): Promise<void> {
    const last = request.messages[request.messages.length - 1];
    const prompt = last && 'content' in last ? String(last.content) : '';
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    let n = 0;
    for (const [kind, first, ...rest] of this.script(prompt)) {
      await turn();
      if (kind === 'fail') throw new Error(first);
      if (kind === 'callInsideText') {
        // An action call while a text message is still open, named with what GraphQL's String may refuse.
        const [before, after] = rest as [string, string];
        const text = output.textStart(`text-${n++}`);
        await turn();
        output.textContent(text, before);
        await turn();
        const call = output.actionStart(`call-${n++}`, first as string);
        await turn();
        output.actionEnd(call);
        await turn();
        output.textContent(text, after);
        await turn();
        output.textEnd(text);
        continue;
      }
      if (kind === 'text' || kind === 'textOpen') {
        const id = output.textStart(`text-${n++}`, first === '' ? undefined : (first as string));
        for (const chunk of rest) {
          await turn();
          // A plain-JavaScript adapter may write what is not a string: GraphQL's String refuses it,
          // which puts an error into that item's payload. Chunks in an array come in one turn.
          for (const each of Array.isArray(chunk) ? chunk : [chunk]) output.textContent(id, each as string);
        }
        // Left open, the run ends it when the model is done.
        if (kind === 'text') output.textEnd(id);
      } else {
        const id = output.actionStart(`call-${n++}`, first as string);
        for (const chunk of rest) {
          await turn();
          output.actionArgs(id, chunk as string);
        }
        output.actionEnd(id);
      }
    }
    // The run ends in a turn of its own too.
    await turn();
  }
}

const scripts: Record<string, Step[]> = {
  text: [
    ['text', '', 'Hello, ', 'wörld "quoted" ☃\n', 'three'],
    ['text', '', 'and a second message'],
  ],
  action: [
    ['text', '', 'Let me call it.'],
    ['call', 'sayHello', '{"name":', '"Ann"}'],
  ],
  bad: [['text', '', 'fine, ', { not: 'a string' }, 'then fine again']],
  failing: [
    ['text', '', 'half an answer'],
    ['fail', 'the model broke'],
  ],
  together: [
    ['text', '', ['Hello, ', 'wörld'], 'three', ['a', 'b', 'c']],
    ['text', ''],
    ['text', '', 'after an empty one'],
  ],
  insideText: [['callInsideText', 'sayHello', 'before the call, ', 'after it']],
  badName: [['callInsideText', { not: 'a name' }, 'before the call, ', 'after it']],
  openAtEnd: [
    ['text', '', 'a first message'],
    ['textOpen', '', 'left open ', 'by the model'],
  ],
  // A nullable field GraphQL's String refuses: an error in the item, which still goes out.
  badParent: [
    ['text', { not: 'an id' }, 'with a parent ', 'that is not one'],
    ['text', '', 'and another'],
  ],
  // A server-side action: the gateway runs it, writes its result, and asks the model again (AFTER_ACTION).
  serverAction: [
    ['text', '', 'Let me look it up.'],
    ['call', 'lookUp', '{"q":', '"weather"}'],
  ],
};

/** Documents whose text streams the transport writes itself (graphql/fast/leaf-streams.ts); the others run on the executor. */
const LEAF_STREAMED = new Set(['stock', 'wire', 'deferredStatus', 'explorer']);
/** Documents whose messages, their statuses and the run's status the transport writes too (graphql/fast/message-plan.ts). */
const MESSAGES_PLANNED = new Set(['stock', 'wire', 'deferredStatus']);
/** Documents run without the executor: the answer's first part by the run plan too (graphql/fast/message-plan.ts RunPlan). */
const RUN_PLANNED = new Set(['stock', 'wire', 'deferredStatus']);

/**
 * The stock client's document as it goes over the wire (and as the benchmark sends it): the package's
 * own, with the `__typename` fields urql adds to every selection set (test/fixtures/client-mutation.graphql).
 */
const WIRE = readFileSync(new URL('./fixtures/client-mutation.graphql', import.meta.url), 'utf8');

const EXPLORER = /* GraphQL */ `
  mutation ($data: GenerateCopilotResponseInput!) {
    generateCopilotResponse(data: $data) {
      threadId
      runId
      ... on CopilotResponse @defer(label: "status") {
        status {
          ... on BaseResponseStatus {
            code
          }
        }
      }
      messages @stream {
        __typename
        ... on TextMessageOutput {
          content @stream
        }
      }
    }
  }
`;
const SHAPES = /* GraphQL */ `
  mutation Shapes($data: GenerateCopilotResponseInput!) {
    answer: generateCopilotResponse(data: $data) {
      threadId
      messages @stream(initialCount: 1) {
        __typename
        ...Text
        ... on ActionExecutionMessageOutput {
          name
          arguments @stream(initialCount: 1)
        }
      }
      ... @defer {
        status {
          __typename
        }
      }
    }
  }
  fragment Text on TextMessageOutput {
    id
    chunks: content @stream
    status {
      __typename
    }
  }
`;
const documents: Record<string, string> = {
  stock: STOCK_DOCUMENT,
  wire: WIRE,
  deferredStatus: HTTP_STREAMED,
  explorer: EXPLORER,
  shapes: SHAPES,
};

/** What the model says once a server-side action's result is in the conversation. */
const AFTER_ACTION: Step[] = [['text', '', 'It is ', 'sunny.']];
const lookUp = { name: 'lookUp', description: 'Looks something up.', handler: () => 'sunny' };

const frontendAction = {
  name: 'sayHello',
  description: 'Says hello.',
  jsonSchema: '{"type":"object","properties":{"name":{"type":"string"}}}',
};

/** One answer as bytes, with what differs between two runs (ids, clocks) replaced by stable stand-ins. */
async function answer(
  url: string,
  query: string,
  prompt: string,
  accept: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify({
      query,
      variables: {
        data: runInput([userMessage(prompt, 'user-1')], {
          frontend: { actions: [frontendAction], url: 'http://localhost/' },
          ...extra,
        }),
      },
    }),
  });
  expect(response.status).toBe(200);
  const ids = new Map<string, string>();
  return (await response.text())
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
      if (!ids.has(id)) ids.set(id, `id-${ids.size}`);
      return ids.get(id)!;
    })
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, 'TIME')
    .replace(/"requestId":"[^"]*"/g, '"requestId":"R"');
}

const MULTIPART = 'multipart/mixed; deferSpec=20220824, application/json';
const SSE = 'text/event-stream';

describe('later payloads taken from the executor (HTTP)', () => {
  let direct: RunningGateway;
  let throughApollo: RunningGateway;
  const adapter = new ScriptedAdapter((prompt) => scripts[prompt] ?? AFTER_ACTION);
  // What each gateway logs of the errors its clients are told (the same lines, whoever formats them).
  const directLog = new ErrorLog();
  const apollosLog = new ErrorLog();

  beforeAll(async () => {
    direct = await startGateway({ adapter, actions: [lookUp], executor: FAST, logger: directLog.logger });
    // Once through Apollo, the documents the leaf-stream plan takes are known: the transport runs
    // them without Apollo's pipeline from then on (graphql/fast/known-documents.ts).
    for (const query of Object.values(documents)) await answer(direct.url, query, 'text', MULTIPART);
    // Apollo installs its usage reporting when APOLLO_KEY is set, and the gateway then leaves every
    // later payload to Apollo. (Without APOLLO_GRAPH_REF, Apollo only warns: nothing is reported.)
    process.env.APOLLO_KEY = 'service:test:not-a-key';
    try {
      throughApollo = await startGateway({ adapter, actions: [lookUp], executor: FAST, logger: apollosLog.logger });
    } finally {
      delete process.env.APOLLO_KEY;
    }
    expect([direct.gateway.apolloUsageReporting, throughApollo.gateway.apolloUsageReporting]).toEqual([false, true]);
  });
  afterAll(async () => {
    await Promise.all([direct?.close(), throughApollo?.close()]);
  });

  for (const [documentName, query] of Object.entries(documents)) {
    for (const script of Object.keys(scripts)) {
      // Where timing decides the cut. `shapes` selects a text message's status outside @defer, so a
      // streamed message's item, and its chunks behind it, wait for the message to end; the chunks are
      // all there by then, and how many of them one payload takes depends on when the transport asks
      // (Apollo asks later than the transport does). Both answers are valid. It shows where a message
      // after the first (the first is in the initial result) has several chunks.
      if (documentName === 'shapes' && (script === 'openAtEnd' || script === 'serverAction')) continue;
      for (const [format, accept] of [
        ['multipart', MULTIPART],
        ['sse', SSE],
      ] as const) {
        it(`${documentName}, ${script}, ${format}: the same bytes as Apollo's`, async () => {
          const adopt = jest.spyOn(LaterPayloads.prototype, 'adopt');
          const leaf = jest.spyOn(LaterPayloads.prototype, 'leaf');
          const planned = jest.spyOn(LaterPayloads.prototype, 'writeMessages');
          const executorsMessages = jest.spyOn(LaterPayloads.prototype, 'messages');
          const plannedLeaf = jest.spyOn(LaterPayloads.prototype, 'addLeaf');
          const apolloAsked = jest.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');
          directLog.lines = [];
          apollosLog.lines = [];
          try {
            const ours = await answer(direct.url, query, script, accept);
            expect(adopt).toHaveBeenCalledTimes(1);
            // A known document never passes through Apollo, errors included (graphql/fast/direct-answer.ts).
            expect(apolloAsked).toHaveBeenCalledTimes(LEAF_STREAMED.has(documentName) ? 0 : 1);
            // One per text message, and per action call where the document streams its arguments.
            // The stock client's document, as the package has it or as it goes over the wire: it streams an
            // action's arguments and selects a result, a name and a parent.
            const stockDocument = documentName === 'stock' || documentName === 'wire';
            const streams = {
              text: 2,
              action: stockDocument ? 2 : 1,
              bad: 1,
              failing: 1,
              together: 3,
              insideText: stockDocument ? 2 : 1,
              badName: 1,
              openAtEnd: 2,
              badParent: 2,
              serverAction: stockDocument ? 3 : 2,
            }[script]!;
            // The executor's field resolver hands them over, or the message plan makes them.
            const messagesPlanned = MESSAGES_PLANNED.has(documentName);
            expect(planned).toHaveBeenCalledTimes(messagesPlanned ? 1 : 0);
            // Through the executor's field resolver for `messages`, or called by the run plan (no executor).
            expect(executorsMessages).toHaveBeenCalledTimes(messagesPlanned && !RUN_PLANNED.has(documentName) ? 1 : 0);
            expect((messagesPlanned ? plannedLeaf : leaf).mock.calls.length).toBe(
              LEAF_STREAMED.has(documentName) ? streams : 0,
            );
            expect((messagesPlanned ? leaf : plannedLeaf).mock.calls.length).toBe(0);
            adopt.mockClear();
            leaf.mockClear();
            planned.mockClear();
            executorsMessages.mockClear();
            plannedLeaf.mockClear();
            const apollos = await answer(throughApollo.url, query, script, accept);
            expect(adopt).not.toHaveBeenCalled();
            expect(leaf).not.toHaveBeenCalled();
            expect(planned).not.toHaveBeenCalled();
            expect(ours).toBe(apollos);
            expect(directLog.lines).toEqual(apollosLog.lines);
            const logged = directLog.lines.length;
            // And the same gateway with the document not known: the request through Apollo's pipeline.
            apolloAsked.mockClear();
            const unknown = jest.spyOn(KnownDocuments.prototype, 'find').mockReturnValue(undefined);
            try {
              expect(await answer(direct.url, query, script, accept)).toBe(ours);
            } finally {
              unknown.mockRestore();
            }
            expect(directLog.lines).toEqual([...apollosLog.lines, ...apollosLog.lines]);
            expect(logged > 0).toBe(ours.includes('"errors"'));
            expect(apolloAsked).toHaveBeenCalledTimes(1);
            // Not trivially equal: the answer streamed.
            const parts = format === 'sse' ? ours.split('event: next').length - 1 : ours.split('\r\n---').length - 1;
            expect(parts).toBeGreaterThanOrEqual(3);
            if (script === 'serverAction') {
              // The action ran, its result is a message, and the model was asked again.
              expect(ours).toContain('sunny.');
              if (stockDocument) expect(ours).toContain('"result":"sunny"');
            }
            // A bad name or parent is an error only where the document selects it.
            const selectsNameAndParent = stockDocument || (script === 'badName' && documentName === 'shapes');
            if (script === 'bad' || ((script === 'badName' || script === 'badParent') && selectsNameAndParent)) {
              expect(ours).toContain('"errors"');
            } else {
              expect(ours).not.toContain('"errors"');
            }
          } finally {
            adopt.mockRestore();
            leaf.mockRestore();
            planned.mockRestore();
            executorsMessages.mockRestore();
            plannedLeaf.mockRestore();
            apolloAsked.mockRestore();
          }
        });
      }
    }
  }
});

describe('errors in later payloads', () => {
  it('are logged, as those of a first result are', async () => {
    const lines: any[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) }),
    );
    const gateway = await startGateway({
      adapter: new ScriptedAdapter((prompt) => scripts[prompt]),
      logger,
      executor: FAST,
    });
    try {
      // The second time the document is known, and Apollo gets the request when the error comes.
      for (let i = 0; i < 2; i++)
        expect(await answer(gateway.url, STOCK_DOCUMENT, 'bad', MULTIPART)).toContain('"errors"');
      const logged = lines.filter((line) => line.msg === 'unexpected error (masked for the client)');
      expect(logged).toHaveLength(2);
      for (const line of logged) expect(line.err.message).toMatch(/String cannot represent value/);
    } finally {
      await gateway.close();
    }
  });
});

/** An answer's entries (the first part's data, then each later entry) in order, however they were grouped into payloads; and how it ended. */
function entriesOf(answer: string): unknown[] {
  const bodies = answer.includes('event: next')
    ? [...answer.matchAll(/^data: (.+)$/gm)].map((match) => match[1])
    : answer
        .split('\r\n---')
        .map((part) => part.slice(part.indexOf('\r\n\r\n') + 4))
        .filter((body) => body.startsWith('{'));
  const entries: unknown[] = [];
  let hasNext: unknown;
  for (const body of bodies) {
    const payload = JSON.parse(body);
    if ('data' in payload) entries.push({ data: payload.data, errors: payload.errors });
    for (const entry of payload.incremental ?? []) entries.push(entry);
    hasNext = payload.hasNext;
  }
  return [...entries, { hasNext }];
}

/** What a scripted agent writes, each step in a turn of its own: a text message, or a meta event (an interrupt). */
// `metaThenText`: an interrupt and a whole text message in the same turn; `metaAndEnd`: an interrupt
// and the run's end in the same turn (as an AG-UI agent's RUN_FINISHED with interrupts has them).
type AgentStep =
  | ['text', string]
  | ['meta', MetaEventPayload]
  | ['metaThenText', MetaEventPayload, string]
  | ['metaAndEnd', MetaEventPayload];

const agentScripts: Record<string, AgentStep[]> = {
  interrupt: [
    ['text', 'Before I go on: '],
    ['meta', { name: 'LangGraphInterruptEvent', value: 'approve?' }],
  ],
  interruptOnly: [['meta', { name: 'LangGraphInterruptEvent', value: 'approve?' }]],
  // CopilotKit's own interrupt carries messages, whose status the stock client's document defers.
  withMessages: [
    ['text', 'Look at this.'],
    [
      'meta',
      {
        name: 'CopilotKitLangGraphInterruptEvent',
        value: '{"question":"ok?"}',
        messages: [{ kind: 'text', id: 'interrupt-msg', role: 'assistant', content: 'Please approve.' }],
      },
    ],
    ['text', 'Waiting.'],
  ],
  two: [
    ['meta', { name: 'LangGraphInterruptEvent', value: 'first?' }],
    ['text', 'and'],
    ['meta', { name: 'LangGraphInterruptEvent', value: 'second?' }],
  ],
  sameTurn: [
    ['text', 'First.'],
    ['metaThenText', { name: 'LangGraphInterruptEvent', value: 'approve?' }, 'Said in the same turn.'],
  ],
  atEnd: [
    ['text', 'Before I stop: '],
    ['metaAndEnd', { name: 'LangGraphInterruptEvent', value: 'approve?' }],
  ],
};

/** An agent configured by name that plays a script (by the last user message) into the run. */
const scriptedAgent: AgentDefinition = {
  kind: 'ag-ui',
  create: (name) => ({
    name,
    description: 'Plays a script.',
    kind: 'ag-ui',
    client: {
      async run(request, out: RunWriter) {
        const last = request.messages[request.messages.length - 1];
        const prompt = last && 'content' in last ? String(last.content) : '';
        const turn = () => new Promise((resolve) => setImmediate(resolve));
        let n = 0;
        for (const step of agentScripts[prompt] ?? []) {
          await turn();
          if (step[0] === 'text') {
            const id = out.textStart(`agent-text-${n++}`);
            await turn();
            out.textContent(id, step[1]);
            await turn();
            out.textEnd(id);
          } else if (step[0] === 'metaThenText') {
            out.metaEvent(step[1]);
            const id = out.textStart(`agent-text-${n++}`);
            out.textContent(id, step[2]);
            out.textEnd(id);
          } else if (step[0] === 'metaAndEnd') {
            out.metaEvent(step[1]);
            return;
          } else {
            out.metaEvent(step[1]);
          }
        }
        await turn();
      },
      async loadState() {
        return { threadExists: false, state: {}, messages: [] };
      },
    },
  }),
};

describe('the run plan: runs without the executor, meta events and refusals (HTTP)', () => {
  let direct: RunningGateway;
  let throughApollo: RunningGateway;
  const options = {
    adapter: new ScriptedAdapter((prompt) => scripts[prompt] ?? AFTER_ACTION),
    agents: { scripted: scriptedAgent },
    maxConcurrentRuns: 1,
  };
  const agentSession = { agentSession: { agentName: 'scripted' } };

  beforeAll(async () => {
    direct = await startGateway({ ...options, executor: FAST });
    for (const query of Object.values(documents)) await answer(direct.url, query, 'text', MULTIPART);
    process.env.APOLLO_KEY = 'service:test:not-a-key';
    try {
      throughApollo = await startGateway({ ...options, executor: FAST });
    } finally {
      delete process.env.APOLLO_KEY;
    }
  });
  afterAll(async () => {
    await Promise.all([direct?.close(), throughApollo?.close()]);
  });

  // The meta events under two keys: the executor runs the operation (the run plan writes one key's).
  const META_TWICE = /* GraphQL */ `
    mutation ($data: GenerateCopilotResponseInput!) {
      generateCopilotResponse(data: $data) {
        threadId
        messages @stream {
          id
          ... on TextMessageOutput {
            content @stream
          }
        }
        metaEvents @stream {
          ... on LangGraphInterruptEvent {
            value
          }
        }
        again: metaEvents @stream {
          __typename
        }
      }
    }
  `;
  const agentDocuments: Record<string, string> = { ...documents, metaTwice: META_TWICE };
  for (const documentName of ['stock', 'wire', 'deferredStatus', 'metaTwice']) {
    const runPlanned = documentName !== 'metaTwice';
    for (const script of Object.keys(agentScripts)) {
      for (const [format, accept] of [
        ['multipart', MULTIPART],
        ['sse', SSE],
      ] as const) {
        it(`${documentName}, an agent's ${script}, ${format}: the same bytes as the executor's`, async () => {
          const awaitMeta = jest.spyOn(LaterPayloads.prototype, 'awaitMetaEvents');
          const executorsMessages = jest.spyOn(LaterPayloads.prototype, 'messages');
          try {
            const ours = await answer(direct.url, agentDocuments[documentName], script, accept, agentSession);
            // Run by the plan; only a document that selects the meta events waits for them.
            expect(executorsMessages).toHaveBeenCalledTimes(runPlanned ? 0 : 1);
            const selectsMeta = documentName !== 'deferredStatus';
            expect(awaitMeta).toHaveBeenCalledTimes(selectsMeta && runPlanned ? 1 : 0);
            const apollos = await answer(throughApollo.url, agentDocuments[documentName], script, accept, agentSession);
            if (script === 'withMessages' && selectsMeta && runPlanned) {
              // The interrupt's message and its deferred status complete together. The executor, asked
              // for its next payload while the run goes on, gives the message's item as soon as it is
              // done, then the status; started once the run raised the interrupt, it finds both done
              // and gives them in one payload. The same entries at the same paths, in the same order.
              expect(entriesOf(ours)).toEqual(entriesOf(apollos));
              expect(ours).not.toBe(apollos);
            } else if (script === 'sameTurn' && runPlanned) {
              // A message that starts, streams and ends in one turn: the executor gives its item, text
              // and status in one payload, the plan one payload each (leaf-streams.ts, message-plan.ts).
              // After the interrupt, as the executor has them.
              expect(entriesOf(ours)).toEqual(entriesOf(apollos));
            } else if (script === 'sameTurn') {
              // Without the run plan the executor's meta events and the message plan's payloads of one
              // turn come in the order of microtasks (LaterPayloads): the same entries, in another order.
              const sorted = (answer: string) =>
                entriesOf(answer)
                  .map((entry) => JSON.stringify(entry))
                  .sort();
              expect(sorted(ours)).toEqual(sorted(apollos));
            } else {
              expect(ours).toBe(apollos);
            }
            if (selectsMeta) {
              if (documentName === 'metaTwice') expect(ours).toContain('"again",0]');
              else
                expect(ours).toContain(
                  script === 'withMessages'
                    ? '"content":["Please approve."]'
                    : `"value":"${script === 'two' ? 'second?' : 'approve?'}"`,
                );
              if (script === 'sameTurn') expect(ours).toContain('Said in the same turn.');
              expect(ours).toContain('"metaEvents",0]');
              expect(ours).not.toContain('"errors"');
            }
          } finally {
            awaitMeta.mockRestore();
            executorsMessages.mockRestore();
          }
        });
      }
    }
  }

  // Refused before anything runs, by the resolver (synchronously) or by the launcher (a rejection).
  const refusals: Record<string, (url: string, query: string, accept: string) => Promise<string>> = {
    'an unknown agent': (url, query, accept) =>
      answer(url, query, 'text', accept, { agentSession: { agentName: 'nobody' } }),
    // Checked by the resolver before the run is asked for (BAD_USER_INPUT, thrown synchronously).
    'an input the run refuses': (url, query, accept) =>
      answer(url, query, 'text', accept, { threadId: 'x'.repeat(1000) }),
    'one run too many (OVERLOADED)': async (url, query, accept) => {
      // maxConcurrentRuns is 1: a second run while the first is still going is refused.
      const held = fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: MULTIPART },
        body: JSON.stringify({ query, variables: { data: runInput([userMessage('text', 'user-1')]) } }),
      });
      const first = await held;
      const reader = first.body!.getReader();
      await reader.read();
      try {
        return await answer(url, query, 'text', accept);
      } finally {
        await reader.cancel();
        // Its run ends once its response is gone: wait until a run may start again.
        for (let i = 0; i < 100; i++) {
          const probe = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query: '{ hello }' }),
          });
          await probe.text();
          if ((await (await fetch(url.replace(/\/api\/copilotkit$/, '/ready'))).json()).status) break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
  for (const [name, ask] of Object.entries(refusals)) {
    for (const documentName of ['stock', 'wire', 'deferredStatus']) {
      it(`${documentName}: ${name} is refused with the executor's bytes`, async () => {
        // Which refused it: nothing in the answer tells the run plan from the executor (that is the
        // point), so the stacks of the calls that close the request's later payloads do. The plan's
        // refusal closes them from `refusedRun`; the executor's path never calls it.
        const stacks: string[] = [];
        const close = LaterPayloads.prototype.close;
        const closes = jest.spyOn(LaterPayloads.prototype, 'close').mockImplementation(function (this: LaterPayloads) {
          stacks.push(new Error().stack ?? '');
          return close.call(this);
        });
        const byPlan = () => stacks.some((stack) => /at refusedRun \(.*incremental\.ts/.test(stack));
        let ours: string;
        try {
          ours = await ask(direct.url, documents[documentName], MULTIPART);
          expect(byPlan()).toBe(true);
        } finally {
          closes.mockRestore();
        }
        const apollos = await ask(throughApollo.url, documents[documentName], MULTIPART);
        expect(ours).toContain('"errors"');
        expect(ours).toContain('"path":["generateCopilotResponse"]');
        expect(ours).toBe(apollos);
      });
    }
  }
});
