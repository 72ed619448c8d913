import { describe, expect, it } from '@jest/globals';
import type { RunWriter } from '../src/core/writer.js';
import { CoalescingWriter } from '../src/engine/coalescing.js';

/** A writer that records every call and, like the run, refuses chunks for messages that are not open. */
function recording(): RunWriter & { log: string[]; fail?: Error } {
  const open = new Set<string>();
  const writer: RunWriter & { log: string[]; fail?: Error } = {
    log: [],
    textStart: (id) => (open.add(id!), writer.log.push(`start ${id}`), id!),
    textContent: (id, content) => {
      if (writer.fail) throw writer.fail;
      if (!open.has(id)) throw new Error(`Text message "${id}" is not open.`);
      writer.log.push(`text ${id} ${content}`);
    },
    textEnd: (id) => (open.delete(id), void writer.log.push(`end ${id}`)),
    actionStart: (id, name) => (open.add(id!), writer.log.push(`call ${id} ${name}`), id!),
    actionArgs: (id, args) => {
      if (!open.has(id)) throw new Error(`Action execution "${id}" is not open.`);
      writer.log.push(`args ${id} ${args}`);
    },
    actionEnd: (id) => (open.delete(id), void writer.log.push(`callend ${id}`)),
    reasoningStart: (id) => (open.add(id!), writer.log.push(`think ${id}`), id!),
    reasoningContent: (id, content) => {
      if (!open.has(id)) throw new Error(`Reasoning message "${id}" is not open.`);
      writer.log.push(`thought ${id} ${content}`);
    },
    reasoningEnd: (id) => (open.delete(id), void writer.log.push(`thinkend ${id}`)),
    usage: (report) => void writer.log.push(`usage ${JSON.stringify(report)}`),
    actionResult: (id, name, result) => void writer.log.push(`result ${id} ${result}`),
    agentState: (snapshot) => void writer.log.push(`state ${JSON.stringify(snapshot.state)}`),
    metaEvent: (event) => void writer.log.push(`meta ${event.name}`),
  };
  return writer;
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('CoalescingWriter', () => {
  it('writes the first chunk of a turn at once and joins the rest of that turn into one chunk', async () => {
    const out = recording();
    const writer = new CoalescingWriter(out);
    writer.textStart('m1');
    for (const token of ['a', 'b', 'c', 'd']) writer.textContent('m1', token);
    expect(out.log).toEqual(['start m1', 'text m1 a']);
    await nextTurn();
    expect(out.log).toEqual(['start m1', 'text m1 a', 'text m1 bcd']);
    // A later turn starts afresh.
    writer.textContent('m1', 'e');
    expect(out.log.at(-1)).toBe('text m1 e');
  });

  it('keeps the order: any other write sends what waits first', () => {
    const out = recording();
    const writer = new CoalescingWriter(out);
    writer.textStart('m1');
    writer.textContent('m1', 'x');
    writer.textContent('m1', 'y');
    writer.textContent('m1', 'z');
    writer.textEnd('m1');
    writer.actionStart('c1', 'tool');
    writer.actionArgs('c1', '{"a"');
    writer.actionArgs('c1', ':1}');
    writer.agentState({ agentName: 'a', state: '{"s":1}', nodeName: 'n', active: true, running: true });
    writer.actionEnd('c1');
    expect(out.log).toEqual([
      'start m1',
      'text m1 x',
      'text m1 yz',
      'end m1',
      'call c1 tool',
      'args c1 {"a"',
      'args c1 :1}',
      'state "{\\"s\\":1}"',
      'callend c1',
    ]);
  });

  it('never joins chunks of different messages, and fails at once for a message that is not open', () => {
    const out = recording();
    const writer = new CoalescingWriter(out);
    writer.textStart('m1');
    writer.textStart('m2');
    writer.textContent('m1', 'a');
    writer.textContent('m2', 'b');
    writer.textContent('m1', 'c');
    expect(out.log).toEqual(['start m1', 'start m2', 'text m1 a', 'text m2 b', 'text m1 c']);
    expect(() => writer.textContent('nope', 'x')).toThrow('Text message "nope" is not open.');
  });

  it('flush writes what waits at once; discard swallows what the writer behind throws', () => {
    const out = recording();
    const writer = new CoalescingWriter(out);
    writer.textStart('m1');
    writer.textContent('m1', 'a');
    writer.textContent('m1', 'b');
    writer.flush();
    expect(out.log.at(-1)).toBe('text m1 b');
    writer.textContent('m1', 'c');
    out.fail = new Error('The run has finished.');
    expect(() => writer.discard()).not.toThrow();
    // After discard, a chunk goes through at once again, and fails there.
    expect(() => writer.textContent('m1', 'd')).toThrow('The run has finished.');
    expect(out.log.at(-1)).toBe('text m1 b');
  });
});
