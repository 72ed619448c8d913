import { execute, isIncrementalResults, type SubsequentIncrementalExecutionResult } from '@graphql-tools/executor';
import { defaultFieldResolver, type ExecutionArgs, type FieldNode, type GraphQLFieldResolver, type GraphQLResolveInfo } from 'graphql';
import { completeLeafItem, leafStreamPlan } from './leaf-streams.js';
import { variablePlan } from './variables.js';
import { SharedTextStream } from './views/shared-stream.js';

/** One later payload of an operation with @defer/@stream, as the executor yields it. */
export type LaterPayload = SubsequentIncrementalExecutionResult;

/**
 * The later payloads of one HTTP operation, taken by the transport straight from the executor.
 *
 * Apollo Server passes each later payload through two async generators of its own (one formats the
 * payload's errors and calls the plugins' subsequent-payload hooks, one frames the payload as a
 * multipart part), with a `Promise.all` and an async map per payload. For a payload without errors
 * neither changes a byte: the formatter hands back a copy with the same items, and the framing is
 * fixed. A streamed token is one such payload, and under load this machinery made about a quarter
 * of the gateway's garbage per token (BENCHMARKS.md, step 21). So the transport reads the payloads
 * here and frames those without errors itself, exactly as Apollo frames them (`multipartPart`);
 * a payload with errors is handed to Apollo (`forApollo`), and the transport writes what Apollo
 * makes of it: Apollo's formatting, hooks and framing, unchanged. test/incremental.test.ts checks
 * that whole answers are the same bytes as Apollo's own for every streamed document shape the
 * tests use, in both formats, errors included.
 *
 * Only where no plugin listens to those hooks: Apollo's usage reporting (installed by Apollo
 * itself when APOLLO_KEY is set) counts an operation as finished on its last payload's hook, so
 * with a key the transport leaves every payload to Apollo (see `directLaterPayloads`).
 *
 * It also writes the operation's leaf streams (graphql/leaf-streams.ts): the run's text streams
 * the executor leaves out, each item framed as the executor's payload for it, in order with the
 * executor's own payloads: after the one that carries the stream's message (`before`, `after`),
 * before the one that ends the answer (`madeOrSettled`).
 */
export class LaterPayloads {
  /** The executor's later payloads, once the operation turned out to have some. */
  source: AsyncGenerator<LaterPayload, void, void> | undefined;
  private readonly queued: LaterPayload[] = [];

  /** Leaf streams (graphql/leaf-streams.ts) not done: waiting for their message's payload, or written. */
  private leaves: LeafStream[] = [];
  /** Where leaf streams write; the transport opens it before reading any later payload. */
  private sink: LeafSink | undefined;
  /** Payloads leaf streams made (an item GraphQL refused), for `next` (or, at the end, `madeOrSettled`) to give. */
  private readonly made: LaterPayload[] = [];
  /** The executor's next payload, asked for and not yet given (kept when `next` gave a made payload first). */
  private asked: Promise<IteratorResult<LaterPayload, void>> | undefined;
  /** Gives `next`'s caller a payload a leaf stream made while it waited for the executor. */
  private wakeReader: (() => void) | undefined;
  /** Resolves `madeOrSettled` once no leaf stream is left, or one made a payload. */
  private whenSettled: (() => void) | undefined;
  private waitingForDrain = false;
  /** A payload of the executor's is going out (between `before` and `after`): leaf streams wait. */
  private passing = false;

  /**
   * Keeps the executor's payloads for the transport, and gives Apollo the stream of those the
   * transport hands back (`forApollo`). Apollo reads that stream only when the transport asks
   * Apollo's body for its next part, which it does only after handing one over, or to end it.
   */
  adopt(results: AsyncGenerator<LaterPayload, void, void>): AsyncGenerator<LaterPayload, void, void> {
    this.source = results;
    const queued = this.queued;
    const ended = (): Promise<IteratorResult<LaterPayload, void>> => {
      queued.length = 0;
      return Promise.resolve({ value: undefined, done: true });
    };
    const apolloStream: AsyncGenerator<LaterPayload, void, void> = {
      next: () => {
        const value = queued.shift();
        return value === undefined ? ended() : Promise.resolve({ value, done: false });
      },
      return: ended,
      throw: (error: unknown) => Promise.reject(error),
      [Symbol.asyncIterator]: () => apolloStream,
      // Node 20's AsyncGenerator type also names this; Apollo never disposes the stream.
      [Symbol.asyncDispose]: () => ended().then(() => undefined),
    } as AsyncGenerator<LaterPayload, void, void>;
    return apolloStream;
  }

