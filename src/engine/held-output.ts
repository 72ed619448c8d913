/**
 * What the output held for a caller's answer is counted in, for the transport's budget of output held for clients
 * that do not read (transports/slow-readers.ts): what an answer's views keep of its runs' output for their reader.
 */
export interface OutputHolder {
  /** The answer holds `held` (its `heldBytes` read when counted) until the answer is over. */
  hold(held: HeldOutput): void;
}

/**
 * Something that keeps output for one reader: a view that queues what its reader has not taken (core/event-queue.ts),
 * or a run, whose views may keep all it said (the mutation's over HTTP keeps a message's text until the answer ends).
 */
export interface HeldOutput {
  readonly heldBytes: number;
}

/** Whether `view` says itself what it holds (an event queue), rather than holding all its run says. */
export function isHeldOutput(view: unknown): view is HeldOutput {
  return typeof (view as Partial<HeldOutput> | null)?.heldBytes === 'number';
}
