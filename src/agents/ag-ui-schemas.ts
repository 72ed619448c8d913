import type * as Schemas from '@ag-ui/core/schemas';

let loading: Promise<typeof Schemas> | undefined;

/**
 * @ag-ui/core's schemas (zod), imported once for the whole process, on the first AG-UI request or AG-UI
 * agent run rather than at start-up: a gateway serving only GraphQL clients never uses them, and they
 * were most of the 8 MB of heap (10 MB of RSS) the idle process lost when they and graphql-jit stopped
 * loading at start-up (BENCHMARKS.md, step 38). One loader for the transport's input check and the agent
 * client's event check, which imports @ag-ui/client only after it: Jest's module linker fails ("request
 * for … is not in cache") when two dynamic imports load zod at once (Node's loader does not).
 */
export function agUiSchemas(): Promise<typeof Schemas> {
  loading ??= import('@ag-ui/core/schemas');
  loading.catch(() => (loading = undefined));
  return loading;
}
