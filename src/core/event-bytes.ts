import { UnreachableCaseError } from './errors.js';
import type { SequencedEvent } from './events.js';
import { messagesBytes } from './messages.js';

// What an event is counted for where output is bounded or held: a run's output (maxRunOutputMb), the memory thread
// store's running runs (its maxBytes), a reader's queue of events it has not taken (maxBufferedOutputMb). Its
// strings' lengths plus a fixed overhead per event, measured with scripts/store-footprint.mjs.

/** Bytes counted per event besides its strings (an object and its fields). */
const ITEM_OVERHEAD = 96;

/** What `event` is counted for: its strings and ITEM_OVERHEAD. */
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
export function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : NOT_TEXT;
}
