import { UnreachableCaseError } from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import { messagesBytes } from '../core/messages.js';
import type { AgentStateRecord } from './store.js';

// What the memory thread store counts its threads, runs, events and states for (its maxBytes bound): their strings'
// sizes plus the fixed overheads measured with scripts/store-footprint.mjs.

/** Bytes counted per event of a running run besides its strings (an object and its fields). */
const ITEM_OVERHEAD = 96;
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

export function eventBytes(event: SequencedEvent): number {
  switch (event.type) {
    case 'TextMessageContent':
    case 'ReasoningContent':
      return ITEM_OVERHEAD + textLength(event.content);
    case 'ActionExecutionArgs':
      return ITEM_OVERHEAD + textLength(event.args);
    case 'ActionExecutionResult':
      return ITEM_OVERHEAD + textLength(event.result);
    case 'AgentStateMessage':
      return ITEM_OVERHEAD + textLength(event.state);
    case 'MetaEvent': {
      // An interrupt's messages come from the upstream as they are.
      const messages = event.event?.name === 'CopilotKitLangGraphInterruptEvent' ? event.event.messages : undefined;
      return ITEM_OVERHEAD + textLength(event.event?.value) + (Array.isArray(messages) ? messagesBytes(messages) : 0);
    }
    // A start names what it opens: ids and names an upstream chooses (up to 256 characters each, core/ids.ts).
    case 'TextMessageStart':
      return ITEM_OVERHEAD + textLength(event.messageId) + optionalLength(event.parentMessageId);
    case 'ActionExecutionStart':
      return (
        ITEM_OVERHEAD +
        textLength(event.actionExecutionId) +
        textLength(event.actionName) +
        optionalLength(event.parentMessageId)
      );
    case 'ReasoningStart':
      return ITEM_OVERHEAD + textLength(event.messageId);
    // Ends name what a start named (counted there); the run's bounds and statuses are bounded elsewhere.
    case 'RunStarted':
    case 'TextMessageEnd':
    case 'ActionExecutionEnd':
    case 'ReasoningEnd':
    case 'RunFinished':
      return ITEM_OVERHEAD;
    default:
      // A new kind of event must say what it costs: one that carries text would otherwise pass the store's and a
      // run's bounds uncounted.
      throw new UnreachableCaseError(event);
  }
}

/** What a value that should be text is counted for, never NaN. */
const NOT_TEXT = 64;

/** A string's length, or nothing for a field left out (null or undefined). */
function optionalLength(value: string | null | undefined): number {
  return typeof value === 'string' ? value.length : 0;
}

/**
 * A text field's length; anything else (which the run refuses, RunWriter's checks, so that nothing should reach here)
 * counts a fixed size, so that a store's total is a number whatever an event holds: a total made NaN once would stay
 * NaN and make every bound look exceeded.
 */
function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : NOT_TEXT;
}
