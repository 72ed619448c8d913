import type { ServerResponse } from 'node:http';
import type { BaseEvent } from '@ag-ui/core';
import type { EventEncoder } from '@ag-ui/encoder';
import type { Logger } from 'pino';
import { toGatewayError, type GatewayError } from '../core/errors.js';
import type { SequencedEvent } from '../core/events.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import { failedMessage } from '../core/status.js';
import { drained } from '../transports/responses.js';
import type { RunEventStream } from '../views/run-events.js';
import { eventId, toAgUiEvent, type RunStartedInput } from './events.js';
import { RunProgress } from './resume.js';

// A run's events written as AG-UI's server-sent events: the stream's headers and keep-alive, each event converted and
// framed by @ag-ui/encoder with its SSE id, and a stream cut short ended as AG-UI clients expect.

/** What the SSE writing takes of the transport's options (AgUiTransportOptions). */
export interface AgUiSseOptions {
  /** Milliseconds between SSE keep-alive comments. */
  keepAliveMs: number;
  /** Told when an SSE stream starts and ends (metrics). */
  onStream?: (delta: 1 | -1) => void;
  /** Which clients get the model's reasoning (GatewayOptions.agUiReasoning). @default "declared" */
  reasoning?: 'declared' | 'always';
}

/** Writes runs' events to AG-UI clients as SSE (made by loadAgUiSse once the encoder is loaded). */
export class AgUiSse {
  constructor(
    private readonly encoder: EventEncoder,
    private readonly options: AgUiSseOptions,
  ) {}

  /**
   * Streams a run to the client until it ends, the client leaves (the run goes on) or the store fails it (then the
   * stream is ended as cut short). `ids`: whether events carry SSE ids (not a suggestion's: it is stored nowhere).
   */
  async stream(
    res: ServerResponse,
    stream: RunEventStream,
    input: RunStartedInput,
    logger: Logger,
    ids: boolean,
  ): Promise<void> {
    this.open(res);
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), this.options.keepAliveMs);
    // The client leaving stops this view only: the run goes on.
    res.once('close', () => void stream.return());
    const progress = new RunProgress();
    try {
      for await (const event of stream) {
        if (res.destroyed) break;
        // A slow client is waited for; meanwhile the run's chunks queue up merged (RunEventStream).
        if (!this.write(res, event, input, progress, ids)) await drained(res);
      }
    } catch (error) {
      // The rest of the run cannot be shown (the thread store cannot take its events): its open
      // messages are ended and the run's end is RUN_ERROR with the code.
      const reason = toGatewayError(error);
      if (reason.code === 'INTERNAL_SERVER_ERROR') logger.error({ err: error }, 'unexpected error in an AG-UI stream');
      if (!res.destroyed) this.endCutShort(res, progress, reason.message, reason, input);
    } finally {
      clearInterval(keepAlive);
      if (!res.destroyed) res.end();
    }
  }

  /**
   * Ends a run's stream that cannot go on: its open messages, calls and reasoning ended (as the run would end them,
   * converted as every event is: reasoning only where it was sent), then RUN_ERROR with the reason's code.
   */
  endCutShort(
    res: ServerResponse,
    progress: RunProgress,
    message: string,
    reason: GatewayError,
    input: RunStartedInput,
  ): void {
    const failed = failedMessage(message);
    for (const [id, kind] of [...progress.open]) {
      const end: SequencedEvent =
        kind === 'text'
          ? { type: 'TextMessageEnd', messageId: id, status: failed, sequence: -1 }
          : kind === 'call'
            ? { type: 'ActionExecutionEnd', actionExecutionId: id, status: failed, sequence: -1 }
            : { type: 'ReasoningEnd', messageId: id, sequence: -1 };
      this.write(res, end, input, progress, false);
    }
    res.write(this.encoder.encodeSSE({ type: 'RUN_ERROR', message, code: reason.code } as BaseEvent));
  }

  /** Answers 200 as an event stream, headers sent at once; counted while open (`onStream`). */
  open(res: ServerResponse): void {
    res.statusCode = 200;
    res.setHeader('content-type', 'text/event-stream');
    res.setHeader('cache-control', 'no-cache, no-transform');
    res.setHeader('x-accel-buffering', 'no');
    res.flushHeaders();
    const onStream = this.options.onStream;
    if (onStream) {
      onStream(1);
      res.once('close', () => onStream(-1));
    }
  }

  /** Writes an event's AG-UI form; false when the socket's buffer is full (wait for 'drain'). */
  write(
    res: ServerResponse,
    event: SequencedEvent,
    input: RunStartedInput,
    progress: RunProgress,
    ids = true,
  ): boolean {
    if (event.type === 'RunStarted') input.runId = event.runId;
    progress.see(event);
    const converted = toAgUiEvent(
      event,
      {
        threadId: input.threadId,
        runId: input.runId,
        interrupts: progress.interrupts,
        pendingToolCallIds: progress.pendingCalls,
        reasoning: this.options.reasoning === 'always',
      },
      input,
    );
    if (!converted) return true;
    // The run's own events carry their sequence as the SSE id (a reconnect's Last-Event-ID); events the
    // gateway makes up for a replay (sequence -1) carry none, so an id always names a stored event. An event
    // sent as two frames carries its id on the second: a client that got only the first resumes before it.
    const frames = Array.isArray(converted) ? converted.map((one) => this.encoder.encodeSSE(one)) : undefined;
    const last = frames ? frames.pop()! : this.encoder.encodeSSE(converted as BaseEvent);
    const before = frames ? frames.join('') : '';
    return res.write(
      ids && event.sequence >= 0 ? `${before}id: ${eventId(input.runId, event.sequence)}\n${last}` : before + last,
    );
  }
}

/**
 * @ag-ui/encoder, loaded on the first AG-UI stream rather than at start-up: it brings @ag-ui/proto and
 * protobuf with it, for a gateway that may serve only GraphQL clients (with RxJS, loaded by the AG-UI
 * agent client on its first run, about 2 MB of heap at idle). Only its SSE framing is used.
 */
const loadEncoder = loadOnFirstUse(
  async (): Promise<EventEncoder> => new (await import('@ag-ui/encoder')).EventEncoder(),
);

/** The SSE writer, once @ag-ui/encoder is loaded (on the first AG-UI stream). */
export async function loadAgUiSse(options: AgUiSseOptions): Promise<AgUiSse> {
  return new AgUiSse(await loadEncoder(), options);
}
