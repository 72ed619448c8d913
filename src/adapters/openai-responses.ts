import type { EventSourceMessage } from 'eventsource-parser';
import type {
  FunctionTool,
  ResponseInputItem,
  ResponseStreamEvent,
  ToolChoiceFunction,
  ToolChoiceOptions,
} from 'openai/resources/responses/responses';
import { UnreachableCaseError, UpstreamError } from '../core/errors.js';
import { tokenUsage } from '../core/events.js';
import type { Message, ToolDefinition } from '../core/messages.js';
import { isObject, kindOf } from '../core/values.js';
import type { ForwardedParameters, ModelOutput } from './adapter.js';
import { imageMimeType } from './conversion.js';

/**
 * Converts the conversation (already checked: every call has one result, right after it) to
 * Responses API input items: messages keep their role (system, developer, user, assistant);
 * action executions are `function_call` items and results `function_call_output` items, by call
 * id; images are `input_image` parts of a user message; agent state messages are not for the model.
 */
export function toResponsesInput(messages: readonly Message[]): ResponseInputItem[] {
  const input: ResponseInputItem[] = [];
  for (const message of messages) {
    switch (message.kind) {
      case 'text': {
        const role = message.role === 'tool' ? 'user' : message.role;
        input.push({ type: 'message', role, content: message.content });
        break;
      }
      case 'image':
        input.push({
          type: 'message',
          role: 'user',
          content: [
            {
              type: 'input_image',
              detail: 'auto',
              image_url: `data:${imageMimeType(message.format)};base64,${message.bytes}`,
            },
          ],
        });
        break;
      case 'actionExecution':
        input.push({ type: 'function_call', call_id: message.id, name: message.name, arguments: message.arguments });
        break;
      case 'result':
        input.push({ type: 'function_call_output', call_id: message.actionExecutionId, output: message.result });
        break;
      case 'agentState':
        break;
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  }
  return input;
}

export function toResponsesTools(tools: readonly ToolDefinition[]): FunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    parameters: { type: 'object', ...tool.parameters },
    strict: false,
  }));
}

export function toResponsesToolChoice(
  parameters: ForwardedParameters,
): ToolChoiceOptions | ToolChoiceFunction | undefined {
  switch (parameters.toolChoice) {
    case 'auto':
    case 'none':
    case 'required':
      return parameters.toolChoice;
    case 'function':
      return parameters.toolChoiceFunctionName
        ? { type: 'function', name: parameters.toolChoiceFunctionName }
        : undefined;
    default:
      return undefined;
  }
}

/**
 * Turns Responses API stream events into the run's text messages and action calls: an output
 * message's text (and a refusal's) is a text message, a `function_call` item an action call with its
 * argument deltas. Reasoning items and their summaries are dropped. Text deltas of one network read
 * are joined and written once (`flush`), as for Chat Completions.
 */
export class ResponsesReader {
  private finished = false;
  private openText: { itemId: string | undefined; id: string } | undefined;
  /** The reasoning message open, and which part of which reasoning item it shows. */
  private openReasoning: { key: string; id: string } | undefined;
  private pendingText = '';
  /** Open calls by item id (or call id), as the events after the item name them. */
  private readonly calls = new Map<string | undefined, { id: string; argsSeen: boolean }>();
  private parentId: string | undefined;

  constructor(private readonly output: ModelOutput) {}

