import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { AudioFile, Transcriber } from '../adapters/transcription.js';
import {
  BadRequestError,
  BadUserInputError,
  GatewayError,
  NotSupportedError,
  OverloadedError,
  PayloadTooLargeError,
  toGatewayError,
} from '../core/errors.js';
import { isObject } from '../core/values.js';
import { readBodyBytes } from '../transports/http/body.js';
import { sendGatewayError, sendJson } from '../transports/responses.js';

/** What a transcription needs of its caller (an AgUiCaller is one). */
interface Caller {
  requestId: string;
  logger: Logger;
}

// Voice input, as CopilotKit ≥1.50's client asks for it: multi-route `POST {path}/transcribe` with a
// multipart/form-data body (one file field, `audio`), or single-route `{"method":"transcribe","body":{"audio":
// "<base64>","mimeType","filename"}}`. The answer is `{text}`; a failure is `{error, message, retryable}` in
// CopilotKit's words (its client reads only the body), with the gateway's `code` and the request's id.

/** CopilotKit's transcription error codes (@copilotkit/shared, TranscriptionErrorCode) that the gateway answers. */
type TranscriptionErrorCode =
  | 'service_not_configured'
  | 'invalid_request'
  | 'audio_too_short'
  | 'audio_too_long'
  | 'auth_failed'
  | 'rate_limited'
  | 'network_error'
  | 'provider_error';

/**
 * Room for multipart's own framing (boundaries, part headers) on top of the largest recording: the body
 * may be that much larger than maxBytes; the file itself is held to maxBytes once parsed.
 */
const MULTIPART_OVERHEAD_BYTES = 16 * 1024;

/**
 * Transcriptions at once in this process. Each holds its recording (up to maxBytes, 25 MiB by default) two or
 * three times over while it is read, parsed and sent on, for as long as the service takes: without a bound, a
 * burst of uploads would hold memory no other route can (run limits count runs, not uploads). Over it, the client
 * is told to retry (`rate_limited`, 503 OVERLOADED).
 */
const MAX_CONCURRENT_TRANSCRIPTIONS = 8;
let transcriptionsNow = 0;

/** Runs `work` in one of the process's transcription places, or answers OVERLOADED when none is free. */
async function inPlace(res: ServerResponse, caller: Caller, work: () => Promise<void>): Promise<void> {
  if (transcriptionsNow >= MAX_CONCURRENT_TRANSCRIPTIONS) {
    const busy = new OverloadedError(
      `The gateway is transcribing its most recordings at once (${MAX_CONCURRENT_TRANSCRIPTIONS}); try again shortly.`,
      { details: { retryAfterSeconds: 1 } },
    );
    return refuse(res, busy, caller);
  }
  transcriptionsNow++;
  try {
    await work();
  } finally {
    transcriptionsNow--;
  }
}

/** The multi-route form: a multipart/form-data upload with the recording as its `audio` field. */
export async function transcribeUpload(
  req: IncomingMessage,
  res: ServerResponse,
  transcriber: Transcriber | undefined,
  caller: Caller,
): Promise<void> {
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    const refused = new BadRequestError('Method not allowed', { status: 405 });
    return sendGatewayError(res, refused, { agUi: true, title: 'Method not allowed', withoutMessage: true });
  }
  if (!transcriber) return refuse(res, notConfigured(), caller);
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    return refuse(res, badRequest('Send the recording as multipart/form-data with a file field "audio".'), caller);
  }
  const limit = transcriber.maxBytes + MULTIPART_OVERHEAD_BYTES;
  // A declared length over the limit is refused before a byte is read.
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return refuse(res, tooLong(transcriber), caller);
  return inPlace(res, caller, () => readAndTranscribe(req, res, transcriber, contentType, limit, caller));
}

async function readAndTranscribe(
  req: IncomingMessage,
  res: ServerResponse,
  transcriber: Transcriber,
  contentType: string,
  limit: number,
  caller: Caller,
): Promise<void> {
  // (Read without the input budget: eight transcriptions at most are read at once, §8.7.)
  const bytes = await readBodyBytes(req, limit);
  if (bytes === 'aborted') return;
  if (bytes === 'too-large') return refuse(res, tooLong(transcriber), caller);
  let audio: unknown;
  try {
    // The platform's own multipart parser (undici's, behind Response): never parsed by hand.
    audio = (await new Response(bytes, { headers: { 'content-type': contentType } }).formData()).get('audio');
  } catch {
    return refuse(res, badRequest('The multipart/form-data body does not parse.'), caller);
  }
  if (!(audio instanceof Blob)) {
    return refuse(res, badRequest('The form has no file field "audio" with the recording.'), caller);
  }
  const filename = audio instanceof File && audio.name ? audio.name : 'recording.webm';
  const file = new Uint8Array(await audio.arrayBuffer());
  return transcribe(res, transcriber, { bytes: file, type: audio.type || 'audio/webm', filename }, caller);
}

