import type { ServerResponse } from 'node:http';
import { GatewayError, MethodNotAllowedError, toGatewayError } from '../core/errors.js';
import { sendGatewayError } from '../transports/responses.js';
import type { AgUiCaller } from './caller.js';

// AG-UI's error answers, in CopilotKit's runtime's JSON shape (responses.ts sendGatewayError, agUi), from the table.

/** A request AG-UI's runtime refuses, answered as CopilotKit's runtime answers it: `title` is its `error`. */
export function answer(res: ServerResponse, error: GatewayError, title: string): void {
  sendGatewayError(res, error, { agUi: true, title });
}

/** A run, connect or stop that failed: the error's code is its `error`, with the request id (the unexpected logged). */
export function sendError(
  res: ServerResponse,
  error: unknown,
  caller: Pick<AgUiCaller, 'logger' | 'requestId'> | undefined,
  status?: number,
): void {
  const gatewayError = toGatewayError(error);
  if (gatewayError.code === 'INTERNAL_SERVER_ERROR') {
    caller?.logger.error({ err: error }, 'an AG-UI request failed unexpectedly');
  }
  sendGatewayError(res, gatewayError, { agUi: true, requestId: caller?.requestId, detailsFirst: true, status });
}

/**
 * AGENT_NOT_FOUND as AG-UI clients get it: CopilotKit's runtime's wording, and only the name in details (the GraphQL
 * side's AgentNotFoundError lists the agents in its details).
 */
export class UnknownAgUiAgentError extends GatewayError {
  declare readonly code: 'AGENT_NOT_FOUND';
  constructor(agentId: string, available: readonly string[]) {
    super('AGENT_NOT_FOUND', `Agent '${agentId}' does not exist. Available: ${available.join(', ')}.`, {
      details: { agentName: agentId },
    });
    this.name = 'AgentNotFoundError';
  }
}

/** A route asked with a method it does not take: 405, with its Allow header. */
export function methodNotAllowed(res: ServerResponse, allow: string): void {
  const refused = new MethodNotAllowedError('Method not allowed', allow);
  res.setHeader('allow', refused.allow);
  sendGatewayError(res, refused, { agUi: true, title: 'Method not allowed', withoutMessage: true });
}
