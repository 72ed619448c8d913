import { isIncrementalResults } from '@graphql-tools/executor';
import type { GraphQLResolveInfo } from 'graphql';
import type { LaterSink } from '../executor.js';
import { LeafStream, LeafStreams } from './leaf-stream.js';
import type { MessagePlan } from './message-plan.js';
import { MessageStream, NOTHING } from './message-stream.js';
import { metaEventsPayloads, watchMetaEvents } from './meta-events.js';
import type { KnownDocument } from './known-documents.js';
import { EMPTY, isUnder, pathOf, type ExecutionOutcome, type LaterPayload } from './payloads.js';
import { SharedStream, SharedTextStream } from '../../views/shared-stream.js';

/**
 * The later payloads of one HTTP operation, taken by the transport straight from the executor, or
 * made here.
 *
 * Apollo Server passes each later payload through two async generators of its own (one formats the
 * payload's errors and calls the plugins' subsequent-payload hooks, one frames the payload as a
 * multipart part), with a `Promise.all` and an async map per payload. For a payload without errors
 * neither changes a byte: the formatter hands back a copy with the same items, and the framing is
 * fixed. A streamed token is one such payload, and under load this machinery made about a quarter
 * of the gateway's garbage per token (BENCHMARKS.md, step 21). So the transport reads the payloads
 * here (serialised by http-operation.ts, a payload's errors formatted as Apollo formats them:
 * direct-answer.ts) and frames them itself, exactly as Apollo frames them. test/incremental.test.ts
 * checks that whole answers are the same bytes as Apollo's own for every streamed document shape the
 * tests use, in both formats, errors included.
 *
 * Only where no plugin listens to those hooks: Apollo's usage reporting (installed by Apollo
 * itself when APOLLO_KEY is set) counts an operation as finished on its last payload's hook, so
 * with a key every payload is left to Apollo (executor.ts, FastExecutorOptions `directHttp`).
 *
 * It also writes the operation's leaf streams (graphql/fast/leaf-streams.ts): the run's text streams
 * the executor leaves out, each item framed as the executor's payload for it, in order with the
 * other payloads: after the one that carries the stream's message (`release`, `after`), before the
 * one that ends the answer (`next`). And where the message plan takes the document
 * (graphql/fast/message-plan.ts), it makes the messages' payloads, their statuses' and the run's status's
 * itself (`MessageStream`), and gives them in turn with the executor's (`next`). What the executor
 * no longer does for those documents: a record per message, its item's completion, its status's
 * record, the run status's record, and the `Promise.race` over the open records for every payload.
 * Where the run plan takes the document too (RunPlan, `runByPlan`), the executor does not run at all
 * unless the run raises a meta event (`awaitMetaEvents`): then it runs the meta events' own document
 * and its payloads are given with the others as above.
 *
 * Where timing decides, the executor and this may cut the same payloads differently; both are valid
 * answers with the same data at every path. The executor joins into one payload whatever records
 * completed by the time its reader asks (a reader that is behind gets several at once), where this
 * gives one payload each; it orders records completed in the same turn by the depth of their
 * promise chains, where this takes them in the order of the run's events; and where its records
 * and the plan's complete in the same turn (a `metaEvents` item and a message's status), the order
 * between them is a matter of microtasks here too (the run's status, the plan's last, waits for the
 * executor's next answer, and goes after it when it has something to say). With events in turns of
 * their own, as a model sends them, the bytes are the same. One more with the run plan: the
 * executor started for a meta event finds the event's item and its messages' deferred statuses (an
 * interrupt's messages) done together and gives them in one payload, where the executor asked all
 * along gives the item first, then the statuses.
 */
export class LaterPayloads {
  /**
   * The executor's later payloads, once the operation turned out to have some (with the run plan: once the run raised a
   * meta event).
   */
  source: AsyncGenerator<LaterPayload, void, void> | undefined;
  /**
   * The run plan wrote the answer's first part (graphql/fast/message-plan.ts RunPlan): its later payloads are all read
   * here.
   */
  runPlanned = false;
  /** The document and operation, when the leaf-stream plan took them (graphql/fast/known-documents.ts). */
  planned: KnownDocument | undefined;