  /** Hands a payload to Apollo: its body's next part is that payload, formatted and framed by Apollo. */
  forApollo(payload: LaterPayload): void {
    this.queued.push(payload);
  }

  /** Where leaf streams write their items from now on (they write only once their message went out). */
  open(sink: LeafSink): void {
    this.sink = sink;
  }

  /**
   * The next later payload: one a leaf stream made, if any, else the executor's next. While leaf
   * streams are open the executor's next is awaited alongside them (it may be long in coming: the
   * run's status comes at its end).
   */
  next(): Promise<IteratorResult<LaterPayload, void>> {
    const made = this.made.shift();
    if (made !== undefined) return Promise.resolve({ value: made, done: false });
    const asked = (this.asked ??= this.source!.next());
    if (this.leaves.length === 0) {
      this.asked = undefined;
      return asked;
    }
    return new Promise((resolve, reject) => {
      let given = false;
      this.wakeReader = () => {
        given = true;
        this.wakeReader = undefined;
        resolve({ value: this.made.shift()!, done: false });
      };
      asked.then(
        (step) => {
          if (given) return;
          given = true;
          this.wakeReader = this.asked = undefined;
          resolve(step);
        },
        (error: unknown) => {
          if (given) return;
          given = true;
          this.wakeReader = this.asked = undefined;
          reject(error);
        },
      );
    });
  }

  /**
   * Called by the field resolver the leaf-stream plan gives the executor, for a field whose
   * `@stream` the transport writes: keeps the run's text stream until the payload that carries the
   * field's object has gone out, and resolves the field to what the executor writes for a stream
   * with no initial items: `[]`, a microtask later, so that the object's keys come in the executor's
   * order (it sets a streamed field's key when its first, empty part settles). The value is always
   * a SharedTextStream: the plan takes only the run's messages (graphql/leaf-streams.ts).
   */
  leaf(value: unknown, info: GraphQLResolveInfo): Promise<readonly never[]> {
    if (!(value instanceof SharedTextStream)) {
      throw new Error(`${info.parentType.name}.${info.fieldName} is not a run's text stream.`);
    }
    this.leaves.push(new LeafStream(this, value, pathOf(info.path), info.parentType.name, info.fieldName, info.fieldNodes));
    return Promise.resolve(EMPTY);
  }

