import type { GatewayError } from '../../src/core/errors.js';
import type { SequencedEvent } from '../../src/core/events.js';
import { RUN_SUCCESS } from '../../src/core/status.js';
import type { RedisThreadStore } from '../../src/threads/redis/store.js';
import { until } from './threads.js';

/** A run streamed through a store's run log by hand: what it emitted and what its clients were shown. */
export interface StreamedRun {
  threadId: string;
  runId: string;
  emitted: SequencedEvent[];
  shown: SequencedEvent[];
  failures: GatewayError[];
}

/**
 * Runs `runs` runs at once through `store`'s run logs, on threads `<name>-0` …: each opens, then `turns` times every
 * run emits one token in the same turn of the event loop (as the upstream chunks of several runs read together), 2 ms
 * apart, then they all end. Resolves once every run's clients were shown its end.
 */
export async function streamTogether(
  store: RedisThreadStore,
  name: string,
  runs: number,
  turns: number,
): Promise<StreamedRun[]> {
  const streamed = await Promise.all(
    Array.from({ length: runs }, async (_, i) => {
      const threadId = `${name}-${i}`;
      const { runId } = await store.claim(threadId, `run-${i}`, `fresh-${i}`);
      const run: StreamedRun & { log: ReturnType<RedisThreadStore['open']>; next: number } = {
        threadId,
        runId,
        emitted: [],
        shown: [],
        failures: [],
        log: store.open(threadId, runId, { messages: [], newMessages: [] }),
        next: 0,
      };
      run.log.deliverStored!({
        stored: (events) => void run.shown.push(...events),
        failed: (error) => void run.failures.push(error),
      });
      return run;
    }),
  );
  const emit = (run: (typeof streamed)[number], body: Record<string, unknown>) => {
    const event = { ...body, sequence: run.next++ } as SequencedEvent;
    run.emitted.push(event);
    run.log.append(event);
  };
  for (const run of streamed) {
    emit(run, { type: 'RunStarted', threadId: run.threadId, runId: run.runId });
    emit(run, { type: 'TextMessageStart', messageId: `m-${run.runId}`, parentMessageId: null, role: 'assistant' });
  }
  for (let turn = 0; turn < turns; turn++) {
    for (const run of streamed)
      emit(run, { type: 'TextMessageContent', messageId: `m-${run.runId}`, content: `t${turn} ` });
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  for (const run of streamed) {
    emit(run, { type: 'TextMessageEnd', messageId: `m-${run.runId}`, status: { code: 'Success' } });
    emit(run, { type: 'RunFinished', status: RUN_SUCCESS });
  }
  await until(
    async () => streamed.every((run) => run.shown.at(-1)?.type === 'RunFinished' || run.failures.length > 0),
    (done) => done,
    'every run shown to its end',
  );
  return streamed;
}
