import { describe, expect, it } from '@jest/globals';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { MemoryRateLimiter, WINDOW_MS } from '../src/limits/rate-limiter.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { until } from './support/threads.js';

// Rate limits where a mistake would not show in a run that simply works: the address a limit is
// counted under behind a proxy, run places given back by runs refused after taking one, and the
// requests-per-minute window sliding rather than starting afresh each minute.

const { start } = gatewaysPerTest();

const HELLO = JSON.stringify({ query: '{ hello }' });
const RUN =
  'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId status { ... on BaseResponseStatus { code } } } }';

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, json: (await response.json()) as any };
}

describe('the requests-per-minute window', () => {
  it("slides across the minute's boundary: a full last minute still counts early in the next, and less as it passes", () => {
    const limiter = new MemoryRateLimiter({ requestsPerMinute: 10, concurrentRuns: 0 });
    const minute = 1_000 * WINDOW_MS; // the start of some minute
    // Ten requests in the last second of a minute: all allowed, the eleventh not.
    for (let i = 0; i < 10; i++) expect(limiter.hitNow('client', minute - 1_000 + i)).toBe(0);
    expect(limiter.hitNow('client', minute - 500)).toBeGreaterThan(0);
    // One second into the next minute, the last 60 s still hold those ten: a fixed window would
    // start again from zero here and allow ten more at once.
    expect(limiter.hitNow('client', minute + 1_000)).toBeGreaterThan(0);
    // Half-way through, half the last minute's weight is left: five more fit, and no sixth.
    for (let i = 0; i < 5; i++) expect(limiter.hitNow('client', minute + WINDOW_MS / 2 + i)).toBe(0);
    expect(limiter.hitNow('client', minute + WINDOW_MS / 2 + 10)).toBeGreaterThan(0);
    // Another client was never counted with it.
    expect(limiter.hitNow('other', minute + 1_000)).toBe(0);
    void limiter.close();
  });
});

describe('behind a trusted proxy', () => {
  it('counts a client under the address its proxy saw (X-Forwarded-For read from the right): a spoofed leftmost hop does not reset its count', async () => {
    const gateway = await start({ trustProxy: 1, rateLimits: { requestsPerMinute: 2 } });
    // The client writes its own X-Forwarded-For; the proxy appends the address it saw.
    const through = (spoofed: string) => ({ 'x-forwarded-for': `${spoofed}, 203.0.113.7` });
    expect((await post(gateway.url, HELLO, through('10.0.0.1'))).status).toBe(200);
    expect((await post(gateway.url, HELLO, through('10.0.0.2'))).status).toBe(200);
    const third = await post(gateway.url, HELLO, through('10.0.0.3'));
    expect(third.status).toBe(429);
    expect(third.json.errors[0].extensions.code).toBe('RATE_LIMITED');
    // Another address the proxy saw has a count of its own.
    expect((await post(gateway.url, HELLO, { 'x-forwarded-for': '10.0.0.3, 198.51.100.9' })).status).toBe(200);
  });
});

/** A model that writes one token and waits until released (or aborted). */
class HoldingAdapter implements ModelAdapter {
  readonly name = 'holding';
  started = 0;
  private waiting: (() => void)[] = [];

  release(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }

  async stream(_request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    this.started++;
    const id = output.textStart();
    output.textContent(id, 'held ');
    await new Promise<void>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      this.waiting.push(resolve);
    });
    output.textEnd(id);
  }
}

describe('concurrent runs per client', () => {
  it('gives back the place of a run refused after taking it (THREAD_BUSY, a hook, guardrails): after many refusals a normal run still starts', async () => {
    const adapter = new HoldingAdapter();
    const gateway = await start({
      adapter,
      rateLimits: { concurrentRuns: 2 },
      hooks: {
        onBeforeRequest: ({ inputMessages }) => {
          if (JSON.stringify(inputMessages).includes('refuse me')) throw new Error('not this one');
        },
      },
    });
    const run = (data: unknown) => post(gateway.url, JSON.stringify({ query: RUN, variables: { data } }));

    // One place taken by a run that holds its thread.
    const held = run(runInput([userMessage('hold')], { threadId: 'held-thread' }));
    await until(
      async () => adapter.started,
      (n) => n === 1,
      'the first run holding',
    );

    const refusals: [string, unknown][] = [
      ['THREAD_BUSY', runInput([userMessage('again')], { threadId: 'held-thread' })],
      ['HOOK_FAILED', runInput([userMessage('refuse me')])],
      // Guardrails asked for without a public API key: refused once the run's place is taken.
      [
        'MISSING_PUBLIC_API_KEY',
        runInput([userMessage('guarded')], {
          cloud: { guardrails: { inputValidationRules: { allowList: ['weather'] } } },
        }),
      ],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [code, data] of refusals) {
        const refused = await run(data);
        expect(refused.json.errors[0].extensions.code).toBe(code);
      }
    }
    expect(adapter.started).toBe(1);

    // The second place is still free.
    const normal = run(runInput([userMessage('a normal run')]));
    await until(
      async () => adapter.started,
      (n) => n === 2,
      'a normal run after the refusals',
    );
    adapter.release();
    expect((await normal).json.data.generateCopilotResponse.status.code).toBe('Success');
    expect((await held).json.data.generateCopilotResponse.status.code).toBe('Success');
  });
});
