import { UpstreamError } from '../core/errors.js';

/** The longest line accepted (a runaway line without newlines would otherwise grow without bound). */
const MAX_LINE_CHARS = 16 * 1024 * 1024;

export interface JsonLine {
  /** The parsed line. */
  value: unknown;
  /** Its position in the stream, from 1 (blank lines counted). */
  line: number;
}

/**
 * Reads a JSON Lines body: one JSON value per line. Survives chunks split anywhere, inside a line
 * and inside a multi-byte character; accepts CRLF and skips blank lines; and reads a last line that
 * has no trailing newline (CopilotKit's runtime drops it). A line that is not JSON throws an
 * UPSTREAM_BAD_RESPONSE naming `who` and the line number; the body's own errors pass through.
 */
export async function* readJsonLines(body: AsyncIterable<Uint8Array>, who: string): AsyncGenerator<JsonLine> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let lineNumber = 0;

  function parse(raw: string): JsonLine | undefined {
    lineNumber++;
    const text = raw.endsWith('\r') ? raw.slice(0, -1).trim() : raw.trim();
    if (text === '') return undefined;
    try {
      return { value: JSON.parse(text), line: lineNumber };
    } catch {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `${capitalize(who)} sent line ${lineNumber}, which is not JSON.`, {
        details: { line: lineNumber },
        cause: new Error(`line ${lineNumber}: ${text.slice(0, 200)}`),
      });
    }
  }

  for await (const chunk of body) {
    // The part already buffered has no newline: only the new text is searched (a long line stays linear).
    const searchFrom = buffer.length;
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let newline = buffer.indexOf('\n', searchFrom); newline !== -1; newline = buffer.indexOf('\n', start)) {
      const line = parse(buffer.slice(start, newline));
      start = newline + 1;
      if (line) yield line;
    }
    buffer = start === 0 ? buffer : buffer.slice(start);
    if (buffer.length > MAX_LINE_CHARS) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `${capitalize(who)} sent a line longer than ${MAX_LINE_CHARS} characters.`);
    }
  }
  buffer += decoder.decode();
  const last = parse(buffer);
  if (last) yield last;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
