import {
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from 'graphql';
import { LimitExceededError } from '../core/errors.js';
import type { StoredReads } from './context.js';
import { fieldCounter } from './validation.js';

/**
 * The most values an answer made from stored lists (a thread's messages, runs and states) may hold: the lists' lengths
 * times the fields selected for each item. The executor builds an answer whole before it is written, and aliases
 * repeat a field: found from outside, one `copilotThread` selecting a message's `id` under 900 aliases on a thread
 * of 20,000 messages (an 829 KB run and a 12 KB query) ended the process, out of heap. About 150 bytes of memory a
 * value, measured: a million values is about 150 MB while the answer is made. A thread's usual selection (the stock
 * client's, about a dozen fields a message) fits up to some 80,000 messages.
 */
const MAX_ANSWER_VALUES = 1_000_000;

/**
 * The most whole threads one operation may read (copilotThread, loadAgentState): each answer is as large as its thread,
 * and aliases repeat a field (loadAgentState's messages are one string of the thread's JSON, so the values' budget
 * does not see them).
 */
const MAX_THREAD_READS = 10;

/** Counts a whole-thread read of the operation (`spent`), or refuses it (LIMIT_EXCEEDED) past MAX_THREAD_READS. */
export function countThreadRead(info: GraphQLResolveInfo, spent: StoredReads): void {
  if (spent.threads >= MAX_THREAD_READS) {
    throw new LimitExceededError(
      `One operation may read at most ${MAX_THREAD_READS} whole threads (copilotThread, loadAgentState); this is ` +
        `read ${spent.threads + 1}. Send the others in operations of their own.`,
      { details: { field: info.fieldName, limit: MAX_THREAD_READS, value: spent.threads + 1 } },
    );
  }
  spent.threads++;
}

/**
 * Refuses (LIMIT_EXCEEDED) a field whose answer would take the operation's answers past MAX_ANSWER_VALUES values
 * (`spent`: what its earlier ones hold; the same field under many aliases shares it): each of its sub-fields named in
 * `lengths` (its lists, however aliased, in fragments too) counts its length times the fields selected below it,
 * every other sub-field one. Counted from the document, before anything is made.
 */
export function checkAnswerSize(
  info: GraphQLResolveInfo,
  lengths: Readonly<Record<string, number>>,
  spent: StoredReads,
): void {
  const fragments = new Map<string, FragmentDefinitionNode>(Object.entries(info.fragments));
  const width = fieldCounter(fragments);
  let values = 0;
  const visit = (selectionSet: SelectionSetNode | undefined, seen: Set<string>): void => {
    for (const selection of selectionSet?.selections ?? []) {
      if (selection.kind === Kind.FIELD) values += valuesOf(selection);
      else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet, seen);
      else if (!seen.has(selection.name.value)) {
        // Spread twice, a fragment's fields are one response key each (GraphQL merges them): counted once.
        seen.add(selection.name.value);
        visit(fragments.get(selection.name.value)?.selectionSet, seen);
      }
    }
  };
  const valuesOf = (field: FieldNode): number => {
    const length = Object.hasOwn(lengths, field.name.value) ? lengths[field.name.value] : undefined;
    return length === undefined ? 1 : length * Math.max(1, width(field.selectionSet));
  };
  for (const node of info.fieldNodes) visit(node.selectionSet, new Set());
  values += spent.values;
  if (values > MAX_ANSWER_VALUES) {
    throw new LimitExceededError(
      `The answer to ${info.fieldName} would take the operation's answers to about ${values} values (lists' items ` +
        `times the fields selected for each, aliases included); the most is ${MAX_ANSWER_VALUES}. Select fewer fields.`,
      { details: { field: info.fieldName, limit: MAX_ANSWER_VALUES, value: values } },
    );
  }
  spent.values = values;
}
