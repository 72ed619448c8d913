import { BadUserInputError } from '../core/errors.js';
import { DEFAULT_AGENT_ID, idProblem } from '../core/ids.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import type { Message, MetaEventInput, ToolDefinition } from '../core/messages.js';
import type { RunRequest } from '../engine/request.js';
import { isObject } from '../core/values.js';

/** The agent id under which the gateway's model is served (CopilotKit's chat uses it when the app names none). */
export const DEFAULT_AGENT = DEFAULT_AGENT_ID;

/**
 * @ag-ui/core's schemas (zod), loaded on the first AG-UI request rather than at start-up: a gateway
 * serving only GraphQL clients never uses them, and they were most of the 8 MB of heap (10 MB of RSS)
 * the idle process lost when they and graphql-jit stopped loading at start-up (BENCHMARKS.md, step 38).
 */
const agUiSchemas = loadOnFirstUse(() => import('@ag-ui/core/schemas'));

/** A RunAgentInput as the stock client sends it, after @ag-ui/core's schema has checked it. */
export interface RunAgentInput {
  threadId: string;
  runId: string;
  messages: AgUiMessage[];
  tools: { name: string; description: string; parameters?: unknown }[];
  context: { description: string; value: string }[];
  state?: unknown;
  forwardedProps?: unknown;
  resume?: unknown;
  /** The AG-UI version the client speaks, when it says (1.0 clients send "1.0"; 0.0.x clients send nothing). */
  protocolVersion?: string;
}

type AgUiMessage = {
  id: string;
  role: string;
  content?: unknown;
  toolCalls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  toolCallId?: string;
};

/** At most this many problems are listed (a body can be wrong in thousands of places; the first few say enough). */
const MAX_PROBLEMS = 10;

/**
 * Checks a request body against AG-UI's own schema (the one the stock client's input satisfies); a
 * body that fails it is one BAD_USER_INPUT listing every problem (up to MAX_PROBLEMS), so that a client
 * fixes them in one go rather than one per request.
 */
export async function parseRunAgentInput(body: unknown): Promise<RunAgentInput> {
  const parsed = (await agUiSchemas()).RunAgentInputSchema.safeParse(withoutNullPayloads(body));
  const problems: { field: string; message: string }[] = parsed.success
    ? []
    : parsed.error.issues.map((issue) => ({ field: issue.path.join('.') || 'body', message: issue.message }));
  // The ids, checked here too whenever they are strings, so that their problems come with the schema's.
  const ids = isObject(body) ? body : {};
  for (const name of ['threadId', 'runId'] as const) {
    const value = ids[name];
    const problem = typeof value === 'string' ? idProblem(value) : undefined;
    if (problem) problems.push({ field: name, message: problem });
  }
  if (problems.length > 0) {
    const listed = problems.slice(0, MAX_PROBLEMS).map(({ field, message }) => `${field}: ${message}`);
    const more = problems.length > MAX_PROBLEMS ? `; and ${problems.length - MAX_PROBLEMS} more` : '';
    const what = problems.length === 1 ? 'a problem' : `${problems.length} problems`;
    throw new BadUserInputError(
      `The request body is not a RunAgentInput (${what}): ${listed.join('; ')}${more}.`,
      // `field`: the first, as before; `fields`: every one listed.
      { field: problems[0].field, fields: problems.slice(0, MAX_PROBLEMS).map(({ field }) => field) },
    );
  }
  return parsed.data as unknown as RunAgentInput;
}

/**
 * The body with `payload: null` left out of its resume entries: the stock clients (AG-UI 0.0.59) send it
 * for an interrupt resolved with nothing, and the newer schema this gateway validates with refuses it.
 */
function withoutNullPayloads(body: unknown): unknown {
  if (!isObject(body) || !Array.isArray(body.resume)) return body;
  return {
    ...body,
    resume: body.resume.map((entry) =>
      isObject(entry) && entry.payload === null ? { ...entry, payload: undefined } : entry,
    ),
  };
}

/** A RunAgentInput as a run of the engine: the model for the default agent, otherwise the agent of that name. */
export function runRequestFromAgUi(agentId: string, input: RunAgentInput): RunRequest {
  const properties = isObject(input.forwardedProps) ? input.forwardedProps : {};
  const state = isObject(input.state) ? input.state : {};
  const isModel = agentId === DEFAULT_AGENT;
  return {
    threadId: input.threadId,
    runId: input.runId,
    messages: messagesFromAgUi(input.messages),
    frontendTools: input.tools.map((tool): ToolDefinition => ({
      name: tool.name,
      description: tool.description,
      parameters: isObject(tool.parameters) ? tool.parameters : { type: 'object', properties: {} },
    })),
    context: input.context.map((entry) => ({ description: entry.description, value: entry.value })),
    forwardedParameters: toolChoiceOf(properties.toolChoice),
    properties,
    agentSession: isModel ? null : { agentName: agentId, nodeName: null },
    agentStates: isModel ? [] : [{ agentName: agentId, state, config: {} }],
    metaEvents: isModel ? [] : interruptAnswers(input.resume, properties),
    // A suggestion leaves nothing in the thread store, however it is asked for (PROTOCOL §8.6).
    ...(isSuggestion(input) ? { unrecorded: true } : {}),
  };
}

/** The tool CopilotKit's suggestion engine forces the model to call (its SUGGEST_TOOL). */
const SUGGEST_TOOL_NAME = 'copilotkitSuggest';

