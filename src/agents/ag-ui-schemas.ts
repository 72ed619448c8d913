import type * as Schemas from '@ag-ui/core/schemas';
import { onFirstUse } from '../core/first-use.js';

/**
 * @ag-ui/core's schemas (zod), for the AG-UI transport's input check and the AG-UI agent client's event
 * check, loaded on the first AG-UI request or AG-UI agent run rather than at start-up: a gateway serving
 * only GraphQL clients never uses them, and they were most of the 8 MB of heap (10 MB of RSS) the idle
 * process lost when they and graphql-jit stopped loading at start-up (BENCHMARKS.md, step 38).
 */
export const agUiSchemas: () => Promise<typeof Schemas> = onFirstUse(() => import('@ag-ui/core/schemas'));
