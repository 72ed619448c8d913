import type { Logger } from 'pino';
import { BadUserInputError, UnreachableCaseError } from '../core/errors.js';
import type { Message } from '../core/messages.js';

type ActionExecution = Extract<Message, { kind: 'actionExecution' }>;
type ActionResult = Extract<Message, { kind: 'result' }>;

/** What `repairTranscript` changed, for its log line. */
export interface TranscriptRepairs {
  /** Messages sent twice (same id, same content): the later copies were dropped. */
  duplicates: number;
  /** Action executions without a result (providers refuse a call with no answer): dropped. */
  callsWithoutResult: string[];
  /** Results of no action execution in the conversation: dropped. */
  resultsWithoutCall: string[];
  /** Results that did not follow their call (another message came between, or they came first): moved after it. */
  moved: number;
}

/**
 * Checks the conversation before a model sees it, so that what a provider would refuse with a 400
 * is repaired or refused here, clearly. Afterwards every action execution has a name and exactly one
 * result, which comes right after it; no two messages share an id.
 *
 * Repaired (and logged): exact duplicates are dropped; calls without a result and results without
 * a call are dropped; results are moved to follow their call; a result without an action name gets
 * its call's. Refused (BAD_USER_INPUT, `details.field` naming the message): an action execution
 * without a name, two different messages with one id, two different results for one call.
 */
export function repairTranscript(messages: readonly Message[], logger?: Logger): Message[] {
  const repairs: TranscriptRepairs = { duplicates: 0, callsWithoutResult: [], resultsWithoutCall: [], moved: 0 };

  // Exact duplicates out; conflicting ones refused. Agent state messages are not for the model.
  const byId = new Map<string, Message>();
  const unique: { message: Message; index: number }[] = [];
  messages.forEach((message, index) => {
    if (message.kind === 'agentState') {
      unique.push({ message, index });
      return;
    }
    const seen = byId.get(message.id);
    if (seen === undefined) {
      byId.set(message.id, message);
      unique.push({ message, index });
    } else if (sameMessage(seen, message)) {
      repairs.duplicates++;
    } else {
      throw new BadUserInputError(
        `messages[${index}] has the id "${message.id}" of an earlier, different message; message ids must be unique.`,
        {
          field: `messages[${index}]`,
        },
      );
    }
  });

  // Calls, by id; each must be named.
  const calls = new Map<string, number>();
  unique.forEach(({ message, index }, position) => {
    if (message.kind !== 'actionExecution') return;
    if (message.name.trim() === '') {
      throw new BadUserInputError(`messages[${index}] is an action execution without a name.`, {
        field: `messages[${index}]`,
      });
    }
    calls.set(message.id, position);
  });

  // One result per call.
  const results = new Map<string, { result: ActionResult; position: number }>();
  unique.forEach(({ message, index }, position) => {
    if (message.kind !== 'result') return;
    if (!calls.has(message.actionExecutionId)) {
      repairs.resultsWithoutCall.push(message.actionExecutionId);
      return;
    }
    const earlier = results.get(message.actionExecutionId);
    if (earlier === undefined) {
      results.set(message.actionExecutionId, { result: message, position });
    } else if (earlier.result.result === message.result) {
      repairs.duplicates++;
    } else {
      throw new BadUserInputError(
        `messages[${index}] is a second, different result for the action execution "${message.actionExecutionId}".`,
        {
          field: `messages[${index}]`,
        },
      );
    }
  });

  const out: Message[] = [];
  const nextOther = nextOtherThanCalls(unique);
  for (const [position, { message }] of unique.entries()) {
    if (message.kind === 'result') continue;
    if (message.kind !== 'actionExecution') {
      out.push(message);
      continue;
    }
    const answer = results.get(message.id);
    if (answer === undefined) {
      repairs.callsWithoutResult.push(message.id);
      continue;
    }
    out.push(message, withActionName(answer.result, message));
    if (!followsItsCall(nextOther, position, answer.position)) repairs.moved++;
  }

  const repaired =
    repairs.duplicates + repairs.callsWithoutResult.length + repairs.resultsWithoutCall.length + repairs.moved;
  if (repaired > 0) logger?.info({ transcript: repairs }, 'repaired the conversation before calling the model');
  return out;
}

/**
 * For each position, the first at or after it of a message that is neither a call nor a result (the length when none
 * is): one pass from the end, so that checking every call's result is linear. Scanning from each call to its result
 * was quadratic when all the calls came first and all the results after them (found from outside: 60,000 calls and
 * their results, 8 MB, held the event loop 21 s, and every later run on that thread again).
 */
function nextOtherThanCalls(messages: readonly { message: Message }[]): Int32Array {
  const next = new Int32Array(messages.length + 1);
  next[messages.length] = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    const kind = messages[i].message.kind;
    next[i] = kind === 'actionExecution' || kind === 'result' ? next[i + 1] : i;
  }
  return next;
}

/** Whether a result already came after its call with only other calls and results between them. */
function followsItsCall(nextOther: Int32Array, callAt: number, resultAt: number): boolean {
  return resultAt > callAt && nextOther[callAt + 1] >= resultAt;
}

function withActionName(result: ActionResult, call: ActionExecution): ActionResult {
  return result.actionName ? result : { ...result, actionName: call.name };
}

function sameMessage(a: Message, b: Message): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'text':
      return a.role === (b as typeof a).role && a.content === (b as typeof a).content;
    case 'actionExecution':
      return a.name === (b as typeof a).name && a.arguments === (b as typeof a).arguments;
    case 'result':
      return a.actionExecutionId === (b as typeof a).actionExecutionId && a.result === (b as typeof a).result;
    case 'image':
      return a.format === (b as typeof a).format && a.bytes === (b as typeof a).bytes;
    case 'agentState':
      return true;
    default:
      // Every kind of message has its case: a new one does not compile until it has.
      throw new UnreachableCaseError(a);
  }
}
