import { EventType, type BaseEvent, type ContentPart, type Message as AgUiMessage } from '@ag-ui/core';
import fastJsonPatch from 'fast-json-patch';
import { parse as parsePartialJson } from 'partial-json';
import type { Logger } from 'pino';
import { tokenUsage } from '../core/events.js';
import type { RunWriter } from '../core/writer.js';
import { asText } from '../agents/copilotkit-messages.js';
import { agentError, agentStreamEnded } from '../agents/errors.js';
import { StateBudget } from '../agents/state-budget.js';

/** CopilotKit's predictive state: a tool's (partial) arguments are shown as state while they stream. */
interface PredictState {
  state_key: string;
  tool: string;
  tool_argument?: string;
}

/**
 * Writes an AG-UI agent's events into a run, with the meaning CopilotKit's runtime gives them:
 * - text and tool-call events as messages and action calls (chunk events arrive here already
 *   expanded by @ag-ui/client), TOOL_CALL_RESULT as a result;
 * - STATE_SNAPSHOT and STATE_DELTA (a JSON Patch applied to the state held here, which starts as
 *   the state the agent was sent) as agent state, always the whole state; STEP_STARTED and
 *   STEP_FINISHED as the node name and agent state with `active` on and off;
 * - MESSAGES_SNAPSHOT: messages the client has not seen (neither sent nor streamed in this run)
 *   are written out as finished messages;
 * - RUN_FINISHED: interrupts of an `interrupt` outcome as LangGraphInterruptEvent meta events
 *   (their value is the AG-UI interrupt as JSON, so an answer can name its id), then the final
 *   state; RUN_ERROR fails the run;
 * - CUSTOM: `on_interrupt` (what LangGraph-based AG-UI servers send) as an interrupt,
 *   `PredictState` and `Exit` as in CopilotKit; other custom events are skipped.
 * - reasoning: REASONING_MESSAGE_START / _CONTENT / _END as the run's reasoning messages (a 0.0.x agent's
 *   retired THINKING_* events come as these: see `fromThinking`); the spans around them (REASONING_START/END)
 *   carry nothing more.
 * Deliberately dropped, as the GraphQL protocol has no place for them: RAW, encrypted reasoning and activity
 * events, and subagent lifecycle events. A stream that ends without RUN_FINISHED or
 * RUN_ERROR is a truncated run.
 */
export class AgUiEventInterpreter {
  private state: Record<string, unknown>;
  /**
   * The state work of this agent call: each update sent is the whole state, and applying a delta or predicting state
   * reads all of it (failing deltas of a large state each held the event loop for its copy).
   */
  private readonly budget: StateBudget;
  /** The size of the state as last sent (what a delta's copy is charged). */
  private lastStateBytes = 0;
  private node = '';
  private running = true;
  private finished = false;
  private predictState: PredictState[] = [];
  private readonly texts = new Map<string, string>();
  /**
   * Every text message's id as the run wrote it, by the agent's id (the run's differs when the agent used one twice):
   * what a tool call's parentMessageId names.
   */
  private readonly messageIds = new Map<string, string>();
  /** Open reasoning messages: the agent's id to the run's. */
  private readonly reasoning = new Map<string, string>();
  private readonly calls = new Map<string, { id: string; name: string; args: string; open: boolean }>();
  /** Ids of messages and calls the client already has: sent in the request or streamed in this run. */
  private readonly seen: Set<string>;
  private readonly dropped = new Set<string>();

  constructor(
    private readonly out: RunWriter,
    private readonly agentName: string,
    initialState: Record<string, unknown>,
    knownMessageIds: Iterable<string>,
    private readonly logger: Logger,
  ) {
    this.state = initialState;
    this.seen = new Set(knownMessageIds);
    this.budget = new StateBudget(agentName);
  }