/**
 * The single-route form: the envelope's body `{audio: "<base64>", mimeType?, filename?}`, read by the JSON body
 * reader (so maxBodyBytes holds it: base64 is a third larger than the recording).
 */
export async function transcribeEnvelope(
  res: ServerResponse,
  body: unknown,
  transcriber: Transcriber | undefined,
  caller: Caller,
): Promise<void> {
  if (!transcriber) return refuse(res, notConfigured(), caller);
  if (!isObject(body) || typeof body.audio !== 'string') {
    return refuse(
      res,
      badRequest('The body of a transcribe is {"audio": "<base64>", "mimeType", "filename"}.'),
      caller,
    );
  }
  const text = body.audio.replace(/\s+/g, '');
  // Buffer's decoder skips what is not base64; a body that is not base64 is refused rather than half-read.
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    return refuse(res, badRequest('The body\'s "audio" is not base64.'), caller);
  }
  const type = typeof body.mimeType === 'string' && body.mimeType ? body.mimeType : 'audio/webm';
  const filename = typeof body.filename === 'string' && body.filename ? body.filename : 'recording.webm';
  return inPlace(res, caller, () =>
    transcribe(res, transcriber, { bytes: Buffer.from(text, 'base64'), type, filename }, caller),
  );
}

async function transcribe(
  res: ServerResponse,
  transcriber: Transcriber,
  audio: AudioFile,
  caller: Caller,
): Promise<void> {
  if (audio.bytes.length === 0) {
    return refuse(res, new BadUserInputError('The recording is empty.'), caller, 'audio_too_short');
  }
  if (audio.bytes.length > transcriber.maxBytes) return refuse(res, tooLong(transcriber), caller);
  // The client going away ends the upstream call: nobody is left to read the text.
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  try {
    const text = await transcriber.transcribe(audio, controller.signal, caller.logger);
    // Sizes and types only: the recording (and its text) stay out of the logs.
    caller.logger.debug({ bytes: audio.bytes.length, type: audio.type }, 'transcribed a recording');
    return sendJson(res, 200, { text });
  } catch (error) {
    if (controller.signal.aborted) return;
    const reason = toGatewayError(error);
    if (reason.code === 'INTERNAL_SERVER_ERROR') caller.logger.error({ err: error }, 'a transcription failed');
    return refuse(res, reason, caller);
  }
}

/** The answer to a failed transcription: CopilotKit's `{error, message, retryable}`, the gateway's `code`. */
function refuse(
  res: ServerResponse,
  error: GatewayError,
  caller: Caller,
  kind: TranscriptionErrorCode = copilotKitCode(error),
): void {
  const retryAfter = error.details?.retryAfterSeconds;
  if (typeof retryAfter === 'number' && !res.headersSent) res.setHeader('retry-after', String(retryAfter));
  sendJson(res, error.status, {
    error: kind,
    message: error.code === 'INTERNAL_SERVER_ERROR' ? 'Unexpected error.' : error.message,
    retryable: kind === 'rate_limited' || kind === 'network_error',
    code: error.code,
    requestId: caller.requestId,
  });
}

/** CopilotKit's name for a gateway error of a transcription. */
function copilotKitCode(error: GatewayError): TranscriptionErrorCode {
  switch (error.code) {
    case 'NOT_SUPPORTED':
      return 'service_not_configured';
    case 'BAD_USER_INPUT':
      return 'invalid_request';
    case 'PAYLOAD_TOO_LARGE':
      return 'audio_too_long';
    case 'UPSTREAM_AUTHENTICATION_FAILED':
      return 'auth_failed';
    case 'UPSTREAM_RATE_LIMITED':
    case 'OVERLOADED':
      return 'rate_limited';
    case 'UPSTREAM_UNREACHABLE':
    case 'UPSTREAM_TIMEOUT':
      return 'network_error';
    default:
      return 'provider_error';
  }
}

function notConfigured(): NotSupportedError {
  return new NotSupportedError('Transcription is not configured on this gateway (options.transcription).');
}

function badRequest(message: string): BadUserInputError {
  return new BadUserInputError(message);
}

function tooLong(transcriber: Transcriber): PayloadTooLargeError {
  return new PayloadTooLargeError(`The recording is larger than ${transcriber.maxBytes} bytes.`);
}
