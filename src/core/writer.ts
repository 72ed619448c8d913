import type { AgentStateSnapshot, MetaEventPayload, TokenUsage } from './events.js';

/**
 * Where a model adapter writes what the model produces. The run behind it checks the order
 * (start, content, end), claims ids and numbers the events; nothing is allocated per token that
 * need not be. Every method throws when the run has finished or been aborted, which ends the
 * adapter's loop.
 */
export interface ModelOutput {
  /**
   * Opens an assistant text message; returns the id to use: the proposed one unless this run
   * already used it, a new one otherwise.
   */
  textStart(proposedId?: string | null, parentMessageId?: string | null): string;
  /** Appends a chunk to an open text message (an empty chunk is ignored). */
  textContent(messageId: string, content: string): void;
  /** Ends a text message; ending one that is not open does nothing. */
  textEnd(messageId: string): void;
  /** Opens an action call; returns the action execution id to use (as for `textStart`). */
  actionStart(proposedId: string | null | undefined, actionName: string, parentMessageId?: string | null): string;
  /** Appends a chunk of the call's JSON-encoded arguments. */
  actionArgs(actionExecutionId: string, args: string): void;
  /** Ends an action call's arguments; ending one that is not open does nothing. */
  actionEnd(actionExecutionId: string): void;
  /**
   * Opens a reasoning message (the model's thinking, where it shows it); returns its id (as for `textStart`). It is
   * shown to clients that can show it and never sent back to the model.
   */
  reasoningStart(proposedId?: string | null): string;
  /** Appends a chunk to an open reasoning message (an empty chunk is ignored). */
  reasoningContent(messageId: string, content: string): void;
  /** Ends a reasoning message; ending one that is not open does nothing. */
  reasoningEnd(messageId: string): void;
  /**
   * What a model call used, where the provider reports it (once per call, usually at its end). The run adds the
   * calls up per provider and model and reports them with its end (RunFinished.usage).
   */
  usage(report: TokenUsage): void;
}

/** Where agents (and the engine's action executor) write: a model's output plus results, state and interrupts. */
export interface RunWriter extends ModelOutput {
  /**
   * The result of an action call (executed by the gateway or by the agent itself). The call must
   * not be open; a second result for the same call is ignored.
   */
  actionResult(actionExecutionId: string, actionName: string, result: string): void;
  /** A snapshot of an agent's whole state. */
  agentState(snapshot: AgentStateSnapshot): void;
  /** A meta event, such as an interrupt. */
  metaEvent(event: MetaEventPayload): void;
}
