import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino, symbols } from 'pino';
import { childLogger, jsonLines } from '../src/core/logging.js';

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

// npm start's JSON lines (jsonLines): written asynchronously in batches, as bytes. Every line must arrive whole and in
// order whatever comes while a write is on its way, multi-byte characters and lines longer than one write included,
// and what still waits when the process exits must be written before it goes.
describe('jsonLines', () => {
  const text = (i: number) => `line ${i} é ☃ 😀 "quoted" ${i % 97 === 0 ? 'x'.repeat(40_000) : ''}`;

  it('writes every line whole and in order while earlier writes are on their way', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'json-lines-'));
    const path = join(directory, 'log');
    const fd = openSync(path, 'w');
    try {
      const logger = pino({ base: undefined, timestamp: false }, jsonLines(fd));
      let i = 0;
      // Bursts of lines, a turn of the loop apart, so that most lines come while a write is in flight.
      for (let burst = 0; burst < 40; burst++) {
        for (let n = 0; n < 50; n++) logger.info({ i }, text(i++));
        await new Promise((resolve) => setImmediate(resolve));
      }
      // Written in the background: wait for the last line (sonic-boom's flush callback does not wait for it).
      const deadline = Date.now() + 8_000;
      const last = `"msg":${JSON.stringify(text(1999))}}\n`;
      while (!readFileSync(path, 'utf8').endsWith(last) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const lines = readFileSync(path, 'utf8').split('\n');
      expect(lines.pop()).toBe('');
      expect(lines).toHaveLength(2000);
      lines.forEach((line, index) => {
        const record = JSON.parse(line) as { i: number; msg: string };
        expect(record.i).toBe(index);
        expect(record.msg).toBe(text(index));
      });
    } finally {
      closeSync(fd);
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('writes the lines still waiting when the process exits', async () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const script = [
      "import { pino } from 'pino';",
      "import { jsonLines } from './src/core/logging.ts';",
      'const logger = pino({ base: undefined, timestamp: false }, jsonLines(1));',
      "for (let i = 0; i < 3000; i++) logger.info({ i }, 'é ☃ 😀');",
      'process.exit(0);',
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let errors = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(errors).toBe('');
    expect(code).toBe(0);
    const lines = output.split('\n');
    expect(lines.pop()).toBe('');
    // The first line's write is on its way (in libuv's threads) when the process exits: it may land before or after
    // the rest, which the exit writes at once. Every line after it waited, and must be there, whole and in order.
    const records = lines.map((line) => JSON.parse(line) as { i: number; msg: string });
    expect(records.filter((record) => record.i !== 0).map((record) => record.i)).toEqual(
      [...Array(3000).keys()].slice(1),
    );
    expect(records.filter((record) => record.i === 0).length).toBeLessThanOrEqual(1);
    expect(records.every((record) => record.msg === 'é ☃ 😀')).toBe(true);
  }, 30_000);
});
