import type { Logger } from 'pino';
import type { RunWriter } from '../core/writer.js';
import { asText, messagesFromCopilotKitJson } from './copilotkit-messages.js';
import { agentError, badAgentResponse, eventObject } from './errors.js';

/**
 * Writes LangGraph's `astream_events` into a run: the JSONL lines of a remote endpoint's langgraph
 * agents, and the `events` stream of LangGraph Platform. It reads what CopilotKit's runtime reads:
 * - `on_chat_model_stream`: text chunks and tool-call chunks of the model inside the graph (in
 *   `data.chunk` or `data.chunk.kwargs`), honouring `copilotkit:emit-messages` and
 *   `copilotkit:emit-tool-calls` in the event's metadata;
 * - `on_copilotkit_state_sync`: the agent's state; `on_interrupt` and `on_copilotkit_interrupt`:
 *   interrupts; `on_copilotkit_error`: the agent's error, which fails the run;
 * - `on_custom_event` named `copilotkit_manually_emit_message`, `copilotkit_manually_emit_tool_call`,
 *   `copilotkit_manually_emit_intermediate_state` and `copilotkit_exit`.
 * Every other event is skipped. Unlike CopilotKit's interpreter, a message or call is always ended
 * before the next one starts and when its model call ends.
 */
export class LangGraphEventInterpreter {
  /** The node the graph is in, from the events' metadata. */
  node = '';
  /** Whether the agent asked to leave the conversation (`copilotkit_exit`). */
  exited = false;
  private text: { agentId: string; id: string } | undefined;
  private call: { agentId: string; id: string | null } | undefined;
  /**
   * Every text message's id as the run wrote it, by the agent's message id (the run's differs when the agent used one
   * twice): what a tool call's parent names.
   */
  private readonly messageIds = new Map<string, string>();

  constructor(
    private readonly out: RunWriter,
    private readonly agentName: string,
    private readonly logger: Logger,
  ) {}

  handle(event: unknown, line: number): void {
    const e = eventObject(event, this.agentName, line);
    const node = e.metadata?.langgraph_node;
    if (typeof node === 'string' && node) this.node = node;
    switch (e.event) {
      case 'on_chat_model_stream':
        return this.modelChunk(e);
      case 'on_chat_model_end':
        this.closeCall();
        this.closeText();
        return;
      case 'on_copilotkit_state_sync':
        this.out.agentState({
          agentName: typeof e.agent_name === 'string' ? e.agent_name : this.agentName,
          nodeName: typeof e.node_name === 'string' ? e.node_name : this.node,
          state: JSON.stringify(e.state ?? {}),
          running: e.running !== false,
          active: e.active !== false,
          ...(typeof e.thread_id === 'string' ? { threadId: e.thread_id } : {}),
          ...(typeof e.run_id === 'string' ? { runId: e.run_id } : {}),
        });
        return;
      case 'on_interrupt':
        this.out.metaEvent({ name: 'LangGraphInterruptEvent', value: asText(e.value) });
        return;
      case 'on_copilotkit_interrupt':
        this.out.metaEvent({
          name: 'CopilotKitLangGraphInterruptEvent',
          value: asText(e.data?.value),
          messages: messagesFromCopilotKitJson(e.data?.messages),
        });
        return;
      case 'on_copilotkit_error': {
        const error = e.data?.error ?? {};
        const message = typeof error.message === 'string' ? error.message : 'unknown error';
        throw agentError(
          this.agentName,
          typeof error.type === 'string' && error.type ? `${error.type}: ${message}` : message,
          {
            ...(typeof error.status_code === 'number' ? { agentStatus: error.status_code } : {}),
          },
        );
      }
      case 'on_custom_event':
        return this.customEvent(e);
      default:
        return;
    }
  }

  /** Ends what is still open (the stream is over). */
  finish(): void {
    this.closeCall();
    this.closeText();
  }

