import { describe, expect, it } from '@jest/globals';
import { MAX_NESTING, nestsDeeperThan, textNestsDeeperThan } from '../src/core/depth.js';

// How deep input may nest (src/core/depth.ts): on JSON and GraphQL text before anything recursive reads
// it, and on parsed values.

const nested = (levels: number, open = '[', close = ']') => `${open.repeat(levels)}${close.repeat(levels)}`;

describe('textNestsDeeperThan', () => {
  it('allows MAX_NESTING levels and refuses one more, for each kind of bracket', () => {
    for (const [open, close] of [
      ['[', ']'],
      ['{', '}'],
      ['(', ')'],
    ]) {
      expect(textNestsDeeperThan(nested(MAX_NESTING, open, close))).toBe(false);
      expect(textNestsDeeperThan(nested(MAX_NESTING + 1, open, close))).toBe(true);
    }
    expect(textNestsDeeperThan(`{"a":${nested(60)},"b":{"c":(${nested(98, '{', '}')})}}`)).toBe(true);
  });

  it('counts depth, not brackets: many shallow siblings pass', () => {
    expect(textNestsDeeperThan(`[${Array.from({ length: 500 }, () => '{"a":[1,{"b":[]}]}').join(',')}]`)).toBe(false);
  });

  it('does not count brackets inside strings, block strings or comments', () => {
    const many = '[{('.repeat(200);
    expect(textNestsDeeperThan(`{"text":${JSON.stringify(many)},"escaped":"\\"${many}"}`)).toBe(false);
    expect(textNestsDeeperThan(`query { a(b: """${many}""") # ${many}\n c }`)).toBe(false);
    // The same brackets outside a string do count.
    expect(textNestsDeeperThan(`{"text":1,${many}}`)).toBe(true);
  });

  it('ends a string at the first quote after an even run of backslashes, and a block string not at an escaped one', () => {
    const deep = nested(MAX_NESTING + 1);
    // Two escaped backslashes: the string ends at the quote after them, and the brackets are outside it.
    expect(textNestsDeeperThan(`{"a":"\\\\\\\\","b":${deep}}`)).toBe(true);
    // Two escaped backslashes and an escaped quote: the string goes on, and holds the brackets.
    expect(textNestsDeeperThan(`{"a":"\\\\\\\\\\"${deep}"}`)).toBe(false);
    // In a block string a backslash before three quotes makes them text (graphql-js's lexer): it goes on to the next.
    expect(textNestsDeeperThan(`{ f(a: """\\""" """, b: ${deep}, c: """ """) }`)).toBe(true);
    expect(textNestsDeeperThan(`{ f(a: """ \\""" ${deep} """) }`)).toBe(false);
  });

  it('reads the stock client\u2019s request as shallow', () => {
    const query = `mutation { generateCopilotResponse(data: { messages: [{ textMessage: { content: "hi [{(" } }] }) { threadId } }`;
    expect(
      textNestsDeeperThan(
        JSON.stringify({
          query,
          variables: { data: { messages: [{ id: 'm', textMessage: { content: '{'.repeat(150) } }] } },
        }),
      ),
    ).toBe(false);
    expect(textNestsDeeperThan(query)).toBe(false);
  });
});

describe('nestsDeeperThan', () => {
  it('measures a parsed value the same way', () => {
    expect(nestsDeeperThan(JSON.parse(nested(MAX_NESTING)))).toBe(false);
    expect(nestsDeeperThan(JSON.parse(nested(MAX_NESTING + 1)))).toBe(true);
    expect(nestsDeeperThan('[[[[')).toBe(false);
    const objects = (levels: number) => JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`);
    expect(nestsDeeperThan(objects(MAX_NESTING))).toBe(false);
    expect(nestsDeeperThan(objects(MAX_NESTING + 1))).toBe(true);
    // Deep under a wide, shallow part: found wherever it is.
    expect(nestsDeeperThan({ wide: Array.from({ length: 1000 }, (_, i) => ({ i })), deep: objects(MAX_NESTING) })).toBe(
      true,
    );
  });

  it('reads only own properties, even when Object.prototype has enumerable ones', () => {
    const shallow = JSON.parse('{"a":{"b":1}}');
    Object.defineProperty(Object.prototype, 'polluted', { value: {}, enumerable: true, configurable: true });
    try {
      expect(nestsDeeperThan(shallow)).toBe(false);
      expect(nestsDeeperThan(JSON.parse(`${'{"a":'.repeat(MAX_NESTING + 1)}1${'}'.repeat(MAX_NESTING + 1)}`))).toBe(
        true,
      );
    } finally {
      delete (Object.prototype as Record<string, unknown>).polluted;
    }
  });

  it('reads a value nested far deeper than the stack allows without overflowing it (it stops one level past the limit)', () => {
    expect(nestsDeeperThan(JSON.parse(nested(200_000)))).toBe(true);
  });
});
