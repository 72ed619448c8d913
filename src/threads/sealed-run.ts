import type { SequencedEvent } from '../core/events.js';
import { textBytes } from '../core/values.js';

// How the memory store keeps a finished run's events: one flat string, decoded when someone reads the run (a
// replay, the transcript at the next claim, a thread read), which is rare next to storing. As objects, a run's events
// cost several times their text (every object and string has a header, ids made by randomUUID are ropes of some fifteen
// pieces, chunk ends in a Uint32Array live outside the heap); as one string they cost their characters.
//
// The string is the JSON of [events, packings]: `events` are the run's events with each stretch of consecutive chunks
// of one message (or argument stream) merged into one event carrying the last chunk's sequence, and `packings` says,
// for each merged event, where its chunks began and how long each was, so a replay after any sequence, even one in the
// middle of a merged stretch, still gets exactly the rest. JSON is what the Redis store keeps events as, so a decoded
// event is what a reader of that store gets: the same fields and values, a fresh object.

/**
 * A merged event: its index in `events`, the sequence of its first chunk, and each chunk's length, in order: one
 * base-36 digit each when all are under 36, as a model's tokens are (a character per chunk instead of two or three),
 * else the numbers.
 */
export type Packing = [index: number, first: number, lengths: string | number[]];

/**
 * A run's events, merged, and their packings as one flat string (a string that JSON.stringify returns is one piece;
 * one built with `+=` would be a rope holding every chunk). A running run's events (live-events.ts) are sealed so.
 */
export function sealed(events: readonly SequencedEvent[], packings: readonly Packing[]): string {
  return JSON.stringify([events, packings]);
}

/**
 * The sealed run's events after `afterSequence` (-1 for all), fresh objects: stretches of chunks come merged, and a
 * stretch the reader had begun comes as its rest (from the chunk after `afterSequence` on).
 */
export function unsealEvents(sealed: string, afterSequence: number): SequencedEvent[] {
  const [events, packings] = JSON.parse(sealed) as [SequencedEvent[], Packing[]];
  for (const [index, first, lengths] of packings) {
    const event = events[index];
    if (afterSequence < first || event.sequence <= afterSequence) continue;
    // The reader has the chunks from `first` to `afterSequence`: cut what they said.
    let cut = 0;
    for (let k = 0; k <= afterSequence - first && k < lengths.length; k++) {
      cut += typeof lengths === 'string' ? parseInt(lengths[k], 36) : lengths[k];
    }
    if (event.type === 'TextMessageContent' || event.type === 'ReasoningContent')
      events[index] = { ...event, content: event.content.slice(cut) };
    else if (event.type === 'ActionExecutionArgs') events[index] = { ...event, args: event.args.slice(cut) };
  }
  return events.filter((event) => event.sequence > afterSequence);
}

/** About what a string costs on the heap: a header (16 bytes and padding), then its characters (textBytes). */
export function stringBytes(text: string): number {
  return STRING_HEADER + textBytes(text);
}

const STRING_HEADER = 20;

/**
 * What a string joined from parts counts for (as stringBytes says), from the parts' own counts: two bytes a character
 * when any part has them. The joined string is not read again (a long thread's input is joined at every run).
 */
export function joinedStringBytes(joined: string, parts: readonly { text: string; bytes: number }[]): number {
  const wide = parts.some(({ text, bytes }) => bytes > STRING_HEADER + text.length);
  return STRING_HEADER + (wide ? 2 : 1) * joined.length;
}

/**
 * The string as one piece. A string made of pieces (a rope) holds every piece: crypto.randomUUID's 36 characters are
 * a rope of about fifteen (some 480 bytes) in Node 20, and run and thread ids often come from it.
 */
export function flatString(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}
