import { locatedError } from '@graphql-tools/utils';
import type { GraphQLError } from 'graphql';
import { LeafStream, type LeafStreamOwner } from './leaf-stream.js';
import type { MessagePlan, ObjectWriter } from './message-plan.js';
import { coerceError, runtimeWriter, writeDeferred, writeFields } from './message-writing.js';
import { deferredPayload, EMPTY, itemsPayload, watchBatched } from './payloads.js';
import { SharedStream, SharedTextStream } from '../../views/shared-stream.js';

/** What the message plan's stream needs of the operation's later payloads (LaterPayloads is it). */
export interface MessageStreamOwner extends LeafStreamOwner {
  failed(error: unknown): void;
  /** Payloads made but not sent under `listPath` are dropped (an item there was nulled). */
  dropMadeUnder(listPath: readonly (string | number)[]): void;
  addLeaf(leaf: LeafStream): void;
  streamDone(stream: MessageStream): void;
}

/**
 * The run's messages written by the message plan (graphql/fast/message-plan.ts): each message's item
 * payload as it comes, its texts as leaf streams released by that payload, its deferred status once
 * it settles, and the run's deferred status; each as the executor's payload for it, in the order the
 * executor gives them when the run's events come in turns of their own.
 */
export class MessageStream {
  /** Where it reads the messages, and the next message's index. */
  private read = 0;
  private index = 0;
  private unwatch: (() => void) | undefined;
  /** The messages' list ended (or an item nulled it). */
  private listDone = false;
  /** Statuses asked for and not yet settled. */
  private pending = 0;
  /** The run's deferred status is still to come. */
  private runPending: boolean;
  /** The response is over: nothing more is made. */
  private stopped = false;
  /** An item was nulled: the statuses still to come under the list are dropped. */
  private nulled = false;
  private readonly runPath: readonly (string | number)[];

  constructor(
    private readonly owner: MessageStreamOwner,
    private readonly plan: MessagePlan,
    private readonly messages: SharedStream<Record<string, unknown>>,
    private readonly view: Record<string, unknown>,
    private readonly listPath: readonly (string | number)[],
    private readonly context: unknown,
  ) {
    this.runPath = listPath.slice(0, -1);
    this.runPending = plan.runDeferred !== undefined;
  }

  start(): void {
    // Messages of one turn are read a microtask later: a status settled before them in that turn
    // (a text that ended, then a call that started) comes before them, as the executor has it.
    this.unwatch = watchBatched(this.messages, this.pullSoon);
    const run = this.plan.runDeferred;
    if (run !== undefined) {
      const errors: GraphQLError[] = [];
      writeDeferred(this.plan.runType, run, this.view, this.runPath, errors, this.context, (data) =>
        this.guarded(() => {
          if (!this.runPending) return;
          this.runPending = false;
          this.owner.make(deferredPayload(data, this.runPath, errors));
          this.check();
        }),
      );
    }
    this.pull();
  }

  private readonly pullSoon = (): void => this.guarded(() => this.pull());

  /**
   * Runs what is called from a microtask or a promise's callback, outside the transport's own error handling: what it
   * throws fails the answer.
   */
  private guarded(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.stop();
      this.owner.failed(error);
    }
  }

  private pull(): void {
    const messages = this.messages;
    while (!this.listDone && messages.available(this.read)) {
      const [message, next] = messages.take(this.read);
      this.read = next;
      this.write(message, this.index++);
    }
    if (!this.listDone && messages.isEnded()) this.endList();
  }

  /** One message: its item, its texts' leaf streams, its deferred status. */
  private write(message: Record<string, unknown>, index: number): void {
    const path = [...this.listPath, index];
    const errors: GraphQLError[] = [];
    const plan = this.plan;
    let writer: ObjectWriter;
    let item: Record<string, unknown>;
    const leaves: LeafStream[] = [];
    try {
      writer = runtimeWriter(
        plan.items,
        plan.messageType,
        plan.runType,
        plan.messages.name.value,
        [plan.messages],
        message,
        this.context,
      );
      item = writeFields(writer, message, path, errors, this.context);
      // The texts' keys come last, as `[]`: the executor sets a streamed field's key when its first, empty part
      // settles.
      for (const field of writer.fields) {
        if (field.kind !== 'stream') continue;
        const text = message[field.name];
        if (!(text instanceof SharedTextStream))
          throw new Error(`${writer.type.name}.${field.name} is not a run's text stream.`);
        item[field.key] = EMPTY;
        leaves.push(
          new LeafStream(this.owner, text, [...path, field.key], writer.type.name, field.name, field.nodes, true),
        );
      }
    } catch (raw) {
      // A non-null field failed: the executor nulls the item, ends the list's stream and drops what
      // is still to come under the list (later messages, and statuses not out yet).
      errors.push(locatedError(coerceError(raw), [plan.messages], path));
      this.nulled = true;
      this.endList();
      this.owner.dropMadeUnder(this.listPath);
      this.owner.make(itemsPayload(null, path, errors));
      return;
    }
    for (const leaf of leaves) this.owner.addLeaf(leaf);
    this.owner.make(itemsPayload([item], path, errors));
    const deferred = writer.deferred;
    if (deferred === undefined) return;
    const statusErrors: GraphQLError[] = [];
    this.pending++;
    writeDeferred(writer.type, deferred, message, path, statusErrors, this.context, (data) =>
      this.guarded(() => {
        this.pending--;
        // Not when an item nulled the list, or the response is over: the executor drops it.
        if (!this.nulled && !this.stopped) this.owner.make(deferredPayload(data, path, statusErrors));
        this.check();
      }),
    );
  }

  private endList(): void {
    this.listDone = true;
    this.unwatch?.();
    this.unwatch = undefined;
    this.check();
  }

  /** The response is over: nothing more is made. */
  stop(): void {
    this.stopped = true;
    this.runPending = false;
    this.endList();
  }

  /**
   * Tells the owner once nothing more will be made here (statuses still to settle under a nulled list, or after the
   * end, make nothing).
   */
  private check(): void {
    if (this.listDone && (this.pending === 0 || this.nulled || this.stopped) && !this.runPending)
      this.owner.streamDone(this);
  }
}

/** What the executor is given for the messages the plan writes: a stream that ends at once. */
export const NOTHING: AsyncIterable<never> = Object.freeze({
  [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ value: undefined as never, done: true as const }) }),
});
