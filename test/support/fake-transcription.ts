import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, fakeListener, listen } from './loopback.js';

/** What the fake saw of one transcription request. */
export interface SeenTranscription {
  path: string;
  authorization: string | undefined;
  contentType: string;
  model: string | null;
  responseFormat: string | null;
  file: { bytes: Buffer; name: string; type: string } | undefined;
}

/**
 * A fake OpenAI-compatible transcription service: `POST /v1/audio/transcriptions`, a multipart/form-data body
 * (parsed with the platform's parser, as a real server's framework would) with `file` and `model`, answered
 * `{"text": …}` as OpenAI answers `response_format: json`. `failWith` makes it answer that status instead,
 * with OpenAI's error JSON (401 invalid_api_key, 429 rate_limit_exceeded, 500 server_error).
 */
export class FakeTranscription {
  readonly requests: SeenTranscription[] = [];
  /** The text every transcription answers. */
  text = 'hello from the microphone';
  /** A status to answer with instead of a transcription. */
  failWith: 401 | 429 | 500 | undefined;
  /** Answer nothing until the client goes away. */
  stall = false;
  /** Requests whose client went away before the answer. */
  abandoned = 0;
  private server: Server = createServer(fakeListener((req, res) => this.handle(req, res)));

  async start(): Promise<string> {
    return `${await listen(this.server)}/v1`;
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/audio/transcriptions') {
      return answer(res, 404, { error: { message: `Unknown path ${req.url}`, type: 'invalid_request_error' } });
    }
    const contentType = req.headers['content-type'] ?? '';
    const form = await new Response(Buffer.concat(chunks), { headers: { 'content-type': contentType } }).formData();
    const file = form.get('file');
    this.requests.push({
      path: req.url,
      authorization: req.headers.authorization,
      contentType,
      model: form.get('model') as string | null,
      responseFormat: form.get('response_format') as string | null,
      file:
        file instanceof File
          ? { bytes: Buffer.from(await file.arrayBuffer()), name: file.name, type: file.type }
          : undefined,
    });
    if (this.stall) {
      res.once('close', () => this.abandoned++);
      return;
    }
    if (this.failWith === 401) {
      return answer(res, 401, {
        error: {
          // Echoing the key it was given, as some compatible services do: the gateway must not pass it on or log it.
          message: `Incorrect API key provided: ${req.headers.authorization?.replace(/^Bearer /, '') ?? ''}.`,
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      });
    }
    if (this.failWith === 429) {
      res.setHeader('retry-after', '7');
      return answer(res, 429, {
        error: {
          message: 'Rate limit reached for requests.',
          type: 'requests',
          param: null,
          code: 'rate_limit_exceeded',
        },
      });
    }
    if (this.failWith === 500) {
      return answer(res, 500, {
        error: {
          message: 'The server had an error while processing your request.',
          type: 'server_error',
          param: null,
          code: null,
        },
      });
    }
    if (!(file instanceof File)) {
      return answer(res, 400, { error: { message: "'file' is a required property", type: 'invalid_request_error' } });
    }
    return answer(res, 200, { text: this.text });
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}
