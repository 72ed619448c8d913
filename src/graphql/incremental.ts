import { execute, isIncrementalResults, type SubsequentIncrementalExecutionResult } from '@graphql-tools/executor';
import type { ExecutionArgs } from 'graphql';

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
 */
export class LaterPayloads {
  /** The executor's later payloads, once the operation turned out to have some. */
  source: AsyncGenerator<LaterPayload, void, void> | undefined;
  private readonly queued: LaterPayload[] = [];

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
export function multipartPart(payload: LaterPayload): string {
  return `content-type: application/json; charset=utf-8\r\n\r\n${JSON.stringify(payload)}\r\n---${payload.hasNext ? '' : '--'}\r\n`;
}

/**
 * Runs operations with @defer/@stream on the tools executor for Apollo (its
 * `legacyExperimentalExecuteIncrementally`), and gives an operation's later payloads to its
 * transport when the context carries a `LaterPayloads`.
 */
export async function executeIncrementally(args: ExecutionArgs) {
  const result = await execute(args);
  const later = (args.contextValue as { laterPayloads?: LaterPayloads } | undefined)?.laterPayloads;
  if (later === undefined || !isIncrementalResults(result)) return result;
  return { initialResult: result.initialResult, subsequentResults: later.adopt(result.subsequentResults) };
}
