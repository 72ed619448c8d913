import type { Logger } from 'pino';
import type { RunAllowance, RunLauncher } from '../engine/launcher.js';

/** What every resolver gets: the request's identity and logger, and the gateway's run launcher. */
export interface GatewayContext {
  /** Sent back as `x-request-id` (HTTP), in GraphQL errors and in a failed run's details, so a report can be found in the logs. */
  requestId: string;
  logger: Logger;
  /** Aborted when the client goes away (HTTP connection closed, WebSocket operation completed). */
  signal: AbortSignal;
  launcher: RunLauncher;
  /** One run per operation: set once a run has started. */
  allowance: RunAllowance;
  /** Whether the client takes a streaming format (multipart/mixed or SSE; always over WebSocket). */
  acceptsIncremental: boolean;
}