  private modelChunk(e: Record<string, any>): void {
    const chunk = e.data?.chunk;
    if (chunk === null || typeof chunk !== 'object') return;
    const fields = chunk.kwargs && typeof chunk.kwargs === 'object' ? chunk.kwargs : chunk;
    const messageId: string =
      typeof fields.id === 'string' && fields.id
        ? fields.id
        : typeof chunk.id === 'string'
          ? chunk.id
          : (this.text?.agentId ?? 'message');
    const metadata = e.metadata ?? {};
    const emitMessages = metadata['copilotkit:emit-messages'] !== false;
    const emitToolCalls: unknown = metadata['copilotkit:emit-tool-calls'] ?? true;

    const toolChunks: any[] = Array.isArray(fields.tool_call_chunks) ? fields.tool_call_chunks : [];
    for (const toolChunk of toolChunks) {
      if (toolChunk === null || typeof toolChunk !== 'object') continue;
      if (typeof toolChunk.name === 'string' && toolChunk.name && typeof toolChunk.id === 'string' && toolChunk.id) {
        // A new call starts; whatever was open has ended.
        this.closeText();
        this.closeCall();
        const shown = emitsToolCall(emitToolCalls, toolChunk.name);
        this.call = {
          agentId: toolChunk.id,
          id: shown
            ? this.out.actionStart(toolChunk.id, toolChunk.name, this.messageIds.get(messageId) ?? messageId)
            : null,
        };
      }
      if (typeof toolChunk.args === 'string' && toolChunk.args && this.call?.id)
        this.out.actionArgs(this.call.id, toolChunk.args);
    }

    const text = contentText(fields.content);
    if (text) {
      this.closeCall();
      if (emitMessages) {
        if (this.text?.agentId !== messageId) {
          this.closeText();
          this.text = { agentId: messageId, id: this.out.textStart(messageId) };
          this.messageIds.set(messageId, this.text.id);
        }
        this.out.textContent(this.text.id, text);
      }
    }

    const finish = fields.response_metadata?.finish_reason;
    if (finish === 'tool_calls') this.closeCall();
    else if (finish === 'stop') {
      this.closeCall();
      this.closeText();
    }
  }

  private customEvent(e: Record<string, any>): void {
    const data = e.data ?? {};
    switch (e.name) {
      case 'copilotkit_manually_emit_message': {
        this.closeCall();
        this.closeText();
        const id = this.out.textStart(typeof data.message_id === 'string' ? data.message_id : null);
        this.out.textContent(id, asText(data.message));
        this.out.textEnd(id);
        return;
      }
      case 'copilotkit_manually_emit_tool_call': {
        this.closeCall();
        this.closeText();
        if (typeof data.name !== 'string' || !data.name)
          throw badAgentResponse(this.agentName, 'a copilotkit_manually_emit_tool_call event without a name');
        const id = this.out.actionStart(
          typeof data.id === 'string' ? data.id : null,
          data.name,
          typeof data.id === 'string' ? data.id : null,
        );
        this.out.actionArgs(id, asText(data.args ?? {}));
        this.out.actionEnd(id);
        return;
      }
      case 'copilotkit_manually_emit_intermediate_state':
        this.out.agentState({
          agentName: this.agentName,
          nodeName: this.node,
          state: JSON.stringify(data),
          running: true,
          active: true,
        });
        return;
      case 'copilotkit_exit':
        this.exited = true;
        return;
      default:
        this.logger.debug({ agent: this.agentName, name: e.name }, 'custom agent event skipped');
    }
  }

  private closeText(): void {
    if (this.text) this.out.textEnd(this.text.id);
    this.text = undefined;
  }

  private closeCall(): void {
    if (this.call?.id) this.out.actionEnd(this.call.id);
    this.call = undefined;
  }
}

/** The text of a LangChain message chunk's content: a string, or the text parts of a list. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (typeof part === 'string') text += part;
    else if (
      part &&
      typeof part === 'object' &&
      (part.type === undefined || part.type === 'text' || part.type === 'text_delta') &&
      typeof part.text === 'string'
    )
      text += part.text;
  }
  return text;
}

function emitsToolCall(setting: unknown, name: string): boolean {
  if (typeof setting === 'boolean') return setting;
  if (Array.isArray(setting)) return setting.includes(name);
  if (typeof setting === 'string') return setting === name;
  return true;
}
