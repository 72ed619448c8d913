import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../core/errors.js';

/** Resolves when a response whose buffer was full can take more (or has closed). */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Answers with a JSON body; a response already streaming is ended instead (its headers are gone). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    if (!res.destroyed) res.end();
    return;
  }
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** How an error is answered (sendGatewayError). */
export interface ErrorAnswer {
  /** AG-UI's JSON error shape, `{error, message, code, …}`, not GraphQL's, `{errors: [{message, extensions}]}`. */
  agUi?: boolean;
  /** Said in the body (in GraphQL's shape, in the error's extensions), so that a report can be found in the logs. */
  requestId?: string;
  /** AG-UI: its `error`, where CopilotKit's runtime has a title there ("Invalid JSON") rather than the code. */
  title?: string;
  /** AG-UI: the body says only its title and code (a 405). */
  withoutMessage?: boolean;
  /** AG-UI: the details before the request id (a refused run's answer) rather than after it (the door's refusals). */
  detailsFirst?: boolean;
  /** The HTTP status, when not the error's own (a draining refusal told to a proxy as 421: engine/drain.ts). */
  status?: number;
}

/**
 * Every error the HTTP transports answer themselves (the GraphQL endpoint's own, AG-UI's), from the
 * error: its status (the code's in the error table, unless the error says otherwise), its body in
 * GraphQL's or AG-UI's shape, and `retry-after` when its details say when to try again (unless the
 * caller set it). An unexpected error says only "Unexpected error.".
 */
export function sendGatewayError(res: ServerResponse, error: GatewayError, answer: ErrorAnswer = {}): void {
  const retryAfter = error.details?.retryAfterSeconds;
  if (typeof retryAfter === 'number' && !res.headersSent && !res.hasHeader('retry-after')) {
    res.setHeader('retry-after', String(retryAfter));
  }
  sendJson(res, answer.status ?? error.status, errorBody(error, answer));
}

function errorBody(error: GatewayError, answer: ErrorAnswer): Record<string, unknown> {
  const { code, details } = error;
  const message = code === 'INTERNAL_SERVER_ERROR' ? 'Unexpected error.' : error.message;
  const requestId = answer.requestId ? { requestId: answer.requestId } : undefined;
  const detailed = details ? { details } : undefined;
  if (!answer.agUi) return { errors: [{ message, extensions: { code, ...requestId, ...detailed } }] };
  return {
    error: answer.title ?? code,
    ...(answer.withoutMessage ? {} : { message }),
    code,
    ...(answer.detailsFirst ? { ...detailed, ...requestId } : { ...requestId, ...detailed }),
  };
}
