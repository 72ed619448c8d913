import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { close, fakeListener, listen } from './loopback.js';

/**
 * A fake Gemini API speaking its streaming wire format: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
 * answered with server-sent events `data: {GenerateContentResponse}` (CRLF-separated, as Google sends
 * them): `candidates[0].content.parts` with text, whole `functionCall`s carrying a `thoughtSignature`,
 * thought parts; the last chunk with a `finishReason` and `usageMetadata`. Errors are
 * `{"error": {code, message, status}}`. What it answers is read from directives in the last user
 * content's text:
 *   [tokens=N]                 N text tokens "tok0 ", "tok1 ", …  (default: a short sentence)
 *   [delay=MS]                 pause between chunks
 *   [tool=NAME] [toolargs=J]   a functionCall of NAME with the arguments J
 *   [tools=A,B]                several functionCalls in one chunk (arguments {})
 *   [text-then-tool]           with [tool=…]: text before the call
 *   [thinking]                 a thought part before the text
 *   [fail=STATUS]              an HTTP error with a Google error body
 *   [fail-times=N]             with [fail=…]: only the first N requests with this prompt fail
 *   [echo-key]                 with [fail=…]: the error message repeats the x-goog-api-key it was sent
 *   [bad-key]                  400 INVALID_ARGUMENT "API key not valid" (what Gemini answers a bad key)
 *   [midstream-error]          one token, then a chunk that is an error
 *   [safety]                   one token, then finishReason SAFETY
 *   [blocked]                  promptFeedback.blockReason PROHIBITED_CONTENT, no candidates
 *   [malformed]                finishReason MALFORMED_FUNCTION_CALL
 *   [cut]                      two tokens, then the connection is destroyed
 *   [stall]                    one token, then nothing until the client goes away
 *   [no-finish]                two tokens and the end of the stream, without a finishReason
 *   [too-long]                 400 "exceeds the maximum number of tokens", in Gemini's words
 *   [odd=KIND]                 one token, then a part the API never sends, then finishReason STOP: KIND text (text
 *                              42), thought (a thought part whose text is an object) or args (a functionCall whose
 *                              args are a string)
 * When the last user content holds function responses, it answers "Tool result received: <result>".
 */
export class FakeGemini {
  readonly requests: { url: string; body: any; headers: IncomingMessage['headers'] }[] = [];
  /** Failures answered so far, by prompt ([fail-times]). */
  private readonly failures = new Map<string, number>();
  abortedRequests = 0;
  private readonly server: Server;
  private count = 0;

  constructor() {
    this.server = createServer(fakeListener((req, res) => this.handle(req, res)));
  }

  /** The base URL to give the SDK (it appends /v1beta/models/…). */
  start(): Promise<string> {
    return listen(this.server);
  }