  /** Leaf streams (graphql/fast/leaf-streams.ts) not done: waiting for their message's payload, or written. */
  private readonly leaves = new LeafStreams();
  /** The message plan's streams (graphql/fast/message-plan.ts) while they may still make payloads. */
  private streams: MessageStream[] = [];
  /** Where leaf streams write; the transport opens it before reading any later payload. */
  private sink: LaterSink | undefined;
  /**
   * Payloads made here (messages, statuses, an item GraphQL refused), each with when it was made, for `next` to give in
   * turn.
   */
  private made: { payload: LaterPayload; order: number }[] = [];
  /** The executor's answer to the `next()` last asked of it, once it came (with when it came) and until it is taken. */
  private answer: { step: IteratorResult<LaterPayload, void>; order: number } | { error: unknown } | undefined;
  /** The executor has been asked for its next payload and has not answered yet. */
  private asking = false;
  /** When a payload was made here or came from the executor: `next` gives them in that order. */
  private order = 0;
  /** The executor has given its last payload. */
  private executorDone = false;
  /** The message plan's streams were made and are done. */
  private planDone = false;
  /** The payload `next` holds for the executor's answer (see `next`), and whether a turn went by since. */
  private held: LaterPayload | undefined;
  private heldLong = false;
  /** The last payload has been given (it said `hasNext: false`), or the response is over. */
  private over = false;
  /** What broke a message stream, for `next` to throw. */
  private failure: { error: unknown } | undefined;
  /** Wakes `next` while it waits: a payload was made here, or what makes them is done. */
  private wakeReader: (() => void) | undefined;
  /** A payload is going out (between `next` giving it and `after`): leaf streams wait. */
  private passing = false;
  /**
   * The run plan's meta events may still start the executor (see `awaitMetaEvents`); and how to stop watching for them.
   */
  private metaPending = false;
  /**
   * Once the run raised its first meta event, until the executor started for it has answered: the
   * place its first answer takes among the payloads, as if the executor had been asked all along.
   * Payloads made here after that place wait for it (a message or the run's status in the same turn).
   */
  private metaPlace: number | undefined;
  private unwatchMeta: (() => void) | undefined;

  /**
   * Keeps the executor's payloads for the transport, and gives Apollo a stream that ends at once in their place: the
   * transport takes the later payloads here (HttpOperation `later`) and reads only Apollo's first part.
   */
  adopt(results: AsyncGenerator<LaterPayload, void, void> | undefined): AsyncGenerator<LaterPayload, void, void> {
    this.source = results;
    // With the run plan there is no executor until the run raises a meta event, maybe never.
    if (results === undefined) this.executorDone = true;
    return nothingForApollo();
  }

  /** Where leaf streams write their items from now on (they write only once their message went out). */
  open(sink: LaterSink): void {
    this.sink = sink;
  }

