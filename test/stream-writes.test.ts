import { describe, expect, it } from '@jest/globals';
import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelAdapter, ModelOutput } from '../src/adapters/adapter.js';
import { GatedAdapter } from './support/gated-adapter.js';
import { HTTP_STREAMED as STREAMED } from './support/documents.js';
import { readEnvironment } from '../src/env.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';

// How a streamed HTTP answer's parts reach the socket (transports/part-writer.ts): a flowing stream's
// later parts leave at most once per streamWriteIntervalMs, the first at once, and the client reads
// the same parts whatever the interval.

const MULTIPART = { accept: 'multipart/mixed; deferSpec=20220824', 'content-type': 'application/json' };

/** A model that sends `count` one-word tokens, `pauseMs` apart. */
class PacedAdapter implements ModelAdapter {
  readonly name = 'paced';
  constructor(
    private readonly count: number,
    private readonly pauseMs: number,
  ) {}
  async stream(_request: unknown, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const id = output.textStart();
    for (let i = 0; i < this.count; i++) {
      await sleep(this.pauseMs, undefined, { signal });
      output.textContent(id, `t${i} `);
    }
    output.textEnd(id);
  }
}

/** Posts a streamed run; resolves with each chunk of the body as the socket gave it. */
function streamedChunks(url: string, onChunk?: (text: string) => void): Promise<string[]> {
  const body = JSON.stringify({ query: STREAMED, variables: { data: runInput([userMessage('hi')]) } });
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: MULTIPART }, (response) => {
      const chunks: string[] = [];
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        chunks.push(chunk);
        onChunk?.(chunks.join(''));
      });
      response.on('end', () => resolve(chunks));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** The multipart parts' JSON payloads, in order. */
function payloads(body: string): Record<string, unknown>[] {
  return body
    .split('\r\n---')
    .map((part) => part.slice(part.indexOf('\r\n\r\n') + 4).trim())
    .filter((json) => json.startsWith('{'))
    .map((json) => JSON.parse(json) as Record<string, unknown>);
}

/** The message text the parts carried, in order: what a streamed message started with, then each streamed item. */
function streamedText(body: string): string {
  let text = '';
  const collect = (value: unknown): void => {
    if (typeof value === 'string') text += value;
    else if (Array.isArray(value)) value.forEach(collect);
    else if (value && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      if (Array.isArray(record.content)) record.content.forEach(collect);
      if (Array.isArray(record.messages)) record.messages.forEach(collect);
    }
  };
  for (const payload of payloads(body)) {
    for (const entry of (payload.incremental as { items?: unknown[] }[] | undefined) ?? []) collect(entry.items);
  }
  return text;
}

const { start } = gatewaysPerTest();

describe('streamed HTTP writes', () => {
  it('sends the first token at once however long the write interval', async () => {
    const adapter = new GatedAdapter();
    const { url } = await start({ adapter, streamWriteIntervalMs: 60_000 });
    let sawFirst: () => void;
    const first = new Promise<void>((resolve) => (sawFirst = resolve));
    const done = streamedChunks(url, (body) => {
      if (body.includes('Hello')) sawFirst();
    });
    adapter.release('Hello');
    // Were the first token held for the interval, this would wait a minute (the test's timeout fails it first).
    await first;
    adapter.release(' there');
    adapter.release(' friend');
    adapter.finish();
    // The end sends what waits at once, not after the interval.
    const body = (await done).join('');
    expect(body).toContain('there');
    expect(body).toContain('friend');
    expect(body.trimEnd().endsWith('-----')).toBe(true);
  });

  it('joins a paced stream into one write per interval, with the same parts as writing each at once', async () => {
    const tokens = 60;
    const spaced = await start({ adapter: new PacedAdapter(tokens, 2), streamWriteIntervalMs: 100 });
    const eager = await start({ adapter: new PacedAdapter(tokens, 2), streamWriteIntervalMs: 0 });
    const [spacedChunks, eagerChunks] = await Promise.all([streamedChunks(spaced.url), streamedChunks(eager.url)]);
    const expected = Array.from({ length: tokens }, (_, i) => `t${i} `).join('');
    expect(streamedText(spacedChunks.join(''))).toBe(expected);
    expect(streamedText(eagerChunks.join(''))).toBe(expected);
    // The same number of multipart parts either way: only how they were grouped into writes differs.
    expect(payloads(spacedChunks.join('')).length).toBe(payloads(eagerChunks.join('')).length);
    // 60 tokens 2 ms apart take at least 120 ms: a 100 ms interval allows a handful of writes, however slow the
    // machine (slower only means fewer). Written at once, each token is its own write (about 60 reads here).
    expect(spacedChunks.length).toBeLessThan(tokens / 4);
  });
});

describe('STREAM_WRITE_INTERVAL_MS', () => {
  it('takes 0 (every turn at once) or a whole number of milliseconds, and names itself when wrong', () => {
    expect(readEnvironment({}).streamWriteIntervalMs).toBeUndefined();
    expect(readEnvironment({ STREAM_WRITE_INTERVAL_MS: '0' }).streamWriteIntervalMs).toBe(0);
    expect(readEnvironment({ STREAM_WRITE_INTERVAL_MS: '40' }).streamWriteIntervalMs).toBe(40);
    expect(() => readEnvironment({ STREAM_WRITE_INTERVAL_MS: 'soon' })).toThrow(/STREAM_WRITE_INTERVAL_MS/);
    expect(() => readEnvironment({ STREAM_WRITE_INTERVAL_MS: '-5' })).toThrow(/STREAM_WRITE_INTERVAL_MS/);
  });
});
