import { describe, expect, it, jest } from '@jest/globals';
import { parse, type ExecutionArgs } from 'graphql';
import type { RuntimeEvent, SequencedEvent } from '../src/core/events.js';
import { MESSAGE_SUCCESS, RUN_SUCCESS } from '../src/core/status.js';
import { scriptedRunContext } from './support/scripted-run.js';

// On the pulled subscription path (src/graphql/fast/subscribe.ts EventResponseStream: a copilotRun
// document with @defer in its event selection, or one the compiler does not take) each event is
// executed by the tools executor. When executing an event fails as a whole (the executor's own
// error, not a field error), the stream ends with it, and its source must be told to stop:
// graphql-ws does not call return() after a rejected next(), so otherwise the run would go on with
// no reader. The executor fails only by a fault of its own, so here it is made to fail, on one
// event, by a stand-in that is the real executor for every other call.

const realExecutor = await import('@graphql-tools/executor');
/** Whether `execute` fails for an event (the root value), and how: a throw or a rejection. */
let failure: { on: (event: unknown) => boolean; how: 'throw' | 'reject' } | undefined;
jest.unstable_mockModule('@graphql-tools/executor', () => ({
  ...realExecutor,
  execute: (args: ExecutionArgs) => {
    if (failure?.on(args.rootValue)) {
      const error = new Error('the executor broke');
      if (failure.how === 'throw') throw error;
      return Promise.reject(error);
    }
    return realExecutor.execute(args);
  },
}));
// Imported only now, so that they (and the gateway the harness imports) take the stand-in.
const { createSubscriber } = await import('../src/graphql/fast/subscribe.js');
const { eventsRunCompiled } = await import('../src/graphql/fast/event-documents.js');
const { runInput, silentLogger, userMessage } = await import('./support/harness.js');
const { buildSchema } = await import('../src/graphql/schema.js');

const schema = buildSchema();
const subscriber = createSubscriber(schema);

function events(): SequencedEvent[] {
  const list: RuntimeEvent[] = [
    { type: 'RunStarted', threadId: 'thread-1', runId: 'run-1' },
    { type: 'TextMessageStart', messageId: 'msg-1', parentMessageId: null, role: 'assistant' },
    { type: 'TextMessageContent', messageId: 'msg-1', content: 'Hello' },
    { type: 'TextMessageContent', messageId: 'msg-1', content: ', world' },
    { type: 'TextMessageEnd', messageId: 'msg-1', status: MESSAGE_SUCCESS },
    { type: 'RunFinished', status: RUN_SUCCESS },
  ];
  return list.map((event, sequence) => ({ ...event, sequence }) as SequencedEvent);
}

const DEFERRED = `subscription($data: GenerateCopilotResponseInput!) {
  copilotRun(data: $data) { __typename ... @defer { ... on RunEvent { sequence } } }
}`;
const aliased = (field: string, selection: string) =>
  [0, 1, 2].map((i) => `${field[0]}${i}: ${field} ${selection}`).join(' ');
/** Aliased fragments that expand past what the compiler is given. */
const TOO_LARGE = `subscription($data: GenerateCopilotResponseInput!) { copilotRun(data: $data) { __typename ... on RunEvent { sequence } ...E } }
fragment E on CopilotRunEvent { ... on RunMetaEvent { ${aliased('event', '{ ...M }')} } }
fragment M on BaseMetaEvent { __typename ... on CopilotKitLangGraphInterruptEvent { ${aliased('data', '{ ...D }')} } }
fragment D on CopilotKitLangGraphInterruptEventData { ${aliased('messages', '{ ...S }')} }
fragment S on BaseMessageOutput { id ${aliased('status', '{ __typename }')} }`;

describe('an execution error on the pulled subscription path', () => {
  for (const [shape, query] of [
    ['@defer in the event selection', DEFERRED],
    ['a document the compiler does not take', TOO_LARGE],
  ] as const) {
    for (const how of ['throw', 'reject'] as const) {
      it(`ends the stream with the error and stops the run (${shape}, the executor's ${how === 'throw' ? 'throw' : 'rejection'})`, async () => {
        const document = parse(query);
        expect(eventsRunCompiled(schema, document)).toBe(false);
        const aborted: unknown[] = [];
        let ended = 0;
        failure = { on: (event) => (event as SequencedEvent | undefined)?.sequence === 2, how };
        try {
          const args = {
            schema,
            document,
            variableValues: { data: runInput([userMessage('hi')]) },
            contextValue: scriptedRunContext(events(), silentLogger, aborted),
          } as ExecutionArgs;
          // No sink: the pulled path, as for every stream the WebSocket transport cannot push.
          const stream = (await subscriber(args, () => ended++)) as AsyncGenerator<unknown>;
          const received: unknown[] = [];
          let error: unknown;
          try {
            for (;;) {
              const next = await stream.next();
              if (next.done) break;
              received.push(next.value);
            }
          } catch (thrown) {
            error = thrown;
          }
          expect((error as Error | undefined)?.message).toBe('the executor broke');
          // The events before the failing one were sent (for @defer, each in two parts).
          expect(received.length).toBe(query === DEFERRED ? 4 : 2);
          // The source was told to stop: the run is aborted, though no reader called return().
          await new Promise((resolve) => setImmediate(resolve));
          expect(aborted).toHaveLength(1);
          expect(ended).toBe(1);
          // And the stream stays ended.
          await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
        } finally {
          failure = undefined;
        }
      });
    }
  }
});
