import { createServer } from 'node:http';
import { connect } from 'node:net';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { resolveOptions } from '../src/gateway/options.js';
import { readEnvironment } from '../src/env.js';
import { statusOf } from '../src/core/errors.js';
import { FakeTranscription } from './support/fake-transcription.js';
import { eventually, gatewaysPerTest, metricValue, type RunningGateway } from './support/harness.js';
import { close, listen } from './support/loopback.js';
import { until } from './support/threads.js';

// Voice input for CopilotKit ≥1.50 (AG-UI `/transcribe`), driven as @copilotkit/react-core 1.74's
// transcribeAudio sends it: multipart/form-data with one file field `audio` (multi-route), or the single-route
// envelope with the recording in base64; answered through a fake OpenAI-compatible transcription service.

const fake = new FakeTranscription();
let baseURL: string;

beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(() => fake.stop());
afterEach(() => {
  fake.requests.length = 0;
  fake.failWith = undefined;
  fake.stall = false;
});

const { start } = gatewaysPerTest();
const configured = (extra: Record<string, unknown> = {}): Promise<RunningGateway> =>
  start({ transcription: { baseURL, apiKey: 'sk-transcribe', ...extra } });

/** A recording's bytes: not valid WebM, which the gateway never looks into. */
const recording = Buffer.from(Array.from({ length: 3000 }, (_, index) => index % 251));

/** Exactly what the stock client sends on multi-route: FormData, no content-type of its own. */
function upload(url: string, bytes: Uint8Array<ArrayBuffer> = recording, init: RequestInit = {}): Promise<Response> {
  const form = new FormData();
  form.append('audio', new Blob([bytes], { type: 'audio/webm' }), 'recording.webm');
  return fetch(`${url}/transcribe`, { method: 'POST', body: form, ...init });
}

/** The single-route envelope the stock client posts to the runtime URL. */
function envelope(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'transcribe', body }),
  });
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/** A failure's answer: its status, and CopilotKit's body with the gateway's code. */
async function failure(response: Response) {
  const body = (await response.json()) as Record<string, unknown>;
  expect(typeof body.message).toBe('string');
  expect(typeof body.requestId).toBe('string');
  expect(response.status).toBe(statusOf(body.code as never));
  return { status: response.status, error: body.error, code: body.code, retryable: body.retryable };
}

describe('transcribing', () => {
  it('answers a multipart upload with the text, and sends the service the file, its name, type and the model', async () => {
    const g = await configured();
    const response = await upload(g.url);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: 'hello from the microphone' });
    expect(fake.requests).toHaveLength(1);
    const [seen] = fake.requests;
    expect(seen.authorization).toBe('Bearer sk-transcribe');
    expect(seen.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(seen.model).toBe('whisper-1');
    expect(seen.responseFormat).toBe('json');
    expect(seen.file?.name).toBe('recording.webm');
    expect(seen.file?.type).toBe('audio/webm');
    expect(seen.file?.bytes.equals(recording)).toBe(true);
  });

  it('answers the single-route envelope with the text, the recording decoded from base64', async () => {
    const g = await configured({ model: 'whisper-large-v3' });
    const response = await envelope(g.url, {
      audio: base64(recording),
      mimeType: 'audio/ogg',
      filename: 'note.ogg',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: 'hello from the microphone' });
    const [seen] = fake.requests;
    expect(seen.model).toBe('whisper-large-v3');
    expect(seen.file?.name).toBe('note.ogg');
    expect(seen.file?.type).toBe('audio/ogg');
    expect(seen.file?.bytes.equals(recording)).toBe(true);
  });

  it('says so in /info, in both forms', async () => {
    const g = await configured();
    expect((await (await fetch(`${g.url}/info`)).json()).audioFileTranscriptionEnabled).toBe(true);
    const single = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'info' }),
    });
    expect((await single.json()).audioFileTranscriptionEnabled).toBe(true);
  });

  it('is off without options.transcription: /info says false, both forms answer service_not_configured', async () => {
    const g = await start();
    expect((await (await fetch(`${g.url}/info`)).json()).audioFileTranscriptionEnabled).toBe(false);
    const notConfigured = { status: 501, error: 'service_not_configured', code: 'NOT_SUPPORTED', retryable: false };
    expect(await failure(await upload(g.url))).toEqual(notConfigured);
    expect(await failure(await envelope(g.url, { audio: base64(recording) }))).toEqual(notConfigured);
  });
});

