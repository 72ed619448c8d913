import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { subscribe as executorSubscribe } from '@graphql-tools/executor';
import { parse, type ExecutionArgs } from 'graphql';
import type { RuntimeEvent, SequencedEvent } from '../src/core/events.js';
import { MESSAGE_SUCCESS, RUN_SUCCESS } from '../src/core/status.js';
import type { RunHandle } from '../src/engine/run.js';
import { RunEventStream } from '../src/views/run-events.js';
import { EventFeed } from '../src/threads/feed.js';
import { buildSchema } from '../src/graphql/schema.js';
import { eventsRunCompiled, toEventDocument } from '../src/graphql/fast/event-documents.js';
import { createSubscriber } from '../src/graphql/fast/subscribe.js';
import type { ResultSink } from '../src/graphql/executor.js';
import { WS_RUN } from './support/documents.js';
import { RUN_SUBSCRIPTION } from './support/transports.js';
import { runInput, silentLogger, userMessage } from './support/harness.js';
import { scriptedRunContext } from './support/scripted-run.js';

// The WebSocket transport runs subscriptions on a lean path (src/graphql/fast/subscribe.ts) instead of the
// tools executor's own `subscribe`. Here both run the same documents over the same events, and every
// payload must serialise to the same bytes: the documents the other tests and the README use, and
// every shape the lean path treats specially (aliases, fragments on the subscription type, variables
// inside the event selection, several operations, @defer inside an event, errors of every kind).

const schema = buildSchema();
const lean = createSubscriber(schema);

const failedStatus = {
  code: 'Failed',
  reason: 'UNKNOWN_ERROR',
  details: {
    description: 'The model provider failed (HTTP 500).',
    code: 'UPSTREAM_UNAVAILABLE',
    requestId: 'req-1',
    originalError: { code: 'UPSTREAM_UNAVAILABLE' },
  },
} as const;

/** A run's events, every kind at least once, in an order a run could send them. */
function allEvents(finish: 'success' | 'failed' = 'success'): SequencedEvent[] {
  const events: RuntimeEvent[] = [
    { type: 'RunStarted', threadId: 'thread-1', runId: 'run-1' },
    { type: 'TextMessageStart', messageId: 'msg-1', parentMessageId: null, role: 'assistant' },
    { type: 'TextMessageContent', messageId: 'msg-1', content: 'Hello, ' },
    {
      type: 'AgentStateMessage',
      messageId: 'state-1',
      threadId: 'thread-1',
      agentName: 'crew',
      nodeName: 'plan',
      runId: 'run-1',
      active: true,
      role: 'assistant',
      state: '{"step":1}',
      running: true,
    },
    { type: 'TextMessageContent', messageId: 'msg-1', content: 'world "quoted" \u2603\n' },
    { type: 'TextMessageEnd', messageId: 'msg-1', status: MESSAGE_SUCCESS },
    { type: 'ActionExecutionStart', actionExecutionId: 'call-1', actionName: 'sayHello', parentMessageId: 'msg-1' },
    { type: 'ActionExecutionArgs', actionExecutionId: 'call-1', args: '{"name":' },
    { type: 'MetaEvent', event: { name: 'LangGraphInterruptEvent', value: '{"question":"ok?"}', response: null } },
    { type: 'ActionExecutionArgs', actionExecutionId: 'call-1', args: '"Ann"}' },
    { type: 'ActionExecutionEnd', actionExecutionId: 'call-1', status: MESSAGE_SUCCESS },
    {
      type: 'ActionExecutionResult',
      messageId: 'result-call-1',
      actionExecutionId: 'call-1',
      actionName: 'sayHello',
      result: 'Hello, Ann!',
    },
    {
      type: 'MetaEvent',
      event: {
        name: 'CopilotKitLangGraphInterruptEvent',
        value: 'approve?',
        response: null,
        messages: [
          { kind: 'text', id: 'im-1', role: 'assistant', content: 'Shall I?' },
          { kind: 'actionExecution', id: 'im-2', name: 'approve', arguments: '{}' },
          { kind: 'result', id: 'im-3', actionExecutionId: 'im-2', actionName: 'approve', result: 'yes' },
        ],
      },
    },
    { type: 'TextMessageStart', messageId: 'msg-2', parentMessageId: null, role: 'assistant' },
    { type: 'TextMessageEnd', messageId: 'msg-2', status: { code: 'Failed', reason: 'Run ended.' } },
    { type: 'RunFinished', status: finish === 'success' ? RUN_SUCCESS : failedStatus },
  ];
  return events.map((event, sequence) => ({ ...event, sequence }) as SequencedEvent);
}

