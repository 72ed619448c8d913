import { randomUUID } from 'node:crypto';
import type { GenerateCopilotResponseInput, MessageInput } from '../../generated/graphql.js';
import { idProblem, isWellFormedText } from '../core/ids.js';
import { BadUserInputError, NotSupportedError } from '../core/errors.js';
import type { Message, MetaEventInput, ToolDefinition } from '../core/messages.js';
import { MAX_NESTING, textNestsDeeperThan } from '../core/depth.js';
import type { AgentStateInput, RunRequest } from '../engine/request.js';

/**
 * GraphQL input to the engine's RunRequest: the one place the CopilotRuntime input shapes are
 * checked and converted. Every mistake is a BAD_USER_INPUT that names the field.
 */

const MESSAGE_FIELDS = [
  'textMessage',
  'actionExecutionMessage',
  'resultMessage',
  'agentStateMessage',
  'imageMessage',
] as const;

/** Converts a request's GenerateCopilotResponseInput (and `properties`) into a run request. */
export function runRequestFromInput(
  data: GenerateCopilotResponseInput,
  properties: Record<string, unknown> | null | undefined,
): RunRequest {
  if (data.extensions?.openaiAssistantAPI)
    throw new NotSupportedError(
      'The OpenAI Assistants API (extensions.openaiAssistantAPI) is not supported by this gateway yet.',
    );

  const frontendTools: ToolDefinition[] = [];
  data.frontend.actions.forEach((action, index) => {
    if (action.available === 'disabled' || action.available === 'remote') return;
    frontendTools.push({
      name: action.name,
      description: action.description,
      parameters: parseJsonSchema(action.jsonSchema, `frontend.actions[${index}]`),
    });
  });

  const agentStates: AgentStateInput[] = [];
  const states = [...(data.agentStates ?? []), ...(data.agentState ? [data.agentState] : [])];
  states.forEach((entry, index) => {
    const where = index < (data.agentStates?.length ?? 0) ? `agentStates[${index}]` : 'agentState';
    checkedText(entry.agentName, `${where}.agentName`);
    if (agentStates.some((known) => known.agentName === entry.agentName)) return;
    agentStates.push({
      agentName: entry.agentName,
      state: parseJsonObject(entry.state, `${where}.state`, 'an object', true),
      config: entry.config ? parseJsonObject(entry.config, `${where}.config`, 'an object', true) : {},
    });
  });

  const metaEvents: MetaEventInput[] = (data.metaEvents ?? []).map((event, index) => {
    checkNesting(event.value, `metaEvents[${index}].value`);
    checkNesting(event.response, `metaEvents[${index}].response`);
    return {
      name: event.name,
      value: event.value,
      response: event.response ?? null,
      ...(event.messages ? { messages: messagesFromInput(event.messages, `metaEvents[${index}].messages`) } : {}),
    };
  });

  return {
    threadId:
      checkId(data.threadId, 'threadId') ??
      checkId(data.agentSession?.threadId, 'agentSession.threadId') ??
      randomUUID(),
    runId: checkId(data.runId, 'runId') ?? randomUUID(),
    messages: messagesFromInput(data.messages),
    frontendTools,
    context: (data.context ?? []).map(({ description, value }) => ({ description, value })),
    forwardedParameters: data.forwardedParameters ?? {},
    properties: properties ?? {},
    agentSession: data.agentSession
      ? {
          agentName: checkedText(data.agentSession.agentName, 'agentSession.agentName'),
          nodeName: data.agentSession.nodeName ?? null,
        }
      : null,
    agentStates,
    metaEvents,
    ...(data.cloud?.guardrails ? { guardrails: guardrailsFromInput(data.cloud.guardrails.inputValidationRules) } : {}),
    ...(data.frontend.url ? { url: data.frontend.url } : {}),
  };
}

/** The shape of GraphQL's MessageInput the conversion reads. */
export type MessageInputLike = Pick<MessageInput, 'id' | (typeof MESSAGE_FIELDS)[number]>;

