import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { EventSourceMessage } from 'eventsource-parser';
import { ChatChunkReader } from '../src/adapters/openai-chunks.js';
import { recordingOutput } from './support/model-output.js';

// A chunk of text alone is read without JSON.parse (src/adapters/openai-chunks.ts, TEXT_CHUNK). The
// run must receive the same either way: here every generated stream goes through a reader that
// takes that path and one that parses every chunk, and what each wrote, and how each failed, must
// be the same.

/** What a reader wrote for a stream of events, and how it ended (its error's code and message). */
function read(events: EventSourceMessage[], textChunks: boolean): { log: string[]; ended: string } {
  const output = recordingOutput();
  const reader = new ChatChunkReader(output, textChunks);
  try {
    for (const event of events) {
      reader.event(event);
      reader.flush();
    }
    reader.finish();
    return { log: output.log, ended: 'finished' };
  } catch (error) {
    const failure = error as { code?: string; message: string };
    return { log: output.log, ended: `${failure.code} ${failure.message}` };
  }
}

const json = (value: unknown) => JSON.stringify(value);

/** Text as models send it: plain words, and what JSON escapes (quotes, backslashes, line breaks, controls, non-ASCII, lone surrogates). */
const text = fc.oneof(
  fc.constantFrom(
    '',
    'tok ',
    ' world',
    'Hello',
    '"quoted"',
    'back\\slash',
    'line\nbreak',
    '\t',
    '\u0000',
    '\u001f',
    'é☃😀',
    '\ud800',
    '</script>',
  ),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const id = fc.oneof(fc.constantFrom('chatcmpl-1', 'chatcmpl-"x"', 'a\\b', ''), fc.string({ maxLength: 10 }));
/** Other keys with simple values, as providers add them (object, created, model, service_tier, usage, obfuscation). */
const member = fc.tuple(
  fc.constantFrom(
    'object',
    'created',
    'model',
    'system_fingerprint',
    'service_tier',
    'usage',
    'obfuscation',
    'id',
    'choices',
    'error',
    'x1',
    'A_b',
  ),
  fc.oneof(
    fc.string({ maxLength: 6 }),
    fc.integer(),
    fc.double(),
    fc.constant(null),
    fc.boolean(),
    fc.constant({ nested: 1 }),
  ),
);
const members = fc.array(member, { maxLength: 4 });
const choice = fc.oneof(
  // The shape the fast path reads.
  text.map((content) => ({ index: 0, delta: { content }, logprobs: null, finish_reason: null })),
  text.map((content) => ({ index: 0, delta: { content }, finish_reason: null })),
  // And the others, which it must leave to JSON.parse.
  text.map((content) => ({ index: 0, delta: { role: 'assistant', content }, logprobs: null, finish_reason: null })),
  text.map((content) => ({ index: 1, delta: { content }, logprobs: null, finish_reason: null })),
  text.map((content) => ({ index: 0, delta: { content, refusal: null }, logprobs: null, finish_reason: null })),
  text.map((content) => ({ index: 0, delta: { content }, logprobs: null, finish_reason: 'stop' })),
  fc.constant({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }),
  fc.constant({ index: 0, delta: { content: 5 }, finish_reason: null }),
  fc.constant({
    index: 0,
    delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'sayHello', arguments: '{"a":' } }] },
    finish_reason: null,
  }),
  fc.constant({
    index: 0,
    delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
    finish_reason: 'tool_calls',
  }),
);

/** One chunk's data: usually compact JSON as servers write it, sometimes spaced, cut or not JSON at all. */
const chunkData = fc
  .tuple(
    id,
    members,
    fc.array(choice, { minLength: 0, maxLength: 2 }),
    members,
    fc.constantFrom('compact', 'compact', 'compact', 'spaced', 'cut', 'noId', 'nullChoices', 'array', 'error', 'raw'),
  )
  .map(([chunkId, before, choices, after, form]) => {
    const head = [`"id":${json(chunkId)}`, ...before.map(([key, value]) => `${json(key)}:${json(value)}`)];
    const tail = after.map(([key, value]) => `${json(key)}:${json(value)}`);
    switch (form) {
      case 'spaced':
        return `{${[...head, `"choices": ${json(choices)}`, ...tail].join(', ')}}`;
      case 'cut': {
        const whole = `{${[...head, `"choices":${json(choices)}`, ...tail].join(',')}}`;
        return whole.slice(0, Math.max(1, whole.length - 3));
      }
      case 'noId':
        return `{${[...head.slice(1), `"choices":${json(choices)}`, ...tail].join(',')}}`;
      case 'nullChoices':
        return `{${[...head, '"choices":null', ...tail].join(',')}}`;
      case 'array':
        return json([{ choices }]);
      case 'error':
        return json({ error: { message: 'overloaded' } });
      case 'raw':
        // Control characters written as they are, which JSON does not allow in a string.
        return `{${[...head, `"choices":${json(choices)}`, ...tail].join(',')}}`.replace(
          /\\(u00[01][0-9a-f]|[nrt])/g,
          (_, escape: string) =>
            escape.length === 1
              ? { n: '\n', r: '\r', t: '\t' }[escape]!
              : String.fromCharCode(parseInt(escape.slice(1), 16)),
        );
      default:
        return `{${[...head, `"choices":${json(choices)}`, ...tail].join(',')}}`;
    }
  });
