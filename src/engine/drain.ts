/**
 * The refusal of a draining instance, made before anything of the request was done, and how a proxy in
 * front learns it may send the request on to another instance.
 *
 * A proxy may re-send a request only when it knows nothing ran. Every 503 cannot say that: OVERLOADED and
 * SHUTTING_DOWN refusals do, but a 503 may also come after work (STORE_UNAVAILABLE once a thread was
 * changed, an upstream's 503 passed on by a future route), and nginx cannot tell them apart by status, nor
 * re-send a POST after a 503 without also re-sending it after a broken connection (`non_idempotent` covers
 * every condition, a crash in the middle of a run included). So the proxy asks, with a request header, to be
 * told this one refusal with a status of its own, 421 Misdirected Request ("the server is unwilling to answer
 * it; the request may be retried over another connection, whatever its method", RFC 9110 §15.5.20), and
 * re-sends exactly those. Without the header, the refusal stays 503 SHUTTING_DOWN, as clients know it.
 */

/** The request header a proxy sends to be told a draining refusal with 421 (its only accepted value). */
export const DRAIN_REFUSAL_HEADER = 'x-drain-refusal-status';

/** The refusals made before any work: the launcher's own draining refusal (one object per launcher). */
const refusedBeforeWork = new WeakSet<object>();

/** Marks `error` as a refusal made before anything of the request was done (the launcher's draining refusal). */
export function markDrainRefusal<E extends object>(error: E): E {
  refusedBeforeWork.add(error);
  return error;
}

/** Whether `error` is the draining refusal made before any work (nothing of the request ran). */
export function isDrainRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && refusedBeforeWork.has(error);
}

/**
 * The HTTP status of a draining refusal made before any work: 421 when the request's DRAIN_REFUSAL_HEADER
 * asks for it (a proxy that re-sends those), 503 otherwise.
 */
export function drainRefusalStatus(asked: string | readonly string[] | null | undefined): 421 | 503 {
  return asked === '421' ? 421 : 503;
}
