import { chunkText, continuesChunk } from '../core/event-merge.js';
import type { SequencedEvent } from '../core/events.js';
import { eventBytes } from '../core/event-bytes.js';
import { sealed, type Packing } from './sealed-run.js';

/** A chunk: a piece of a message's or reasoning's text, or of a call's arguments. */
type Chunk = Extract<SequencedEvent, { type: 'TextMessageContent' | 'ReasoningContent' | 'ActionExecutionArgs' }>;

/**
 * Consecutive chunks of one message, kept as their text joined and each chunk's length (a stretch of a sealed run is
 * kept the same way, sealed-run.ts). Chunks are numbered one after another (a run's log numbers its events in order).
 */
interface Stretch {
  /** The first chunk: the fields every chunk of the stretch shares. */
  readonly chunk: Chunk;
  /** The sequence of its first chunk. */
  readonly first: number;
  /** The sequence of its last chunk. */
  last: number;
  /** The chunks' text joined (a rope until someone reads it). */
  text: string;
  readonly lengths: number[];
}

/**
 * A running run's events as the memory store keeps them, until the run is sealed: each stretch of consecutive chunks
 * of one message kept as one text (sealed-run.ts keeps a finished run the same way). A reader that joins late (an
 * AG-UI `connect`, a join, a thread read) finds its place by binary search and gets each stretch as one event, not
 * every chunk walked one by one: joining a run of 50,000 tokens took about 20 ms of the event loop each time
 * (measured), and a burst of such joins held it for seconds.
 */
export class LiveEvents {
  /** The run's events in order of sequence, each stretch of chunks as one piece. */
  private readonly pieces: (SequencedEvent | Stretch)[] = [];
  /** What the events count for (eventBytes of each, as they came). */
  bytes = 0;

  push(event: SequencedEvent): void {
    this.bytes += eventBytes(event);
    const pieces = this.pieces;
    const last = pieces[pieces.length - 1];
    // Only chunks numbered one after another make a stretch (a reader's place in it is counted in chunks).
    if (
      last === undefined ||
      !continuesChunk(isStretch(last) ? last.chunk : last, event) ||
      event.sequence !== lastOf(last) + 1
    ) {
      pieces.push(event);
      return;
    }
    // A second chunk of one message: its first becomes a stretch.
    const stretch = isStretch(last) ? last : stretchOf(last as Chunk);
    pieces[pieces.length - 1] = stretch;
    const text = chunkText(event);
    stretch.text += text;
    stretch.lengths.push(text.length);
    stretch.last = event.sequence;
  }

  /**
   * The events after `afterSequence` (-1 for all), each stretch of chunks as one fresh event carrying its last
   * chunk's sequence; a stretch the reader had begun comes as its rest. Other events are the ones stored (readers
   * never change what they are given).
   */
  after(afterSequence: number): SequencedEvent[] {
    const pieces = this.pieces;
    const out: SequencedEvent[] = [];
    for (let index = firstAfter(pieces, afterSequence); index < pieces.length; index++) {
      const piece = pieces[index];
      out.push(isStretch(piece) ? restOf(piece, afterSequence) : piece);
    }
    return out;
  }

  /** The events up to `untilSequence` (stretches as in `after`: the one holding the next event may come too). */
  upTo(untilSequence: number): SequencedEvent[] {
    const end = Math.min(firstAfter(this.pieces, untilSequence) + 1, this.pieces.length);
    return this.pieces.slice(0, end).map((piece) => (isStretch(piece) ? restOf(piece, -1) : piece));
  }

  /** The run's events as one flat string, in the sealed form (sealed-run.ts). */
  seal(): string {
    const events: SequencedEvent[] = [];
    const packings: Packing[] = [];
    for (const piece of this.pieces) {
      if (isStretch(piece)) {
        const digits = piece.lengths.every((length) => length < 36);
        packings.push([
          events.length,
          piece.first,
          digits ? piece.lengths.map((length) => length.toString(36)).join('') : piece.lengths,
        ]);
        events.push(restOf(piece, -1));
      } else {
        events.push(piece);
      }
    }
    return sealed(events, packings);
  }
}

function isStretch(piece: SequencedEvent | Stretch): piece is Stretch {
  return 'lengths' in piece;
}

/** The sequence of the piece's last event. */
function lastOf(piece: SequencedEvent | Stretch): number {
  return isStretch(piece) ? piece.last : piece.sequence;
}

/** A stretch of one chunk, to be extended. */
function stretchOf(chunk: Chunk): Stretch {
  const text = chunkText(chunk);
  return { chunk, first: chunk.sequence, last: chunk.sequence, text, lengths: [text.length] };
}

/** The index of the first piece holding an event numbered after `sequence` (pieces.length when none does). */
function firstAfter(pieces: readonly (SequencedEvent | Stretch)[], sequence: number): number {
  let low = 0;
  let high = pieces.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (lastOf(pieces[middle]) <= sequence) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The stretch's chunks after `afterSequence` as one event. */
function restOf(stretch: Stretch, afterSequence: number): SequencedEvent {
  let text = stretch.text;
  if (afterSequence >= stretch.first) {
    let cut = 0;
    for (let k = 0; k <= afterSequence - stretch.first && k < stretch.lengths.length; k++) cut += stretch.lengths[k];
    text = text.slice(cut);
  }
  const { chunk, last: sequence } = stretch;
  return chunk.type === 'ActionExecutionArgs'
    ? { ...chunk, args: text, sequence }
    : { ...chunk, content: text, sequence };
}
