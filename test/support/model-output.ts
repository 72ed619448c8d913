import type { ModelOutput } from '../../src/adapters/adapter.js';

/** A ModelOutput that records what an adapter wrote, in order, one line per call (ids m1, c2, …). */
export function recordingOutput(): ModelOutput & { log: string[] } {
  const log: string[] = [];
  let ids = 0;
  return {
    log,
    textStart: (proposed) => (log.push(`start ${proposed}`), `m${++ids}`),
    textContent: (id, content) => void log.push(`text ${id} ${content}`),
    textEnd: (id) => void log.push(`end ${id}`),
    actionStart: (proposed, name, parent) => (log.push(`call ${proposed} ${name} ${parent}`), `c${++ids}`),
    actionArgs: (id, args) => void log.push(`args ${id} ${args}`),
    actionEnd: (id) => void log.push(`callend ${id}`),
    reasoningStart: (proposed) => (log.push(`think ${proposed}`), `r${++ids}`),
    reasoningContent: (id, content) => void log.push(`thought ${id} ${content}`),
    reasoningEnd: (id) => void log.push(`thinkend ${id}`),
    usage: (report) => void log.push(`usage ${JSON.stringify(report)}`),
  };
}

/** What `promise` rejected with (it must reject). */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/** An adapter's error in its words and its cause's (the cause is what the run's failure logs). */
export function errorAndCause(error: { message: string; cause?: unknown }): string {
  return `${error.message} ${(error.cause as Error | undefined)?.message}`;
}
