import { describe, expect, it } from '@jest/globals';
import type { ModelAdapter, ModelOutput, ModelRequest } from '../src/adapters/adapter.js';
import { ServerActionRegistry, type ServerAction } from '../src/actions/server-action.js';
import type { RuntimeEvent } from '../src/engine/events.js';
import { Run } from '../src/engine/run.js';
import { GatewayError } from '../src/errors.js';
import { silentLogger } from './support/harness.js';

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

function startRun(adapter: ModelAdapter, options: { actions?: ServerAction[]; maxRounds?: number; idle?: number; actionTimeout?: number } = {}) {
  const events: RuntimeEvent[] = [];
  const run = new Run(
    {
      threadId: 't1',
      runId: 'r1',
      messages: [{ kind: 'text', id: 'u1', role: 'user', content: 'hi' }],
      frontendTools: [{ name: 'showAlert', description: 'Shows an alert.', parameters: { type: 'object' } }],
      forwardedParameters: {},
      properties: { tenant: 'acme' },
    },
    {
      adapter,
      serverActions: new ServerActionRegistry(options.actions ?? []),
      maxRounds: options.maxRounds ?? 5,
      modelIdleTimeoutMs: options.idle ?? 5_000,
      actionTimeoutMs: options.actionTimeout ?? 5_000,
      logger: silentLogger,
    },
    (event) => events.push(structuredClone(event)),
  );
  return { run, events, done: run.execute() };
}

const types = (events: RuntimeEvent[]) => events.map((event) => event.type);

