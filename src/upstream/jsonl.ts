import { StringDecoder } from 'node:string_decoder';
import { UpstreamError } from '../core/errors.js';
import { capitalize } from './errors.js';
import { MAX_UNBROKEN_CHARS, tooLongError } from './stream-limits.js';

/** The longest line accepted (a runaway line without newlines would otherwise grow without bound). */
const MAX_LINE_CHARS = MAX_UNBROKEN_CHARS;

export interface JsonLine {
  /** The parsed line. */
  value: unknown;
  /** Its position in the stream, from 1 (blank lines counted). */
  line: number;
}

/**
 * Decodes a JSON Lines body fed chunk by chunk, handing each line to `onLine` synchronously: one
 * JSON value per line. Survives chunks split anywhere, inside a line and inside a multi-byte
 * character; accepts CRLF and skips blank lines; and reads a last line that has no trailing newline
 * (CopilotKit's runtime drops it) at `end()`. A line that is not JSON throws an UPSTREAM_BAD_RESPONSE
 * naming `who` and the line number.
 */
export class JsonLinesDecoder {
  // A byte order mark before the first line is trimmed with the line's white space.
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private lineNumber = 0;

  constructor(
    private readonly who: string,
    /** Each line's value and its position (no object per line: an agent sends a line per token). */
    private readonly onLine: (value: unknown, line: number) => void,
  ) {}

  feed(chunk: Uint8Array): void {
    // The part already buffered has no newline: only the new text is searched (a long line stays linear).
    const searchFrom = this.buffer.length;
    const buffer = this.buffer + this.decoder.write(chunk);
    let start = 0;
    try {
      for (let newline = buffer.indexOf('\n', searchFrom); newline !== -1; newline = buffer.indexOf('\n', start)) {
        const raw = buffer.slice(start, newline);
        start = newline + 1;
        this.line(raw);
      }
    } finally {
      this.buffer = start === 0 ? buffer : buffer.slice(start);
    }
    if (this.buffer.length > MAX_LINE_CHARS) {
      throw tooLongError(this.who, 'a line', MAX_LINE_CHARS);
    }
  }

  /** The body has ended: reads a last line without a newline. */
  end(): void {
    const rest = this.buffer + this.decoder.end();
    this.buffer = '';
    this.line(rest);
  }

  private line(raw: string): void {
    const lineNumber = ++this.lineNumber;
    const text = raw.endsWith('\r') ? raw.slice(0, -1).trim() : raw.trim();
    if (text === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new UpstreamError(
        'UPSTREAM_BAD_RESPONSE',
        `${capitalize(this.who)} sent line ${lineNumber}, which is not JSON.`,
        {
          details: { line: lineNumber },
          cause: new Error(`line ${lineNumber}: ${text.slice(0, 200)}`),
        },
      );
    }
    this.onLine(value, lineNumber);
  }
}

/** The same, as an async generator over a body to iterate (for callers that want to `for await`). */
export async function* readJsonLines(body: AsyncIterable<Uint8Array>, who: string): AsyncGenerator<JsonLine> {
  const ready: JsonLine[] = [];
  const decoder = new JsonLinesDecoder(who, (value, line) => ready.push({ value, line }));
  for await (const chunk of body) {
    decoder.feed(chunk);
    yield* ready.splice(0);
  }
  decoder.end();
  yield* ready.splice(0);
}
