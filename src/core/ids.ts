/**
 * The agent that is the model itself (a run without an agent, through the service adapter), as CopilotKit ≥1.50
 * names it; threads of such runs are listed under it.
 */
export const DEFAULT_AGENT_ID = 'default';

/** The longest thread or run id a client may send, over every protocol. */
export const MAX_ID_LENGTH = 256;

/** A UTF-16 surrogate without its pair (text that cannot be UTF-8 or in a URI as it is); global, for replace. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether text holds no lone surrogate (a regular expression of its own: a global one's `test` keeps state). */
export function isWellFormedText(text: string): boolean {
  return !HAS_LONE_SURROGATE.test(text);
}

const HAS_LONE_SURROGATE = new RegExp(LONE_SURROGATE.source);
