import type { RunWriter } from '../core/writer.js';
import { messagesFromCopilotKitJson } from './copilotkit-messages.js';
import { langChainToCopilotKit } from './langchain-messages.js';
import type { LangGraphEventInterpreter } from './langgraph-events.js';
import { StateBudget } from './state-budget.js';

/** What the SDK's thread state is read for. */
export interface ThreadStateLike {
  values?: unknown;
  next?: string[];
  tasks?: { interrupts?: { value?: unknown; id?: string }[] }[];
}

/**
 * Turns what LangGraph says into agent state and interrupts, once each. The state it sends is charged to the call's
 * StateBudget: after one large `values` chunk, each small event from another node sends the whole state again.
 */
export class StateSync {
  private lastState = '';
  private lastNode = '';
  private readonly interruptIds = new Set<string>();
  private readonly budget: StateBudget;

  constructor(
    private readonly out: RunWriter,
    private readonly agentName: string,
    private readonly threadId: string,
    private readonly interpreter: LangGraphEventInterpreter,
  ) {
    this.budget = new StateBudget(agentName);
  }

  values(values: unknown): void {
    const record = objectOf(values);
    this.interrupts(record.__interrupt__);
    const { messages: _messages, __interrupt__: _interrupts, ...state } = record;
    const json = JSON.stringify(state);
    // Nothing to show before the graph has any state of its own.
    if (this.lastState === '' && json === '{}') return;
    if (json === this.lastState && this.interpreter.node === this.lastNode) return;
    this.budget.charge(json.length);
    this.lastState = json;
    this.lastNode = this.interpreter.node;
    this.out.agentState({
      agentName: this.agentName,
      nodeName: this.interpreter.node,
      state: json,
      running: true,
      active: true,
      threadId: this.threadId,
    });
  }

  /** A new node after the last state sync gets a sync of its own (CopilotKit's frontend follows nodes). */
  nodeMayHaveChanged(): void {
    if (this.lastState && this.interpreter.node !== this.lastNode) {
      this.budget.charge(this.lastState.length);
      this.lastNode = this.interpreter.node;
      this.out.agentState({
        agentName: this.agentName,
        nodeName: this.interpreter.node,
        state: this.lastState,
        running: true,
        active: true,
        threadId: this.threadId,
      });
    }
  }

  interrupts(list: unknown): void {
    if (!Array.isArray(list)) return;
    for (const interrupt of list) {
      const key = typeof interrupt?.id === 'string' ? interrupt.id : JSON.stringify(interrupt?.value);
      if (this.interruptIds.has(key)) continue;
      this.interruptIds.add(key);
      const value = interrupt?.value;
      if (value && typeof value === 'object' && '__copilotkit_interrupt_value__' in value) {
        const inner = (value as Record<string, unknown>).__copilotkit_interrupt_value__;
        this.out.metaEvent({
          name: 'CopilotKitLangGraphInterruptEvent',
          value: typeof inner === 'string' ? inner : JSON.stringify(inner),
          messages: messagesFromCopilotKitJson(
            langChainToCopilotKit((value as Record<string, unknown>).__copilotkit_messages__),
          ),
        });
      } else {
        this.out.metaEvent({
          name: 'LangGraphInterruptEvent',
          value: typeof value === 'string' ? value : JSON.stringify(value ?? null),
        });
      }
    }
  }

  /** The thread's state when the run is over, with its messages, as CopilotKit's runtime sends it. */
  finish(thread: ThreadStateLike): void {
    for (const task of thread.tasks ?? []) this.interrupts(task.interrupts);
    const values = objectOf(thread.values);
    const { messages, __interrupt__: _interrupts, ...state } = values;
    const next = thread.next ?? [];
    const interrupted = (thread.tasks ?? []).some((task) => (task.interrupts ?? []).length > 0);
    const nodeName = next.length === 0 ? '__end__' : interrupted ? this.interpreter.node : next[0];
    this.out.agentState({
      agentName: this.agentName,
      nodeName,
      state: JSON.stringify({ ...state, messages: langChainToCopilotKit(messages) }),
      running: !this.interpreter.exited,
      active: false,
      threadId: this.threadId,
    });
  }
}

/** A value as a record: `{}` when it is not an object. */
export function objectOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