/** Every payload either executor sends for one operation, serialised as graphql-ws would send it. */
async function payloads(
  run: (args: ExecutionArgs) => any,
  query: string,
  variables: Record<string, unknown>,
  events: readonly SequencedEvent[],
  operationName?: string,
): Promise<string[]> {
  const args = {
    schema,
    document: parse(query),
    variableValues: variables,
    operationName,
    contextValue: scriptedRunContext(events, silentLogger),
  } as ExecutionArgs;
  const result = await run(args);
  if (typeof result?.[Symbol.asyncIterator] !== 'function') return [JSON.stringify(result)];
  const out: string[] = [];
  for await (const payload of result) out.push(JSON.stringify(payload));
  return out;
}

/**
 * The same, with the lean path given a sink (as the WebSocket transport gives it): a pushed stream's
 * results are what the sink was sent (each written a turn later, as a socket would), a pulled one's
 * what its iterator yields. `pushed` says which it was.
 */
async function pushedPayloads(
  query: string,
  variables: Record<string, unknown>,
  events: readonly SequencedEvent[],
  operationName?: string,
) {
  const sent: string[] = [];
  let pushed = false;
  const sink: ResultSink = {
    send(result, written) {
      pushed = true;
      sent.push(JSON.stringify(result));
      setImmediate(written);
    },
  };
  const yielded = await payloads((args) => lean(args, undefined, sink), query, variables, events, operationName);
  return { sent: [...yielded, ...sent], pushed };
}

async function expectSameBytes(
  query: string,
  variables: Record<string, unknown>,
  events: readonly SequencedEvent[] = allEvents(),
  operationName?: string,
): Promise<string[] & { pushed?: boolean }> {
  const expected = await payloads(executorSubscribe as any, query, variables, events, operationName);
  const actual = await payloads(lean, query, variables, events, operationName);
  expect(actual).toEqual(expected);
  const pushed = await pushedPayloads(query, variables, events, operationName);
  expect(pushed.sent).toEqual(expected);
  return Object.assign(actual, { pushed: pushed.pushed });
}

const data = runInput([userMessage('hi')]);

// The documents the other tests, the README and the benchmark send, read from where they are written.
const WS_TEST_RUN = WS_RUN;
const README_RUN = (() => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const block = readme.slice(
    readme.indexOf('## Stream a run over WebSocket'),
    readme.indexOf('## Apollo Client and urql'),
  );
  return block.match(/query: `([\s\S]*?)`/)![1];
})();
const BENCH_RUN = readFileSync(new URL('../bench/load.mjs', import.meta.url), 'utf8').match(
  /const SUBSCRIPTION = `([\s\S]*?)`;/,
)![1];
const MINIMAL_RUN = 'subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename } }';
const INLINE_INPUT_RUN = `subscription Run { copilotRun(data: { threadId: "t-inline", frontend: { actions: [] }, metadata: { requestType: Chat },
  messages: [{ id: "1", createdAt: "2026-01-01T00:00:00.000Z", textMessage: { role: user, content: "hi" } }] }) {
  __typename ... on RunEvent { sequence } ... on TextMessageContentEvent { content } ... on RunFinishedEvent { status { __typename } } } }`;

beforeAll(() => {
  // Message outputs carry their creation time: both executions must see the same clock.
  jest.useFakeTimers({
    now: new Date('2026-11-24T12:00:00.000Z'),
    doNotFake: [
      'nextTick',
      'setImmediate',
      'queueMicrotask',
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
    ],
  });
});

