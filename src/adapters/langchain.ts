import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { AIMessageChunk, BaseMessage, MessageContent } from '@langchain/core/messages';
import type { Runnable } from '@langchain/core/runnables';
import { ConfigurationError, GatewayError, NotSupportedError, UnreachableCaseError } from '../core/errors.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import type { Message, ToolDefinition } from '../core/messages.js';
import { upstreamNetworkError, upstreamStatusError } from '../upstream/errors.js';
import type { ForwardedParameters, ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';
import { callArgsObject, imageMimeType } from './conversion.js';

/** What a `chain` function gets for each model call. */
export interface LangChainInput {
  /** The conversation as LangChain messages (system, human, AI with tool calls, tool). */
  messages: BaseMessage[];
  /** The tools the model may call, in the OpenAI function format `bindTools` takes. */
  tools: { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  /** The request's forwarded parameters: a chain applies what it can. */
  forwardedParameters: ForwardedParameters;
  threadId: string;
  runId: string;
  signal: AbortSignal;
}

/** What a chain may answer: a stream of message chunks or strings, one message, or a string. */
export type LangChainOutput = AsyncIterable<AIMessageChunk | string> | AIMessageChunk | BaseMessage | string;

export interface LangChainAdapterOptions {
  /**
   * A chat model (`ChatOpenAI`, `ChatAnthropic`, `ChatOllama`, …): the adapter binds the request's
   * tools to it (`bindTools`) and streams it.
   */
  model?: BaseChatModel;
  /** Or any Runnable taking the messages and streaming AI message chunks or strings (tools are not bound). */
  runnable?: Runnable<BaseMessage[], AIMessageChunk | string>;
  /** Or a function that answers each model call itself (CopilotKit's `chainFn`). */
  chain?: (input: LangChainInput) => Promise<LangChainOutput> | LangChainOutput;
  /** The model's name, for logs and `modelLimits.allowedModels`; clients cannot switch a LangChain model. */
  modelName?: string;
}

const WHO = 'the model (LangChain)';

/** LangChain's message classes, loaded on first use: only a gateway given a LangChain model needs them. */
const loadMessages = loadOnFirstUse(() => import('@langchain/core/messages'));

/**
 * Any LangChain chat model or Runnable as the gateway's model, streamed: text chunks become text
 * messages, tool-call chunks action executions. Of the forwarded parameters only `stop` (a call
 * option every chat model takes) and `toolChoice` (through `bindTools`) apply; a request setting
 * `model`, `maxTokens` or `temperature` is refused before the run (NOT_SUPPORTED), since they are
 * the chat model's own settings. Reasoning content blocks (`thinking`, `reasoning`) are dropped.
 * `@langchain/core` is loaded on first use.
 */
export class LangChainAdapter implements ModelAdapter {
  readonly name = 'langchain';
  readonly model: string | undefined;
  /** A chat model applies `stop` and `toolChoice`; a Runnable none; a chain gets them all. */
  readonly parameters: ReadonlySet<keyof ForwardedParameters> | undefined;
  private readonly options: LangChainAdapterOptions;

  constructor(options: LangChainAdapterOptions) {
    const given = [options?.model, options?.runnable, options?.chain].filter((value) => value !== undefined);
    if (given.length !== 1)
      throw new ConfigurationError('LangChainAdapter needs exactly one of model (a chat model), runnable or chain.');
    if (options.model && typeof options.model.stream !== 'function')
      throw new ConfigurationError('LangChainAdapter: model must be a LangChain chat model.');
    if (options.runnable && typeof options.runnable.stream !== 'function')
      throw new ConfigurationError('LangChainAdapter: runnable must be a LangChain Runnable.');
    if (options.chain && typeof options.chain !== 'function')
      throw new ConfigurationError('LangChainAdapter: chain must be a function.');
    this.options = options;
    this.model = options.modelName;
    this.parameters = options.chain
      ? undefined
      : options.model
        ? new Set(['stop', 'toolChoice', 'toolChoiceFunctionName'])
        : new Set();
  }

  async stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const messages = await toLangChainMessages(request.messages);
    const tools = request.tools.map(toOpenAITool);
    const reader = new LangChainChunkReader(output);
    try {
      const answer = await this.answer(messages, tools, request, signal);
      if (isAsyncIterable(answer)) {
        for await (const chunk of answer) reader.chunk(chunk);
      } else {
        reader.chunk(answer);
      }
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw providerError(error);
    }
    if (signal.aborted) throw signal.reason;
    reader.finish();
  }

  private async answer(
    messages: BaseMessage[],
    tools: LangChainInput['tools'],
    request: ModelRequest,
    signal: AbortSignal,
  ): Promise<LangChainOutput> {
    const { model, runnable, chain } = this.options;
    const stop = request.forwardedParameters.stop?.length ? request.forwardedParameters.stop : undefined;
    if (chain)
      return chain({
        messages,
        tools,
        forwardedParameters: request.forwardedParameters,
        threadId: request.threadId,
        runId: request.runId,
        signal,
      });
    if (runnable) return runnable.stream(messages, { signal });
    let bound: Runnable<BaseMessage[], AIMessageChunk> = model!;
    if (tools.length) {
      if (typeof model!.bindTools !== 'function') {
        throw new NotSupportedError(
          'This LangChain chat model cannot call tools (it has no bindTools), and the request offers some.',
        );
      }
      const toolChoice = langChainToolChoice(request.forwardedParameters);
      bound = model!.bindTools(tools, toolChoice === undefined ? {} : { tool_choice: toolChoice });
    }
    return bound.stream(messages, { signal, ...(stop ? { stop } : {}) } as never);
  }
}

/** The conversation as LangChain messages, in the shape OpenAI-style chat models expect. */
export async function toLangChainMessages(messages: readonly Message[]): Promise<BaseMessage[]> {
  const { AIMessage, HumanMessage, SystemMessage, ToolMessage } = await loadMessages();
  const out: BaseMessage[] = [];
  // One system message, first: several chat models (Anthropic's, Google's) take no other.
  const system = messages.flatMap((m) =>
    m.kind === 'text' && (m.role === 'system' || m.role === 'developer') && m.content ? [m.content] : [],
  );
  if (system.length) out.push(new SystemMessage(system.join('\n\n')));
  let lastAssistant: { message: InstanceType<typeof AIMessage>; id: string } | undefined;
  for (const message of messages) {
    switch (message.kind) {
      case 'text':
        if (message.role === 'assistant') {
          const ai = new AIMessage({ content: message.content, tool_calls: [] });
          out.push(ai);
          lastAssistant = { message: ai, id: message.id };
        } else {
          if (message.role === 'system' || message.role === 'developer') break;
          out.push(new HumanMessage(message.content));
          lastAssistant = undefined;
        }
        break;
      case 'image':
        out.push(
          new HumanMessage({
            content: [
              {
                type: 'image_url',
                image_url: { url: `data:${imageMimeType(message.format)};base64,${message.bytes}` },
              },
            ],
          }),
        );
        lastAssistant = undefined;
        break;
      case 'actionExecution': {
        const call = {
          id: message.id,
          name: message.name,
          args: callArgsObject(message.arguments),
          type: 'tool_call' as const,
        };
        const last = out[out.length - 1];
        const joins =
          lastAssistant &&
          (last === lastAssistant.message || ToolMessage.isInstance(last)) &&
          (message.parentMessageId == null || message.parentMessageId === lastAssistant.id);
        if (joins && lastAssistant && last === lastAssistant.message) {
          lastAssistant.message.tool_calls = [...(lastAssistant.message.tool_calls ?? []), call];
        } else {
          const ai = new AIMessage({ content: '', tool_calls: [call] });
          out.push(ai);
          lastAssistant = { message: ai, id: message.parentMessageId ?? message.id };
        }
        break;
      }
      case 'result':
        out.push(
          new ToolMessage({
            tool_call_id: message.actionExecutionId,
            name: message.actionName,
            content: message.result,
          }),
        );
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

function toOpenAITool(tool: ToolDefinition): LangChainInput['tools'][number] {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: { type: 'object', ...tool.parameters } },
  };
}

function langChainToolChoice(parameters: ForwardedParameters): string | undefined {
  switch (parameters.toolChoice) {
    case 'auto':
    case 'none':
      return parameters.toolChoice;
    case 'required':
      return 'any';
    case 'function':
      return parameters.toolChoiceFunctionName ?? undefined;
    default:
      return undefined;
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<AIMessageChunk | string> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

/**
 * What a chat model's provider SDK threw, as the gateway's error: an HTTP status or a network error
 * where it has one. Anything else (a bug in a chain) stays as it is: masked for the client, logged.
 */
function providerError(error: unknown): unknown {
  if (error instanceof GatewayError) return error;
  const status =
    (error as { status?: unknown; response?: { status?: unknown } } | null)?.status ??
    (error as { response?: { status?: unknown } } | null)?.response?.status;
  if (typeof status === 'number' && status >= 400) {
    return upstreamStatusError(WHO, status, {
      detail: status < 500 ? (error as Error).message : undefined,
      cause: error,
    });
  }
  const network = upstreamNetworkError(WHO, error, 'response');
  const codes = [(error as { code?: unknown })?.code, (error as { cause?: { code?: unknown } })?.cause?.code];
  if (codes.some((code) => typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code))) return network;
  if ((error as Error)?.name === 'APIConnectionError' || (error as Error)?.constructor?.name === 'APIConnectionError')
    return network;
  return error;
}

/**
 * Turns LangChain chunks into the run's text messages and action calls: text content (a string, or
 * the `text` blocks of a list) extends one text message; tool-call chunks (by index, or by id)
 * become action calls with their arguments as they stream.
 */
class LangChainChunkReader {
  private text: string | undefined;
  private readonly calls = new Map<string | number, { id: string; providerId: string | undefined }>();

  constructor(private readonly output: ModelOutput) {}

  chunk(chunk: AIMessageChunk | BaseMessage | string): void {
    if (typeof chunk === 'string') return this.addText(chunk);
    const text = textOf(chunk.content);
    if (text) this.addText(text);
    const toolCallChunks = (chunk as AIMessageChunk).tool_call_chunks;
    if (toolCallChunks?.length) {
      for (const part of toolCallChunks) this.toolCall(part);
    } else if ((chunk as AIMessageChunk).tool_calls?.length && !this.calls.size) {
      // A whole message (not a stream): its calls, each in one piece.
      for (const [index, call] of (chunk as AIMessageChunk).tool_calls!.entries()) {
        this.toolCall({ index, id: call.id, name: call.name, args: JSON.stringify(call.args ?? {}) });
      }
    }
  }

  finish(): void {
    this.endText();
    for (const call of this.calls.values()) this.output.actionEnd(call.id);
    this.calls.clear();
  }

  private addText(text: string): void {
    if (!text) return;
    if (this.calls.size) {
      for (const call of this.calls.values()) this.output.actionEnd(call.id);
      this.calls.clear();
    }
    this.text ??= this.output.textStart();
    this.output.textContent(this.text, text);
  }

  private toolCall(part: { index?: number; id?: string; name?: string; args?: string }): void {
    const key = part.index ?? part.id ?? 0;
    let call = this.calls.get(key);
    if (call && part.id && call.providerId && part.id !== call.providerId) {
      this.output.actionEnd(call.id);
      call = undefined;
    }
    if (!call) {
      this.endText();
      const id = this.output.actionStart(part.id, part.name ?? '');
      call = { id, providerId: part.id };
      this.calls.set(key, call);
    }
    if (part.args) this.output.actionArgs(call.id, part.args);
  }

  private endText(): void {
    if (this.text === undefined) return;
    this.output.textEnd(this.text);
    this.text = undefined;
  }
}

/** The text of a message's content: a string, or its text blocks (reasoning and other blocks left out). */
function textOf(content: MessageContent | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const block of content) {
    if (typeof block === 'string') text += block;
    else if (block?.type === 'text' && typeof (block as unknown as { text?: unknown }).text === 'string')
      text += (block as unknown as { text: string }).text;
  }
  return text;
}
