import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { createClient } from 'graphql-ws';
import { pino } from 'pino';
import WebSocket from 'ws';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { COPILOT_RUN } from './support/threads.js';

// shutdown(0) while a run is still being admitted (in its onBeforeRequest hook): the run is ended as
// soon as its admission completes, and nothing of it streams after that; the shutdown does not wait
// for it to run.

const { start } = gatewaysPerTest();

/** A model that writes a token every turn until its run is aborted. */
class EndlessAdapter implements ModelAdapter {
  readonly name = 'endless';
  started = 0;
  tokens = 0;

  async stream(_request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    this.started++;
    const id = output.textStart();
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      signal.throwIfAborted();
      this.tokens++;
      output.textContent(id, 'tok ');
    }
  }
}

describe('shutdown(0) while a run is being admitted', () => {
  it('ends the run as its admission completes, with SHUTTING_DOWN, and nothing of it streams', async () => {
    const adapter = new EndlessAdapter();
    let hookEntered!: () => void;
    const entered = new Promise<void>((resolve) => (hookEntered = resolve));
    let releaseHook!: () => void;
    const hookHeld = new Promise<void>((resolve) => (releaseHook = resolve));
    // The hook is let go once the drain's grace is over and the runs still going are being ended:
    // the run is then still being admitted, whatever the timing.
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          if (String(chunk).includes('the grace period is over')) releaseHook();
          done();
        },
      }),
    );
    const gateway = await start({
      adapter,
      logger,
      hooks: {
        onBeforeRequest: () => {
          hookEntered();
          return hookHeld;
        },
      },
    });

    const events: any[] = [];
    const errors: unknown[] = [];
    const client = createClient({ url: gateway.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const done = new Promise<void>((resolve) => {
      client.subscribe(
        { query: COPILOT_RUN, variables: { data: runInput([userMessage('hi')]) } },
        {
          next: (result: any) => (result.errors ? errors.push(...result.errors) : events.push(result.data.copilotRun)),
          error: (error) => {
            errors.push(error);
            resolve();
          },
          complete: () => resolve(),
        },
      );
    });
    await entered;

    await gateway.gateway.shutdown(0);
    await done;
    await client.dispose();

    // It ended, told why, and streamed nothing: the model wrote no token to anyone.
    expect(events.at(-1)).toMatchObject({
      __typename: 'RunFinishedEvent',
      status: { code: 'Failed', details: { code: 'SHUTTING_DOWN' } },
    });
    expect(events.filter((event) => event.__typename === 'TextMessageContentEvent')).toEqual([]);
    expect(adapter.tokens).toBe(0);
    expect(errors).toEqual([]);
  });
});
