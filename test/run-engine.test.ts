import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { ActionCatalog } from '../src/actions/action.js';
import { executeAction, parseActionArguments } from '../src/actions/execute-action.js';
import { ServerActionRegistry, type ServerAction } from '../src/actions/server-action.js';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import {
  ClientDisconnectedError,
  GatewayError,
  InternalError,
  RunStoppedError,
  UpstreamError,
} from '../src/core/errors.js';
import { pino } from 'pino';
import type { SequencedEvent } from '../src/core/events.js';
import { modelDriver } from '../src/engine/drivers/model.js';
import { resolveModelLimits, type ModelLimitsOptions } from '../src/engine/model-limits.js';
import type { RunRequest } from '../src/engine/request.js';
import { Run } from '../src/engine/run.js';
import { silentLogger } from './support/harness.js';
import { failOnProcessErrors } from './support/process-errors.js';

// A listener error or a rejection nobody handles, anywhere in this file, reaches Node's own process (jest's
// sandbox never sees it): checked after each test.
failOnProcessErrors();

// The run engine on its own: ordering guarantees, terminal status, rounds, timeouts, abort.

type Script = (output: ModelOutput, request: ModelRequest, signal: AbortSignal, call: number) => Promise<void> | void;

function scripted(script: Script): ModelAdapter & { calls: ModelRequest[] } {
  const calls: ModelRequest[] = [];
  return {
    name: 'scripted',
    calls,
    async stream(request, output, signal) {
      calls.push(request);
      await script(output, request, signal, calls.length);
    },
  };
}

function request(overrides: Partial<RunRequest> = {}): RunRequest {
  return {
    threadId: 't1',
    runId: 'r1',
    messages: [{ kind: 'text', id: 'u1', role: 'user', content: 'hi' }],
    frontendTools: [{ name: 'showAlert', description: 'Shows an alert.', parameters: { type: 'object' } }],
    context: [],
    forwardedParameters: {},
    properties: { tenant: 'acme' },
    agentSession: null,
    agentStates: [],
    metaEvents: [],
    ...overrides,
  };
}

function startRun(
  adapter: ModelAdapter,
  options: {
    actions?: ServerAction[];
    maxRounds?: number;
    idle?: number;
    first?: number;
    actionTimeout?: number;
    logger?: typeof silentLogger;
    limits?: ModelLimitsOptions;
  } = {},
) {
  const events: SequencedEvent[] = [];
  const run = new Run({ threadId: 't1', runId: 'r1', logger: options.logger ?? silentLogger });
  run.subscribe((event) => events.push(structuredClone(event)));
  const done = run.start(
    modelDriver({
      request: request(),
      catalog: new ActionCatalog([new ServerActionRegistry(options.actions ?? [])]),
      agents: [],
      options: {
        adapter,
        maxRounds: options.maxRounds ?? 5,
        modelIdleTimeoutMs: options.idle ?? 5_000,
        modelFirstTokenTimeoutMs: options.first ?? options.idle ?? 5_000,
        agentIdleTimeoutMs: 5_000,
        agentFirstEventTimeoutMs: 5_000,
        actionTimeoutMs: options.actionTimeout ?? 5_000,
        modelLimits: resolveModelLimits(options.limits ?? { allowedModels: '*' }, undefined),
      },
    }),
  );
  return { run, events, done };
}

const types = (events: SequencedEvent[]) => events.map((event) => event.type);

afterEach(() => {
  jest.useRealTimers();
});

