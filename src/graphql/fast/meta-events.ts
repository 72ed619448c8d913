import { isIncrementalResults } from '@graphql-tools/executor';
import type { ExecutionOutcome, LaterPayload } from './payloads.js';
import { withoutOrphans } from '../nulled-paths.js';
import type { SharedStream } from '../../views/shared-stream.js';

// The run plan's meta events (message-plan.ts MetaEventsPlan): nothing runs for them unless the run
// raises one; then the executor runs their own document (LaterPayloads `awaitMetaEvents`).

/** Watches the run's meta events for the first one (`first`) or their end (`ended`). Returns the unwatch. */
export function watchMetaEvents(events: SharedStream<unknown>, first: () => void, ended: () => void): () => void {
  let unwatch: (() => void) | undefined;
  const stop = (): void => {
    unwatch?.();
    unwatch = undefined;
  };
  const check = (): void => {
    if (unwatch === undefined) return;
    if (events.available(0)) {
      stop();
      first();
    } else if (events.isEnded()) {
      stop();
      ended();
    }
  };
  unwatch = events.watch(check);
  check();
  return stop;
}

/**
 * The later payloads of the meta events' execution (nothing under a path it nulled), or an error: their
 * first part is `[]` and streams, anything else is a fault of the gateway's. What streams is ended then.
 */
export function metaEventsPayloads(result: ExecutionOutcome): AsyncGenerator<LaterPayload, void, void> | Error {
  const incremental = isIncrementalResults(result) ? result : undefined;
  const later = incremental?.subsequentResults;
  if (later === undefined || incremental!.initialResult.errors !== undefined) {
    void later?.return(undefined).catch(() => undefined);
    return new Error("The meta events' execution did not stream.");
  }
  return withoutOrphans(incremental!.initialResult, later);
}