/**
 * Whether a run is CopilotKit asking for suggestions: it offers `copilotkitSuggest` and forces the model to
 * call it (`forwardedProps.toolChoice`). Sent to `/agent/:id/suggest`, or, from a single-route app, as a
 * plain run on a fresh thread.
 */
function isSuggestion(input: RunAgentInput): boolean {
  const choice = isObject(input.forwardedProps) ? input.forwardedProps.toolChoice : undefined;
  return (
    isObject(choice) &&
    isObject(choice.function) &&
    choice.function.name === SUGGEST_TOOL_NAME &&
    input.tools.some((tool) => tool.name === SUGGEST_TOOL_NAME)
  );
}

/**
 * `forwardedProps.toolChoice` as the model's forwarded parameters: `"auto"`, `"none"`, `"required"`, or
 * `{type: "function", function: {name}}` (what CopilotKit sends to force a tool); anything else, nothing.
 */
function toolChoiceOf(choice: unknown): RunRequest['forwardedParameters'] {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { toolChoice: choice };
  if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === 'string') {
    return { toolChoice: 'function', toolChoiceFunctionName: choice.function.name };
  }
  return {};
}

/**
 * A client's answers to an agent's interrupts as the engine's meta events: AG-UI's `resume` entries
 * (each naming the interrupt it answers, so the agent gets them back as `resume`), or a LangGraph-style
 * `forwardedProps.command.resume` (CopilotKit's `useLangGraphInterrupt`).
 */
function interruptAnswers(resume: unknown, properties: Record<string, unknown>): MetaEventInput[] {
  if (Array.isArray(resume) && resume.length > 0) {
    return resume
      .filter(
        (entry): entry is { interruptId: string; status?: unknown; payload?: unknown } =>
          isObject(entry) && typeof entry.interruptId === 'string',
      )
      .map((entry) => ({
        name: 'LangGraphInterruptEvent',
        // The answer's status (resolved, cancelled) travels with the interrupt it answers (resumeOf).
        value: JSON.stringify({
          id: entry.interruptId,
          ...(typeof entry.status === 'string' ? { status: entry.status } : {}),
        }),
        response: typeof entry.payload === 'string' ? entry.payload : JSON.stringify(entry.payload ?? null),
      }));
  }
  const command = properties.command;
  if (isObject(command) && command.resume !== undefined) {
    return [
      {
        name: 'LangGraphInterruptEvent',
        value: '',
        response: typeof command.resume === 'string' ? command.resume : JSON.stringify(command.resume),
      },
    ];
  }
  return [];
}

/**
 * AG-UI messages as the gateway's: text by role; an assistant's tool calls as action executions (with
 * the assistant message as their parent) after its text; tool messages as results (named after the
 * call they answer); user image parts as image messages. Reasoning and activity messages are not
 * part of the conversation a model is given.
 */
function messagesFromAgUi(messages: readonly AgUiMessage[]): Message[] {
  const names = new Map<string, string>();
  for (const message of messages) for (const call of message.toolCalls ?? []) names.set(call.id, call.function.name);
  const out: Message[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'user':
      case 'system':
      case 'developer': {
        if (Array.isArray(message.content)) {
          const text = message.content
            .filter((part) => part?.type === 'text')
            .map((part) => String(part.text ?? ''))
            .join('');
          if (text) out.push({ kind: 'text', id: message.id, role: message.role, content: text });
          const images = message.content
            .map(imageOf)
            .filter((image): image is { format: string; bytes: string } => image !== undefined);
          // A message that is one image keeps its id, so a replayed image is not taken for a new one.
          images.forEach((image, index) => {
            out.push({
              kind: 'image',
              id: !text && images.length === 1 ? message.id : `${message.id}-image-${index}`,
              role: 'user',
              ...image,
            });
          });
        } else {
          out.push({
            kind: 'text',
            id: message.id,
            role: message.role,
            content: typeof message.content === 'string' ? message.content : '',
          });
        }
        break;
      }
      case 'assistant': {
        const content = typeof message.content === 'string' ? message.content : '';
        if (content || !message.toolCalls?.length)
          out.push({ kind: 'text', id: message.id, role: 'assistant', content });
        for (const call of message.toolCalls ?? []) {
          out.push({
            kind: 'actionExecution',
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
            parentMessageId: message.id,
          });
        }
        break;
      }
      case 'tool':
        if (message.toolCallId) {
          out.push({
            kind: 'result',
            id: message.id,
            actionExecutionId: message.toolCallId,
            actionName: names.get(message.toolCallId) ?? '',
            result: typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? ''),
          });
        }
        break;
      default:
        break;
    }
  }
  return out;
}

function imageOf(part: any): { format: string; bytes: string } | undefined {
  if (part?.type !== 'image' && part?.type !== 'binary') return undefined;
  const source = part.source;
  if (
    source?.type === 'data' &&
    typeof source.value === 'string' &&
    typeof source.mimeType === 'string' &&
    source.mimeType.startsWith('image/')
  ) {
    return { format: source.mimeType.slice('image/'.length), bytes: source.value };
  }
  if (typeof part.data === 'string' && typeof part.mimeType === 'string' && part.mimeType.startsWith('image/')) {
    return { format: part.mimeType.slice('image/'.length), bytes: part.data };
  }
  return undefined;
}
