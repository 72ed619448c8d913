import type { AgentStateSnapshot, MetaEventPayload, TokenUsage } from '../core/events.js';
import type { RunWriter } from '../core/writer.js';

/**
 * A writer in front of another that joins the text (or argument) chunks of one message that arrive
 * in the same turn of the event loop into one chunk, written at the end of that turn; the joined
 * text is the same. Agents send a JSON line or an SSE event per token, and a burst of them read at
 * once would otherwise cost a run event, a GraphQL item and a payload each.
 *
 * The first chunk of a message in a turn is written at once (so the first token is not delayed,
 * and a chunk for a message that is not open fails where it is written); only the ones after it
 * in the same turn wait. Every other call writes what is waiting first, so the order is kept.
 * `flush` must be called when the writer's user has finished; `discard` when it has failed.
 */
export class CoalescingWriter implements RunWriter {
  private kind: 'text' | 'args' | 'reasoning' | undefined;
  private id = '';
  private pending = '';
  private scheduled: NodeJS.Immediate | undefined;

  constructor(private readonly out: RunWriter) {}

  textContent(messageId: string, content: string): void {
    this.chunk('text', messageId, content);
  }

  actionArgs(actionExecutionId: string, args: string): void {
    this.chunk('args', actionExecutionId, args);
  }

  reasoningContent(messageId: string, content: string): void {
    this.chunk('reasoning', messageId, content);
  }

  /** Writes what is waiting. Throws what the writer behind throws (the run has ended, say). */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    if (this.pending === '') return;
    const chunk = this.pending;
    this.pending = '';
    this.write(this.kind, this.id, chunk);
  }

  /** Writes what is waiting if the writer behind still takes it; never throws (its user has failed already). */
  discard(): void {
    try {
      this.flush();
    } catch {
      // The run has been aborted or has finished: what waited has nowhere to go.
    }
    this.kind = undefined;
  }

  textStart(proposedId?: string | null, parentMessageId?: string | null): string {
    this.interrupt();
    return this.out.textStart(proposedId, parentMessageId);
  }

  textEnd(messageId: string): void {
    this.interrupt();
    this.out.textEnd(messageId);
  }

  /** Not an event: nothing waiting needs to go first. */
  usage(report: TokenUsage): void {
    this.out.usage(report);
  }

  reasoningStart(proposedId?: string | null): string {
    this.interrupt();
    return this.out.reasoningStart(proposedId);
  }

  reasoningEnd(messageId: string): void {
    this.interrupt();
    this.out.reasoningEnd(messageId);
  }

  actionStart(proposedId: string | null | undefined, actionName: string, parentMessageId?: string | null): string {
    this.interrupt();
    return this.out.actionStart(proposedId, actionName, parentMessageId);
  }

  actionEnd(actionExecutionId: string): void {
    this.interrupt();
    this.out.actionEnd(actionExecutionId);
  }

  actionResult(actionExecutionId: string, actionName: string, result: string): void {
    this.interrupt();
    this.out.actionResult(actionExecutionId, actionName, result);
  }

  agentState(snapshot: AgentStateSnapshot): void {
    this.interrupt();
    this.out.agentState(snapshot);
  }

  metaEvent(event: MetaEventPayload): void {
    this.interrupt();
    this.out.metaEvent(event);
  }

  private write(kind: 'text' | 'args' | 'reasoning' | undefined, id: string, content: string): void {
    if (kind === 'text') this.out.textContent(id, content);
    else if (kind === 'args') this.out.actionArgs(id, content);
    else this.out.reasoningContent(id, content);
  }

  private chunk(kind: 'text' | 'args' | 'reasoning', id: string, content: string): void {
    if (this.kind === kind && this.id === id) {
      // The message took a chunk in this turn and nothing else was written since: it is still open.
      if (content === '') return;
      this.pending += content;
      this.scheduled ??= setImmediate(() => this.scheduledFlush());
      return;
    }
    this.interrupt();
    this.write(kind, id, content);
    this.kind = kind;
    this.id = id;
  }

  private scheduledFlush(): void {
    this.scheduled = undefined;
    try {
      this.flush();
    } catch {
      // The run was aborted in this turn; its own error ends it.
    }
    // A later turn starts afresh: its first chunk is written at once again.
    this.kind = undefined;
  }

  /** Another kind of write: what waits goes first, and the next chunk starts afresh. */
  private interrupt(): void {
    this.flush();
    this.kind = undefined;
  }
}
