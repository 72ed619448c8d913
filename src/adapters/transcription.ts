import type { Logger } from 'pino';
import { FormData } from 'undici';
import { ConfigurationError, UpstreamError } from '../core/errors.js';
import { isHttpUrl } from '../core/urls.js';
import type { UpstreamClient } from '../upstream/client.js';
import { retryPolicy, type RetryPolicy } from '../upstream/retry.js';

/** `createGateway({ transcription })`: an OpenAI-compatible speech-to-text service for voice input. */
export interface TranscriptionOptions {
  /** The service's base URL, such as "https://api.openai.com/v1": `POST {baseURL}/audio/transcriptions`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer <apiKey>`; none for a local service that takes no key. */
  apiKey?: string;
  /** @default "whisper-1" */
  model?: string;
  /** The largest recording accepted, in bytes (OpenAI's own limit is 25 MB). @default 26214400 */
  maxBytes?: number;
}

export type ResolvedTranscription = Required<Omit<TranscriptionOptions, 'apiKey'>> & { apiKey?: string };

/** A recording as a client sent it. */
export interface AudioFile {
  bytes: Uint8Array<ArrayBuffer>;
  /** Its media type, such as "audio/webm". */
  type: string;
  filename: string;
}

/** Turns a recording into text. */
export interface Transcriber {
  /** The largest recording it takes, in bytes. */
  readonly maxBytes: number;
  /** The text; an UpstreamError when the service fails. `signal` aborts the call (the client went away). */
  transcribe(audio: AudioFile, signal: AbortSignal, logger: Logger): Promise<string>;
}

const DEFAULT_TRANSCRIPTION_MODEL = 'whisper-1';
const DEFAULT_TRANSCRIPTION_MAX_BYTES = 25 * 1024 * 1024;
/**
 * Room for multipart's own framing (boundaries, part headers) on top of the largest recording: an upload's body
 * may be that much larger than maxBytes; the file itself is held to maxBytes once parsed.
 */
export const MULTIPART_OVERHEAD_BYTES = 16 * 1024;

/** Checks `options.transcription` (ConfigurationError naming the field); undefined when it is not given. */
export function resolveTranscription(value: unknown): ResolvedTranscription | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigurationError('options.transcription must be an object: {baseURL, apiKey?, model?, maxBytes?}.');
  }
  const { baseURL, apiKey, model, maxBytes } = value as Record<string, unknown>;
  if (typeof baseURL !== 'string' || !isHttpUrl(baseURL)) {
    throw new ConfigurationError(
      `options.transcription.baseURL must be an http(s) URL such as "https://api.openai.com/v1" (got ` +
        `${JSON.stringify(baseURL)}).`,
    );
  }
  // A key with a line break (read from a secret file) could not be sent as a header.
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey === '' || /[\r\n]/.test(apiKey))) {
    throw new ConfigurationError('options.transcription.apiKey must be a non-empty string on one line.');
  }
  if (model !== undefined && (typeof model !== 'string' || model.trim() === '')) {
    throw new ConfigurationError('options.transcription.model must be a non-empty string such as "whisper-1".');
  }
  const limit = maxBytes ?? DEFAULT_TRANSCRIPTION_MAX_BYTES;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 1024 * 1024 * 1024) {
    throw new ConfigurationError(
      `options.transcription.maxBytes must be a whole number from 1 to 1073741824 (got ${JSON.stringify(maxBytes)}).`,
    );
  }
  return {
    baseURL: baseURL.replace(/\/+$/, ''),
    ...(apiKey !== undefined ? { apiKey } : {}),
    model: model ?? DEFAULT_TRANSCRIPTION_MODEL,
    maxBytes: limit,
  };
}

/**
 * OpenAI's transcription API (`POST {baseURL}/audio/transcriptions`, multipart `file` and `model`, answer
 * `{text}`), which OpenAI-compatible servers (LocalAI, vLLM, faster-whisper servers, Groq) speak too.
 */
export class OpenAITranscriber implements Transcriber {
  readonly maxBytes: number;
  /**
   * One retry, for a gateway or service that is briefly down (502–504, or no connection); not for a rate limit:
   * someone waits at the microphone, and the client is told `rate_limited` (retryable) at once instead.
   */
  private readonly policy: RetryPolicy = retryPolicy(
    { maxRetries: 1, retryStatuses: [502, 503, 504], attemptTimeoutMs: 60_000, totalTimeoutMs: 120_000 },
    'transcription',
  );

  constructor(
    private readonly options: ResolvedTranscription,
    private readonly upstream: UpstreamClient,
  ) {
    this.maxBytes = options.maxBytes;
  }

  async transcribe(audio: AudioFile, signal: AbortSignal, logger: Logger): Promise<string> {
    // Undici's FormData: the one its client writes (see UpstreamCall.form).
    const form = new FormData();
    // The service tells formats apart by the file name's extension as much as by the type.
    form.append('file', new Blob([audio.bytes], { type: audio.type }), audio.filename);
    form.append('model', this.options.model);
    form.append('response_format', 'json');
    const answer = await this.upstream.json<{ text?: unknown }>({
      url: `${this.options.baseURL}/audio/transcriptions`,
      headers: this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {},
      form,
      who: 'the transcription service',
      policy: this.policy,
      signal,
      logger,
    });
    if (answer === null || typeof answer !== 'object' || typeof answer.text !== 'string') {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', 'The transcription service answered without a text.');
    }
    return answer.text;
  }
}