  stop(): Promise<void> {
    return close(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const match = req.url?.match(/^\/v1beta\/models\/([^:?]+):streamGenerateContent\?alt=sse$/);
    if (req.method !== 'POST' || !match) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 404, message: 'Not found', status: 'NOT_FOUND' } }));
      return;
    }
    const model = decodeURIComponent(match[1]);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    this.requests.push({ url: req.url!, body, headers: req.headers });
    const contents: any[] = body.contents ?? [];
    const lastUser = [...contents].reverse().find((content) => content.role === 'user');
    const parts: any[] = lastUser?.parts ?? [];
    const prompt = parts
      .filter((part) => typeof part.text === 'string')
      .map((part) => part.text)
      .join(' ');
    const responsePart = parts.find((part) => part.functionResponse);
    const directive = (name: string) => prompt.match(new RegExp(`\\[${name}=([^\\]]*)\\]`))?.[1];
    const delay = Number(directive('delay') ?? 0);

    if (prompt.includes('[too-long]')) {
      res.writeHead(400, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(
        JSON.stringify({
          error: {
            code: 400,
            message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
            status: 'INVALID_ARGUMENT',
          },
        }),
      );
      return;
    }
    const fail = directive('fail') ?? (prompt.includes('[bad-key]') ? '400' : undefined);
    const failures = this.failures.get(prompt) ?? 0;
    if (fail && !responsePart && failures < Number(directive('fail-times') ?? Infinity)) {
      this.failures.set(prompt, failures + 1);
      const status =
        {
          400: 'INVALID_ARGUMENT',
          401: 'UNAUTHENTICATED',
          403: 'PERMISSION_DENIED',
          404: 'NOT_FOUND',
          429: 'RESOURCE_EXHAUSTED',
          500: 'INTERNAL',
          503: 'UNAVAILABLE',
        }[fail] ?? 'UNKNOWN';
      let message = prompt.includes('[bad-key]')
        ? 'API key not valid. Please pass a valid API key.'
        : `fake failure ${fail}`;
      // [echo-key]: the message repeats the key it was sent, as some services and proxies do.
      if (prompt.includes('[echo-key]')) message += ` for key ${String(req.headers['x-goog-api-key'])}`;
      res.writeHead(Number(fail), { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify({ error: { code: Number(fail), message, status } }));
      return;
    }

    let finished = false;
    res.on('close', () => {
      if (!finished) this.abortedRequests++;
    });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const responseId = `resp-fake${++this.count}`;
    const send = async (chunkParts: any[], finishReason?: string) => {
      if (res.destroyed) throw new Error('client went away');
      const chunk = {
        candidates: [
          { content: { parts: chunkParts, role: 'model' }, index: 0, ...(finishReason ? { finishReason } : {}) },
        ],
        ...(finishReason
          ? { usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 17 } }
          : {}),
        modelVersion: model,
        responseId,
      };
      res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    };
    const end = () => {
      finished = true;
      res.end();
    };

    try {
      if (responsePart) {
        await send(
          [
            {
              text: `Tool result received: ${responsePart.functionResponse.response?.result ?? JSON.stringify(responsePart.functionResponse.response)}`,
            },
          ],
          'STOP',
        );
        return end();
      }
      if (prompt.includes('[stall]')) {
        await send([{ text: 'tok0 ' }]);
        return; // the gateway's idle timeout or the client must end it
      }
      if (prompt.includes('[midstream-error]')) {
        await send([{ text: 'tok0 ' }]);
        res.write(
          `data: ${JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })}\r\n\r\n`,
        );
        return end();
      }
      if (prompt.includes('[blocked]')) {
        // A prompt refused outright: feedback, no candidates.
        res.write(
          `data: ${JSON.stringify({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 }, modelVersion: model, responseId })}\r\n\r\n`,
        );
        return end();
      }
      if (prompt.includes('[malformed]')) {
        await send([], 'MALFORMED_FUNCTION_CALL');
        return end();
      }
      if (prompt.includes('[safety]')) {
        await send([{ text: 'tok0 ' }]);
        await send([], 'SAFETY');
        return end();
      }
      if (prompt.includes('[cut]')) {
        await send([{ text: 'tok0 ' }]);
        await send([{ text: 'tok1 ' }]);
        finished = true;
        await new Promise((resolve) => setTimeout(resolve, 50));
        res.destroy();
        return;
      }
      if (prompt.includes('[no-finish]')) {
        await send([{ text: 'tok0 ' }]);
        await send([{ text: 'tok1 ' }]);
        return end();
      }
      const odd = directive('odd');
      if (odd) {
        // A part of a shape the API never sends, after one good token.
        await send([{ text: 'tok0 ' }]);
        if (odd === 'text') await send([{ text: 42 }]);
        else if (odd === 'thought') await send([{ text: { a: 1 }, thought: true }]);
        else await send([{ functionCall: { name: 'lookup', args: '{"q":1}' } }]);
        await send([], 'STOP');
        return end();
      }
      if (prompt.includes('[thinking]')) await send([{ text: 'Let me think about this.', thought: true }]);
      const names = directive('tools')?.split(',') ?? (directive('tool') ? [directive('tool')!] : []);
      if (names.length) {
        if (prompt.includes('[text-then-tool]')) await send([{ text: 'Let me do that. ' }]);
        const args = JSON.parse(directive('toolargs') ?? '{}');
        await send(
          names.map((name, n) => ({
            functionCall: { name, args: names.length === 1 ? args : {} },
            thoughtSignature: `sig-${responseId}-${n}`,
          })),
          'STOP',
        );
        return end();
      }
      const count = directive('tokens');
      const tokens = count
        ? Array.from({ length: Number(count) }, (_, i) => `tok${i} `)
        : ['Hello ', 'from ', 'the ', 'fake ', 'Gemini.'];
      for (const [i, token] of tokens.entries())
        await send([{ text: token }], i === tokens.length - 1 ? 'STOP' : undefined);
      end();
    } catch {
      // The client went away mid-answer; 'close' has counted it.
    }
  }
}