  /**
   * One event, the fields read checked first: what the Responses API never sends (an event that is not an object, a
   * delta that is not a string, an item event without its item) is UPSTREAM_BAD_RESPONSE naming the field, as for
   * Chat Completions; what came before reaches the client.
   */
  event(message: EventSourceMessage): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.data);
    } catch {
      this.flush();
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', 'The model provider sent an event that is not JSON.');
    }
    if (!isObject(parsed)) throw this.malformed(`an event that is not an object (${kindOf(parsed)})`);
    if (typeof parsed.type !== 'string') throw this.malformed('an event without a type');
    const event = parsed as unknown as ResponseStreamEvent;
    switch (event.type) {
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        this.text(
          this.optionalString(event.item_id, `${event.type} item_id`),
          this.optionalString(event.delta, `${event.type} delta`),
        );
        break;
      // Reasoning, where the server shows it: summaries (OpenAI's, when asked for) or the reasoning text itself
      // (open-weight reasoning models on compatible servers). One reasoning message per summary part or content.
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const part = event.type === 'response.reasoning_text.delta' ? event.content_index : event.summary_index;
        const delta = this.optionalString(event.delta, `${event.type} delta`);
        this.reason(`${String(event.item_id)}:${event.type}:${String(part)}`, delta);
        break;
      }
      case 'response.reasoning_summary_text.done':
      case 'response.reasoning_text.done':
        this.endReasoning();
        break;
      case 'response.output_item.added': {
        const item = this.item(event.item, event.type);
        if (item.type === 'function_call') {
          const callId = this.optionalString(item.call_id, 'function_call item call_id');
          const name = this.optionalString(item.name, 'function_call item name') ?? '';
          const itemId = this.optionalString(item.id, 'function_call item id') ?? callId;
          this.flush();
          this.endText();
          this.endReasoning();
          const id = this.output.actionStart(callId, name, this.parentId);
          this.calls.set(itemId, { id, argsSeen: false });
        }
        break;
      }
      case 'response.function_call_arguments.delta': {
        const delta = this.optionalString(event.delta, `${event.type} delta`);
        const call = this.calls.get(event.item_id);
        if (call && delta) {
          call.argsSeen = true;
          this.output.actionArgs(call.id, delta);
        }
        break;
      }
      case 'response.output_item.done': {
        const item = this.item(event.item, event.type);
        if (item.type === 'function_call') {
          const key = item.id ?? item.call_id;
          const call = this.calls.get(key);
          if (call) {
            const args = this.optionalString(item.arguments, 'function_call item arguments');
            // A server that sends the arguments only with the finished item.
            if (!call.argsSeen && args) this.output.actionArgs(call.id, args);
            this.output.actionEnd(call.id);
            this.calls.delete(key);
          }
        } else if (item.type === 'message' && this.openText?.itemId === item.id) {
          this.flush();
          this.endText();
        }
        break;
      }
      case 'response.completed':
      case 'response.incomplete': {
        this.finished = true;
        const response: unknown = event.response;
        const usage: unknown = isObject(response) ? response.usage : undefined;
        const report =
          isObject(usage) &&
          tokenUsage('openai', (response as { model?: unknown }).model, {
            inputTokens: usage.input_tokens,
            outputTokens: usage.output_tokens,
            totalTokens: usage.total_tokens,
            reasoningTokens: isObject(usage.output_tokens_details)
              ? usage.output_tokens_details.reasoning_tokens
              : undefined,
            cachedInputTokens: isObject(usage.input_tokens_details)
              ? usage.input_tokens_details.cached_tokens
              : undefined,
          });
        if (report) this.output.usage(report);
        break;
      }
      case 'response.failed': {
        this.flush();
        const failure: unknown = event.response?.error?.message;
        throw new UpstreamError(
          'UPSTREAM_UNAVAILABLE',
          'The model provider reported an error in the middle of its answer.',
          {
            cause: new Error(typeof failure === 'string' ? failure : 'response.failed'),
          },
        );
      }
      case 'error': {
        this.flush();
        const failure: unknown = event.message;
        throw new UpstreamError(
          'UPSTREAM_UNAVAILABLE',
          'The model provider reported an error in the middle of its answer.',
          {
            cause: new Error(typeof failure === 'string' ? failure : message.data.slice(0, 500)),
          },
        );
      }
      default:
        // Lifecycle events (created, in progress, content parts, reasoning items' start and end): nothing to write.
        break;
    }
  }

  /** UPSTREAM_BAD_RESPONSE for an event the Responses API never sends; what came before reaches the client. */
  private malformed(what: string): UpstreamError {
    this.flush();
    return new UpstreamError('UPSTREAM_BAD_RESPONSE', `The model provider sent ${what}.`);
  }

  /** A field that must be a string. */
  private string(value: unknown, field: string): string {
    if (typeof value !== 'string') throw this.malformed(`a ${field} that is not a string (${kindOf(value)})`);
    return value;
  }

  /** A field that is a string when present (null and a missing field alike are undefined). */
  private optionalString(value: unknown, field: string): string | undefined {
    return value == null ? undefined : this.string(value, field);
  }

  /** The item of an output_item event: an object. */
  private item(value: unknown, type: string): Record<string, any> {
    if (!isObject(value)) throw this.malformed(`a ${type} event without an item object`);
    return value;
  }

  /** Writes the text that arrived since the last flush as one chunk. */
  flush(): void {
    if (this.pendingText === '' || this.openText === undefined) return;
    const text = this.pendingText;
    this.pendingText = '';
    this.output.textContent(this.openText.id, text);
  }

  /** The stream has ended: it must have said it was complete; everything is closed. */
  finish(): void {
    this.flush();
    if (!this.finished) {
      throw new UpstreamError(
        'UPSTREAM_STREAM_INTERRUPTED',
        'The model provider ended its stream before the answer was complete.',
      );
    }
    this.endText();
    this.endReasoning();
    for (const call of this.calls.values()) this.output.actionEnd(call.id);
    this.calls.clear();
  }

  /** A piece of reasoning of one part (`key`): a reasoning message of its own, ended when another part starts. */
  private reason(key: string, delta: string | undefined): void {
    if (!delta) return;
    if (this.openReasoning?.key !== key) {
      this.flush();
      this.endText();
      this.endReasoning();
      this.openReasoning = { key, id: this.output.reasoningStart() };
    }
    this.output.reasoningContent(this.openReasoning.id, delta);
  }

  private endReasoning(): void {
    if (this.openReasoning === undefined) return;
    this.output.reasoningEnd(this.openReasoning.id);
    this.openReasoning = undefined;
  }

  private text(itemId: string | undefined, delta: string | undefined): void {
    if (!delta) return;
    this.endReasoning();
    if (this.openText === undefined || this.openText.itemId !== itemId) {
      this.flush();
      this.endText();
      const id = this.output.textStart(itemId);
      this.openText = { itemId, id };
      this.parentId ??= id;
    }
    this.pendingText += delta;
  }

  private endText(): void {
    if (this.openText === undefined) return;
    this.output.textEnd(this.openText.id);
    this.openText = undefined;
  }
}
