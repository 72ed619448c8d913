import type { Principal } from '../../core/principal.js';
import type { ActionCatalog } from '../../actions/action.js';
import { executeAction } from '../../actions/execute-action.js';
import { UnreachableCaseError } from '../../core/errors.js';
import type { AgentStateSnapshot, MetaEventPayload, TokenUsage } from '../../core/events.js';
import type { Message } from '../../core/messages.js';
import type { RunWriter } from '../../core/writer.js';
import type { RunContext } from '../run.js';

/** An action call made in a round. */
export interface RoundCall {
  id: string;
  name: string;
  parentMessageId: string | null;
  /** The arguments' chunks, kept only when the round's messages are needed again. */
  chunks: string[];
}

type RoundItem =
  | { kind: 'text'; id: string; parentMessageId: string | null; chunks: string[] }
  | ({ kind: 'call' } & RoundCall)
  | { kind: 'result'; id: string; name: string; result: string };

/**
 * Passes one round of a model's or an agent's output on to the run, and remembers what it needs
 * to go on: the calls made (to execute server-side ones) and, when `keepChunks` is set, the text
 * and arguments (to send the round back as conversation in the next round). A round that will not
 * be continued keeps no chunks, so a plain chat allocates nothing per token here.
 */
export class RoundRecorder implements RunWriter {
  private readonly items: RoundItem[] = [];
  /** Texts and calls by id, to keep their chunks (only with `keepChunks`). */
  private readonly byId: Map<string, { chunks: string[] }> | undefined;
  /** Whether an interrupt was raised in this round (the agent waits for the user). */
  interrupted = false;
  /** The last state an agent reported in this round (JSON), to give it back in the next round. */
  latestState: string | undefined;

  constructor(
    private readonly out: RunWriter,
    keepChunks: boolean,
  ) {
    this.byId = keepChunks ? new Map() : undefined;
  }

  textStart(proposedId?: string | null, parentMessageId?: string | null): string {
    const id = this.out.textStart(proposedId, parentMessageId);
    const item = { kind: 'text' as const, id, parentMessageId: parentMessageId ?? null, chunks: [] };
    this.items.push(item);
    this.byId?.set(id, item);
    return id;
  }

  textContent(messageId: string, content: string): void {
    this.out.textContent(messageId, content);
    if (this.byId && content) this.byId.get(messageId)?.chunks.push(content);
  }

  textEnd(messageId: string): void {
    this.out.textEnd(messageId);
  }

  actionStart(proposedId: string | null | undefined, actionName: string, parentMessageId?: string | null): string {
    const id = this.out.actionStart(proposedId, actionName, parentMessageId);
    const item = { kind: 'call' as const, id, name: actionName, parentMessageId: parentMessageId ?? null, chunks: [] };
    this.items.push(item);
    this.byId?.set(id, item);
    return id;
  }

  actionArgs(actionExecutionId: string, args: string): void {
    this.out.actionArgs(actionExecutionId, args);
    if (this.byId && args) this.byId.get(actionExecutionId)?.chunks.push(args);
  }

  actionEnd(actionExecutionId: string): void {
    this.out.actionEnd(actionExecutionId);
  }

  usage(report: TokenUsage): void {
    this.out.usage(report);
  }

  // Reasoning is passed on and not kept: it is never sent back to the model.
  reasoningStart(proposedId?: string | null): string {
    return this.out.reasoningStart(proposedId);
  }

  reasoningContent(messageId: string, content: string): void {
    this.out.reasoningContent(messageId, content);
  }

  reasoningEnd(messageId: string): void {
    this.out.reasoningEnd(messageId);
  }

  actionResult(actionExecutionId: string, actionName: string, result: string): void {
    this.out.actionResult(actionExecutionId, actionName, result);
    this.items.push({ kind: 'result', id: actionExecutionId, name: actionName, result });
  }

  agentState(snapshot: AgentStateSnapshot): void {
    this.out.agentState(snapshot);
    this.latestState = snapshot.state;
  }

  metaEvent(event: MetaEventPayload): void {
    this.interrupted = true;
    this.out.metaEvent(event);
  }

  /** The action calls of this round, in order. */
  calls(): RoundCall[] {
    return this.items.filter((item): item is { kind: 'call' } & RoundCall => item.kind === 'call');
  }

  /**
   * The action calls of this round that got no result in it, in order. One pass over the round's results, then one
   * over its calls: an agent may make tens of thousands of calls in a round (a search per call was quadratic, found
   * from outside: 100,000 calls held the event loop for minutes).
   */
  unansweredCalls(): RoundCall[] {
    const answered = new Set<string>();
    for (const item of this.items) if (item.kind === 'result') answered.add(item.id);
    return this.calls().filter((call) => !answered.has(call.id));
  }

  /** The round as conversation messages, for the next round (needs `keepChunks`). */
  messages(): Message[] {
    return this.items.map((item): Message => {
      switch (item.kind) {
        case 'text':
          return {
            kind: 'text',
            id: item.id,
            role: 'assistant',
            content: item.chunks.join(''),
            parentMessageId: item.parentMessageId,
          };
        case 'call':
          return {
            kind: 'actionExecution',
            id: item.id,
            name: item.name,
            arguments: item.chunks.join(''),
            parentMessageId: item.parentMessageId,
          };
        case 'result':
          return {
            kind: 'result',
            id: `result-${item.id}`,
            actionExecutionId: item.id,
            actionName: item.name,
            result: item.result,
          };
        default:
          // Every kind of item has its case: a new one does not compile until it has.
          throw new UnreachableCaseError(item);
      }
    });
  }
}

/**
 * Executes the round's calls of server-side and remote actions, one after another in the order of
 * the calls, and writes each result into the round. Resolves with the calls it executed.
 */
export async function executeServerCalls(
  context: RunContext,
  recorder: RoundRecorder,
  calls: readonly RoundCall[],
  catalog: ActionCatalog,
  request: { properties: Record<string, unknown>; principal?: Principal },
  timeoutMs: number,
): Promise<RoundCall[]> {
  const serverCalls = calls.filter((call) => catalog.has(call.name));
  for (const call of serverCalls) {
    const result = await executeAction(catalog.get(call.name)!, call.chunks.join(''), {
      threadId: context.threadId,
      runId: context.runId,
      properties: request.properties,
      principal: request.principal,
      logger: context.logger,
      signal: context.signal,
      timeoutMs,
    });
    recorder.actionResult(call.id, call.name, result);
  }
  return serverCalls;
}
