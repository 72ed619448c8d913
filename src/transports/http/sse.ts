// Incremental delivery as server-sent events: each payload a `next` event, then `complete`.

/** The content type of a streamed answer in SSE. */
export const SSE_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

/** The event that ends an SSE answer. */
export const SSE_COMPLETE = 'event: complete\ndata:\n\n';

/** A comment: what the answer begins with, and its keep-alive signal. */
export const SSE_COMMENT = ':\n\n';

/** A payload (its JSON) as a `next` event. */
export function sseEvent(json: string): string {
  return `event: next\ndata: ${json}\n\n`;
}

/** Apollo writes one JSON payload per multipart chunk; SSE carries the same payload as a `next` event. */
export function toSseEvent(chunk: string): string {
  const start = chunk.indexOf('\r\n\r\n') + 4;
  const end = chunk.lastIndexOf('\r\n---');
  return sseEvent(chunk.slice(start, end));
}
