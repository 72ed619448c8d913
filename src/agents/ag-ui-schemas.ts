import type * as Schemas from '@ag-ui/core/schemas';

let loading: Promise<typeof Schemas> | undefined;

/**
 * @ag-ui/core's schemas (zod), imported once for the whole process, on the first AG-UI request or AG-UI
 * agent run rather than at start-up: building them takes about 7 MB of heap and 19 MB of RSS
 * (measured), which a gateway serving only GraphQL clients never uses. One loader for the transport's
 * input check and the agent client's event check, and what else needs zod is imported after it: Jest's
 * module linker fails ("request for … is not in cache") when two dynamic imports load zod at once.
 */
export function agUiSchemas(): Promise<typeof Schemas> {
  loading ??= import('@ag-ui/core/schemas');
  loading.catch(() => (loading = undefined));
  return loading;
}
