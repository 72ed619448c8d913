import type { EventSourceMessage } from 'eventsource-parser';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import { UpstreamError } from '../core/errors.js';
import { tokenUsage } from '../core/events.js';
import { ownText } from '../core/values.js';
import type { ModelOutput } from './adapter.js';

/**
 * A Chat Completions chunk that carries one piece of text and nothing else, written as OpenAI and
 * the compatible servers write it (compact JSON): `{"id":"…", …, "choices":[{"index":0,
 * "delta":{"content":"…"}, "logprobs":null, "finish_reason":null}], …}`, the other keys' values
 * strings without escapes, integers, `null`, `true` or `false`. Captures the id and the content as
 * written (escapes not yet read).
 *
 * Why: a model sends one such chunk per token, and `JSON.parse` of each (about 250 bytes: the id,
 * model and fingerprint again every time) made all of its objects and strings to read two of them:
 * about 1.5 µs a chunk on this machine, the largest single cost of a streamed answer (13% of the
 * gateway's CPU in the benchmark's burst; BENCHMARKS.md, step 37). This expression reads the same
 * chunk in about a tenth of that. It accepts only text that is JSON, and JSON whose parse gives the
 * reader nothing but that id and content: every other key is neither `id` (JSON.parse keeps a
 * repeated key's last value), `choices` nor `error`; the choice has no other key, the delta no
 * other field. Anything else (the first chunk's role, tool calls, a finish reason, usage, an
 * error, whitespace, another shape) is parsed by `JSON.parse` as before, so what the run receives
 * is the same either way; test/openai-chunks.test.ts compares the two on generated chunks.
 */
const TEXT_CHUNK = new RegExp(
  [
    '^\\{"id":"([^"\\\\\\x00-\\x1f]*)",',
    `(?:${scalarMember()},)*`,
    '"choices":\\[\\{"index":0,"delta":\\{"content":',
    '"((?:[^"\\\\\\x00-\\x1f]|\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4}))*)"\\}',
    '(?:,"logprobs":null)?,"finish_reason":null\\}\\]',
    `(?:,${scalarMember()})*`,
    '\\}$',
  ].join(''),
);

/** The longest chunk read by TEXT_CHUNK (a token's is about 250 characters). */
const MAX_TEXT_CHUNK = 16 * 1024;

/**
 * A key other than the three the reader reads, with a value that is a string without escapes, an integer, null, true or
 * false.
 */
function scalarMember(): string {
  return (
    '"(?!id"|choices"|error")[A-Za-z_][A-Za-z0-9_]*":' +
    '(?:"[^"\\\\\\x00-\\x1f]*"|-?(?:0|[1-9][0-9]*)|null|true|false)'
  );
}

/**
 * Turns Chat Completions chunks into the run's text messages and action calls. Text deltas of one
 * network read are joined and written once (`flush`), so tokens that arrived together become one
 * chunk; the joined text is the same.
 */
export class ChatChunkReader {
  done = false;
  private finished = false;
  // This completion's open text message and open tool calls, by the provider's tool-call index
  // (so calls whose deltas interleave keep their own arguments), with the provider's call id.
  private openText: string | undefined;
  private pendingText = '';
  /** The reasoning message open (reasoning models on compatible servers), if any. */
  private openReasoning: string | undefined;
  /** Created with the first tool call: a held text stream pays for every empty map it keeps. */
  private openCalls: Map<number, { id: string; providerId: string | undefined }> | undefined;
  private parentId: string | undefined;

  constructor(
    private readonly output: ModelOutput,
    /** Whether a chunk of text alone is read without JSON.parse (TEXT_CHUNK); off only to compare the two in tests. */
    private readonly textChunks = true,
  ) {}

  event(event: EventSourceMessage): void {
    if (this.done) return;
    const data = event.data;
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    // (Long chunks are left to JSON.parse: the expression backtracks a step a character, and a
    // whole answer in one chunk, which some servers send, would overflow its stack.)
    if (this.textChunks && event.event === undefined && data.length <= MAX_TEXT_CHUNK) {
      const text = TEXT_CHUNK.exec(data);
      if (text !== null) {
        const written = text[2];
        // A JSON string's body, checked by the expression: read as JSON only when it has escapes. A capture is a view
        // into the network read (see ownText): the run keeps a copy.
        this.text(written.includes('\\') ? (JSON.parse(`"${written}"`) as string) : ownText(written), text[1]);
        return;
      }
    }
    let chunk: ChatCompletionChunk & { error?: { message?: string } };
    try {
      chunk = JSON.parse(data);
    } catch {
      this.flush(); // what came before the bad event reaches the client
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', 'The model provider sent an event that is not JSON.');
    }
    if (event.event === 'error' || chunk?.error) {
      this.flush();
      const message = typeof chunk?.error?.message === 'string' ? chunk.error.message : undefined;
      throw new UpstreamError(
        'UPSTREAM_UNAVAILABLE',
        'The model provider reported an error in the middle of its answer.',
        {
          cause: new Error(message ?? data.slice(0, 500)),
        },
      );
    }
    if (chunk === null || typeof chunk !== 'object') throw this.malformed('a chunk that is not an object');
    // What the call used: on its own last chunk (no choices) when asked for with stream_options.include_usage.
    if (chunk.usage) this.usage(chunk.usage, chunk.model);
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta;
    const chunkId = typeof chunk.id === 'string' ? chunk.id : undefined;
    // The model's reasoning, as compatible servers of reasoning models send it beside the answer: DeepSeek, vLLM and
    // LM Studio as `reasoning_content`, OpenRouter and Ollama as `reasoning` (OpenAI's own API sends none).
    const thinking = delta as { reasoning_content?: unknown; reasoning?: unknown } | undefined;
    const reasoning: unknown = thinking?.reasoning_content || thinking?.reasoning;
    if (reasoning) {
      if (typeof reasoning !== 'string') throw this.malformed('reasoning that is not a string');
      this.reason(reasoning);
    }
    const content: unknown = delta?.content;
    if (content) {
      if (typeof content !== 'string') throw this.malformed('text content that is not a string');
      this.text(content, chunkId);
    }
    if (delta?.tool_calls?.length) {
      if (!Array.isArray(delta.tool_calls)) throw this.malformed('tool calls that are not a list');
      this.flush();
      for (const toolCall of delta.tool_calls) {
        if (!isToolCallDelta(toolCall)) throw this.malformed('a tool call of the wrong shape');
        this.toolCall(toolCall, chunkId);
      }
    }
    if (choice.finish_reason) this.finished = true;
  }

