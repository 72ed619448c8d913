import { describe, expect, it } from '@jest/globals';
import type { RunWriter } from '../src/core/writer.js';
import { RoundRecorder } from '../src/engine/drivers/round.js';

/** A run writer that gives each call the id it is offered and keeps nothing. */
const nowhere = new Proxy({} as RunWriter, {
  get: () => (proposedId?: unknown) => proposedId,
});

describe("a round's calls and results (RoundRecorder)", () => {
  it('finds the calls that got no result in the round, in order', () => {
    const round = new RoundRecorder(nowhere, false);
    for (const id of ['a', 'b', 'c', 'd']) round.actionStart(id, 'tool');
    round.actionResult('c', 'tool', 'done');
    round.actionResult('a', 'tool', 'done');
    round.actionResult('elsewhere', 'tool', 'a result of a call from an earlier round');
    expect(round.unansweredCalls().map((call) => call.id)).toEqual(['b', 'd']);
  });

  it('takes an agent round of 200,000 calls, half of them answered, in one pass (it was quadratic)', () => {
    // Found from outside: an agent that made 100,000 calls held the event loop for minutes, each call's result looked
    // for among all of the round's items. Now a few hundred milliseconds; the quadratic search did not end in this
    // test's time.
    const round = new RoundRecorder(nowhere, false);
    const n = 200_000;
    for (let i = 0; i < n; i++) round.actionStart(`call-${i}`, 'tool');
    for (let i = 0; i < n; i += 2) round.actionResult(`call-${i}`, 'tool', '{}');
    const unanswered = round.unansweredCalls();
    expect(unanswered).toHaveLength(n / 2);
    expect(unanswered[0].id).toBe('call-1');
  });
});