const event = fc.oneof(
  { weight: 8, arbitrary: chunkData.map((data): EventSourceMessage => ({ data, event: undefined, id: undefined })) },
  { weight: 1, arbitrary: chunkData.map((data): EventSourceMessage => ({ data, event: 'error', id: undefined })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<EventSourceMessage>(
      { data: '[DONE]', event: undefined, id: undefined },
      { data: 'not json', event: undefined, id: undefined },
    ),
  },
);
/** A stream: what came, then usually a finishing chunk. */
const stream = fc.tuple(fc.array(event, { maxLength: 8 }), fc.boolean()).map(([events, finishes]) =>
  finishes
    ? [
        ...events,
        {
          data: json({ id: 'chatcmpl-1', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
          event: undefined,
          id: undefined,
        },
      ]
    : events,
);

describe('Chat Completions chunks of text alone, read without JSON.parse', () => {
  it('give the run what parsing every chunk gives, on generated streams', () => {
    fc.assert(
      fc.property(stream, (events) => {
        expect(read(events, true)).toEqual(read(events, false));
      }),
      { numRuns: 3000 },
    );
  });

  it('take the chunks OpenAI and compatible servers send for text, and read their escapes', () => {
    const chunks = [
      '{"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1741000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}],"obfuscation":"9dK"}',
      '{"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1741000000,"model":"m","choices":[{"index":0,"delta":{"content":"lo \\"w\\u00f6rld\\"\\n"},"finish_reason":null}],"usage":null}',
    ];
    const events = [...chunks, '{"id":"chatcmpl-B1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'].map(
      (data): EventSourceMessage => ({ data, event: undefined, id: undefined }),
    );
    const parse = jestSpyOnJsonParse();
    try {
      const fast = read(events, true);
      // Only the last chunk (a finish reason) and the escaped text were parsed as JSON.
      expect(parse.calls).toEqual(['"lo \\"w\\u00f6rld\\"\\n"', events[2].data]);
      expect(fast).toEqual({
        log: ['start chatcmpl-B1', 'text m1 Hel', 'text m1 lo "wörld"\n', 'end m1'],
        ended: 'finished',
      });
    } finally {
      parse.restore();
    }
    expect(read(events, false)).toEqual(read(events, true));
  });
});

describe('Chat Completions chunks the fast path must read as JSON.parse does, or leave to it', () => {
  const stop = '{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}';
  const asEvents = (...data: string[]): EventSourceMessage[] =>
    [...data, stop].map((each) => ({ data: each, event: undefined, id: undefined }));
  it.each([
    [
      'an escaped slash and upper-case \\u escapes',
      '{"id":"x","choices":[{"index":0,"delta":{"content":"a\\/b \\u00E9 \\uD83D\\uDE00"},"finish_reason":null}]}',
    ],
    [
      'numbers JSON allows and refuses',
      '{"id":"x","created":-0,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}',
    ],
    [
      'a number with a leading zero (not JSON)',
      '{"id":"x","created":01,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}',
    ],
    ['an exponent', '{"id":"x","created":1e5,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}'],
    ['an escaped id', '{"id":"x\\"y","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}'],
    [
      'a key named __proto__',
      '{"id":"x","__proto__":null,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}',
    ],
    [
      'a repeated id after the choices',
      '{"id":"x","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"id":"y"}',
    ],
  ])('%s', (_name, data) => {
    expect(read(asEvents(data), true)).toEqual(read(asEvents(data), false));
  });

  it('leaves a whole answer in one chunk to JSON.parse (the expression would overflow its stack)', () => {
    const data = `{"id":"x","choices":[{"index":0,"delta":{"content":"${'a'.repeat(9_000_000)}"},"finish_reason":null}]}`;
    const fast = read(asEvents(data), true);
    expect(fast.ended).toBe('finished');
    expect(fast.log[1]).toHaveLength('text m1 '.length + 9_000_000);
  });
});

describe('what the reader hands on', () => {
  it('holds no network read: its text and ids are strings of their own, not views into the read', () => {
    // V8 makes a substring of 13 characters or more a view that keeps its whole string alive: each 20-character token
    // held its 10 KB read here (20 MB in all), as a token with a timestamp held its SSE line in the WebSocket benchmark.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const kept: string[] = [];
    const output = {
      ...recordingOutput(),
      textStart: (proposed: string | null | undefined) => (kept.push(proposed ?? ''), 'm1'),
      textContent: (_id: string, content: string) => void kept.push(content),
    };
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 2000; i++) {
      const reader = new ChatChunkReader(output);
      const chunk = {
        id: `chatcmpl-${i}-0123456789`,
        model: 'x'.repeat(10_000),
        choices: [{ index: 0, delta: { content: `token ${i} at 1732912345678` }, finish_reason: null }],
      };
      // A read of its own, as the network gives it (a flat string, which the reader's expression cuts from).
      reader.event({ data: Buffer.from(json(chunk)).toString(), event: undefined, id: undefined });
      reader.flush();
    }
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(kept).toHaveLength(4000);
    expect(kept[1]).toBe('token 0 at 1732912345678');
    expect(held).toBeLessThan(4_000_000);
  });
});

/** Records what JSON.parse is asked to parse, until restored. */
function jestSpyOnJsonParse(): { calls: string[]; restore: () => void } {
  const original = JSON.parse;
  const calls: string[] = [];
  JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
    calls.push(text);
    return original(text, reviver);
  }) as typeof JSON.parse;
  return { calls, restore: () => (JSON.parse = original) };
}