describe('the run engine', () => {
  it('opens with RunStarted and ends with exactly one RunFinished, numbering every event at the source', async () => {
    const { events, done } = startRun(
      scripted((out) => {
        const id = out.textStart('m1');
        out.textContent(id, 'Hi');
        out.textEnd(id);
      }),
    );
    expect(await done).toEqual({ code: 'Success' });
    expect(types(events)).toEqual([
      'RunStarted',
      'TextMessageStart',
      'TextMessageContent',
      'TextMessageEnd',
      'RunFinished',
    ]);
    expect(events[0]).toEqual({ type: 'RunStarted', threadId: 't1', runId: 'r1', sequence: 0 });
    expect(events.map((event) => event.sequence)).toEqual([0, 1, 2, 3, 4]);
  });

  it('gives every subscriber the same numbers', async () => {
    const run = new Run({ threadId: 't', runId: 'r', logger: silentLogger });
    const first: number[] = [];
    const second: number[] = [];
    run.subscribe((event) => first.push(event.sequence));
    run.subscribe((event) => second.push(event.sequence));
    await run.start(async ({ writer }) => writer.textEnd(writer.textStart()));
    expect(first).toEqual([0, 1, 2, 3]);
    expect(second).toEqual(first);
  });

  it('closes messages an adapter left open when it returns, before the round goes on', async () => {
    const adapter = scripted((out, _request, _signal, call) => {
      if (call === 1) {
        out.textContent(out.textStart('dangling'), 'looking it up');
        out.actionArgs(out.actionStart('c1', 'lookup'), '{}');
        return; // neither ended
      }
      out.textEnd(out.textStart('m2'));
    });
    const { events, done } = startRun(adapter, {
      actions: [{ name: 'lookup', description: 'd', handler: () => 'ok' }],
    });
    await done;
    const order = events.map((e: any) => `${e.type}:${e.messageId ?? e.actionExecutionId ?? ''}`);
    expect(order.indexOf('TextMessageEnd:dangling')).toBeLessThan(order.indexOf('ActionExecutionResult:result-c1'));
    expect(order.indexOf('ActionExecutionEnd:c1')).toBeLessThan(order.indexOf('ActionExecutionResult:result-c1'));
    expect(events.find((e) => e.type === 'TextMessageEnd' && e.messageId === 'dangling')).toMatchObject({
      status: { code: 'Success' },
    });
  });

  it('closes open messages and calls as Failed before a Failed RunFinished', async () => {
    const { events, done } = startRun(
      scripted((out) => {
        out.textContent(out.textStart('m1'), 'partial');
        out.actionArgs(out.actionStart('c1', 'showAlert'), '{"a"');
        throw new GatewayError('UPSTREAM_UNAVAILABLE', 'provider down');
      }),
    );
    const status = await done;
    expect(status).toMatchObject({
      code: 'Failed',
      reason: 'UNKNOWN_ERROR',
      details: { code: 'UPSTREAM_UNAVAILABLE', description: 'provider down' },
    });
    expect(types(events).slice(-3)).toEqual(['TextMessageEnd', 'ActionExecutionEnd', 'RunFinished']);
    expect(events.at(-3)).toMatchObject({ messageId: 'm1', status: { code: 'Failed', reason: 'provider down' } });
    expect(events.at(-2)).toMatchObject({ actionExecutionId: 'c1', status: { code: 'Failed' } });
  });

  it('gives a message a fresh id when the provider repeats one within the run', async () => {
    const { events, done } = startRun(
      scripted((out) => {
        out.textEnd(out.textStart('same'));
        out.textEnd(out.textStart('same'));
      }),
    );
    await done;
    const ids = events.filter((e) => e.type === 'TextMessageStart').map((e: any) => e.messageId);
    expect(ids[0]).toBe('same');
    expect(ids[1]).toMatch(/^msg_/);
  });

  it("gives a fresh id for an upstream's id that would not pass as a client's (too long, a control character)", async () => {
    // Found from outside: an agent's 8 MiB message id was repeated in every event of the message.
    const { events, done } = startRun(
      scripted((out) => {
        out.textEnd(out.textStart('m'.repeat(8 * 1024 * 1024)));
        out.actionEnd(out.actionStart('call\u0000x', 'tool'));
        out.textEnd(out.textStart('\ud800'));
        out.textEnd(out.textStart('fine-id'));
      }),
    );
    await done;
    const ids = events
      .filter((e) => e.type === 'TextMessageStart' || e.type === 'ActionExecutionStart')
      .map((e: any) => e.messageId ?? e.actionExecutionId);
    expect(ids).toEqual([
      expect.stringMatching(/^msg_/),
      expect.stringMatching(/^call_/),
      expect.stringMatching(/^msg_/),
      'fine-id',
    ]);
  });

  it('passes arguments and context to a server-side action and continues with its result', async () => {
    const seen: unknown[] = [];
    const adapter = scripted((out, _request, _signal, call) => {
      if (call === 1) {
        const id = out.actionStart('c1', 'lookup');
        out.actionArgs(id, '{"q":');
        out.actionArgs(id, '"x"}');
        return;
      }
      out.textEnd(out.textStart());
    });
    const { events, done } = startRun(adapter, {
      actions: [
        {
          name: 'lookup',
          description: 'd',
          handler: (args, context) => {
            seen.push(args, context.properties, context.threadId);
            return { found: 1 };
          },
        },
      ],
    });
    await done;
    expect(seen).toEqual([{ q: 'x' }, { tenant: 'acme' }, 't1']);
    expect(events.find((e) => e.type === 'ActionExecutionResult')).toMatchObject({
      type: 'ActionExecutionResult',
      messageId: 'result-c1',
      actionExecutionId: 'c1',
      actionName: 'lookup',
      result: '{"found":1}',
    });
    expect(adapter.calls).toHaveLength(2);
    expect(adapter.calls[1].messages.slice(-2)).toEqual([
      { kind: 'actionExecution', id: 'c1', name: 'lookup', arguments: '{"q":"x"}', parentMessageId: null },
      { kind: 'result', id: 'result-c1', actionExecutionId: 'c1', actionName: 'lookup', result: '{"found":1}' },
    ]);
    expect(adapter.calls[0].tools.map((t) => t.name)).toEqual(['lookup', 'showAlert']);
  });

  it("checks the types of a server-side action's arguments before calling it", async () => {
    let called = false;
    const adapter = scripted((out, _request, _signal, call) => {
      if (call === 1) out.actionArgs(out.actionStart('c1', 'square'), '{"n":"four"}');
    });
    const { events, done } = startRun(adapter, {
      actions: [
        {
          name: 'square',
          description: 'd',
          parameters: { type: 'object', properties: { n: { type: 'number' } } },
          handler: () => {
            called = true;
            return 16;
          },
        },
      ],
    });
    await done;
    const result = events.find((e) => e.type === 'ActionExecutionResult') as any;
    expect(JSON.parse(result.result)).toEqual({
      error: { code: 'INVALID_ARGUMENTS', message: 'Argument "n" must be of type number.' },
      result: '',
    });
    expect(called).toBe(false);
  });

  it('does not continue when the model also called a frontend action', async () => {
    const adapter = scripted((out) => {
      out.actionEnd(out.actionStart('c1', 'lookup'));
      out.actionEnd(out.actionStart('c2', 'showAlert'));
    });
    const { events, done } = startRun(adapter, {
      actions: [{ name: 'lookup', description: 'd', handler: () => 'ok' }],
    });
    await done;
    expect(adapter.calls).toHaveLength(1);
    expect(events.filter((e) => e.type === 'ActionExecutionResult')).toHaveLength(1);
  });

  it('stops after maxRounds model calls even if the model keeps calling actions', async () => {
    const adapter = scripted((out) => out.actionEnd(out.actionStart(null, 'again')));
    const { done } = startRun(adapter, {
      maxRounds: 3,
      actions: [{ name: 'again', description: 'd', handler: () => 'ok' }],
    });
    expect(await done).toEqual({ code: 'Success' });
    expect(adapter.calls).toHaveLength(3);
  });

  it('gives a slow action an ACTION_TIMEOUT error result and aborts its signal', async () => {
    let handlerSignal: AbortSignal | undefined;
    const adapter = scripted((out, _request, _signal, call) => {
      if (call === 1) out.actionEnd(out.actionStart('c1', 'slow'));
    });
    const { events, done } = startRun(adapter, {
      actionTimeout: 20,
      actions: [
        {
          name: 'slow',
          description: 'd',
          handler: (_args, { signal }) => {
            handlerSignal = signal;
            return new Promise(() => {});
          },
        },
      ],
    });
    await done;
    const result = events.find((e) => e.type === 'ActionExecutionResult') as any;
    expect(JSON.parse(result.result).error.code).toBe('ACTION_TIMEOUT');
    expect(handlerSignal?.aborted).toBe(true);
    expect((handlerSignal?.reason as GatewayError).code).toBe('ACTION_TIMEOUT');
  });

  it("reports a handler's own UPSTREAM_TIMEOUT as that, not as its own ACTION_TIMEOUT", async () => {
    const adapter = scripted((out, _request, _signal, call) => {
      if (call === 1) out.actionEnd(out.actionStart('c1', 'callsOut'));
    });
    const { events, done } = startRun(adapter, {
      actions: [
        {
          name: 'callsOut',
          description: 'd',
          handler: () => {
            throw new GatewayError('UPSTREAM_TIMEOUT', 'the weather service timed out');
          },
        },
      ],
    });
    await done;
    const result = events.find((e) => e.type === 'ActionExecutionResult') as any;
    expect(JSON.parse(result.result).error).toEqual({
      code: 'UPSTREAM_TIMEOUT',
      message: 'the weather service timed out',
    });
  });

  it("aborts a running handler's signal when the client leaves", async () => {
    let handlerSignal: AbortSignal | undefined;
    let handlerStarted!: () => void;
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    const adapter = scripted((out) => out.actionEnd(out.actionStart('c1', 'wait')));
    const { run, done } = startRun(adapter, {
      actions: [
        {
          name: 'wait',
          description: 'd',
          handler: (_args, { signal }) => {
            handlerSignal = signal;
            handlerStarted();
            return new Promise(() => {});
          },
        },
      ],
    });
    await started;
    expect(handlerSignal?.aborted).toBe(false);
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    await done;
    expect(handlerSignal?.aborted).toBe(true);
    expect((handlerSignal?.reason as GatewayError).code).toBe('CLIENT_DISCONNECTED');
  });

  it('ends an aborted run promptly while a server-side action ignores its signal', async () => {
    let handlerStarted!: () => void;
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    const adapter = scripted((out) => out.actionEnd(out.actionStart('c1', 'stubborn')));
    const { run, events, done } = startRun(adapter, {
      actions: [
        {
          name: 'stubborn',
          description: 'd',
          handler: () => {
            handlerStarted();
            return new Promise(() => {});
          },
        },
      ],
    });
    await started;
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await done).toMatchObject({ code: 'Failed', details: { code: 'CLIENT_DISCONNECTED' } });
    expect(events.some((e) => e.type === 'ActionExecutionResult')).toBe(false);
  });

  it('survives an action whose abort listener throws', async () => {
    let listenerRan = false;
    let handlerStarted!: () => void;
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    const adapter = scripted((out) => out.actionEnd(out.actionStart('c1', 'fragile')));
    const { run, done } = startRun(adapter, {
      actions: [
        {
          name: 'fragile',
          description: 'd',
          handler: (_args, { signal }) => {
            signal.addEventListener('abort', () => {
              listenerRan = true;
              throw new Error('listener bug');
            });
            signal.onabort = () => {
              throw new Error('onabort bug');
            };
            handlerStarted();
            return new Promise(() => {});
          },
        },
      ],
    });
    await started;
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await done).toMatchObject({ code: 'Failed', details: { code: 'CLIENT_DISCONNECTED' } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(listenerRan).toBe(true);
    // Nothing reached the process as uncaught: failOnProcessErrors checks after each test.
  });

  it('survives an adapter whose abort listener throws', async () => {
    let listenerRan = false;
    const { run, done } = startRun(
      scripted((_out, _request, signal) => {
        signal.addEventListener('abort', () => {
          listenerRan = true;
          throw new Error('adapter listener bug');
        });
        return new Promise(() => {});
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    await done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(listenerRan).toBe(true);
    // Nothing reached the process as uncaught: failOnProcessErrors checks after each test.
  });

  it('does not start an action once its run has been aborted', async () => {
    let called = false;
    const controller = new AbortController();
    controller.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    const [action] = new ServerActionRegistry([
      {
        name: 'late',
        description: 'd',
        handler: () => {
          called = true;
          return new Promise(() => {});
        },
      },
    ]).actions();
    const execution = executeAction(action, '{}', {
      threadId: 't',
      runId: 'r',
      properties: {},
      logger: silentLogger,
      signal: controller.signal,
      timeoutMs: 60_000,
    });
    await expect(execution).rejects.toMatchObject({ code: 'CLIENT_DISCONNECTED' });
    expect(called).toBe(false);
  });

  it('does not count inherited keys as arguments', () => {
    const schema = {
      type: 'object',
      properties: { constructor: { type: 'string' } },
      required: ['constructor', 'toString'],
    };
    expect(parseActionArguments('{}', schema)).toEqual({
      ok: false,
      message: 'Missing required argument(s): constructor, toString.',
    });
    expect(parseActionArguments('{"constructor":"x","toString":"y"}', schema)).toMatchObject({ ok: true });
  });

  it('keeps running when a subscriber throws, and settles without an unhandled rejection', async () => {
    const run = new Run({ threadId: 't', runId: 'r', logger: silentLogger });
    const seen: string[] = [];
    run.subscribe((event) => {
      if (event.type === 'TextMessageContent' || event.type === 'RunFinished') throw new Error('view bug');
    });
    run.subscribe((event) => seen.push(event.type));
    const status = await run.start(async ({ writer }) => {
      const id = writer.textStart();
      writer.textContent(id, 'a');
      writer.textEnd(id);
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(status).toEqual({ code: 'Success' });
    expect(seen).toEqual(['RunStarted', 'TextMessageStart', 'TextMessageContent', 'TextMessageEnd', 'RunFinished']);
    // No unhandled rejection: failOnProcessErrors checks after each test.
  });

  it('ends a run, and its upstream call, once its output passes maxOutputBytes: LIMIT_EXCEEDED', async () => {
    const run = new Run({ threadId: 't', runId: 'r', logger: silentLogger, maxOutputBytes: 100_000 });
    let written = 0;
    let callSignal: AbortSignal | undefined;
    const status = await run.start((context) =>
      context.callUpstream(
        { firstMs: 60_000, idleMs: 60_000, onTimeout: () => new InternalError('silent') },
        async (signal) => {
          callSignal = signal;
          const id = context.writer.textStart();
          // An upstream that never stops on its own.
          while (!signal.aborted) {
            context.writer.textContent(id, 'x'.repeat(1_000));
            written += 1_000;
            if (written % 50_000 === 0) await new Promise((resolve) => setImmediate(resolve));
          }
        },
      ),
    );
    expect(status).toMatchObject({ code: 'Failed', details: { code: 'LIMIT_EXCEEDED' } });
    expect(callSignal?.aborted).toBe(true);
    expect((callSignal?.reason as GatewayError).details).toEqual({ limit: 'maxRunOutputMb', limitBytes: 100_000 });
    // It stopped at the limit: the event that passed it, and none after.
    expect(written).toBeGreaterThan(90_000);
    expect(written).toBeLessThanOrEqual(100_000);
  });

  it('logs a run its client left or a stop ended at info, as the error table rates them, and other failures at warn', async () => {
    const lines: { msg: string; level: number; code?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const endings = [
      new ClientDisconnectedError('The client went away.'),
      new RunStoppedError('Stopped.'),
      new UpstreamError('UPSTREAM_UNAVAILABLE', 'The model is down.'),
    ];
    for (const ending of endings) {
      const run = new Run({ threadId: 't', runId: 'r', logger });
      const finished = run.start(
        ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      );
      run.abort(ending);
      await finished;
    }
    const failures = lines.filter((line) => line.msg.startsWith('run failed'));
    expect(failures.map((line) => [line.code, line.level])).toEqual([
      ['CLIENT_DISCONNECTED', 30],
      ['RUN_STOPPED', 30],
      ['UPSTREAM_UNAVAILABLE', 40],
    ]);
  });

  it('settles, without an unhandled rejection, when its own logger throws', async () => {
    const throwing: any = {
      child: () => throwing,
      debug: () => {},
      warn: () => {},
      error: () => {},
      info: () => {
        throw new Error('log sink is down');
      },
    };
    const run = new Run({ threadId: 't', runId: 'r', logger: throwing });
    const status = await run.start(async ({ writer }) => writer.textEnd(writer.textStart()));
    await new Promise((resolve) => setImmediate(resolve));
    expect(status.code).toBe('Success');
    // No unhandled rejection: failOnProcessErrors checks after each test.
  });

  it('fails a run whose model goes quiet, via the idle timeout', async () => {
    const adapter = scripted(async (out, _request, signal) => {
      out.textContent(out.textStart(), 'one');
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    const status = await startRun(adapter, { idle: 30 }).done;
    expect(status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_TIMEOUT' } });
  });

  it('restarts the idle clock with every token', async () => {
    jest.useFakeTimers();
    let release!: () => void;
    const adapter = scripted(async (out) => {
      const id = out.textStart();
      for (let i = 0; i < 10; i++) {
        await new Promise<void>((resolve) => (release = resolve));
        out.textContent(id, `t${i} `);
      }
      out.textEnd(id);
    });
    const { done, events } = startRun(adapter, { idle: 100 });
    for (let i = 0; i < 10; i++) {
      await jest.advanceTimersByTimeAsync(60); // 600 ms in all, never 100 ms without a token
      release();
    }
    await jest.advanceTimersByTimeAsync(1);
    expect(await done).toEqual({ code: 'Success' });
    expect(events.filter((e) => e.type === 'TextMessageContent')).toHaveLength(10);
  });

  it('finishes promptly on abort even when the adapter ignores its signal', async () => {
    const adapter = scripted(() => new Promise(() => {}));
    const { run, events, done } = startRun(adapter);
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await done).toMatchObject({
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: { code: 'CLIENT_DISCONNECTED' },
    });
    expect(types(events)).toEqual(['RunStarted', 'RunFinished']);
  });

  it('ignores an abort after the run has finished', async () => {
    let runSignal: AbortSignal | undefined;
    const run = new Run({ threadId: 't', runId: 'r', logger: silentLogger });
    const events: SequencedEvent[] = [];
    run.subscribe((event) => events.push(event));
    await run.start(async ({ writer, signal }) => {
      runSignal = signal;
      writer.textEnd(writer.textStart());
    });
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'late'));
    expect(runSignal?.aborted).toBe(false);
    expect(await run.finished).toEqual({ code: 'Success' });
    expect(events.filter((e) => e.type === 'RunFinished')).toHaveLength(1);
  });
});