  handle(event: BaseEvent): void {
    if (this.finished) {
      this.logger.debug({ agent: this.agentName, type: event.type }, 'agent event after RUN_FINISHED skipped');
      return;
    }
    const e = event as BaseEvent & Record<string, any>;
    switch (event.type) {
      case EventType.RUN_STARTED:
        return;
      case EventType.TEXT_MESSAGE_START: {
        if (this.texts.has(e.messageId)) return;
        this.seen.add(e.messageId);
        const id = this.out.textStart(e.messageId);
        this.texts.set(e.messageId, id);
        this.messageIds.set(e.messageId, id);
        return;
      }
      case EventType.TEXT_MESSAGE_CONTENT: {
        const id = this.texts.get(e.messageId);
        if (id !== undefined) this.out.textContent(id, e.delta);
        return;
      }
      case EventType.TEXT_MESSAGE_END: {
        const id = this.texts.get(e.messageId);
        if (id === undefined) return;
        this.texts.delete(e.messageId);
        this.out.textEnd(id);
        return;
      }
      case EventType.REASONING_MESSAGE_START: {
        if (this.reasoning.has(e.messageId)) return;
        this.reasoning.set(e.messageId, this.out.reasoningStart(e.messageId));
        return;
      }
      case EventType.REASONING_MESSAGE_CONTENT: {
        const id = this.reasoning.get(e.messageId);
        if (id !== undefined) this.out.reasoningContent(id, e.delta);
        return;
      }
      case EventType.REASONING_MESSAGE_END: {
        const id = this.reasoning.get(e.messageId);
        if (id === undefined) return;
        this.reasoning.delete(e.messageId);
        this.out.reasoningEnd(id);
        return;
      }
      case EventType.REASONING_START:
      case EventType.REASONING_END:
        return;
      case EventType.TOOL_CALL_START: {
        if (this.calls.has(e.toolCallId)) return;
        this.seen.add(e.toolCallId);
        const id = this.out.actionStart(e.toolCallId, e.toolCallName, this.parent(e.parentMessageId));
        this.calls.set(e.toolCallId, { id, name: e.toolCallName, args: '', open: true });
        return;
      }
      case EventType.TOOL_CALL_ARGS: {
        const call = this.calls.get(e.toolCallId);
        if (!call?.open) return;
        this.out.actionArgs(call.id, e.delta);
        call.args += e.delta;
        this.predict(call);
        return;
      }
      case EventType.TOOL_CALL_END: {
        const call = this.calls.get(e.toolCallId);
        if (!call?.open) return;
        call.open = false;
        this.out.actionEnd(call.id);
        return;
      }
      case EventType.TOOL_CALL_RESULT:
        return this.result(e.toolCallId, e.messageId, e.content);
      case EventType.STATE_SNAPSHOT:
        if (e.snapshot !== null && typeof e.snapshot === 'object' && !Array.isArray(e.snapshot)) {
          this.state = e.snapshot;
          this.emitState(true);
        } else {
          this.logger.warn({ agent: this.agentName }, 'agent state that is not an object skipped');
        }
        return;
      case EventType.STATE_DELTA:
        // Applying a patch copies the whole state, whether it applies or not: charged as the state's size.
        this.budget.charge(this.lastStateBytes);
        try {
          this.state = fastJsonPatch.applyPatch(this.state, e.delta, true, false).newDocument;
        } catch (error) {
          this.logger.warn({ agent: this.agentName, err: error }, 'agent state patch that does not apply skipped');
          return;
        }
        this.emitState(true);
        return;
      case EventType.MESSAGES_SNAPSHOT:
        return this.messagesSnapshot(e.messages);
      case EventType.STEP_STARTED:
        this.node = e.stepName;
        this.predictState = [];
        this.emitState(true);
        return;
      case EventType.STEP_FINISHED:
        this.predictState = [];
        this.emitState(false);
        return;
      case EventType.RUN_FINISHED:
        this.finished = true;
        if (e.outcome?.type === 'interrupt') {
          for (const interrupt of e.outcome.interrupts ?? [])
            this.out.metaEvent({ name: 'LangGraphInterruptEvent', value: JSON.stringify(interrupt) });
        }
        if (Object.keys(this.state).length > 0) this.emitState(false);
        // AG-UI 1.0's usage, one entry per provider and model: the agent's name stands in for a provider it leaves out.
        if (Array.isArray(e.usage)) {
          for (const entry of e.usage as Record<string, unknown>[]) {
            const { provider, model, ...counts } = entry ?? {};
            const report = tokenUsage(typeof provider === 'string' ? provider : this.agentName, model, counts);
            if (report) this.out.usage(report);
          }
        }
        return;
      case EventType.RUN_ERROR:
        throw agentError(this.agentName, e.message, e.code ? { agentCode: e.code } : {});
      case EventType.CUSTOM:
        return this.custom(e.name, e.value);
      default:
        this.drop(event.type);
    }
  }

  /** Called when the stream has ended. */
  end(): void {
    if (!this.finished) throw agentStreamEnded(this.agentName, 'RUN_FINISHED');
  }

  private result(toolCallId: string, messageId: string, content: string | ContentPart[]): void {
    const call = this.calls.get(toolCallId);
    if (call?.open) {
      call.open = false;
      this.out.actionEnd(call.id);
    }
    const id = call?.id ?? toolCallId;
    if (this.seen.has(`result:${id}`)) return;
    this.seen.add(`result:${id}`);
    this.seen.add(messageId);
    this.out.actionResult(id, call?.name ?? '', textOfContent(content));
  }

