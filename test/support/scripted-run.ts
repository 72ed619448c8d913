import type { Logger } from 'pino';
import type { SequencedEvent } from '../../src/core/events.js';
import type { RunHandle } from '../../src/engine/run.js';

/**
 * A GraphQL context whose launcher "runs" by emitting `events` to the view it is given, one per turn
 * of the event loop, and stops once the run is aborted (each abort's reason goes to `aborted`). It
 * imports nothing but types, so a test that mocks a module before importing the gateway can use it.
 */
export function scriptedRunContext(events: readonly SequencedEvent[], logger: Logger, aborted: unknown[] = []) {
  const launcher = {
    async start(_request: unknown, _caller: unknown, attach: (run: RunHandle) => unknown) {
      const listeners: ((event: SequencedEvent) => void)[] = [];
      const run: RunHandle = {
        threadId: 'thread-1',
        runId: 'run-1',
        subscribe: (listener) => {
          listeners.push(listener);
          return () => listeners.splice(listeners.indexOf(listener), 1);
        },
        abort: (reason) => {
          aborted.push(reason);
        },
        finished: new Promise(() => {}),
      };
      const view = attach(run);
      void (async () => {
        for (const event of events) {
          await new Promise((resolve) => setImmediate(resolve));
          if (aborted.length) return;
          for (const listener of [...listeners]) listener(event);
        }
      })();
      return view;
    },
  };
  return {
    requestId: 'req-1',
    logger,
    signal: new AbortController().signal,
    launcher,
    allowance: { used: false },
    acceptsIncremental: true,
  };
}