afterAll(() => {
  jest.useRealTimers();
});

describe('the lean subscription path sends the bytes the executor sends', () => {
  it.each([
    ['the behaviour suite', RUN_SUBSCRIPTION, { data, properties: { tenant: 'a' } }],
    ['the WebSocket tests', WS_TEST_RUN, { data }],
    ['the README', README_RUN, { data }],
    ['the benchmark', BENCH_RUN, { data }],
    ['a minimal document', MINIMAL_RUN, { data }],
    ['an inline input, no variables (the explorer test)', INLINE_INPUT_RUN, {}],
  ])('for the document of %s', async (_name, query, variables) => {
    const sent = await expectSameBytes(query, variables);
    expect(sent).toHaveLength(allEvents().length);
    // These run on the compiled event document, not on the executor alone, and are pushed to a sink.
    expect(eventsRunCompiled(schema, parse(query))).toBe(true);
    expect(sent.pushed).toBe(true);
  });

  it('for a failed run', async () => {
    await expectSameBytes(WS_TEST_RUN, { data }, allEvents('failed'));
  });

  it('for aliases, fragments on the subscription type and nested fragments', async () => {
    const query = `
      subscription Run($data: GenerateCopilotResponseInput!, $properties: JSONObject) {
        ...Root
        ... on Subscription { run: copilotRun(data: $data, properties: $properties) { seq: __typename } }
      }
      fragment Root on Subscription { run: copilotRun(data: $data, properties: $properties) { ...Event } }
      fragment Event on CopilotRunEvent { __typename ... on RunEvent { n: sequence } ... on TextMessageContentEvent { text: content } ...Finish }
      fragment Finish on RunFinishedEvent { status { ... on BaseResponseStatus { code } } }`;
    await expectSameBytes(query, { data, properties: {} });
    expect(eventsRunCompiled(schema, parse(query))).toBe(true);
  });

  it('for variables used inside the event selection, and the event document keeps only those', async () => {
    const query = `subscription Run($data: GenerateCopilotResponseInput!, $withText: Boolean!, $skipSeq: Boolean = false) {
      copilotRun(data: $data) {
        __typename
        ... on RunEvent { sequence @skip(if: $skipSeq) }
        ... on TextMessageContentEvent @include(if: $withText) { content }
      }
    }`;
    expect(eventsRunCompiled(schema, parse(query))).toBe(true);
    for (const withText of [true, false]) await expectSameBytes(query, { data, withText });
    await expectSameBytes(query, { data, withText: true, skipSeq: true });
    const eventDocument = toEventDocument(schema, parse(query));
    const operation = eventDocument.definitions[0] as any;
    expect(operation.variableDefinitions.map((v: any) => v.variable.name.value)).toEqual(['withText', 'skipSeq']);
    expect(operation.selectionSet.selections[0].arguments).toEqual([]);
  });

  it('for a variable left out whose name every object has (constructor, toString): its default, as the executor', async () => {
    const query = `subscription Run($data: GenerateCopilotResponseInput!, $constructor: Boolean = false, $toString: Boolean = true) {
      copilotRun(data: $data) {
        __typename
        ... on RunEvent { sequence @skip(if: $constructor) }
        ... on TextMessageContentEvent @include(if: $toString) { content }
      }
    }`;
    const sent = await expectSameBytes(query, { data });
    expect(sent.join('')).toContain('"sequence"');
    expect(sent.join('')).not.toContain('"errors"');
  });

  it('for a document with several operations, run by name', async () => {
    const query = `query Hello { hello }
      subscription First($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename } }
      subscription Second($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { ... on RunEvent { sequence } } }`;
    await expectSameBytes(query, { data }, allEvents(), 'Second');
    expect(eventsRunCompiled(schema, parse(query), 'Second')).toBe(true);
  });

  it('for @defer inside the event selection (an initial part, then the deferred one, per event)', async () => {
    const query = `subscription Run($data: GenerateCopilotResponseInput!) {
      copilotRun(data: $data) { __typename ... @defer { ... on RunEvent { sequence } } }
    }`;
    const sent = await expectSameBytes(query, { data });
    expect(sent.length).toBe(allEvents().length * 2);
    expect(eventsRunCompiled(schema, parse(query))).toBe(false); // the compiler does not stream: the executor runs it
    expect(sent.pushed).toBe(false); // and its parts are pulled
  });

  it('for an event the schema cannot represent (a null where a value is required, an unknown kind)', async () => {
    const events = allEvents();
    events[2] = { ...events[2], content: null } as unknown as SequencedEvent;
    events[3] = { ...events[3], type: 'Unheard' } as unknown as SequencedEvent;
    const sent = await expectSameBytes(WS_TEST_RUN, { data }, events);
    expect(sent.pushed).toBe(true);
    // The compiled document's result had errors: the executor ran these events again, and its result was sent.
    expect(JSON.parse(sent[2]).errors[0].path).toEqual(['copilotRun', 'content']);
    expect(JSON.parse(sent[3]).errors[0].message).toMatch(/Unheard|CopilotRunEvent/);
  });

  it('for variables that cannot be coerced', async () => {
    const [sent] = await expectSameBytes(WS_TEST_RUN, { data: { ...data, messages: 'not a list of messages' } });
    expect(JSON.parse(sent).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    await expectSameBytes(WS_TEST_RUN, {});
  });

  it('for a document too large to compile (aliased fragments that expand to 202 fields): the executor runs it', async () => {
    const aliased = (field: string, selection: string) =>
      [0, 1, 2].map((i) => `${field[0]}${i}: ${field} ${selection}`).join(' ');
    const query = `subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename ...E } }
fragment E on CopilotRunEvent { ... on RunMetaEvent { ${aliased('event', '{ ...M }')} } }
fragment M on BaseMetaEvent { __typename ... on CopilotKitLangGraphInterruptEvent { ${aliased('data', '{ ...D }')} } }
fragment D on CopilotKitLangGraphInterruptEventData { ${aliased('messages', '{ ...S }')} }
fragment S on BaseMessageOutput { id ${aliased('status', '{ __typename }')} }`;
    expect(eventsRunCompiled(schema, parse(query))).toBe(false);
    expect((await expectSameBytes(query, { data })).pushed).toBe(false);
  });

  it('for an input the gateway refuses (the root resolver throws)', async () => {
    const [sent] = await expectSameBytes(WS_TEST_RUN, {
      data: runInput([{ id: 'm1', createdAt: new Date().toISOString() }]),
    });
    expect(JSON.parse(sent).errors[0].path).toEqual(['copilotRun']);
  });
});

describe('a pushed stream (the WebSocket transport gives the lean path a sink)', () => {
  /** Starts a pushed stream of `events` on the WebSocket tests' document; `written` decides when each send is done. */
  async function push(
    events: readonly SequencedEvent[],
    written: (done: () => void, sent: string[]) => void = (done) => setImmediate(done),
  ) {
    const aborted: unknown[] = [];
    const sent: string[] = [];
    let ended = 0;
    const sink: ResultSink = {
      send(result, done) {
        sent.push(JSON.stringify(result));
        written(done, sent);
      },
    };
    const args = {
      schema,
      document: parse(WS_TEST_RUN),
      variableValues: { data },
      contextValue: scriptedRunContext(events, silentLogger, aborted),
    } as ExecutionArgs;
    const stream = (await lean(args, () => ended++, sink)) as AsyncGenerator;
    return { stream, sent, aborted, ended: () => ended };
  }

  it('resolves its reader once, when the stream has ended; onEnd is called once', async () => {
    const { stream, sent, ended } = await push(allEvents());
    await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
    expect(sent).toHaveLength(allEvents().length);
    expect(ended()).toBe(1);
    await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
    await stream.return(undefined);
    expect(ended()).toBe(1);
  });

  it('asks for the next event only once the sink has written the last: a slow reader gets merged text, the same text', async () => {
    const events = allEvents().slice(0, 2);
    for (let i = 0; i < 12; i++)
      events.push({ type: 'TextMessageContent', messageId: 'msg-1', content: `t${i} `, sequence: 0 } as SequencedEvent);
    events.push(...allEvents().slice(5));
    events.forEach((event, sequence) => Object.assign(event, { sequence }));
    let inFlight = 0;
    let most = 0;
    const { stream, sent } = await push(events, (done) => {
      most = Math.max(most, ++inFlight);
      // Written five turns later: the run goes on meanwhile.
      let turns = 5;
      const later = () => (--turns > 0 ? setImmediate(later) : (inFlight--, done()));
      setImmediate(later);
    });
    await stream.next();
    expect(most).toBe(1);
    const texts = sent
      .map((json) => JSON.parse(json).data.copilotRun)
      .filter((event) => event.__typename === 'TextMessageContentEvent');
    expect(texts.length).toBeLessThan(12);
    expect(texts.map((event) => event.content).join('')).toBe(Array.from({ length: 12 }, (_, i) => `t${i} `).join(''));
  });

  it('ends at once when the reader returns: the pending next() resolves done, the run is aborted, nothing more is sent', async () => {
    const { stream, sent, aborted, ended } = await push(allEvents(), () => {});
    const pending = stream.next();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1); // the sink has not written it: nothing more was asked for
    await stream.return(undefined);
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
    expect(aborted).toHaveLength(1);
    expect((aborted[0] as { code: string }).code).toBe('CLIENT_DISCONNECTED');
    expect(ended()).toBe(1);
  });

  it('rejects its reader with an error the sink throws, and stops the run', async () => {
    const { stream, aborted, ended } = await push(allEvents(), () => {
      throw new Error('the socket broke');
    });
    await expect(stream.next()).rejects.toThrow('the socket broke');
    await new Promise((resolve) => setImmediate(resolve));
    expect(aborted).toHaveLength(1);
    expect(ended()).toBe(1);
  });
});