  private usage(usage: CompletionUsage, model: unknown): void {
    if (typeof usage !== 'object') return;
    const report = tokenUsage('openai', model, {
      inputTokens: usage.prompt_tokens,
      outputTokens: usage.completion_tokens,
      totalTokens: usage.total_tokens,
      reasoningTokens: usage.completion_tokens_details?.reasoning_tokens,
      cachedInputTokens: usage.prompt_tokens_details?.cached_tokens,
    });
    if (report) this.output.usage(report);
  }

  /** A piece of the model's reasoning: a reasoning message of its own, ended when the answer (or a call) starts. */
  private reason(content: string): void {
    if (this.openReasoning === undefined) this.openReasoning = this.output.reasoningStart();
    this.output.reasoningContent(this.openReasoning, content);
  }

  private endReasoning(): void {
    if (this.openReasoning === undefined) return;
    this.output.reasoningEnd(this.openReasoning);
    this.openReasoning = undefined;
  }

  /** A piece of the completion's text (an empty one says nothing). */
  private text(content: string, chunkId: string | undefined): void {
    if (content === '') return;
    if (this.openReasoning !== undefined) this.endReasoning();
    this.endCalls();
    // (The id is kept as long as the message: read by the expression, it would be a view into the read; see ownText.)
    if (this.openText === undefined) this.parentId = this.openText = this.output.textStart(chunkId && ownText(chunkId));
    this.pendingText += content;
  }

  /** Writes the text that arrived since the last flush as one chunk. */
  flush(): void {
    if (this.pendingText === '' || this.openText === undefined) return;
    const text = this.pendingText;
    this.pendingText = '';
    this.output.textContent(this.openText, text);
  }

  /** The stream has ended: everything must have been said, and is closed. */
  finish(): void {
    this.flush();
    if (!this.finished) {
      throw new UpstreamError(
        'UPSTREAM_STREAM_INTERRUPTED',
        'The model provider ended its stream before the answer was complete.',
      );
    }
    this.endCalls();
    this.endReasoning();
    if (this.openText !== undefined) this.output.textEnd(this.openText);
    this.openText = undefined;
  }

  /**
   * UPSTREAM_BAD_RESPONSE for a chunk that parses but is not what Chat Completions sends; what came before reaches the
   * client.
   */
  private malformed(what: string): UpstreamError {
    this.flush();
    return new UpstreamError('UPSTREAM_BAD_RESPONSE', `The model provider sent ${what}.`);
  }

  private toolCall(toolCall: ChatCompletionChunk.Choice.Delta.ToolCall, chunkId: string | undefined): void {
    const openCalls = (this.openCalls ??= new Map());
    let call = openCalls.get(toolCall.index);
    // Some OpenAI-compatible servers send every call at index 0: a different id is a new call.
    if (call && toolCall.id && call.providerId !== undefined && toolCall.id !== call.providerId) {
      this.output.actionEnd(call.id);
      call = undefined;
    }
    if (!call) {
      this.endReasoning();
      if (this.openText !== undefined) this.output.textEnd(this.openText);
      this.openText = undefined;
      const id = this.output.actionStart(toolCall.id, toolCall.function?.name ?? '', this.parentId ?? chunkId);
      call = { id, providerId: toolCall.id };
      openCalls.set(toolCall.index, call);
    } else if (toolCall.id && call.providerId === undefined) {
      call.providerId = toolCall.id; // the id came in a later delta than the call's first
    }
    const args = toolCall.function?.arguments;
    if (args) this.output.actionArgs(call.id, args);
  }

  private endCalls(): void {
    // Called for every text delta: an empty map is left as it is (clear() allocates a new table).
    const openCalls = this.openCalls;
    if (openCalls === undefined || openCalls.size === 0) return;
    for (const call of openCalls.values()) this.output.actionEnd(call.id);
    openCalls.clear();
  }
}

/**
 * A tool-call delta the reader can take: a numeric index, an id, a name and arguments, each when present (some
 * compatible servers leave the index out).
 */
function isToolCallDelta(value: unknown): value is ChatCompletionChunk.Choice.Delta.ToolCall {
  if (value === null || typeof value !== 'object') return false;
  const call = value as { index?: unknown; id?: unknown; function?: unknown };
  if (call.index != null && typeof call.index !== 'number') return false;
  if (call.id != null && typeof call.id !== 'string') return false;
  if (call.function == null) return true;
  if (typeof call.function !== 'object') return false;
  const fn = call.function as { name?: unknown; arguments?: unknown };
  return (fn.name == null || typeof fn.name === 'string') && (fn.arguments == null || typeof fn.arguments === 'string');
}
