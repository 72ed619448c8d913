import { GatewayError, InternalError, UpstreamError } from '../core/errors.js';

/** How messages name an agent: `agent "crew"`. */
export function who(agentName: string): string {
  return `agent "${agentName}"`;
}

/** The agent reported an error of its own (RUN_ERROR, on_copilotkit_error, a RunError line, an error event). */
export function agentError(agentName: string, message: string, details: Record<string, unknown> = {}): UpstreamError {
  const text = message.trim() ? message.trim().slice(0, 500) : 'no message';
  return new UpstreamError('AGENT_ERROR', `Agent "${agentName}" reported an error: ${text}`, {
    details: { agentName, ...details },
  });
}

/** The agent sent something the gateway cannot read; `what` says what, without echoing it. */
export function badAgentResponse(agentName: string, what: string): UpstreamError {
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `Agent "${agentName}" sent ${what}.`, { details: { agentName } });
}

/**
 * An agent whose state updates, each passed on as the whole state, came to more than `limitBytes` in one call: a
 * small delta or step event of a large state is a large event for every client and in the thread store.
 */
export function agentStateTooLarge(agentName: string, limitBytes: number): UpstreamError {
  return new UpstreamError(
    'UPSTREAM_BAD_RESPONSE',
    `Agent "${agentName}" sent more state updates than one call of it carries: each update of its state (a ` +
      `snapshot, delta, step, node or predicted state) is passed on as the whole state, and this call's came to ` +
      `over ${limitBytes / 1024 / 1024} MiB.`,
    { details: { agentName, limitBytes } },
  );
}

/** An agent stream that ended before the agent said it was finished. */
export function agentStreamEnded(agentName: string, what: string): UpstreamError {
  return new UpstreamError('UPSTREAM_STREAM_INTERRUPTED', `The stream of agent "${agentName}" ended before ${what}.`, {
    details: { agentName },
  });
}

/**
 * Adds the agent's name to the details of an error about it, so the run's status names the agent.
 * An error the gateway does not know stays masked ("Unexpected error.", logged in full) but named.
 */
export function namingAgent(error: unknown, agentName: string): unknown {
  if (!(error instanceof GatewayError)) {
    return new InternalError('Unexpected error.', { cause: error, details: { agentName } });
  }
  if (error.details?.agentName === agentName || error.code === 'CLIENT_DISCONNECTED') return error;
  return error.withDetails({ ...error.details, agentName });
}

/** An event line as an object, or a bad response naming the agent and the line. */
export function eventObject(event: unknown, agentName: string, line: number): Record<string, any> {
  if (event === null || typeof event !== 'object' || Array.isArray(event))
    throw badAgentResponse(agentName, `line ${line}, which is not an event object`);
  return event as Record<string, any>;
}
