import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { ConfigurationError, GatewayError, UpstreamError } from '../core/errors.js';
import { upstreamNetworkError, upstreamStatusError } from '../upstream/errors.js';
import type { ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';
import { toChatMessages, toChatTools, toToolChoice } from './openai-messages.js';

export interface OpenAIAdapterOptions {
  /** API key; servers that need none (Ollama, vLLM) may leave it out when `baseURL` is set. */
  apiKey?: string;
  /** Base URL of any OpenAI-compatible server. @default "https://api.openai.com/v1" */
  baseURL?: string;
  /** Model used unless a request's forwardedParameters.model names another. @default "gpt-4o-mini" */
  model?: string;
  /** Retries before the stream starts (429, 5xx, connection errors), by the openai client. @default 2 */
  maxRetries?: number;
  /** Extra headers for every request (Azure's api-key, gateways' routing headers). */
  defaultHeaders?: Record<string, string>;
  /** Extra query parameters for every request (Azure's api-version). */
  defaultQuery?: Record<string, string>;
  /** A ready client instead of the options above. */
  client?: OpenAI;
}

const WHO = 'the model provider';

/** Chat Completions streaming, for OpenAI and every OpenAI-compatible server. */
export class OpenAIAdapter implements ModelAdapter {
  readonly name = 'openai';
  readonly model: string;
  private readonly client: OpenAI;

  constructor(options: OpenAIAdapterOptions = {}) {
    if (!options.client && !options.apiKey && !options.baseURL) {
      throw new ConfigurationError('OpenAIAdapter needs an apiKey (or a baseURL for a server that needs no key).');
    }
    this.model = options.model ?? 'gpt-4o-mini';
    this.client =
      options.client ??
      new OpenAI({
        apiKey: options.apiKey || 'not-needed',
        baseURL: options.baseURL,
        maxRetries: options.maxRetries ?? 2,
        defaultHeaders: options.defaultHeaders,
        defaultQuery: options.defaultQuery,
        // The run engine owns time limits (an idle timeout that any token resets).
        timeout: 24 * 60 * 60 * 1000,
      });
  }

  async stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const params = request.forwardedParameters;
    const tools = toChatTools(request.tools);
    const body: ChatCompletionCreateParamsStreaming = {
      model: params.model || this.model,
      messages: toChatMessages(request.messages),
      stream: true,
      ...(tools.length ? { tools } : {}),
      ...(params.maxTokens != null ? { max_tokens: params.maxTokens } : {}),
      ...(params.temperature != null ? { temperature: params.temperature } : {}),
      ...(params.stop?.length ? { stop: params.stop } : {}),
    };
    const toolChoice = tools.length ? toToolChoice(params) : undefined;
    if (toolChoice) body.tool_choice = toolChoice;

    // This completion's open text message and open tool calls, by the provider's tool-call index
    // (so calls whose deltas interleave keep their own arguments), with the provider's call id.
    let openText: string | undefined;
    const openCalls = new Map<number, { id: string; providerId: string | undefined }>();
    let parentId: string | undefined;
    let finished = false;
    let started = false;
    const endCalls = () => {
      for (const call of openCalls.values()) output.actionEnd(call.id);
      openCalls.clear();
    };
    try {
      const stream = await this.client.chat.completions.create(body, { signal });
      started = true;
      for await (const chunk of stream) {
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta;
        if (delta?.content) {
          endCalls();
          if (openText === undefined) parentId = openText = output.textStart(chunk.id);
          output.textContent(openText, delta.content);
        }
        for (const toolCall of delta?.tool_calls ?? []) {
          let call = openCalls.get(toolCall.index);
          // Some OpenAI-compatible servers send every call at index 0: a different id is a new call.
          if (call && toolCall.id && call.providerId !== undefined && toolCall.id !== call.providerId) {
            output.actionEnd(call.id);
            call = undefined;
          }
          if (!call) {
            if (openText !== undefined) output.textEnd(openText);
            openText = undefined;
            const id = output.actionStart(toolCall.id, toolCall.function?.name ?? '', parentId ?? chunk.id);
            call = { id, providerId: toolCall.id };
            openCalls.set(toolCall.index, call);
          } else if (toolCall.id && call.providerId === undefined) {
            call.providerId = toolCall.id; // the id came in a later delta than the call's first
          }
          const args = toolCall.function?.arguments;
          if (args) output.actionArgs(call.id, args);
        }
        if (choice.finish_reason) finished = true;
      }
    } catch (error) {
      throw toUpstreamError(error, signal, started);
    }
    if (!finished) {
      throw new UpstreamError('UPSTREAM_STREAM_INTERRUPTED', 'The model provider ended its stream before the answer was complete.');
    }
    endCalls();
    if (openText !== undefined) output.textEnd(openText);
  }
}

/** Maps the openai client's errors to the shared upstream codes, with what a developer can act on. */
function toUpstreamError(error: unknown, signal: AbortSignal, started: boolean): unknown {
  if (signal.aborted) return signal.reason;
  if (error instanceof GatewayError) return error;
  if (error instanceof OpenAI.APIUserAbortError) return signal.reason ?? error;
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    const status = error.status;
    const detail = (error.error as { message?: string } | undefined)?.message ?? error.message;
    return upstreamStatusError(WHO, status, {
      detail,
      cause: error,
      hint: status === 401 || status === 403 ? 'Check OPENAI_API_KEY.' : undefined,
    });
  }
  if (started) {
    // The answer had begun streaming: a network error now means the body broke off midway.
    return upstreamNetworkError(WHO, error, 'stream');
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) return upstreamNetworkError(WHO, error, 'response');
  const unreachable = upstreamNetworkError(WHO, (error as { cause?: unknown })?.cause ?? error, 'connect');
  if (unreachable.code === 'UPSTREAM_UNREACHABLE') {
    return new UpstreamError('UPSTREAM_UNREACHABLE', `${unreachable.message} Check OPENAI_BASE_URL and that the server is running.`, { cause: error });
  }
  return unreachable;
}
