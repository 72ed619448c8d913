import { UpstreamError } from '../core/errors.js';
import { capitalize } from './errors.js';

/**
 * The most characters of an upstream's stream held unparsed at once: a line without its newline, or a Server-Sent
 * Event without the blank line that ends it. An upstream that never sends one would otherwise grow a reader's buffer
 * until the process runs out of memory; past this, the run fails with UPSTREAM_BAD_RESPONSE. The JSON Lines reader
 * (jsonl.ts), the Chat Completions and Responses reader (adapters/openai.ts) and the guard below all use it.
 */
export const MAX_UNBROKEN_CHARS = 16 * 1024 * 1024;

/** The error for a line or an event longer than `limit` characters (or bytes). */
export function tooLongError(who: string, what: 'a line' | 'an event', limit: number): UpstreamError {
  return new UpstreamError(
    'UPSTREAM_BAD_RESPONSE',
    `${capitalize(who)} sent ${what} longer than ${limit} characters (the limit is ${limit / (1024 * 1024)} MiB).`,
    { details: { limit } },
  );
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts the bytes of a Server-Sent Events body since its last event ended (a blank line: two line ends, each LF, CR
 * or CRLF), and throws `tooLongError` once they pass `limit`: the cap for readers that are not the gateway's own (the
 * SDKs' and @ag-ui/client's), which buffer an event until it ends. Bytes, not characters: never fewer than the
 * characters, so the reader never holds more than the limit says.
 */
export class EventSizeGuard {
  /** Bytes since the last event ended. */
  private size = 0;
  /** Whether the last byte ended a line (and, if so, whether it was a CR: an LF after it is the same line end). */
  private atLineStart = true;
  private afterCr = false;

  constructor(
    private readonly who: string,
    private readonly limit = MAX_UNBROKEN_CHARS,
  ) {}

  check(chunk: Uint8Array): void {
    let size = this.size;
    let atLineStart = this.atLineStart;
    let afterCr = this.afterCr;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte === LF) {
        if (afterCr) {
          afterCr = false; // CRLF: one line end
          continue;
        }
        if (atLineStart) size = 0; // a blank line: the event has ended
        atLineStart = true;
      } else if (byte === CR) {
        if (atLineStart) size = 0;
        atLineStart = true;
        afterCr = true;
      } else {
        size++;
        atLineStart = false;
        afterCr = false;
      }
    }
    this.size = size;
    this.atLineStart = atLineStart;
    this.afterCr = afterCr;
    if (size > this.limit) throw tooLongError(this.who, 'an event', this.limit);
  }
}

/**
 * A fetch Response whose event-stream body is checked by an EventSizeGuard as it is read; any other answer is the
 * same. The body errors with the guard's UpstreamError, which the SDK reading it throws.
 */
export function guardedEventStream<R extends Response>(response: R, who: string, limit = MAX_UNBROKEN_CHARS): R {
  const body = response.body;
  if (!body || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) return response;
  const guard = new EventSizeGuard(who, limit);
  const reader = body.getReader();
  const guarded = new ReadableStream<Uint8Array>({
    pull: (controller) =>
      reader.read().then(({ done, value }) => {
        if (done) {
          controller.close();
          return;
        }
        try {
          guard.check(value);
        } catch (error) {
          controller.error(error);
          reader.cancel(error).catch(() => {});
          return;
        }
        controller.enqueue(value);
      }),
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(guarded, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers as unknown as HeadersInit,
  }) as R;
}