  /**
   * What a payload that is about to go out means for the leaf streams: those whose object it carries
   * are written after it; those whose object it nulled are dropped. Returns whether the payload,
   * the executor's last, must say `hasNext: true` because leaf streams will still write (the
   * transport then writes the rest once they are done: see `madeOrSettled`).
   */
  before(payload: LaterPayload): boolean {
    if (this.leaves.length === 0) return false;
    // Until it has gone out (Apollo may be formatting it), leaf streams write nothing: what they
    // would write comes after it.
    this.passing = true;
    // (A leaf stream that is done leaves the list: the loops here read a copy.)
    const leaves = [...this.leaves];
    const incremental = payload.incremental;
    if (incremental !== undefined) {
      for (let i = 0; i < incremental.length; i++) {
        const entry = incremental[i] as { items?: unknown[] | null; path?: readonly (string | number)[] };
        if (entry.items === undefined || entry.path === undefined) continue;
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
    if (payload.hasNext) return false;
    // The executor is done: a leaf stream whose object never went out never will.
    for (const leaf of leaves) {
      if (leaf.state === 'waiting') leaf.drop();
    }
    return this.leaves.some((leaf) => leaf.hasMore());
  }

  /** Whether a payload of the executor's is going out (leaf streams write after it). */
  isPassing(): boolean {
    return this.passing;
  }

  /** After a payload went out: leaf streams it carried write what they have, as do those that waited for it to go. */
  after(): void {
    this.passing = false;
    if (this.leaves.length === 0) return;
    for (const leaf of [...this.leaves]) {
      if (leaf.state === 'released') leaf.start();
      else if (leaf.state === 'live') leaf.pump();
    }
  }

  /**
   * For the end of the answer, once the executor is done: the next payload a leaf stream made, or
   * undefined once every leaf stream is done (at once if none is left).
   */
  madeOrSettled(): Promise<LaterPayload | undefined> {
    const made = this.made.shift();
    if (made !== undefined) return Promise.resolve(made);
    if (this.leaves.length === 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.whenSettled = () => {
        this.whenSettled = undefined;
        resolve(this.made.shift());
      };
    });
  }

  /** Whether more is to come from leaf streams: one is left (waiting for its message, or writing), or a payload one made. */
  hasMore(): boolean {
    return this.leaves.length > 0 || this.made.length > 0;
  }

  /** The response is over (ended, or its client went away): leaf streams stop reading. */
  close(): void {
    this.sink = undefined;
    for (const leaf of [...this.leaves]) leaf.drop();
    this.whenSettled?.();
  }

  /** @internal The sink leaf streams write to; undefined once the response is over. */
  get out(): LeafSink | undefined {
    return this.sink;
  }

  /**
   * @internal Whether the response takes more now. If not, every leaf stream is pumped again once
   * it does (one drain listener for them all).
   */
  roomOrWaitForDrain(sink: LeafSink): boolean {
    if (!sink.full()) return true;
    if (!this.waitingForDrain) {
      this.waitingForDrain = true;
      sink.onDrain(() => {
        this.waitingForDrain = false;
        for (const leaf of [...this.leaves]) {
          if (leaf.state === 'live') leaf.pump();
        }
      });
    }
    return false;
  }

  /** @internal A leaf stream's item GraphQL refused: a payload with the executor's error, given by `next` (or `madeOrSettled`). */
  refused(payload: LaterPayload): void {
    this.made.push(payload);
    this.wakeReader?.();
  }

  /** @internal A leaf stream is done. */
  finished(leaf: LeafStream): void {
    const at = this.leaves.indexOf(leaf);
    if (at !== -1) this.leaves.splice(at, 1);
    if ((this.leaves.length === 0 || this.made.length > 0) && this.whenSettled !== undefined) this.whenSettled();
  }
}

/** Where the transport takes leaf streams' items. */
export interface LeafSink {
  /** Writes one later payload (its JSON: `hasNext` is true). */
  write(json: string): void;
  /** Whether the client reads slower than the response is written. */
  full(): boolean;
  /** Calls back once the response takes more again. */
  onDrain(callback: () => void): void;
  /** Ends the response with an error thrown while writing outside the transport's own calls. */
  fail(error: unknown): void;
}

const EMPTY: readonly never[] = Object.freeze([]);

/**
 * One field's `@stream` written by the transport: the run's text stream read synchronously, one
 * item per read (what waited is joined, as the executor's reads join it), framed as the executor
 * frames a stream item.
 */
class LeafStream {
  /** waiting: for its object's payload; released: that payload is going out; live: writing; done. */
  state: 'waiting' | 'released' | 'live' | 'done' = 'waiting';
  private index = 0;
  private count = 0;
  private readonly parentPath: readonly (string | number)[];
  private readonly key: string;
  /** The item path's JSON up to the item's index: `["generateCopilotResponse","messages",0,"content",`. */
  private readonly pathJson: string;
  private unwatch: (() => void) | undefined;
  private scheduled = false;
  private readonly pumpSoon = () => {
    this.scheduled = false;
    this.pump();
  };

  constructor(
    private readonly owner: LaterPayloads,
    private readonly text: SharedTextStream,
    private readonly path: readonly (string | number)[],
    private readonly typeName: string,
    private readonly fieldName: string,
    /** The field's nodes (of the rewritten document: the original's locations), for an item's error. */
    private readonly nodes: readonly FieldNode[],
  ) {
    this.parentPath = path.slice(0, -1);
    this.key = String(path[path.length - 1]);
    const json = JSON.stringify(path);
    this.pathJson = `${json.slice(0, -1)},`;
  }

