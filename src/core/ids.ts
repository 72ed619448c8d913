/**
 * The agent that is the model itself (a run without an agent, through the service adapter), as CopilotKit ≥1.50
 * names it; threads of such runs are listed under it.
 */
export const DEFAULT_AGENT_ID = 'default';

/** The longest thread or run id a client may send, over every protocol. */
const MAX_ID_LENGTH = 256;

/** A UTF-16 surrogate without its pair (text that cannot be UTF-8 or in a URI as it is); global, for replace. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether text holds no lone surrogate (a regular expression of its own: a global one's `test` keeps state). */
export function isWellFormedText(text: string): boolean {
  return !HAS_LONE_SURROGATE.test(text);
}

const HAS_LONE_SURROGATE = new RegExp(LONE_SURROGATE.source);

/**
 * What is wrong with an id a client names (a thread, run or agent id), or undefined: empty, longer than
 * MAX_ID_LENGTH, holding a lone surrogate or a control character. The one check of every protocol. Ids are keys (the
 * store's, an agent's threads), and on the way there they are encoded as UTF-8, where every lone surrogate becomes the
 * same U+FFFD: `chat\uD800` and `chat\uD801` would name one thread.
 */
export function idProblem(id: string): string | undefined {
  if (id.length === 0 || id.length > MAX_ID_LENGTH) return `must be 1 to ${MAX_ID_LENGTH} characters`;
  if (!isWellFormedText(id)) return 'must be well-formed text (it holds half of a surrogate pair)';
  if (CONTROL_CHARACTER.test(id)) return 'must not hold control characters (U+0000 to U+001F, U+007F)';
  return undefined;
}

/**
 * A control character. None is in an id: the Redis store joins a thread's and a run's ids with U+0000 in its lists
 * and stop notices (found from outside: a thread id holding one let a user stop another user's run), and a line
 * break in an id would break a log line or an SSE `id:` field.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
