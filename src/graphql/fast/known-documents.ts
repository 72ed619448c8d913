import type { DocumentNode } from 'graphql';

/**
 * Documents Apollo Server has already parsed, validated and run over HTTP, by their exact text,
 * for the fast executor to run again without Apollo's pipeline when the HTTP transport asks it
 * (http-operation.ts, executor.ts `prepare`: "known documents").
 *
 * Per request Apollo hashes the query's text (for its document store), calls each plugin's hooks
 * (a promise per hook and plugin), builds its request context and response head, and frames the
 * answer through an async generator of its own. For a streamed run of the stock client's document
 * that was about 5% of the gateway's CPU under load, and a part of the time to the first token
 * (BENCHMARKS.md, step 34). None of it changes a byte of an answer without errors: the executor's
 * initial result, framed as Apollo frames it. So the executor runs a known document itself (the
 * same `executeIncrementally` Apollo calls, with the same arguments) and gives the transport its
 * answer to frame; errors are formatted, logged and given their status and headers by the functions
 * Apollo's pipeline calls through the gateway's plugins (direct-answer.ts, ../error-answers.ts).
 *
 * Only documents whose operation the leaf-stream plan takes are kept (the run's streamed document,
 * graphql/fast/leaf-streams.ts), at most `capacity` of them, none longer than `maxChars`: the text was
 * validated by Apollo with the gateway's rules for this schema, which do not change while it runs.
 * A text is found for the operation names it was run with (the request's must be one of them, so
 * that the same operation runs).
 */
export class KnownDocuments {
  /** By text, most recently used last: the operations Apollo ran from it (one per operation name asked for). */
  private readonly byText = new Map<string, KnownDocument[]>();

  constructor(
    private readonly capacity = 32,
    private readonly maxChars = 64 * 1024,
  ) {}

  /**
   * The known document a POST body asks for, with its variables, when the body is one Apollo reads
   * without a complaint (its runHttpQuery: `variables` and `extensions` objects or null,
   * `operationName` a string or null) and names an operation the document was run for. Anything
   * else, undefined: Apollo answers it.
   */
  find(body: unknown): KnownRequest | undefined {
    if (this.byText.size === 0 || !isRecord(body)) return undefined;
    const { query, variables, operationName, extensions } = body;
    if (typeof query !== 'string') return undefined;
    const runs = this.byText.get(query);
    if (runs === undefined) return undefined;
    if (variables !== undefined && variables !== null && !isRecord(variables)) return undefined;
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
    // Extensions ask Apollo for something (a persisted query): only none, or an empty object, are taken.
    if (
      extensions !== undefined &&
      extensions !== null &&
      !(isRecord(extensions) && Object.keys(extensions).length === 0)
    )
      return undefined;
    const name = operationName ?? undefined;
    const known = runs.find((run) => run.operationName === name);
    if (known === undefined) return undefined;
    // The texts asked for most often stay: the one used goes last, the oldest is the first let go.
    this.byText.delete(query);
    this.byText.set(query, runs);
    return { document: known.document, operationName: known.operationName, variables: variables ?? undefined };
  }

  /**
   * Keeps a document Apollo validated and ran for this text and operation name; the least recently
   * used text goes when there are `capacity` (a client sending many texts costs others only
   * Apollo's path, until their next request through it).
   */
  remember(query: string, known: KnownDocument): void {
    if (query.length > this.maxChars) return;
    const runs = this.byText.get(query);
    if (runs !== undefined) {
      // Another operation of the same text (a document has as many as it defines).
      if (!runs.some((run) => run.operationName === known.operationName)) runs.push(known);
      return;
    }
    if (this.byText.size >= this.capacity) this.byText.delete(this.byText.keys().next().value as string);
    this.byText.set(query, [known]);
  }

  get size(): number {
    return this.byText.size;
  }
}

/** A document as Apollo ran it: its parsed, validated document and the operation name it was asked for. */
export interface KnownDocument {
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
}

/** A request for a known document: what Apollo would hand its executor. */
export interface KnownRequest extends KnownDocument {
  readonly variables: Record<string, unknown> | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
