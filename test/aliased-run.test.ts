import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import type { ModelAdapter, ModelOutput } from '../src/adapters/adapter.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';

// The stock client's document with its run field under an alias: everything the gateway writes
// itself for that document (graphql/fast/message-plan.ts's run plan, the message plan, the leaf streams)
// must be under the alias, in the first payload and in every later payload's path, as the executor
// would put it.

const { start } = gatewaysPerTest();

/** The stock client's document as it goes over the wire (test/fixtures/client-mutation.graphql), its run field aliased. */
const ALIASED = readFileSync(new URL('./fixtures/client-mutation.graphql', import.meta.url), 'utf8').replace(
  /^(\s*)generateCopilotResponse\(data: \$data, properties: \$properties\)/m,
  '$1reply: generateCopilotResponse(data: $data, properties: $properties)',
);

/** A model that writes two messages, each token in a turn of its own. */
const model: ModelAdapter = {
  name: 'turns',
  async stream(_request, output: ModelOutput) {
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    for (const tokens of [
      ['Hello, ', 'world'],
      ['and ', 'more'],
    ]) {
      const id = output.textStart();
      for (const token of tokens) {
        await turn();
        output.textContent(id, token);
      }
      await turn();
      output.textEnd(id);
    }
  },
};

/** The JSON payloads of a multipart/mixed or text/event-stream answer, in order. */
function payloadsOf(raw: string, format: 'multipart' | 'sse'): any[] {
  if (format === 'sse') {
    return raw
      .split('\n\n')
      .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
      .filter((line): line is string => line !== undefined && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)));
  }
  return raw
    .split(/\r\n---/)
    .map((part) => part.slice(part.indexOf('\r\n\r\n') + 4).trim())
    .filter((part) => part.startsWith('{'))
    .map((part) => JSON.parse(part));
}

describe('a client that aliases generateCopilotResponse on the stock document', () => {
  for (const [format, accept] of [
    ['multipart', 'multipart/mixed; deferSpec=20220824, application/json'],
    ['sse', 'text/event-stream'],
  ] as const) {
    it(`gets its data and its streams under the alias (${format})`, async () => {
      expect(ALIASED).toContain('reply: generateCopilotResponse(');
      const gateway = await start({ adapter: model });
      // Twice: the first time through Apollo's pipeline, then as a document the gateway knows.
      for (let round = 0; round < 2; round++) {
        const response = await fetch(gateway.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept },
          body: JSON.stringify({
            query: ALIASED,
            variables: { data: runInput([userMessage('hi')], { threadId: 'aliased-thread' }) },
          }),
        });
        expect(response.status).toBe(200);
        const payloads = payloadsOf(await response.text(), format);
        expect(payloads.length).toBeGreaterThan(2);

        // The first payload: the run's fields under the alias, and nothing under the field's name.
        const [first, ...later] = payloads;
        expect(Object.keys(first.data)).toEqual(['reply']);
        expect(first.data.reply).toMatchObject({
          threadId: 'aliased-thread',
          messages: [],
          metaEvents: [],
          __typename: 'CopilotResponse',
        });
        expect(first.errors).toBeUndefined();

        // Every later payload's path begins at the alias.
        const entries = later.flatMap((payload) => payload.incremental ?? []);
        expect(entries.length).toBeGreaterThan(0);
        for (const entry of entries) expect(entry.path[0]).toBe('reply');
        expect(later.some((payload) => payload.errors)).toBe(false);

        // Merged, the answer is the run's: two messages with their text, each Success, and the run's status.
        const messages: { content: string[]; status?: string }[] = [];
        let status: string | undefined;
        for (const entry of entries) {
          const path: (string | number)[] = entry.path;
          // A streamed item's path ends at its index (the 2022 format), a deferred fragment's at its object.
          if (entry.items && path.length === 3 && path[1] === 'messages')
            for (const item of entry.items) messages.push({ content: [...(item.content ?? [])] });
          else if (entry.items && path[1] === 'messages' && path[3] === 'content')
            messages[path[2] as number].content.push(...entry.items);
          else if (entry.data?.status && path.length === 1) status = entry.data.status.code;
          else if (entry.data?.status && path.length === 3 && path[1] === 'messages')
            messages[path[2] as number].status = entry.data.status.code;
        }
        expect(messages).toEqual([
          { content: ['Hello, ', 'world'], status: 'Success' },
          { content: ['and ', 'more'], status: 'Success' },
        ]);
        expect(status).toBe('Success');
      }
    });
  }
});