describe('a pushed stream, ended by its reader', () => {
  it('before its first next(): the run is aborted, next() is done, onEnd is called once', async () => {
    const aborted: unknown[] = [];
    let ended = 0;
    const sent: string[] = [];
    const sink: ResultSink = { send: (result, written) => (sent.push(JSON.stringify(result)), setImmediate(written)) };
    const args = {
      schema,
      document: parse(WS_TEST_RUN),
      variableValues: { data },
      contextValue: scriptedRunContext(allEvents(), silentLogger, aborted),
    } as ExecutionArgs;
    const stream = (await lean(args, () => ended++, sink)) as AsyncGenerator;
    await stream.return(undefined);
    await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
    expect(aborted).toHaveLength(1);
    expect(ended).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent).toEqual([]);
  });

  it('while a result is being written: the late write asks for nothing more', async () => {
    const sent: string[] = [];
    const writes: (() => void)[] = [];
    const sink: ResultSink = { send: (result, written) => (sent.push(JSON.stringify(result)), writes.push(written)) };
    const args = {
      schema,
      document: parse(WS_TEST_RUN),
      variableValues: { data },
      contextValue: scriptedRunContext(allEvents(), silentLogger),
    } as ExecutionArgs;
    const stream = (await lean(args, undefined, sink)) as AsyncGenerator;
    const pending = stream.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent).toHaveLength(1);
    await stream.return(undefined);
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
    writes[0](); // the socket's write callback, after the client left
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent).toHaveLength(1);
  });
});

