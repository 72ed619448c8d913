import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../core/principal.js';
import { headerValue } from '../transports/access.js';

/** Who asks, as the HTTP transport knows it. */
export interface AgUiCaller {
  requestId: string;
  logger: Logger;
  /**
   * Together: the transport's logger and the fields `logger` adds to it, so that a run's logger is
   * made from the transport's with those fields rather than as a grandchild (see RunCaller.logParent).
   * Given one without the other, a run's lines would lose or repeat fields.
   */
  logParent?: Logger;
  logBindings?: Record<string, unknown>;
  publicApiKey?: string;
  /** Who is asking, when authentication is on: its threads only. */
  principal?: Principal;
  /** The key the caller's limits are counted under. */
  client?: string;
  /**
   * A connect's `Last-Event-ID` header: the SSE id (`<runId>:<sequence>`) of the last event the client
   * has; the connect resumes after it instead of replaying the thread from its start.
   */
  lastEventId?: string;
}

/** Who asks, as AG-UI's answers need it. */
export function agUiCaller(
  req: IncomingMessage,
  admitted: { principal?: Principal; client?: string },
  request: { requestId: string; log: Logger; logBindings?: Record<string, unknown> },
  logger: Logger,
): AgUiCaller {
  return {
    requestId: request.requestId,
    logger: request.log,
    logParent: logger,
    logBindings: request.logBindings,
    publicApiKey: headerValue(req.headers['x-copilotcloud-public-api-key']),
    principal: admitted.principal,
    client: admitted.client,
    lastEventId: headerValue(req.headers['last-event-id']),
  };
}
