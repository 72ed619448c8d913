import { textLength } from '../core/event-bytes.js';
import type { AgentStateRecord } from './store.js';

// What the memory thread store counts its threads, runs, events and states for (its maxBytes bound): their strings'
// sizes plus the fixed overheads measured with scripts/store-footprint.mjs.

/**
 * Bytes counted per thread besides its strings: its entry in the map, its object and time, its list of runs (on
 * 64-bit Node, whose builds do not compress pointers). Measured with scripts/store-footprint.mjs, as is the next one.
 */
export const THREAD_OVERHEAD = 220;
/** Bytes counted per run besides its strings: its object, its two times, its place in the list. */
export const RUN_OVERHEAD = 128;
/** Bytes counted per agent state besides its state: the record kept of it. */
const STATE_OVERHEAD = 64;

export function stateBytes(state: AgentStateRecord): number {
  return STATE_OVERHEAD + textLength(state.state);
}