describe("a run's view hands its events over without promises (RunEventStream.request)", () => {
  function fakeRun() {
    let listener: ((event: SequencedEvent) => void) | undefined;
    const aborted: unknown[] = [];
    const run = {
      threadId: 't',
      runId: 'r',
      subscribe: (l: (event: SequencedEvent) => void) => ((listener = l), () => (listener = undefined)),
      abort: (reason: unknown) => void aborted.push(reason),
      finished: new Promise(() => {}),
    } as unknown as RunHandle;
    return {
      run,
      emit: (event: SequencedEvent) => listener?.(event),
      aborted,
      listening: () => listener !== undefined,
    };
  }
  const consumer = () => {
    const taken: SequencedEvent[] = [];
    let ends = 0;
    return {
      taken,
      ends: () => ends,
      take: (event: SequencedEvent) => void taken.push(event),
      end: () => void ends++,
      fail: (error: unknown) => {
        throw error;
      },
    };
  };
  const [started, opened, content, , more, closed, , , , , , , , , , finished] = allEvents();

  it('gives a waiting event at once, merging text that waited together, and the next when it comes', () => {
    const { run, emit } = fakeRun();
    const view = new RunEventStream(run);
    emit(started);
    emit(opened);
    emit(content);
    emit(more);
    const c = consumer();
    view.request(c);
    view.request(c);
    expect(c.taken.map((event) => event.type)).toEqual(['RunStarted', 'TextMessageStart']);
    view.request(c);
    expect(c.taken[2]).toMatchObject({
      type: 'TextMessageContent',
      content: 'Hello, world "quoted" \u2603\n',
      sequence: more.sequence,
    });
    view.request(c); // nothing waits: taken when it comes, once
    expect(c.taken).toHaveLength(3);
    emit(closed);
    emit(finished);
    expect(c.taken.map((event) => event.type).slice(3)).toEqual(['TextMessageEnd']);
    view.request(c);
    expect(c.taken.at(-1)!.type).toBe('RunFinished');
    view.request(c);
    expect(c.ends()).toBe(1);
  });

  it('ends a consumer once the reader has returned, and forgets a waiting one', async () => {
    const { run, emit, aborted, listening } = fakeRun();
    const view = new RunEventStream(run);
    const c = consumer();
    view.request(c);
    await view.return();
    expect(listening()).toBe(false);
    expect(aborted).toHaveLength(1);
    emit(started);
    expect(c.taken).toEqual([]);
    view.request(c);
    expect(c.ends()).toBe(1);
  });
});

