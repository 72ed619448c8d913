import type { Logger } from 'pino';
import type { ForwardedParameters, Message, ToolDefinition } from '../core/messages.js';
import type { ModelOutput } from '../core/writer.js';
import type { RetryObserver } from '../upstream/attempts.js';

export type { ForwardedParameters, ModelOutput };

/** One call of the model: the conversation so far and the tools it may call. */
export interface ModelRequest {
  threadId: string;
  runId: string;
  messages: readonly Message[];
  tools: readonly ToolDefinition[];
  forwardedParameters: ForwardedParameters;
  logger: Logger;
  /**
   * Told of each retry of this call (the gateway counts them, copilot_gateway_upstream_retries_total):
   * whom the adapter called, as its errors name it, and why the attempt before failed (an error code,
   * or `HTTP <status>`). An adapter that retries should report every retry here.
   */
  onRetry?: RetryObserver;
}

/**
 * A model provider. `stream` resolves when the model has finished answering and rejects with a
 * GatewayError when it fails. It must stop promptly and settle once `signal` is aborted (the run
 * stops waiting for it at once either way).
 */
export interface ModelAdapter {
  /** Short name for logs, such as "openai" or "demo". */
  readonly name: string;
  /**
   * The model it calls unless a request names another: the one model clients may name by default
   * (the gateway's `modelLimits.allowedModels`). An adapter without one lets clients name none.
   */
  readonly model?: string;
  /**
   * The forwarded parameters it applies. A request setting another is refused before the run
   * (NOT_SUPPORTED, naming the parameter). @default all of them
   */
  readonly parameters?: ReadonlySet<keyof ForwardedParameters>;
  stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void>;
  /** Releases what the adapter holds (connection pools); called when the gateway closes. */
  close?(): Promise<void>;
}
