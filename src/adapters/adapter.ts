import type { Logger } from 'pino';
import type { Message, ToolDefinition } from '../engine/messages.js';

/** Model parameters a client may set per request (GraphQL's ForwardedParametersInput). */
export interface ForwardedParameters {
  model?: string | null;
  maxTokens?: number | null;
  stop?: string[] | null;
  temperature?: number | null;
  toolChoice?: string | null;
  toolChoiceFunctionName?: string | null;
}

/** One call of the model: the conversation so far and the tools it may call. */
export interface ModelRequest {
  threadId: string;
  runId: string;
  messages: readonly Message[];
  tools: readonly ToolDefinition[];
  forwardedParameters: ForwardedParameters;
  logger: Logger;
}

/**
 * Where an adapter writes what the model produces. The run engine behind it checks the order
 * (start, content, end), numbers nothing and allocates nothing per token.
 */
export interface ModelOutput {
  /** Opens a text message; returns the id to use (the proposed one unless this run already used it). */
  textStart(proposedId?: string | null): string;
  textContent(messageId: string, content: string): void;
  textEnd(messageId: string): void;
  /** Opens an action call; returns the action execution id to use. */
  actionStart(proposedId: string | null | undefined, actionName: string, parentMessageId?: string | null): string;
  actionArgs(actionExecutionId: string, args: string): void;
  actionEnd(actionExecutionId: string): void;
}

/**
 * A model provider. `stream` resolves when the model has finished answering and rejects with a
 * GatewayError when it fails. It must stop promptly and settle once `signal` is aborted.
 */
export interface ModelAdapter {
  /** Short name for logs, such as "openai" or "demo". */
  readonly name: string;
  stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void>;
}
