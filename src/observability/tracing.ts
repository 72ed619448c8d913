import { SpanKind, SpanStatusCode, context, trace, type Context, type Tracer } from '@opentelemetry/api';
import type { GatewayError } from '../core/errors.js';
import type { UpstreamCallObserver } from '../engine/drivers/agent.js';
import type { RunHandle } from '../engine/run.js';

/**
 * OpenTelemetry tracing of runs (`@opentelemetry/api` only; the application registers an SDK and an
 * exporter). Off unless the gateway's `tracing` option is on. Each run is a span, `copilot.run`, and
 * each call it makes of its model or agent a child span, `copilot.upstream`. The run's work runs in
 * its span's context, so spans an instrumented SDK makes (HTTP calls through undici, for one) nest
 * under it when the SDK has a context manager.
 */
export class RunTracing {
  private readonly tracer: Tracer;
  /** The context of each run in progress, by thread and run id, for its upstream spans. */
  private readonly runs = new Map<string, Context>();

  constructor(version: string) {
    this.tracer = trace.getTracer('copilot-gateway', version);
  }

  /** Starts the run's span, and `begin` (the run's work) in its context. */
  traceRun<T>(
    run: RunHandle,
    kind: 'model' | 'agent',
    attributes: Record<string, string | undefined>,
    begin: () => T,
  ): T {
    const span = this.tracer.startSpan('copilot.run', {
      kind: SpanKind.INTERNAL,
      attributes: {
        'copilot.thread_id': run.threadId,
        'copilot.run_id': run.runId,
        'copilot.run_kind': kind,
        ...definedOnly(attributes),
      },
    });
    const key = runKey(run.threadId, run.runId);
    const runContext = trace.setSpan(context.active(), span);
    this.runs.set(key, runContext);
    void run.finished.then((status) => {
      this.runs.delete(key);
      span.setAttribute('copilot.outcome', status.code === 'Failed' ? status.details.code : status.code);
      if (status.code === 'Failed') span.setStatus({ code: SpanStatusCode.ERROR, message: status.details.code });
      else span.setStatus({ code: SpanStatusCode.OK });
      span.end();
    });
    return context.with(runContext, begin);
  }

  /** The upstream calls' spans, children of their run's. */
  readonly upstreamCall: UpstreamCallObserver = ({ threadId, runId, upstream }) => {
    const parent = this.runs.get(runKey(threadId, runId)) ?? context.active();
    const span = this.tracer.startSpan(
      'copilot.upstream',
      { kind: SpanKind.CLIENT, attributes: { 'copilot.upstream': upstream } },
      parent,
    );
    return (error) => {
      if (error === undefined) span.setStatus({ code: SpanStatusCode.OK });
      else {
        const code = (error as GatewayError)?.code ?? 'INTERNAL_SERVER_ERROR';
        span.setAttribute('copilot.error_code', code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: code });
      }
      span.end();
    };
  };
}

function runKey(threadId: string, runId: string): string {
  return `${threadId}\u0000${runId}`;
}

function definedOnly(attributes: Record<string, string | undefined>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) result[name] = value;
  return result;
}
