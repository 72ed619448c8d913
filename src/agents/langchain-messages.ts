import type { Message } from '../core/messages.js';
import { UnreachableCaseError } from '../core/errors.js';

/** A LangChain message as LangGraph's API takes and returns it (`type` is human, ai, system or tool). */
export interface LangChainMessage {
  id?: string;
  type: 'human' | 'ai' | 'system' | 'tool' | string;
  content: unknown;
  tool_calls?: { id: string; name: string; args: unknown; type?: string }[];
  tool_call_id?: string;
  name?: string;
}

/**
 * The conversation as LangChain messages: action calls join the AI message they belong to as
 * `tool_calls` (with parsed arguments), results become tool messages, images human messages with
 * an image part; agent state messages are not part of a LangGraph conversation.
 */
export function toLangChainMessages(messages: readonly Message[]): LangChainMessage[] {
  const out: LangChainMessage[] = [];
  const ai = new Map<string, LangChainMessage>();
  for (const message of messages) {
    switch (message.kind) {
      case 'text': {
        const type =
          message.role === 'user'
            ? 'human'
            : message.role === 'assistant'
              ? 'ai'
              : message.role === 'tool'
                ? 'human'
                : 'system';
        const converted: LangChainMessage = { id: message.id, type, content: message.content };
        out.push(converted);
        if (type === 'ai') ai.set(message.id, converted);
        break;
      }
      case 'actionExecution': {
        const call = { id: message.id, name: message.name, args: parseArguments(message.arguments), type: 'tool_call' };
        const parentId = message.parentMessageId ?? message.id;
        const parent = ai.get(parentId);
        if (parent) (parent.tool_calls ??= []).push(call);
        else {
          const converted: LangChainMessage = { id: parentId, type: 'ai', content: '', tool_calls: [call] };
          ai.set(parentId, converted);
          out.push(converted);
        }
        break;
      }
      case 'result':
        out.push({
          id: message.id,
          type: 'tool',
          content: message.result,
          tool_call_id: message.actionExecutionId,
          name: message.actionName,
        });
        break;
      case 'image':
        out.push({
          id: message.id,
          type: 'human',
          content: [{ type: 'image_url', image_url: { url: `data:image/${message.format};base64,${message.bytes}` } }],
        });
        break;
      case 'agentState':
        break;
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  }
  return out;
}

/**
 * LangChain messages in CopilotKit's JSON form (what `loadAgentState` and the final agent state
 * carry, as CopilotKit's runtime writes them): text as `{role, content, id}`, each tool call as
 * `{id, name, arguments, parentMessageId}` followed by its result `{actionExecutionId, actionName,
 * result, id}`.
 */
export function langChainToCopilotKit(messages: unknown): Record<string, unknown>[] {
  if (!Array.isArray(messages)) return [];
  const names = new Map<string, string>();
  for (const message of messages) {
    for (const call of message?.tool_calls ?? []) names.set(call.id, call.name);
  }
  const results = new Map<string, Record<string, unknown>>();
  const converted: Record<string, unknown>[] = [];
  for (const message of messages as LangChainMessage[]) {
    if (!message || typeof message !== 'object') continue;
    const content = textOf(message.content);
    const type = message.type ?? (message as { role?: string }).role;
    if (type === 'human' || type === 'user') converted.push({ role: 'user', content, id: message.id });
    else if (type === 'system') converted.push({ role: 'system', content, id: message.id });
    else if (type === 'ai' || type === 'assistant') {
      if (message.tool_calls?.length) {
        for (const call of message.tool_calls)
          converted.push({ id: call.id, name: call.name, arguments: call.args, parentMessageId: message.id });
      } else {
        converted.push({ role: 'assistant', content, id: message.id, parentMessageId: message.id });
      }
    } else if (type === 'tool' && message.tool_call_id) {
      results.set(message.tool_call_id, {
        actionExecutionId: message.tool_call_id,
        actionName: names.get(message.tool_call_id) ?? message.name ?? '',
        result: content,
        id: message.id,
      });
    }
  }
  // Each result right after its call, as the frontend expects.
  const ordered: Record<string, unknown>[] = [];
  for (const message of converted) {
    ordered.push(message);
    const result = 'arguments' in message ? results.get(message.id as string) : undefined;
    if (result) ordered.push(result);
  }
  return ordered;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        typeof part === 'string' ? part : part?.type === 'text' && typeof part.text === 'string' ? part.text : '',
      )
      .join('');
  }
  return content == null ? '' : JSON.stringify(content);
}

function parseArguments(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}