describe('the run engine', () => {
  it('opens with RunStarted and ends with exactly one RunFinished', async () => {
    const { events, done } = startRun(scripted((out) => {
      const id = out.textStart('m1');
      out.textContent(id, 'Hi');
      out.textEnd(id);
    }));
    expect(await done).toEqual({ code: 'Success' });
    expect(types(events)).toEqual(['RunStarted', 'TextMessageStart', 'TextMessageContent', 'TextMessageEnd', 'RunFinished']);
    expect(events[0]).toEqual({ type: 'RunStarted', threadId: 't1', runId: 'r1' });
  });

  it('closes messages an adapter left open, as Success when it returned normally', async () => {
    const { events, done } = startRun(scripted((out) => {
      out.textContent(out.textStart(), 'dangling');
    }));
    await done;
    expect(events.at(-2)).toMatchObject({ type: 'TextMessageEnd', status: { code: 'Success' } });
  });

  it('closes open messages and calls as Failed before a Failed RunFinished', async () => {
    const { events, done } = startRun(scripted((out) => {
      out.textContent(out.textStart('m1'), 'partial');
      out.actionArgs(out.actionStart('c1', 'showAlert'), '{"a"');
      throw new GatewayError('UPSTREAM_UNAVAILABLE', 'provider down');
    }));
    const status = await done;
    expect(status).toMatchObject({ code: 'Failed', reason: 'UNKNOWN_ERROR', details: { code: 'UPSTREAM_UNAVAILABLE', description: 'provider down' } });
    expect(types(events).slice(-3)).toEqual(['TextMessageEnd', 'ActionExecutionEnd', 'RunFinished']);
    expect(events.at(-3)).toMatchObject({ messageId: 'm1', status: { code: 'Failed', reason: 'provider down' } });
    expect(events.at(-2)).toMatchObject({ actionExecutionId: 'c1', status: { code: 'Failed' } });
  });

  it('gives a message a fresh id when the provider repeats one within the run', async () => {
    const { events, done } = startRun(scripted((out) => {
      out.textEnd(out.textStart('same'));
      out.textEnd(out.textStart('same'));
    }));
    await done;
    const ids = events.filter((e) => e.type === 'TextMessageStart').map((e: any) => e.messageId);
    expect(ids[0]).toBe('same');
    expect(ids[1]).toMatch(/^msg_/);
  });

  it('passes arguments and context to a server-side action and continues with its result', async () => {
    const seen: unknown[] = [];
    const adapter = scripted((out, request, _signal, call) => {
      if (call === 1) {
        const id = out.actionStart('c1', 'lookup');
        out.actionArgs(id, '{"q":');
        out.actionArgs(id, '"x"}');
        return;
      }
      out.textEnd(out.textStart());
    });
    const { events, done } = startRun(adapter, {
      actions: [{ name: 'lookup', description: 'd', handler: (args, context) => { seen.push(args, context.properties, context.threadId); return { found: 1 }; } }],
    });
    await done;
    expect(seen).toEqual([{ q: 'x' }, { tenant: 'acme' }, 't1']);
    expect(events.find((e) => e.type === 'ActionExecutionResult')).toEqual({
      type: 'ActionExecutionResult', messageId: 'result-c1', actionExecutionId: 'c1', actionName: 'lookup', result: '{"found":1}',
    });
    expect(adapter.calls).toHaveLength(2);
    expect(adapter.calls[1].messages.slice(-2)).toEqual([
      { kind: 'actionExecution', id: 'c1', name: 'lookup', arguments: '{"q":"x"}', parentMessageId: null },
      { kind: 'result', id: 'result-c1', actionExecutionId: 'c1', actionName: 'lookup', result: '{"found":1}' },
    ]);
    expect(adapter.calls[0].tools.map((t) => t.name)).toEqual(['lookup', 'showAlert']);
  });

  it('does not continue when the model also called a frontend action', async () => {
    const adapter = scripted((out) => {
      out.actionEnd(out.actionStart('c1', 'lookup'));
      out.actionEnd(out.actionStart('c2', 'showAlert'));
    });
    const { events, done } = startRun(adapter, { actions: [{ name: 'lookup', description: 'd', handler: () => 'ok' }] });
    await done;
    expect(adapter.calls).toHaveLength(1);
    expect(events.filter((e) => e.type === 'ActionExecutionResult')).toHaveLength(1);
  });

  it('stops after maxRounds model calls even if the model keeps calling actions', async () => {
    const adapter = scripted((out) => out.actionEnd(out.actionStart(null, 'again')));
    const { done } = startRun(adapter, { maxRounds: 3, actions: [{ name: 'again', description: 'd', handler: () => 'ok' }] });
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
      actions: [{ name: 'slow', description: 'd', handler: (_args, { signal }) => { handlerSignal = signal; return new Promise(() => {}); } }],
    });
    await done;
    const result = events.find((e) => e.type === 'ActionExecutionResult') as any;
    expect(JSON.parse(result.result).error.code).toBe('ACTION_TIMEOUT');
    expect(handlerSignal?.aborted).toBe(true);
  });

  it('ends an aborted run promptly while a server-side action ignores its signal', async () => {
    let handlerStarted!: () => void;
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    const adapter = scripted((out) => out.actionEnd(out.actionStart('c1', 'stubborn')));
    const { run, events, done } = startRun(adapter, {
      actions: [{ name: 'stubborn', description: 'd', handler: () => { handlerStarted(); return new Promise(() => {}); } }],
    });
    await started;
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await done).toMatchObject({ code: 'Failed', details: { code: 'CLIENT_DISCONNECTED' } });
    expect(events.some((e) => e.type === 'ActionExecutionResult')).toBe(false);
  });

  it('fails a run whose model goes quiet, via the idle timeout', async () => {
    const adapter = scripted(async (out, _request, signal) => {
      out.textContent(out.textStart(), 'one');
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    const status = await startRun(adapter, { idle: 30 }).done;
    expect(status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_TIMEOUT' } });
  });

  it('finishes promptly on abort even when the adapter ignores its signal', async () => {
    const adapter = scripted(() => new Promise(() => {}));
    const { run, events, done } = startRun(adapter);
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'gone'));
    expect(await done).toMatchObject({ code: 'Failed', reason: 'MESSAGE_STREAM_INTERRUPTED', details: { code: 'CLIENT_DISCONNECTED' } });
    expect(types(events)).toEqual(['RunStarted', 'RunFinished']);
  });

  it('ignores an abort after the run has finished', async () => {
    const { run, events, done } = startRun(scripted((out) => out.textEnd(out.textStart())));
    await done;
    run.abort(new GatewayError('CLIENT_DISCONNECTED', 'late'));
    expect(events.filter((e) => e.type === 'RunFinished')).toEqual([{ type: 'RunFinished', status: { code: 'Success' } }]);
  });
});