describe('refusing', () => {
  const invalid = { status: 400, error: 'invalid_request', code: 'BAD_USER_INPUT', retryable: false };

  it('refuses a form without the audio field, a body that is not multipart, and a GET', async () => {
    const g = await configured();
    const form = new FormData();
    form.append('sound', new Blob([recording], { type: 'audio/webm' }), 'recording.webm');
    expect(await failure(await fetch(`${g.url}/transcribe`, { method: 'POST', body: form }))).toEqual(invalid);
    const text = new FormData();
    text.append('audio', 'not a file');
    expect(await failure(await fetch(`${g.url}/transcribe`, { method: 'POST', body: text }))).toEqual(invalid);
    const json = await fetch(`${g.url}/transcribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ audio: base64(recording) }),
    });
    expect(await failure(json)).toEqual(invalid);
    const broken = await fetch(`${g.url}/transcribe`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=abc' },
      body: 'this is not multipart',
    });
    expect(await failure(broken)).toEqual(invalid);
    const get = await fetch(`${g.url}/transcribe`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses an envelope without audio, or whose audio is not base64', async () => {
    const g = await configured();
    expect(await failure(await envelope(g.url, undefined))).toEqual(invalid);
    expect(await failure(await envelope(g.url, { audio: 42 }))).toEqual(invalid);
    expect(await failure(await envelope(g.url, { audio: 'not base64!' }))).toEqual(invalid);
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses an empty recording as audio_too_short, in both forms', async () => {
    const g = await configured();
    const tooShort = { status: 400, error: 'audio_too_short', code: 'BAD_USER_INPUT', retryable: false };
    expect(await failure(await upload(g.url, new Uint8Array(0)))).toEqual(tooShort);
    expect(await failure(await envelope(g.url, { audio: '' }))).toEqual(tooShort);
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses a recording over maxBytes as audio_too_long (413) without calling the service, in both forms', async () => {
    const g = await configured({ maxBytes: 1024 });
    const tooLong = { status: 413, error: 'audio_too_long', code: 'PAYLOAD_TOO_LARGE', retryable: false };
    // Over maxBytes but within the multipart framing's allowance: refused once parsed.
    expect(await failure(await upload(g.url, recording.subarray(0, 2000)))).toEqual(tooLong);
    // Far over: refused while reading (the declared length), nothing kept.
    expect(await failure(await upload(g.url, Buffer.alloc(200_000, 7)))).toEqual(tooLong);
    expect(await failure(await envelope(g.url, { audio: base64(recording) }))).toEqual(tooLong);
    // Exactly maxBytes is taken.
    expect((await upload(g.url, recording.subarray(0, 1024))).status).toBe(200);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].file?.bytes.length).toBe(1024);
  });

  it('holds the envelope to maxBodyBytes, as every JSON body', async () => {
    const g = await start({ maxBodyBytes: 2048, transcription: { baseURL } });
    const response = await envelope(g.url, { audio: base64(recording) });
    expect(response.status).toBe(413);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('when the service fails', () => {
  it.each([
    [
      401,
      {
        status: statusOf('UPSTREAM_AUTHENTICATION_FAILED'),
        error: 'auth_failed',
        code: 'UPSTREAM_AUTHENTICATION_FAILED',
        retryable: false,
      },
    ],
    [
      429,
      {
        status: statusOf('UPSTREAM_RATE_LIMITED'),
        error: 'rate_limited',
        code: 'UPSTREAM_RATE_LIMITED',
        retryable: true,
      },
    ],
    [
      500,
      {
        status: statusOf('UPSTREAM_UNAVAILABLE'),
        error: 'provider_error',
        code: 'UPSTREAM_UNAVAILABLE',
        retryable: false,
      },
    ],
  ] as const)('answers its %i in CopilotKit words, once (no retry)', async (status, expected) => {
    const g = await configured();
    fake.failWith = status;
    expect(await failure(await upload(g.url))).toEqual(expected);
    expect(fake.requests).toHaveLength(1);
    expect(await failure(await envelope(g.url, { audio: base64(recording) }))).toEqual(expected);
  });

  it("passes the service's retry-after on with rate_limited", async () => {
    const g = await configured();
    fake.failWith = 429;
    const response = await upload(g.url);
    expect(response.headers.get('retry-after')).toBe('7');
    expect((await failure(response)).error).toBe('rate_limited');
  });

  it('logs no audio, at any level, whether the service answers or fails', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const g = await start({ logger, transcription: { baseURL, apiKey: 'sk-transcribe' } });
    expect((await upload(g.url)).status).toBe(200);
    fake.failWith = 401;
    // The service echoes the key it was given: neither the log nor the client gets it.
    const answers = [
      await (await upload(g.url)).text(),
      await (await envelope(g.url, { audio: base64(recording) })).text(),
    ];
    expect(answers.join('\n')).not.toContain('sk-transcribe');
    expect(lines.length).toBeGreaterThan(0);
    const logged = lines.join('\n');
    expect(logged).not.toContain(base64(recording).slice(0, 40));
    expect(logged).not.toContain('sk-transcribe');
  });

  it('answers network_error (retryable) when the service cannot be reached', async () => {
    const closed = createServer();
    const url = await listen(closed);
    await close(closed);
    const g = await start({ transcription: { baseURL: `${url}/v1` } });
    expect(await failure(await upload(g.url))).toEqual({
      status: statusOf('UPSTREAM_UNREACHABLE'),
      error: 'network_error',
      code: 'UPSTREAM_UNREACHABLE',
      retryable: true,
    });
  });

  it('transcribes at most eight recordings at once; the next is told to retry, and a freed place is taken again', async () => {
    const g = await configured();
    fake.stall = true;
    const before = fake.requests.length;
    const controllers = Array.from({ length: 8 }, () => new AbortController());
    const held = controllers.map((controller) =>
      upload(g.url, recording, { signal: controller.signal }).catch(() => {}),
    );
    await eventually(() => fake.requests.length === before + 8, 'eight recordings at the service');
    const refused = await upload(g.url);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await failure(refused)).toEqual({
      status: statusOf('OVERLOADED'),
      error: 'rate_limited',
      code: 'OVERLOADED',
      retryable: true,
    });
    expect(fake.requests.length).toBe(before + 8);
    for (const controller of controllers) controller.abort();
    await Promise.all(held);
    fake.stall = false;
    // The places are freed as the gateway sees each client go: a new recording is taken once one is.
    let answer = await upload(g.url);
    for (let i = 0; answer.status !== 200 && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      answer = await upload(g.url);
    }
    expect(answer.status).toBe(200);
  });

  it("refuses a form of more than 16 parts, or a part's headers over 8 KiB, before parsing it or calling the service", async () => {
    // Found from outside: a 25 MiB body of 400,000 empty parts held the event loop 9 to 40 s and took a gigabyte.
    const g = await configured();
    const many = new FormData();
    for (let index = 0; index < 17; index++) many.append(`field${index}`, 'x');
    many.append('audio', new Blob([recording], { type: 'audio/webm' }), 'recording.webm');
    const crowded = await fetch(`${g.url}/transcribe`, { method: 'POST', body: many });
    const invalid = { status: 400, error: 'invalid_request', code: 'BAD_USER_INPUT', retryable: false };
    expect(await failure(crowded.clone())).toEqual(invalid);
    expect(((await crowded.json()) as { message: string }).message).toBe('The form has more than 16 parts.');
    // Sixteen parts (the recording and fifteen fields of the client's own) are taken.
    const fifteen = new FormData();
    for (let index = 0; index < 15; index++) fifteen.append(`field${index}`, 'x');
    fifteen.append('audio', new Blob([recording], { type: 'audio/webm' }), 'recording.webm');
    expect((await fetch(`${g.url}/transcribe`, { method: 'POST', body: fifteen })).status).toBe(200);
    // A part whose headers run past 8 KiB.
    const boundary = 'gateway-test-boundary';
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="audio"; filename="r.webm"\r\n` +
          `x-padding: ${'p'.repeat(9_000)}\r\ncontent-type: audio/webm\r\n\r\n`,
      ),
      recording,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const headed = await fetch(`${g.url}/transcribe`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(await failure(headed.clone())).toEqual(invalid);
    expect(((await headed.json()) as { message: string }).message).toBe(
      'A part of the form has more than 8192 bytes of headers.',
    );
    // A boundary given twice, or not plainly, is not guessed at.
    const plainBoundary = 'The multipart/form-data body needs one plain boundary in its content type.';
    const twice = await fetch(`${g.url}/transcribe`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=a; boundary=${boundary}` },
      body,
    });
    expect(await failure(twice.clone())).toEqual(invalid);
    expect(((await twice.json()) as { message: string }).message).toBe(plainBoundary);
    // Found in review: `boundary=AB,CD` is `AB,CD` to the count and `AB` to the platform's parser, which then read
    // every `--AB` part. The body is parsed with the boundary that was counted.
    const parts = Array.from({ length: 40 }, () => '--AB\r\ncontent-disposition: form-data; name="a"\r\n\r\nx\r\n');
    const comma = await fetch(`${g.url}/transcribe`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=AB,CD' },
      body: Buffer.concat([
        Buffer.from(
          `${parts.join('')}--AB\r\ncontent-disposition: form-data; name="audio"; filename="r.webm"\r\n` +
            'content-type: audio/webm\r\n\r\n',
        ),
        Buffer.from('a recording\r\n--AB--\r\n'),
      ]),
    });
    expect(await failure(comma)).toEqual(invalid);
    expect(fake.requests).toHaveLength(1);
  });

  it('takes no place of the eight while an upload arrives: uploads that never finish hold nobody else up', async () => {
    // Found from outside: eight uploads that sent a byte every ten seconds were each given a place before a byte of
    // their bodies was read, and every other recording was refused for five minutes.
    const g = await configured();
    const { hostname, port, pathname } = new URL(`${g.url}/transcribe`);
    const stalled = Array.from({ length: 9 }, () => {
      const socket = connect({ host: hostname, port: Number(port) });
      socket.on('error', () => {});
      socket.write(
        `POST ${pathname} HTTP/1.1\r\nhost: ${hostname}:${port}\r\n` +
          `content-type: multipart/form-data; boundary=b\r\ncontent-length: 100000\r\n\r\n--b\r\n`,
      );
      return socket;
    });
    try {
      // Each has begun its body (five bytes) before the recording is sent.
      await until(
        () => metricValue(g.url, 'copilot_gateway_input_held_bytes'),
        (held) => held >= 9 * 5,
        'the nine stalled bodies being read',
        10_000,
      );
      const answer = await upload(g.url);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ text: 'hello from the microphone' });
    } finally {
      for (const socket of stalled) socket.destroy();
    }
  });

  it('ends the call to the service when the client goes away', async () => {
    const g = await configured();
    fake.stall = true;
    const controller = new AbortController();
    const sent = upload(g.url, recording, { signal: controller.signal });
    await eventually(() => fake.requests.length === 1, 'the service to get the recording');
    const abandonedBefore = fake.abandoned;
    controller.abort();
    await expect(sent).rejects.toThrow();
    await eventually(() => fake.abandoned === abandonedBefore + 1, 'the call to the service to end');
  });
});

describe('configuration', () => {
  it('checks options.transcription', () => {
    expect(resolveOptions({}).transcription).toBeUndefined();
    expect(resolveOptions({ transcription: { baseURL: 'http://127.0.0.1:9/v1/' } }).transcription).toEqual({
      baseURL: 'http://127.0.0.1:9/v1',
      model: 'whisper-1',
      maxBytes: 25 * 1024 * 1024,
    });
    expect(() => resolveOptions({ transcription: { baseURL: 'localhost:9' } })).toThrow(
      'options.transcription.baseURL must be an http(s) URL',
    );
    expect(() => resolveOptions({ transcription: { baseURL, maxBytes: 0 } })).toThrow(
      'options.transcription.maxBytes must be a whole number',
    );
    expect(() => resolveOptions({ transcription: { baseURL, apiKey: 'a\nb' } })).toThrow(
      'options.transcription.apiKey must be',
    );
    expect(() => resolveOptions({ transcription: 'on' as never })).toThrow('options.transcription must be an object');
  });

  it('reads TRANSCRIPTION_* in npm start', () => {
    expect(readEnvironment({ OPENAI_API_KEY: 'sk' }).transcription).toBeUndefined();
    expect(
      readEnvironment({ TRANSCRIPTION_BASE_URL: 'https://api.openai.com/v1', OPENAI_API_KEY: 'sk\n' }).transcription,
    ).toEqual({
      baseURL: 'https://api.openai.com/v1',
      apiKey: 'sk',
    });
    expect(
      readEnvironment({
        TRANSCRIPTION_BASE_URL: 'http://127.0.0.1:8000/v1',
        TRANSCRIPTION_API_KEY: 'local',
        OPENAI_API_KEY: 'sk',
        TRANSCRIPTION_MODEL: 'Systran/faster-whisper-small',
        TRANSCRIPTION_MAX_MB: '5',
      }).transcription,
    ).toEqual({
      baseURL: 'http://127.0.0.1:8000/v1',
      apiKey: 'local',
      model: 'Systran/faster-whisper-small',
      maxBytes: 5 * 1024 * 1024,
    });
    // The OpenAI key goes only to OpenAI's service (or OPENAI_BASE_URL's): another host gets none unless given its own.
    expect(
      readEnvironment({ TRANSCRIPTION_BASE_URL: 'https://speech.example.com/v1', OPENAI_API_KEY: 'sk' }).transcription,
    ).toEqual({ baseURL: 'https://speech.example.com/v1' });
    expect(
      readEnvironment({
        TRANSCRIPTION_BASE_URL: 'http://127.0.0.1:8000/v1/',
        OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1',
        OPENAI_API_KEY: 'sk',
      }).transcription?.apiKey,
    ).toBe('sk');
    expect(() => readEnvironment({ TRANSCRIPTION_BASE_URL: 'api.openai.com' })).toThrow(
      'TRANSCRIPTION_BASE_URL must be a URL',
    );
    expect(() => readEnvironment({ TRANSCRIPTION_BASE_URL: baseURL, TRANSCRIPTION_MAX_MB: 'lots' })).toThrow(
      'TRANSCRIPTION_MAX_MB must be a whole number of megabytes',
    );
  });
});
