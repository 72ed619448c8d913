import type { FieldNode, GraphQLError } from 'graphql';
import type { LaterSink } from '../executor.js';
import { completeLeafItem } from './leaf-streams.js';
import { isUnder, itemsPayload, watchBatched, type LaterPayload } from './payloads.js';
import type { SharedTextStream } from '../../views/shared-stream.js';

/** Where the transport takes leaf streams' items (the executor's LaterSink). */

// One leaf stream's writing; which fields are leaf streams is the plan's (leaf-streams.ts).

/** What a leaf stream needs of the operation's later payloads (LaterPayloads is it; named here, not imported). */
export interface LeafStreamOwner {
  /** Whether a payload is going out (given, not yet written): the stream waits, what it writes comes after. */
  isPassing(): boolean;
  /** Where payloads go, once the transport has opened the delivery. */
  readonly out: LaterSink | undefined;
  /** Whether the sink takes more now; if not, the stream is woken when it has drained. */
  roomOrWaitForDrain(sink: LaterSink): boolean;
  make(payload: LaterPayload): void;
  finished(leaf: LeafStream): void;
}

/**
 * One field's `@stream` written by the transport: the run's text stream read synchronously, one
 * item per read (what waited is joined, as the executor's reads join it), framed as the executor
 * frames a stream item.
 */
export class LeafStream {
  /** waiting: for its object's payload; released: that payload is going out; live: writing; done. */
  state: 'waiting' | 'released' | 'live' | 'done' = 'waiting';
  private index = 0;
  private count = 0;
  private readonly parentPath: readonly (string | number)[];
  private readonly key: string;
  /** The item path's JSON up to the item's index: `["generateCopilotResponse","messages",0,"content",`. */
  private readonly pathJson: string;
  private unwatch: (() => void) | undefined;
  private readonly pumpSoon = () => this.pump();

  constructor(
    private readonly owner: LeafStreamOwner,
    private readonly text: SharedTextStream,
    private readonly path: readonly (string | number)[],
    private readonly typeName: string,
    private readonly fieldName: string,
    /** The field's nodes (of the rewritten document: the original's locations), for an item's error. */
    private readonly nodes: readonly FieldNode[],
    /** Made by the message plan (released by the plan's payload), not by the executor's field resolver. */
    readonly planned: boolean,
  ) {
    this.parentPath = path.slice(0, -1);
    this.key = String(path[path.length - 1]);
    const json = JSON.stringify(path);
    this.pathJson = `${json.slice(0, -1)},`;
  }

  /** Whether its field lies under `prefix` (a list's path). */
  isUnder(prefix: readonly (string | number)[]): boolean {
    return isUnder(this.path, prefix);
  }

  /** A payload entry about to go out (with items): if it carries this field's object, the stream is released. */
  carriedBy(path: readonly (string | number)[], items: readonly unknown[]): void {
    const depth = this.parentPath.length;
    if (path.length !== depth) return;
    for (let i = 0; i < depth - 1; i++) {
      if (path[i] !== this.parentPath[i]) return;
    }
    const first = path[depth - 1];
    const index = this.parentPath[depth - 1];
    if (typeof first !== 'number' || typeof index !== 'number' || index < first) return;
    if (index - first >= items.length) return;
    const object = items[index - first] as Record<string, unknown> | null;
    if (object === null || typeof object !== 'object' || !Array.isArray(object[this.key])) return this.drop();
    this.state = 'released';
  }

  /** Its object went out: write what the text has, and what comes. */
  start(): void {
    this.state = 'live';
    // Chunks of one turn are read together, as the executor would read them (a microtask later).
    this.unwatch = watchBatched(this.text, this.pumpSoon);
    this.pump();
  }

  /** Writes what the text has, while the response takes it; ends with the text. */
  pump(): void {
    if (this.state !== 'live' || this.owner.isPassing()) return;
    const sink = this.owner.out;
    if (sink === undefined) return this.drop();
    try {
      this.write(sink);
    } catch (error) {
      // Mostly called from a microtask or a drain listener, outside the transport's own error handling.
      this.drop();
      sink.fail(error);
    }
  }