  /**
   * The next later payload, with the `hasNext` the answer needs: those made here (a message, a
   * status, an item GraphQL refused) and the executor's, in the order they were made or came. The
   * answer's last payload says `hasNext: false`: the executor's last, or, while more is to come from
   * here, the last one made here (or, once the leaf streams are done, `{"hasNext":false}` alone, as
   * the executor ends an answer whose last records give nothing).
   */
  async next(): Promise<IteratorResult<LaterPayload, void>> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure.error;
      if (this.over) return DONE;
      // The executor is always asked for its next while it has more, so that what it gives takes
      // its place among what is made here.
      this.askExecutor();
      // The last payload to be made here once the message plan is done (usually the run's status,
      // at the run's end), made before the executor is done: whether it ends the answer depends on
      // what the executor does next ("holding" it until the executor answers). The executor too is
      // at the run's end: usually it ends with nothing more to say (taken, below), within the same
      // turn, and the held payload then ends the answer, as the executor's own last record would.
      // When it does not answer within the turn (its `metaEvents` are still open: a message nulled
      // the list before the run's end), the held payload goes, with more to come.
      const last = this.made.length === 1 ? this.made[0].payload : undefined;
      const holding =
        !this.executorDone &&
        this.planDone &&
        last !== undefined &&
        !this.producingAfter(last) &&
        !this.heldATurn(last);
      const answer = this.answer;
      if (
        answer !== undefined &&
        ('error' in answer || holding || this.made.length === 0 || answer.order < this.made[0].order)
      ) {
        this.answer = undefined;
        if ('error' in answer) throw answer.error;
        const payload = this.taken(answer.step);
        if (payload !== undefined) return this.give(payload);
        continue;
      }
      const waitsForMeta = this.metaPlace !== undefined && this.made.length > 0 && this.made[0].order > this.metaPlace;
      if (this.made.length > 0 && !holding && !waitsForMeta) return this.give(this.made.shift()!.payload);
      if (this.executorDone && !this.producing()) {
        // Nothing more: the last payload given said there was; this one says there is not.
        return this.give({ hasNext: false });
      }
      // Wait for the executor, for something made here, or for what makes payloads here to be done.
      await new Promise<void>((resolve) => (this.wakeReader = resolve));
    }
  }

  /** A payload goes out: what it means for the leaf streams, and its `hasNext`. */
  private give(payload: LaterPayload): IteratorResult<LaterPayload, void> {
    this.leaves.release(payload);
    if (this.executorDone) this.leaves.dropOrphans();
    const hasNext = !this.executorDone || this.made.length > 0 || this.producing();
    payload.hasNext = hasNext;
    if (!hasNext) this.over = true;
    // Until it has gone out (the transport writes it a microtask after `next` gives it), leaf streams
    // write nothing: what they would write comes after it.
    this.passing = true;
    return { value: payload, done: false };
  }

  /** Whether `payload` has been held for a turn already (the first call for it starts the turn). */
  private heldATurn(payload: LaterPayload): boolean {
    if (this.held !== payload) {
      this.held = payload;
      this.heldLong = false;
      setImmediate(() => {
        if (this.held !== payload) return;
        this.heldLong = true;
        this.wake();
      });
    }
    return this.heldLong;
  }

  /**
   * Asks the executor for its next payload, unless it is done, was asked already, or answered and its answer is not
   * taken yet.
   */
  private askExecutor(): void {
    if (this.executorDone || this.asking || this.answer !== undefined) return;
    this.asking = true;
    this.source!.next().then(
      (step) => {
        this.asking = false;
        if (this.over) return;
        const place = this.metaPlace;
        this.metaPlace = undefined;
        this.answer = { step, order: place ?? this.order++ };
        this.wake();
      },
      (error: unknown) => {
        this.asking = false;
        if (this.over) return;
        this.metaPlace = undefined;
        // The executor is not asked again: `next` throws this.
        this.executorDone = true;
        this.answer = { error };
        this.wake();
      },
    );
  }

  /** Wakes `next` if it waits. */
  private wake(): void {
    const wakeReader = this.wakeReader;
    this.wakeReader = undefined;
    wakeReader?.();
  }

  /**
   * What the executor's answer gives: its payload, or nothing when it ended without one to give
   * (its bare `{"hasNext":false}` once its records are done) while more is to come from here (as the
   * executor itself gives nothing while records are pending).
   */
  private taken(step: IteratorResult<LaterPayload, void>): LaterPayload | undefined {
    if (!step.done && step.value.hasNext) return step.value;
    this.executorDone = true;
    const payload = step.done ? undefined : step.value;
    if (
      payload !== undefined &&
      (payload.incremental !== undefined || (payload as { errors?: unknown }).errors !== undefined)
    )
      return payload;
    this.leaves.dropOrphans();
    return payload === undefined || this.made.length > 0 || this.producing() ? undefined : payload;
  }

  /** Whether more payloads may come from here: a leaf stream not done, a message stream not done. */
  private producing(): boolean {
    return this.leaves.size > 0 || this.streams.length > 0 || this.metaPending;
  }

  /**
   * Whether more payloads may come from here once `payload` is out (a nulled item drops the leaf streams under its
   * list).
   */
  private producingAfter(payload: LaterPayload): boolean {
    if (this.streams.length > 0 || this.metaPending) return true;
    const nulled = payload.incremental?.find((entry) => (entry as { items?: unknown }).items === null);
    if (nulled === undefined) return this.leaves.size > 0;
    const listPath = (nulled.path as readonly (string | number)[]).slice(0, -1);
    return this.leaves.anyOutside(listPath);
  }

  /**
   * Called by the field resolver the leaf-stream plan gives the executor, for a field whose
   * `@stream` the transport writes: keeps the run's text stream until the payload that carries the
   * field's object has gone out, and resolves the field to what the executor writes for a stream
   * with no initial items: `[]`, a microtask later, so that the object's keys come in the executor's
   * order (it sets a streamed field's key when its first, empty part settles). The value is always
   * a SharedTextStream: the plan takes only the run's messages (graphql/fast/leaf-streams.ts).
   */
  leaf(value: unknown, info: GraphQLResolveInfo): Promise<readonly never[]> {
    if (!(value instanceof SharedTextStream)) {
      throw new Error(`${info.parentType.name}.${info.fieldName} is not a run's text stream.`);
    }
    // (After the end the executor may still complete a field: nothing is kept for it.)
    if (!this.over)
      this.leaves.add(
        new LeafStream(this, value, pathOf(info.path), info.parentType.name, info.fieldName, info.fieldNodes, false),
      );
    return Promise.resolve(EMPTY);
  }

  /**
   * Called by the field resolver the message plan gives the executor, for the run's `messages`
   * (graphql/fast/message-plan.ts): writes the messages, their statuses and the run's status from here,
   * and gives the executor a stream with nothing in it (so that the answer's first part is the
   * same: the executor sets the field to `[]` at the same moment).
   */
  messages(plan: MessagePlan, source: unknown, info: GraphQLResolveInfo, context: unknown): AsyncIterable<never> {
    this.writeMessages(plan, source, pathOf(info.path), context);
    return NOTHING;
  }

  /**
   * Starts writing the run's messages, their statuses and its status at `path` (the messages list's), from the run's
   * view.
   */
  writeMessages(plan: MessagePlan, source: unknown, path: readonly (string | number)[], context: unknown): void {
    const view = source as { messages?: unknown; status?: unknown };
    if (!(view.messages instanceof SharedStream))
      throw new Error(`${plan.runType.name}.${plan.messages.name.value} is not a run's message stream.`);
    if (this.over) return;
    const stream = new MessageStream(
      this,
      plan,
      view.messages as SharedStream<Record<string, unknown>>,
      view,
      path,
      context,
    );
    this.streams.push(stream);
    try {
      stream.start();
    } catch (error) {
      stream.stop();
      throw error;
    }
  }

  /**
   * The run plan's meta events: nothing runs for them unless the run raises one (an agent's
   * interrupt). Then `execute` runs their own document (graphql/fast/message-plan.ts MetaEventsPlan)
   * and its later payloads are given with the others, as the executor's are; its first answer
   * takes the place the event had among the payloads (`metaPlace`), so that what the run did in the
   * same turn (a message, its end) comes after it, as from an executor asked all along. Until the
   * run's meta events have ended (at its end) or the executor has started, the answer is not over.
   */
  awaitMetaEvents(events: unknown, execute: () => PromiseLike<ExecutionOutcome> | ExecutionOutcome): void {
    if (!(events instanceof SharedStream)) throw new Error("The run's meta events are not a run's stream.");
    if (this.over) return;
    this.metaPending = true;
    this.unwatchMeta = watchMetaEvents(
      events,
      () => this.startMetaEvents(execute),
      () => {
        this.metaPending = false;
        this.wake();
      },
    );
  }

  private stopWatchingMeta(): void {
    this.unwatchMeta?.();
    this.unwatchMeta = undefined;
  }

  private startMetaEvents(execute: () => PromiseLike<ExecutionOutcome> | ExecutionOutcome): void {
    this.metaPlace = this.order++;
    // (Within a push of the run's: the execution starts a microtask later.)
    Promise.resolve()
      .then(execute)
      .then(
        (result) => {
          if (this.over) {
            if (isIncrementalResults(result)) void result.subsequentResults.return(undefined).catch(() => undefined);
            return;
          }
          this.metaPending = false;
          const payloads = metaEventsPayloads(result);
          if (payloads instanceof Error) {
            this.metaPlace = undefined;
            return this.failed(payloads);
          }
          this.source = payloads;
          this.executorDone = false;
          this.wake();
        },
        (error: unknown) => {
          this.metaPending = false;
          this.metaPlace = undefined;
          if (!this.over) this.failed(error);
        },
      );
  }

  /** Whether a payload is going out (leaf streams write after it). */
  isPassing(): boolean {
    return this.passing;
  }

  /** After a payload went out: leaf streams it carried write what they have, as do those that waited for it to go. */
  after(): void {
    this.passing = false;
    this.leaves.resume();
  }

  /** The response is over (ended, or its client went away): nothing more is written or made. */
  close(): void {
    this.sink = undefined;
    this.over = true;
    this.stopWatchingMeta();
    this.metaPending = false;
    this.made = [];
    this.answer = undefined;
    for (const stream of [...this.streams]) stream.stop();
    this.leaves.dropAll();
    this.wake();
  }

  /** @internal The sink leaf streams write to; undefined once the response is over. */
  get out(): LaterSink | undefined {
    return this.sink;
  }

  /**
   * @internal Whether the response takes more now. If not, every leaf stream is pumped again once
   * it does (one drain listener for them all).
   */
  roomOrWaitForDrain(sink: LaterSink): boolean {
    return this.leaves.roomOrWaitForDrain(sink);
  }

  /** @internal A payload made here (a message, a status, an item GraphQL refused), for `next` to give in turn. */
  make(payload: LaterPayload): void {
    if (this.over) return;
    this.made.push({ payload, order: this.order++ });
    this.wake();
  }

  /**
   * @internal A nulled message item ended its list: what was made under the list and is not out yet is dropped (as the
   * executor drops it).
   */
  dropMadeUnder(listPath: readonly (string | number)[]): void {
    this.made = this.made.filter(
      ({ payload }) =>
        !payload.incremental?.some((entry) => isUnder(entry.path as readonly (string | number)[], listPath)),
    );
  }

  /**
   * @internal A leaf stream the message plan made for a message's text (released when the message's payload goes out).
   */
  addLeaf(leaf: LeafStream): void {
    if (!this.over) this.leaves.add(leaf);
  }

  /** @internal A leaf stream is done. */
  finished(leaf: LeafStream): void {
    this.leaves.remove(leaf);
    if (!this.producing()) this.wake();
  }

  /**
   * @internal A message stream broke (a fault of the gateway's, from a microtask or a promise's
   * callback): the answer fails as when a leaf stream cannot write (the sink's `fail`), or, before
   * the transport reads any later payload, `next` throws it.
   */
  failed(error: unknown): void {
    const sink = this.sink;
    if (sink !== undefined) return sink.fail(error);
    this.failure = { error };
    this.wake();
  }

  /** @internal A message stream is done: it will make nothing more. */
  streamDone(stream: MessageStream): void {
    const at = this.streams.indexOf(stream);
    if (at !== -1) this.streams.splice(at, 1);
    if (this.streams.length === 0) this.planDone = true;
    if (!this.producing()) this.wake();
  }
}

const DONE: IteratorResult<LaterPayload, void> = Object.freeze({ value: undefined, done: true });

/** The later payloads Apollo is given: none (see LaterPayloads `adopt`). */
async function* nothingForApollo(): AsyncGenerator<LaterPayload, void, void> {}
