import type { ServerResponse } from 'node:http';
import type { Principal } from '../core/principal.js';
import type { SequencedEvent } from '../core/events.js';
import { toGatewayError } from '../core/errors.js';
import type { RunLauncher } from '../engine/launcher.js';
import { drained } from '../transports/responses.js';
import { sendError } from './answers.js';
import type { AgUiCaller } from './caller.js';
import type { RunStartedInput } from './events.js';
import { parseRunAgentInput, type RunAgentInput } from './input.js';
import { toAgUiMessages } from './messages.js';
import type { AgUiTransportOptions } from './options.js';
import { readUpTo, replaysOf, resumePoint, RunProgress, type Replay } from './resume.js';
import type { AgUiSse } from './sse.js';

/** What a connect needs of the AG-UI transport. */
export interface ConnectContext {
  options: Pick<AgUiTransportOptions, 'launcher' | 'keepAliveMs' | 'keepOutput' | 'holdOutput'>;
  /** The SSE writer, loaded on first use. */
  sse(): Promise<AgUiSse>;
  /** Throws AGENT_NOT_FOUND for an agent the gateway does not serve. */
  checkAgent(agentId: string): Promise<void>;
}

/**
 * `connect`: the thread's runs replayed as complete AG-UI runs, then the running one followed live; after a
 * Last-Event-ID, resumed after the event it names.
 */
export async function serveConnect(
  transport: ConnectContext,
  res: ServerResponse,
  agentId: string,
  body: unknown,
  caller: AgUiCaller,
): Promise<void> {
  let input: RunAgentInput;
  let resumeAfter: { runId: string; sequence: number } | undefined;
  let replays: Replay[];
  let resumeAt: number;
  let sse: AgUiSse;
  try {
    input = await parseRunAgentInput(body);
    sse = await transport.sse();
    await transport.checkAgent(agentId);
    resumeAfter = resumePoint(caller.lastEventId);
    // Read apart, so that the thread itself is not kept while the replay is written: only what is left of each run.
    ({ replays, resumed: resumeAt } = await replaysFor(
      transport.options.launcher,
      input.threadId,
      caller.principal,
      resumeAfter?.runId,
    ));
  } catch (error) {
    return sendError(res, error, caller);
  }
  if (resumeAfter && resumeAt < 0) {
    caller.logger.info({ lastEventId: caller.lastEventId }, 'Last-Event-ID names no kept run');
  }
  // Each run's messages are let go once its start is written; until then they count as this connection's output
  // (the transports' budget for clients that do not read, slow-readers.ts).
  const kept = transport.options.keepOutput?.(
    res,
    replays.reduce((sum, replay) => sum + replay.bytes, 0),
  );
  // What waits in a feed for this client counts as its connection's output too, while it does not read.
  const output = transport.options.holdOutput?.(res);
  const threads = transport.options.launcher.threadService;
  sse.open(res);
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), transport.options.keepAliveMs);
  let feed: AsyncIterableIterator<SequencedEvent> | undefined;
  res.once('close', () => void feed?.return?.());
  // Each replayed run is a complete AG-UI run, whatever its stored log holds: a start first, every
  // message ended, one end (a log cut short gets RUN_ERROR).
  let current: { input: RunStartedInput; started: boolean; ended: boolean; progress: RunProgress } | undefined;
  try {
    for (const [index, run] of replays.entries()) {
      const resumed = index === 0 && resumeAt >= 0;
      current = {
        input: {
          threadId: input.threadId,
          runId: run.runId,
          messages: toAgUiMessages(run.messages!),
          tools: [],
          context: [],
          state: {},
          forwardedProps: {},
          ...(input.protocolVersion ? { protocolVersion: input.protocolVersion } : {}),
        },
        started: resumed,
        ended: false,
        progress: new RunProgress(),
      };
      // The run's messages are let go once its start (which carries them) is written, or when it has none to write.
      const letGo = (): void => {
        if (run.messages === undefined) return;
        run.messages = undefined;
        current!.input.messages = [];
        kept?.release(run.bytes);
      };
      if (resumed) {
        letGo();
        // What the client has of the run is read, not sent: its open messages, interrupts and calls still count.
        const had = await threads.readUpTo(input.threadId, run.runId, resumeAfter!.sequence);
        current.ended = readUpTo(had, resumeAfter!.sequence, current.progress);
        if (res.destroyed) break;
        if (current.ended) continue;
      }
      feed = threads.follow(input.threadId, run.runId, resumed ? resumeAfter!.sequence : -1, output);
      for await (const event of feed) {
        if (res.destroyed) break;
        const starting = !current.started;
        if (starting && event.type !== 'RunStarted') {
          sse.write(
            res,
            { type: 'RunStarted', threadId: input.threadId, runId: run.runId, sequence: -1 },
            current.input,
            current.progress,
          );
        }
        current.started = true;
        if (event.type === 'RunFinished') current.ended = true;
        const more = sse.write(res, event, current.input, current.progress);
        if (starting) letGo();
        if (!more) await drained(res);
      }
      letGo();
      if (res.destroyed) break;
    }
  } catch (error) {
    caller.logger.warn({ err: error }, 'an AG-UI connect replay failed');
    if (current?.started && !current.ended && !res.destroyed) {
      const reason = toGatewayError(error);
      const message = `The replay was cut short: ${reason.message}`;
      sse.endCutShort(res, current.progress, message, reason, current.input);
    }
  } finally {
    clearInterval(keepAlive);
    if (!res.destroyed) res.end();
  }
}

/** The runs a `connect` replays (replaysOf), from the thread as the caller may see it. */
async function replaysFor(
  launcher: RunLauncher,
  threadId: string,
  principal: Principal | undefined,
  resumeRunId: string | undefined,
): Promise<{ replays: Replay[]; resumed: number }> {
  // A running run is replayed from its log: its output is not read twice (replaysOf cuts the transcript before it).
  const thread = await launcher.threadService.thread(threadId, principal, { runningOutput: false });
  return replaysOf(thread, resumeRunId);
}