  /** Whether its field lies under `prefix` (a list's path). */
  isUnder(prefix: readonly (string | number)[]): boolean {
    if (this.path.length <= prefix.length) return false;
    for (let i = 0; i < prefix.length; i++) {
      if (this.path[i] !== prefix[i]) return false;
    }
    return true;
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

  /** Whether it would still write (an item or the end of its text are to come). */
  hasMore(): boolean {
    return this.state !== 'done' && (this.text.available(this.index) || !this.text.isEnded());
  }

  /** Its object went out: write what the text has, and what comes. */
  start(): void {
    this.state = 'live';
    this.unwatch = this.text.watch(() => {
      if (this.scheduled) return;
      // Chunks of one turn are read together, as the executor would read them (a microtask later).
      this.scheduled = true;
      queueMicrotask(this.pumpSoon);
    });
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

  private write(sink: LeafSink): void {
    const text = this.text;
    while (text.available(this.index)) {
      if (!this.owner.roomOrWaitForDrain(sink)) return;
      const [value, next] = text.take(this.index);
      this.index = next;
      const at = this.count++;
      const item = typeof value === 'string' ? value : completeLeafItem(value, this.typeName, this.fieldName, this.nodes, [...this.path, at]);
      if (typeof item !== 'string') {
        // The executor ends a stream whose item it cannot complete with that item's error.
        this.owner.refused({ incremental: [{ items: null, path: [...this.path, at], errors: [item] }], hasNext: true } as unknown as LaterPayload);
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

/** A field's path as the executor writes it. */
function pathOf(path: GraphQLResolveInfo['path']): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let at: GraphQLResolveInfo['path'] | undefined = path; at !== undefined; at = at.prev) keys.push(at.key);
  return keys.reverse();
}

/** Whether Apollo must format the payload: it carries errors (in an item or a deferred part). */
export function carriesErrors(payload: LaterPayload): boolean {
  if ((payload as { errors?: unknown }).errors !== undefined) return true;
  const incremental = payload.incremental;
  if (incremental === undefined) return false;
  for (let i = 0; i < incremental.length; i++) {
    if (incremental[i].errors !== undefined) return true;
  }
  return false;
}

/** A later payload framed as Apollo frames it in `multipart/mixed; deferSpec=20220824` (its writeMultipartBody). */
export function multipartPart(json: string, hasNext: boolean): string {
  return `content-type: application/json; charset=utf-8\r\n\r\n${json}\r\n---${hasNext ? '' : '--'}\r\n`;
}

/**
 * Runs operations with @defer/@stream on the tools executor for Apollo (its
 * `legacyExperimentalExecuteIncrementally`) and for graphql-ws's queries and mutations, with their
 * variables coerced ahead of it (graphql/variables.ts), and gives an operation's later payloads to
 * its transport when the context carries a `LaterPayloads` (HTTP).
 */
export async function executeIncrementally(args: ExecutionArgs) {
  const later = (args.contextValue as { laterPayloads?: LaterPayloads } | undefined)?.laterPayloads;
  const plan = later === undefined ? undefined : leafStreamPlan(args.schema, args.document, args.operationName);
  if (plan !== undefined) {
    // The executor runs the document without the leaf streams' @stream; their fields go to `later`.
    const base: GraphQLFieldResolver<unknown, unknown> = args.fieldResolver ?? defaultFieldResolver;
    const fields = plan.fields;
    const fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, fieldArgs, context, info) =>
      fields.has(info.fieldNodes[0]) ? later!.leaf((source as Record<string, unknown>)[info.fieldName], info) : base(source, fieldArgs, context, info);
    args = { ...args, document: plan.document, fieldResolver };
  }
  // Variables coerced by the operation's own coercer (graphql/variables.ts); where it gives up, the
  // executor coerces them itself, and reports what it refuses.
  const variables = variablePlan(args.schema, args.document, args.operationName);
  const coerced = variables?.coerce(args.variableValues ?? {});
  if (coerced !== undefined) args = { ...args, document: variables!.document, variableValues: coerced };
  const result = await execute(args);
  if (later === undefined) return result;
  if (!isIncrementalResults(result)) {
    // Leaf streams live only inside streamed items: with no later payloads there are none to write.
    later.close();
    return result;
  }
  return { initialResult: result.initialResult, subsequentResults: later.adopt(result.subsequentResults) };
}