/** Converts the client's messages, rejecting any that set none or several of the message fields. */
function messagesFromInput(inputs: readonly MessageInputLike[], where = 'messages'): Message[] {
  return inputs.map((input, index) => {
    const set = MESSAGE_FIELDS.filter((field) => input[field] != null);
    if (set.length !== 1) {
      throw new BadUserInputError(
        `${where}[${index}] (id "${input.id}") must set exactly one of ${MESSAGE_FIELDS.join(', ')}; it sets ${
          set.length === 0 ? 'none' : set.join(' and ')
        }.`,
        { field: `${where}[${index}]` },
      );
    }
    if (input.textMessage) {
      const m = input.textMessage;
      return { kind: 'text', id: input.id, role: m.role, content: m.content, parentMessageId: m.parentMessageId };
    }
    if (input.actionExecutionMessage) {
      const m = input.actionExecutionMessage;
      checkNesting(m.arguments, `${where}[${index}].actionExecutionMessage.arguments`);
      return {
        kind: 'actionExecution',
        id: input.id,
        name: m.name,
        arguments: m.arguments,
        parentMessageId: m.parentMessageId,
      };
    }
    if (input.resultMessage) {
      const m = input.resultMessage;
      checkNesting(m.result, `${where}[${index}].resultMessage.result`);
      return {
        kind: 'result',
        id: input.id,
        actionExecutionId: m.actionExecutionId,
        actionName: m.actionName,
        result: m.result,
      };
    }
    if (input.imageMessage) {
      const m = input.imageMessage;
      return {
        kind: 'image',
        id: input.id,
        role: m.role,
        format: m.format,
        bytes: m.bytes,
        parentMessageId: m.parentMessageId,
      };
    }
    const m = input.agentStateMessage!;
    checkNesting(m.state, `${where}[${index}].agentStateMessage.state`);
    return {
      kind: 'agentState',
      id: input.id,
      threadId: m.threadId,
      agentName: m.agentName,
      nodeName: m.nodeName,
      runId: m.runId,
      active: m.active,
      running: m.running,
      role: m.role,
      state: m.state,
    };
  });
}

/** Parses a frontend action's `jsonSchema`, which must be a JSON object. */
function parseJsonSchema(jsonSchema: string, where: string): Record<string, unknown> {
  return parseJsonObject(jsonSchema, `${where}.jsonSchema`, 'a JSON Schema');
}

function parseJsonObject(
  json: string,
  field: string,
  what = 'an object',
  nullIsEmpty = false,
): Record<string, unknown> {
  checkNesting(json, field);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new BadUserInputError(`${field} is not valid JSON.`, { field });
  }
  if (parsed === null && nullIsEmpty) return {};
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new BadUserInputError(`${field} must be a JSON object (${what}).`, { field });
  }
  return parsed as Record<string, unknown>;
}

/**
 * A JSON-string field that nests too deep for what handles it later (JSON.stringify of an upstream request) is refused
 * here.
 */
function checkNesting(text: string | null | undefined, field: string): void {
  if (typeof text === 'string' && textNestsDeeperThan(text)) {
    throw new BadUserInputError(`${field} nests deeper than ${MAX_NESTING} levels.`, { field });
  }
}

/** An id the client may leave out (empty as absent); otherwise as AG-UI checks it (core/ids.ts). */
function checkId(value: string | null | undefined, field: string): string | undefined {
  if (value == null || value === '') return undefined;
  const problem = idProblem(value);
  if (problem) throw new BadUserInputError(`${field} ${problem}.`, { field });
  return value;
}

/** The topics of `cloud.guardrails.inputValidationRules`, as lists of non-empty strings. */
function guardrailsFromInput(
  rules: { allowList?: readonly string[] | null; denyList?: readonly string[] | null } | null | undefined,
): { allowList: string[]; denyList: string[] } {
  const topics = (list: readonly string[] | null | undefined) =>
    (list ?? []).map((topic) => topic.trim()).filter(Boolean);
  return { allowList: topics(rules?.allowList), denyList: topics(rules?.denyList) };
}

/** A thread or run id an operation names: not empty, at most 256 characters, no lone surrogate. */
export function checkedId(value: string, field: string): string {
  const id = checkId(value, field);
  if (id === undefined) throw new BadUserInputError(`${field} must not be empty.`, { field });
  return id;
}

/**
 * A name used as a key (an agent's), refused with a lone surrogate: encoded as UTF-8 on its way to a store or an
 * agent, every lone surrogate is the same U+FFFD, and two names would be one (core/ids.ts).
 */
export function checkedText(value: string, field: string): string {
  if (!isWellFormedText(value)) {
    throw new BadUserInputError(`${field} must be well-formed text (it holds half of a surrogate pair).`, { field });
  }
  return value;
}
