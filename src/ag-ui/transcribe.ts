import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { MULTIPART_OVERHEAD_BYTES, type AudioFile, type Transcriber } from '../adapters/transcription.js';
import {
  BadUserInputError,
  GatewayError,
  MethodNotAllowedError,
  NotSupportedError,
  OverloadedError,
  PayloadTooLargeError,
  toGatewayError,
  type ErrorCode,
} from '../core/errors.js';
import { isObject } from '../core/values.js';
import type { InputBudget } from '../core/input-budget.js';
import { inputOverloaded, readBodyBytes } from '../transports/http/body.js';
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
 * The most parts, and the longest headers of one, of an upload's form. The platform's parser reads a body in one go
 * and makes an object for every part: found from outside, a 25 MiB body of 400,000 empty parts held the event loop
 * 9 to 40 s and took a gigabyte. A recording's form has one part, or a few with the client's own fields.
 */
const MAX_FORM_PARTS = 16;
const MAX_PART_HEADER_BYTES = 8 * 1024;

/**
 * Transcriptions at once in this process. Each holds its recording (up to maxBytes, 25 MiB by default) two or
 * three times over while it is parsed and sent on, for as long as the service takes: without a bound, a burst of
 * uploads would hold memory no other route can (run limits count runs, not uploads). Over it, the client is told to
 * retry (`rate_limited`, 503 OVERLOADED). A place is taken once the upload has arrived: while it is read, an upload
 * counts in the input budget like every body (found from outside: eight uploads that sent a byte every ten seconds
 * held every place for five minutes, and every other user was refused).
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
  budget?: InputBudget,
): Promise<void> {
  if (req.method !== 'POST') {
    const refused = new MethodNotAllowedError('Method not allowed', 'POST');
    res.setHeader('allow', refused.allow);
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
  const bytes = await readBodyBytes(req, limit, budget);
  if (bytes === 'aborted') return;
  if (bytes === 'too-large') return refuse(res, tooLong(transcriber), caller);
  if (bytes === 'overloaded') return refuse(res, inputOverloaded(budget), caller);
  const form = checkedForm(bytes, contentType);
  if ('problem' in form) return refuse(res, badRequest(form.problem), caller);
  return inPlace(res, caller, () => parseAndTranscribe(res, transcriber, bytes, form.boundary, caller));
}

async function parseAndTranscribe(
  res: ServerResponse,
  transcriber: Transcriber,
  bytes: Buffer<ArrayBuffer>,
  boundary: string,
  caller: Caller,
): Promise<void> {
  let audio: unknown;
  try {
    // The platform's own multipart parser (undici's, behind Response): never parsed by hand.
    // Parsed with the boundary checkedForm counted, quoted, whatever else the client's content type said: undici reads
    // a content type its own way (found in review: `boundary=AB,CD` was `AB,CD` to the check and `AB` to the parser).
    const contentType = `multipart/form-data; boundary="${boundary}"`;
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
 * The boundary of an upload whose multipart framing the parser can read cheaply (MAX_FORM_PARTS,
 * MAX_PART_HEADER_BYTES), or what is wrong with it. Counted over the bytes as they are: each `--<boundary>` is a
 * part's start (or the form's end). A body whose boundary this cannot read plainly is refused, and the body is parsed
 * with this boundary, so that the count is never of another boundary than the parser's.
 */
function checkedForm(bytes: Buffer, contentType: string): { boundary: string } | { problem: string } {
  const boundaries = [...contentType.matchAll(/;\s*boundary=(?:"([^"]*)"|([^;\s]*))/gi)];
  const boundary = boundaries.length === 1 ? (boundaries[0][1] ?? boundaries[0][2]) : undefined;
  // RFC 2046's boundary: 1 to 70 of these characters, not ending in a space.
  if (boundary === undefined || !/^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/.test(boundary)) {
    return { problem: 'The multipart/form-data body needs one plain boundary in its content type.' };
  }
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');
  let parts = 0;
  let at = bytes.indexOf(delimiter);
  while (at !== -1) {
    if (++parts > MAX_FORM_PARTS + 1) return { problem: `The form has more than ${MAX_FORM_PARTS} parts.` };
    const next = bytes.indexOf(delimiter, at + delimiter.length);
    // A part's headers end at its blank line (or, in a broken one, where the next part starts); the form's closing
    // delimiter (`--<boundary>--`) has none.
    const closing = bytes[at + delimiter.length] === 0x2d && bytes[at + delimiter.length + 1] === 0x2d;
    const partEnd = next === -1 ? bytes.length : next;
    const blank = bytes.subarray(at, Math.min(partEnd, at + MAX_PART_HEADER_BYTES + 4)).indexOf('\r\n\r\n');
    if (!closing && (blank === -1 ? partEnd - at : blank) > MAX_PART_HEADER_BYTES) {
      return { problem: `A part of the form has more than ${MAX_PART_HEADER_BYTES} bytes of headers.` };
    }
    at = next;
  }
  return { boundary };
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

/** CopilotKit's names for the gateway's errors of a transcription; every other code is its `provider_error`. */
const COPILOTKIT_CODES: Partial<Record<ErrorCode, TranscriptionErrorCode>> = {
  NOT_SUPPORTED: 'service_not_configured',
  BAD_USER_INPUT: 'invalid_request',
  PAYLOAD_TOO_LARGE: 'audio_too_long',
  UPSTREAM_AUTHENTICATION_FAILED: 'auth_failed',
  UPSTREAM_RATE_LIMITED: 'rate_limited',
  OVERLOADED: 'rate_limited',
  UPSTREAM_UNREACHABLE: 'network_error',
  UPSTREAM_TIMEOUT: 'network_error',
};

/** CopilotKit's name for a gateway error of a transcription. */
function copilotKitCode(error: GatewayError): TranscriptionErrorCode {
  return COPILOTKIT_CODES[error.code] ?? 'provider_error';
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
