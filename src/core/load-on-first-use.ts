/** The last load queued: each load starts once the one before it has settled. */
let queue: Promise<unknown> = Promise.resolve();

/**
 * A library (or something made from it) loaded on first use instead of at start-up, so that a gateway
 * pays only for the providers, agents and stores it is configured with (BENCHMARKS.md, step 38).
 *
 * The function returned runs `load` once and gives every caller its result. A load that fails is
 * forgotten: the callers waiting on it get its error, and the next use tries again.
 *
 * Loads run one at a time, process-wide: the libraries share dependencies (zod, @ag-ui/core), and
 * Jest's module linker fails when two dynamic imports load a shared module at once ("request for …
 * is not in cache"; Node's own loader does not). A first use waits at most for the loads queued
 * before it, once. So `load` must not wait on another loader made here: it would wait for itself,
 * and hold up every first use after it. (Not detected: telling a load's own continuations apart
 * takes an AsyncLocalStorage, which on Node 20 puts a hook on every promise of the process.)
 */
export function loadOnFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    if (loading !== undefined) return loading;
    const current = queue.then(() => load());
    loading = current;
    queue = current.catch(() => {
      loading = undefined;
    });
    return current;
  };
}
