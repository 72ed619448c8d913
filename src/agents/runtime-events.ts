import type { Logger } from 'pino';
import type { RunWriter } from '../core/writer.js';
import { asText, messagesFromCopilotKitJson } from './copilotkit-messages.js';
import { agentError, badAgentResponse, eventObject } from './errors.js';

/**
 * Writes CopilotKit runtime events into a run: the JSONL lines of a remote endpoint's crewai (and
 * generic) agents, one event per line (`{"type":"TextMessageStart","messageId":…}` and so on).
 *
 * The agent's ids are mapped to the run's (the run may have to give a repeated id a fresh one). As
 * in CopilotKit's runtime, chunks and ends of messages that were never started are ignored; unlike
 * it, a `RunError` line fails the run, and a line that is not an event of a known shape is a bad
 * response. Unknown event types are skipped, so newer agents keep working.
 */
export class RuntimeEventInterpreter {
  private readonly texts = new Map<string, string>();
  private readonly calls = new Map<string, { id: string; name: string }>();
  /** Every id the agent has used, to its run id (for parents and results). */
  private readonly ids = new Map<string, string>();
  private readonly results = new Set<string>();

  constructor(
    private readonly out: RunWriter,
    private readonly agentName: string,
    private readonly logger: Logger,
  ) {}

  handle(event: unknown, line: number): void {
    const e = eventObject(event, this.agentName, line);
    switch (e.type) {
      case 'TextMessageStart': {
        const agentId = this.field(e, 'messageId', line);
        if (this.texts.has(agentId)) return;
        const id = this.out.textStart(agentId, this.parent(optional(e, 'parentMessageId')));
        this.texts.set(agentId, id);
        this.ids.set(agentId, id);
        return;
      }
      case 'TextMessageContent': {
        const id = this.texts.get(this.field(e, 'messageId', line));
        if (id === undefined) return this.skip(e, line);
        this.out.textContent(id, asText(e.content));
        return;
      }
      case 'TextMessageEnd': {
        const agentId = this.field(e, 'messageId', line);
        const id = this.texts.get(agentId);
        if (id === undefined) return this.skip(e, line);
        this.texts.delete(agentId);
        this.out.textEnd(id);
        return;
      }
      case 'ActionExecutionStart': {
        const agentId = this.field(e, 'actionExecutionId', line);
        if (this.calls.has(agentId)) return;
        const name = this.field(e, 'actionName', line);
        const id = this.out.actionStart(agentId, name, this.parent(optional(e, 'parentMessageId')));
        this.calls.set(agentId, { id, name });
        this.ids.set(agentId, id);
        return;
      }
      case 'ActionExecutionArgs': {
        const call = this.calls.get(this.field(e, 'actionExecutionId', line));
        if (call === undefined) return this.skip(e, line);
        this.out.actionArgs(call.id, asText(e.args));
        return;
      }
      case 'ActionExecutionEnd': {
        const agentId = this.field(e, 'actionExecutionId', line);
        const call = this.calls.get(agentId);
        if (call === undefined) return this.skip(e, line);
        this.calls.delete(agentId);
        this.out.actionEnd(call.id);
        return;
      }
      case 'ActionExecutionResult': {
        const agentId = this.field(e, 'actionExecutionId', line);
        const open = this.calls.get(agentId);
        if (open) {
          this.calls.delete(agentId);
          this.out.actionEnd(open.id);
        }
        const id = this.ids.get(agentId) ?? agentId;
        if (this.results.has(id)) return this.skip(e, line);
        this.results.add(id);
        this.out.actionResult(id, optional(e, 'actionName') ?? open?.name ?? '', asText(e.result));
        return;
      }
      case 'AgentStateMessage':
        this.out.agentState({
          agentName: optional(e, 'agentName') ?? this.agentName,
          nodeName: optional(e, 'nodeName') ?? '',
          state: typeof e.state === 'string' ? e.state : JSON.stringify(e.state ?? {}),
          running: e.running !== false,
          active: e.active !== false,
          ...(optional(e, 'threadId') ? { threadId: optional(e, 'threadId')! } : {}),
          ...(optional(e, 'runId') ? { runId: optional(e, 'runId')! } : {}),
        });
        return;
      case 'MetaEvent':
        return this.metaEvent(e, line);
      case 'RunError':
        throw agentError(
          this.agentName,
          typeof e.message === 'string' ? e.message : 'unknown error',
          typeof e.code === 'string' ? { agentCode: e.code } : {},
        );
      default:
        return this.skip(e, line);
    }
  }

  private metaEvent(e: Record<string, unknown>, line: number): void {
    const data = (e.data ?? {}) as Record<string, unknown>;
    switch (e.name) {
      case 'LangGraphInterruptEvent':
      case 'on_interrupt':
        this.out.metaEvent({ name: 'LangGraphInterruptEvent', value: asText(e.value ?? data.value) });
        return;
      case 'CopilotKitLangGraphInterruptEvent':
        this.out.metaEvent({
          name: 'CopilotKitLangGraphInterruptEvent',
          value: asText(data.value ?? e.value),
          messages: messagesFromCopilotKitJson(data.messages),
        });
        return;
      default:
        this.skip(e, line);
    }
  }

  /** A string field the event must have (not empty): an agent that leaves it out sent a bad response. */
  private field(e: Record<string, unknown>, name: string, line: number): string {
    const value = e[name];
    if (typeof value !== 'string' || value === '')
      throw badAgentResponse(this.agentName, `a ${String(e.type)} event without "${name}" on line ${line}`);
    return value;
  }

  private parent(agentId: string | null): string | null {
    return agentId === null ? null : (this.ids.get(agentId) ?? agentId);
  }

  private skip(e: Record<string, unknown>, line: number): void {
    this.logger.debug({ agent: this.agentName, type: e.type, name: e.name, line }, 'agent event skipped');
  }
}

/** A string field the event may have: its value, or null when it is absent or empty. */
function optional(e: Record<string, unknown>, name: string): string | null {
  const value = e[name];
  return typeof value === 'string' && value !== '' ? value : null;
}