  private write(sink: LaterSink): void {
    const text = this.text;
    while (text.available(this.index)) {
      if (!this.owner.roomOrWaitForDrain(sink)) return;
      const [value, next] = text.take(this.index);
      this.index = next;
      const at = this.count++;
      const item =
        typeof value === 'string'
          ? value
          : completeLeafItem(value, this.typeName, this.fieldName, this.nodes, [...this.path, at]);
      if (typeof item !== 'string') {
        // The executor ends a stream whose item it cannot complete with that item's error.
        this.owner.make(itemsPayload(null, [...this.path, at], [item as GraphQLError]));
        return this.drop();
      }
      // JSON.stringify of the executor's payload, {incremental: [{items, path}], hasNext}, written out.
      sink.write(`{"incremental":[{"items":[${JSON.stringify(item)}],"path":${this.pathJson}${at}]}],"hasNext":true}`);
    }
    if (text.isEnded()) this.drop();
  }

  /** Stops reading: its text ended, its object was nulled, or the response is over. */
  drop(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.unwatch?.();
    this.unwatch = undefined;
    this.owner.finished(this);
  }
}

/**
 * The leaf streams of one operation that are not done (LaterPayloads'): waiting for the payload that
 * carries their object, or writing.
 */
export class LeafStreams {
  private readonly list: LeafStream[] = [];
  private waitingForDrain = false;

  get size(): number {
    return this.list.length;
  }

  add(leaf: LeafStream): void {
    this.list.push(leaf);
  }

  /** A leaf stream is done. */
  remove(leaf: LeafStream): void {
    const at = this.list.indexOf(leaf);
    if (at !== -1) this.list.splice(at, 1);
  }

  /** Whether one lies outside a list (its path). */
  anyOutside(listPath: readonly (string | number)[]): boolean {
    return this.list.some((leaf) => !leaf.isUnder(listPath));
  }

  /** Once the executor is done, a leaf stream of its own whose object never went out never will. */
  dropOrphans(): void {
    for (const leaf of [...this.list]) {
      if (leaf.state === 'waiting' && !leaf.planned) leaf.drop();
    }
  }

  /** The response is over. */
  dropAll(): void {
    for (const leaf of [...this.list]) leaf.drop();
  }

  /**
   * What a payload that goes out means for the leaf streams: those whose object it carries are
   * written after it; those whose object it nulled are dropped.
   */
  release(payload: LaterPayload): void {
    const incremental = payload.incremental;
    if (this.list.length === 0 || incremental === undefined) return;
    // (A leaf stream that is done leaves the list: the loops here read a copy, made for the first
    // entry with items; a deferred status has none.)
    let leaves: LeafStream[] | undefined;
    for (let i = 0; i < incremental.length; i++) {
      const entry = incremental[i] as { items?: unknown[] | null; path?: readonly (string | number)[] };
      if (entry.items === undefined || entry.path === undefined) continue;
      leaves ??= [...this.list];
      if (entry.items === null) {
        // The executor nulled an item of a non-null list and ended that list's stream. It also drops
        // whatever is still to come under the list (its filterSubsequentPayloads on the list's path):
        // the text of the items before, still streaming, as much as that of the nulled one.
        const listPath = entry.path.slice(0, -1);
        for (const leaf of leaves) {
          if (leaf.isUnder(listPath)) leaf.drop();
        }
        continue;
      }
      for (const leaf of leaves) {
        if (leaf.state === 'waiting') leaf.carriedBy(entry.path, entry.items);
      }
    }
  }

  /** After a payload went out: those it carried write what they have, as do those that waited for it to go. */
  resume(): void {
    if (this.list.length === 0) return;
    for (const leaf of [...this.list]) {
      if (leaf.state === 'released') leaf.start();
      else if (leaf.state === 'live') leaf.pump();
    }
  }

  /**
   * Whether the response takes more now. If not, every leaf stream is pumped again once it does (one
   * drain listener for them all).
   */
  roomOrWaitForDrain(sink: LaterSink): boolean {
    if (!sink.full()) return true;
    if (!this.waitingForDrain) {
      this.waitingForDrain = true;
      sink.onDrain(() => {
        this.waitingForDrain = false;
        for (const leaf of [...this.list]) {
          if (leaf.state === 'live') leaf.pump();
        }
      });
    }
    return false;
  }
}