  /** A parent message id as the run wrote that message (the agent's own when the run did not write it). */
  private parent(agentId: string | null | undefined): string | null {
    if (agentId === undefined || agentId === null) return null;
    return this.messageIds.get(agentId) ?? agentId;
  }

  private messagesSnapshot(messages: AgUiMessage[]): void {
    for (const message of messages) {
      if (message.role === 'assistant') {
        if (!this.seen.has(message.id) && message.content) {
          this.seen.add(message.id);
          const id = this.out.textStart(message.id);
          this.messageIds.set(message.id, id);
          this.out.textContent(id, message.content);
          this.out.textEnd(id);
        }
        for (const call of message.toolCalls ?? []) {
          if (this.seen.has(call.id)) continue;
          this.seen.add(call.id);
          const id = this.out.actionStart(call.id, call.function.name, this.parent(message.id));
          this.out.actionArgs(id, call.function.arguments);
          this.out.actionEnd(id);
          this.calls.set(call.id, { id, name: call.function.name, args: call.function.arguments, open: false });
        }
      } else if (message.role === 'tool' && !this.seen.has(message.id)) {
        this.result(message.toolCallId, message.id, message.content);
      }
      // The client's own messages (user, system, developer) it has already.
    }
  }

  private custom(name: string, value: unknown): void {
    switch (name) {
      case 'on_interrupt':
      case 'LangGraphInterruptEvent':
        this.out.metaEvent({ name: 'LangGraphInterruptEvent', value: asText(value) });
        return;
      case 'PredictState':
        this.predictState = Array.isArray(value) ? (value as PredictState[]) : [];
        return;
      case 'Exit':
        this.running = false;
        return;
      default:
        this.logger.debug({ agent: this.agentName, name }, 'custom agent event skipped');
    }
  }

  /** CopilotKit's predictive state: a configured tool's streaming arguments, shown as state. */
  private predict(call: { name: string; args: string }): void {
    const rule = this.predictState.find((entry) => entry.tool === call.name);
    if (!rule) return;
    let args: unknown;
    // (Every chunk of the call's arguments parses all of them so far.)
    this.budget.charge(call.args.length);
    try {
      args = parsePartialJson(call.args);
    } catch {
      return; // not readable yet
    }
    if (args === null || typeof args !== 'object') return;
    const value = rule.tool_argument ? (args as Record<string, unknown>)[rule.tool_argument] : args;
    if (value === undefined) return;
    this.state = { ...this.state, [rule.state_key]: value };
    this.emitState(true);
  }

  private emitState(active: boolean): void {
    const { messages: _notState, ...state } = this.state;
    const json = JSON.stringify(state);
    this.lastStateBytes = json.length;
    this.budget.charge(json.length);
    this.out.agentState({
      agentName: this.agentName,
      nodeName: this.node,
      state: json,
      running: this.running,
      active,
    });
  }

  private drop(type: string): void {
    if (this.dropped.has(type)) return;
    this.dropped.add(type);
    this.logger.debug(
      { agent: this.agentName, type },
      'agent events of this type are not passed on (the GraphQL protocol has no place for them)',
    );
  }
}

/** A tool result's content: the text itself, or the text parts of a list. */
function textOfContent(content: string | ContentPart[]): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/**
 * A 0.0.x agent's thinking events (THINKING_START, THINKING_TEXT_MESSAGE_START / _CONTENT / _END, THINKING_END, retired
 * by AG-UI 1.0, whose schemas no longer know them) as 1.0's reasoning events. Their messages have no ids: each gets
 * one, `<prefix>-<n>`. Other events pass as they are. One per stream (it numbers the stream's thinking messages).
 */
export function fromThinking(prefix: string): (event: BaseEvent) => BaseEvent {
  let count = 0;
  let current = '';
  return (event) => {
    const type: string = event.type;
    if (!type.startsWith('THINKING_')) return event;
    const e = event as BaseEvent & Record<string, unknown>;
    switch (type) {
      case 'THINKING_START':
        return { type: EventType.REASONING_START, messageId: `${prefix}-span` } as BaseEvent;
      case 'THINKING_END':
        return { type: EventType.REASONING_END, messageId: `${prefix}-span` } as BaseEvent;
      case 'THINKING_TEXT_MESSAGE_START':
        current = `${prefix}-${++count}`;
        return { type: EventType.REASONING_MESSAGE_START, messageId: current, role: 'reasoning' } as BaseEvent;
      case 'THINKING_TEXT_MESSAGE_CONTENT':
        return { type: EventType.REASONING_MESSAGE_CONTENT, messageId: current, delta: e.delta } as BaseEvent;
      case 'THINKING_TEXT_MESSAGE_END':
        return { type: EventType.REASONING_MESSAGE_END, messageId: current } as BaseEvent;
      default:
        return event;
    }
  };
}
