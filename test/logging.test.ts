import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { pino, symbols } from 'pino';
import { childLogger } from '../src/core/logging.js';

// A run's child logger keeps its serialized bindings as one flat string (src/core/logging.ts): its
// lines must be the ones pino's own child writes, whatever the bindings hold.

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ base: undefined, timestamp: false }, stream), lines };
}

describe('childLogger', () => {
  it('writes the lines pino’s own child writes, for bindings of every kind', () => {
    const bindings = {
      requestId: 'req-1',
      transport: 'ws',
      operationId: '1',
      runId: 'run-\u00e9\u0301-\u2603',
      threadId: 'lone \ud800 surrogate "quoted" \\ back',
      nested: { n: 1, list: [true, null] },
      missing: undefined,
    };
    const ours = capture();
    const theirs = capture();
    childLogger(ours.logger, bindings).info({ durationMs: 3 }, 'run succeeded');
    theirs.logger.child(bindings).info({ durationMs: 3 }, 'run succeeded');
    expect(ours.lines).toEqual(theirs.lines);
    expect(JSON.parse(ours.lines[0]).runId).toBe(bindings.runId);
  });

  it('keeps the bindings of the logger it is a child of', () => {
    const ours = capture();
    const theirs = capture();
    childLogger(ours.logger.child({ component: 'ws' }), { runId: 'r' }).warn('x');
    theirs.logger.child({ component: 'ws' }).child({ runId: 'r' }).warn('x');
    expect(ours.lines).toEqual(theirs.lines);
    expect(
      typeof (childLogger(ours.logger, { runId: 'r' }) as unknown as Record<symbol, unknown>)[symbols.chindingsSym],
    ).toBe('string');
  });
});