describe('a joined run (joinCopilotRun) is pushed too', () => {
  const JOIN = `subscription($threadId: String!, $runId: String) {
    joinCopilotRun(threadId: $threadId, runId: $runId) { __typename ... on RunEvent { sequence } ... on TextMessageContentEvent { content } }
  }`;

  /** A context whose thread service feeds `events` (one a turn), then fails with `failWith` if given. */
  function joinContext(events: readonly SequencedEvent[], failWith?: Error) {
    const threads = {
      joinable: async () => ({ runId: 'run-1' }),
      follow: () => {
        const feed = new EventFeed(-1);
        void (async () => {
          for (const event of events) {
            await new Promise((resolve) => setImmediate(resolve));
            feed.push(event);
          }
          if (failWith) feed.fail(failWith);
        })();
        return feed;
      },
    };
    return { ...scriptedRunContext([], silentLogger), launcher: { threadService: threads } };
  }

  it('with the bytes the executor sends', async () => {
    const run = (subscriber: (args: ExecutionArgs) => any) =>
      (async () => {
        const args = {
          schema,
          document: parse(JOIN),
          variableValues: { threadId: 'thread-1' },
          contextValue: joinContext(allEvents()),
        } as ExecutionArgs;
        const result = await subscriber(args);
        const out: string[] = [];
        for await (const payload of result) out.push(JSON.stringify(payload));
        return out;
      })();
    const expected = await run(executorSubscribe as any);
    expect(expected).toHaveLength(allEvents().length);
    expect(await run(lean)).toEqual(expected);
    const sent: string[] = [];
    let pushed = false;
    const sink: ResultSink = {
      send: (result, written) => ((pushed = true), sent.push(JSON.stringify(result)), setImmediate(written)),
    };
    expect(await run((args) => lean(args, undefined, sink))).toEqual([]);
    expect(pushed).toBe(true);
    expect(sent).toEqual(expected);
  });

  it('and a feed that fails rejects its reader with the error, as a pulled one would', async () => {
    let ended = 0;
    const sink: ResultSink = { send: (_result, written) => setImmediate(written) };
    const args = {
      schema,
      document: parse(JOIN),
      variableValues: { threadId: 'thread-1' },
      contextValue: joinContext(allEvents().slice(0, 3), new Error('the store went away')),
    } as ExecutionArgs;
    const stream = (await lean(args, () => ended++, sink)) as AsyncGenerator;
    await expect(stream.next()).rejects.toThrow('the store went away');
    expect(ended).toBe(1);
  });
});

