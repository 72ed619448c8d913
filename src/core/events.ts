import type { Message } from './messages.js';
import type { MessageStatus, RunStatus } from './status.js';

/** A meta event raised during a run: an agent's interrupt, which waits for the user's answer. */
export type MetaEventPayload =
  | { name: 'LangGraphInterruptEvent'; value: string; response?: string | null }
  | {
      name: 'CopilotKitLangGraphInterruptEvent';
      value: string;
      /** Messages that came with the interrupt. */
      messages: Message[];
      response?: string | null;
    };

/** A snapshot of an agent's state, as an agent writes it into a run. */
export interface AgentStateSnapshot {
  agentName: string;
  nodeName: string;
  /** The whole state, JSON-encoded. */
  state: string;
  running: boolean;
  active: boolean;
  /** The agent's own thread and run ids, when it reports them; the run's otherwise. */
  threadId?: string;
  runId?: string;
}

/**
 * The runtime events of one run, in the order they happen. Both the mutation's message
 * containers and the subscription's event union are views of this one stream.
 */
export type RuntimeEvent =
  | { type: 'RunStarted'; threadId: string; runId: string }
  | { type: 'TextMessageStart'; messageId: string; parentMessageId: string | null; role: 'assistant' }
  | { type: 'TextMessageContent'; messageId: string; content: string }
  | { type: 'TextMessageEnd'; messageId: string; status: MessageStatus }
  | { type: 'ActionExecutionStart'; actionExecutionId: string; actionName: string; parentMessageId: string | null }
  | { type: 'ActionExecutionArgs'; actionExecutionId: string; args: string }
  | { type: 'ActionExecutionEnd'; actionExecutionId: string; status: MessageStatus }
  | {
      type: 'ActionExecutionResult';
      messageId: string;
      actionExecutionId: string;
      actionName: string;
      result: string;
    }
  | {
      type: 'AgentStateMessage';
      messageId: string;
      threadId: string;
      agentName: string;
      nodeName: string;
      runId: string;
      active: boolean;
      role: 'assistant';
      state: string;
      running: boolean;
    }
  | { type: 'MetaEvent'; event: MetaEventPayload }
  /**
   * The model's reasoning (its "thinking"), where the model or agent shows it: a message of its own, shown apart from
   * the answer, never part of the conversation sent back to the model. GraphQL's mutation (the reference contract)
   * has no place for it; the subscription and AG-UI carry it.
   */
  | { type: 'ReasoningStart'; messageId: string }
  | { type: 'ReasoningContent'; messageId: string; content: string }
  | { type: 'ReasoningEnd'; messageId: string }
  /** `usage`: what the run's model calls used, one entry per provider and model, where the providers reported it. */
  | { type: 'RunFinished'; status: RunStatus; usage?: TokenUsage[] };

/**
 * Tokens one or more model calls used, as the provider reported them (AG-UI 1.0's TokenUsage): every count is
 * optional, since providers report different ones. `cachedInputTokens` and `cacheWriteInputTokens` are part of
 * `inputTokens`; `reasoningTokens` part of `outputTokens`.
 */
export interface TokenUsage {
  provider?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** The counts of a TokenUsage. */
export type TokenCount = Exclude<keyof TokenUsage, 'provider' | 'model'>;

/**
 * A usage report from what a provider said: the counts that are whole numbers of 0 or more (anything else, missing or
 * malformed, is left out); undefined when none is.
 */
export function tokenUsage(
  provider: string,
  model: unknown,
  counts: Partial<Record<TokenCount, unknown>>,
): TokenUsage | undefined {
  const report: TokenUsage = { provider };
  if (typeof model === 'string' && model !== '') report.model = model;
  let any = false;
  for (const field of TOKEN_COUNTS) {
    const count = counts[field];
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) continue;
    report[field] = count;
    any = true;
  }
  return any ? report : undefined;
}

/** Every count a TokenUsage has (anything else a provider sends is not one). */
export const TOKEN_COUNTS: readonly TokenCount[] = [
  'inputTokens',
  'outputTokens',
  'totalTokens',
  'reasoningTokens',
  'cachedInputTokens',
  'cacheWriteInputTokens',
];

export type RuntimeEventType = RuntimeEvent['type'];

/**
 * An event as the run emits it: numbered where it happens, from 0 (RunStarted) up by one per
 * event, so a later event log and resumable subscriptions can rely on the numbers. Events are
 * shared by every subscriber of the run and must not be changed by any of them.
 */
export type SequencedEvent = RuntimeEvent & { readonly sequence: number };

export type RunListener = (event: SequencedEvent) => void;

/**
 * Takes a stream's items one at a time, without a promise per item: it asks for the next one
 * (`EventHandover.request`), and the stream calls `take` once with it, at once when one waits or
 * when it comes; or `end` once there are no more; or `fail` when the stream cannot go on (what a
 * pulled stream's `next()` would reject with). A gateway holding thousands of streams keeps no
 * pending promise per stream and token this way (graphql/fast/subscribe.ts).
 */
export interface EventConsumer<T> {
  take(item: T): void;
  end(): void;
  fail(error: unknown): void;
}

/** A stream that can hand its items over to an `EventConsumer`. */
export interface EventHandover<T> {
  request(consumer: EventConsumer<T>): void;
}

/**
 * The default of a switch over event kinds that lists them all: TypeScript refuses it while one is missing, and at run
 * time an event of a kind this version does not know (read from a store a newer instance writes to, during a rolling
 * upgrade) is passed over rather than failing its reader.
 */
export function passOverUnknownEvent(_event: never): void {}
