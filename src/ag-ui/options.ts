import type { ServerResponse } from 'node:http';
import type { Transcriber } from '../adapters/transcription.js';
import type { InputBudget } from '../core/input-budget.js';
import type { OutputHolder, RunLauncher } from '../engine/launcher.js';
import type { KeepOutput } from '../transports/slow-readers.js';

/** What the AG-UI transport is made with (AgUiTransport). */
export interface AgUiTransportOptions {
  launcher: RunLauncher;
  /** The GraphQL path: AG-UI is served under it too. */
  path: string;
  /** Milliseconds between SSE keep-alive comments. */
  keepAliveMs: number;
  /** Shown in /info. */
  version: string;
  /** Told when an SSE stream starts and ends (metrics). */
  onStream?: (delta: 1 | -1) => void;
  /** Voice input (`/transcribe`, the `transcribe` method); none: not offered. */
  transcriber?: Transcriber;
  /** The budget of input held at once (maxBufferedInputMb): an upload counts in it while it is read. */
  inputBudget?: InputBudget;
  /**
   * Which clients get the model's reasoning: `declared`, those that declare AG-UI 1.0 (`protocolVersion`); `always`,
   * every one (GatewayOptions.agUiReasoning). @default "declared"
   */
  reasoning?: 'declared' | 'always';
  /**
   * Declares what a `connect` keeps to write later (its replay's runs not yet written) as its connection's output,
   * for the budget of output held for clients that do not read (SlowReaderGuard.keep); none: not counted.
   */
  keepOutput?: KeepOutput;
  /**
   * Where a run's output is counted for its connection while its client does not read (SlowReaderGuard.holding);
   * none: not counted.
   */
  holdOutput?: (res: ServerResponse) => OutputHolder;
}