describe('an event feed hands its events over without promises (EventFeed.request)', () => {
  const consumer = () => {
    const taken: SequencedEvent[] = [];
    const failed: unknown[] = [];
    let ends = 0;
    return {
      taken,
      failed,
      ends: () => ends,
      take: (e: SequencedEvent) => void taken.push(e),
      end: () => void ends++,
      fail: (e: unknown) => void failed.push(e),
    };
  };
  const events = allEvents();

  it('gives queued events at once (merged), the next when it comes, then ends after RunFinished', () => {
    const feed = new EventFeed(-1);
    feed.push(events[0]);
    feed.push(events[1]);
    feed.push(events[2]);
    feed.push({ ...events[2], content: 'more', sequence: 3 } as SequencedEvent);
    const c = consumer();
    feed.request(c);
    feed.request(c);
    feed.request(c);
    expect(c.taken.map((e) => e.type)).toEqual(['RunStarted', 'TextMessageStart', 'TextMessageContent']);
    expect(c.taken[2]).toMatchObject({ content: 'Hello, more', sequence: 3 });
    expect(events[2]).toMatchObject({ content: 'Hello, ', sequence: 2 }); // the shared event is left as it was
    feed.request(c);
    feed.push(events[3]); // a sequence already taken: skipped
    feed.push({ ...events[15], sequence: 20 } as SequencedEvent);
    expect(c.taken.at(-1)!.type).toBe('RunFinished');
    feed.request(c);
    expect(c.ends()).toBe(1);
  });

  it("fails a waiting consumer, or the next one to ask, with the store's error; forgets one that returned", async () => {
    const waiting = new EventFeed(-1);
    const c = consumer();
    waiting.request(c);
    waiting.fail(new Error('lost'));
    expect(c.failed).toHaveLength(1);
    const later = new EventFeed(-1);
    later.fail(new Error('lost'));
    const d = consumer();
    later.request(d);
    expect(d.failed).toHaveLength(1);
    const left = new EventFeed(-1);
    const e = consumer();
    left.request(e);
    await left.return();
    left.push(events[0]);
    left.fail(new Error('lost'));
    left.end();
    expect([e.taken.length, e.failed.length, e.ends()]).toEqual([0, 0, 0]);
  });

  it("keeps every agent state while the reader is behind, where a run's view keeps only the last", () => {
    const state = (n: number, sequence: number) =>
      ({ ...events[3], state: `{"step":${n}}`, sequence }) as SequencedEvent;
    const feed = new EventFeed(-1);
    const { run, emit } = (() => {
      let listener: ((event: SequencedEvent) => void) | undefined;
      const run = {
        threadId: 't',
        runId: 'r',
        subscribe: (l: any) => ((listener = l), () => {}),
        abort: () => {},
        finished: new Promise(() => {}),
      } as unknown as RunHandle;
      return { run, emit: (event: SequencedEvent) => listener?.(event) };
    })();
    const view = new RunEventStream(run);
    for (const event of [state(1, 1), state(2, 2)]) {
      feed.push(event);
      emit(event);
    }
    const fromFeed = consumer();
    const fromView = consumer();
    feed.request(fromFeed);
    feed.request(fromFeed);
    view.request(fromView);
    view.request(fromView);
    expect(fromFeed.taken.map((event) => (event as any).state)).toEqual(['{"step":1}', '{"step":2}']);
    expect(fromView.taken.map((event) => (event as any).state)).toEqual(['{"step":2}']);
  });
});
