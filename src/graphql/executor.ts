import type { IncrementalExecutionResults, SingularExecutionResult } from '@graphql-tools/executor';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import type { Logger } from 'pino';
import type { ExecutionHandle, GatewayContext } from './context.js';
import type { ExecutorName } from './executor-name.js';

export type { ExecutorName } from './executor-name.js';

// The seam between the transports and execution: what an executor is, and what it gives the transports.
// The two implementations are fast/index.ts (`fastExecutor`) and stock.ts (`stockExecutor`).

/** What the executor gives for an operation: one result, or an initial result and later payloads. */
export type ExecutionOutcome = SingularExecutionResult<any> | IncrementalExecutionResults<any>;

/**
 * Where a pushed subscription's results go: `send` writes one and calls `written` once it is out (or
 * dropped, the client having gone), never within `send` itself (a later turn or microtask: the
 * next event is executed from `written`). The next event is executed only then, so a slow reader
 * gets its source's merged events (RunEventStream), not a growing backlog of results.
 */
export interface ResultSink {
  send(result: ExecutionResult, written: () => void): void;
}

/** A subscription's response stream, or the error result when it could not start. */
export type SubscribeOutcome = AsyncGenerator<ExecutionResult> | ExecutionResult;

/**
 * What runs GraphQL operations for the transports, in one place, so the gateway can run on either
 * implementation with one switch (GatewayOptions.executor, GATEWAY_EXECUTOR) and the same suites can
 * hold that the two agree:
 * - `fast` (the default): the gateway's own paths, written for speed and measured in BENCHMARKS.md:
 *   variables coerced by code made per operation (variables.ts), the run plan that writes a streamed
 *   run's payloads itself (message-plan.ts, leaf-streams.ts), known documents run without Apollo's
 *   pipeline and later payloads written without it (known-documents.ts, incremental.ts), and
 *   subscriptions' events executed by graphql-jit (subscribe.ts);
 * - `stock`: Apollo Server's pipeline and @graphql-tools/executor's `execute` and `subscribe`, as their
 *   authors ship them: the way back when an upgrade breaks an internal a fast path leans on.
 *
 * Both keep the gateway's three guards, which are about correctness, not speed: a directive argument
 * the executor cannot take is refused as the client's mistake (directive-arguments.ts), the lists the
 * executor would wait on are read for it so that none of its promises floats (owned-lists.ts), and
 * nothing is sent under a path the answer has nulled (nulled-paths.ts `withoutOrphansIn`).
 */
export interface Executor {
  readonly name: ExecutorName;
  /**
   * Queries and mutations, with @defer/@stream: Apollo's `legacyExperimentalExecuteIncrementally` over
   * HTTP and graphql-ws's `execute`.
   */
  execute(args: ExecutionArgs): Promise<ExecutionOutcome>;
  /**
   * Subscriptions over graphql-ws. `onEnd` is called once however the operation ends; `sink`, where the
   * executor can use it, takes results pushed without a promise per event (the fast executor's).
   */
  subscribe(args: ExecutionArgs, onEnd: () => void, sink?: ResultSink): Promise<SubscribeOutcome>;
  /**
   * HTTP, before Apollo's pipeline runs the request: what the executor does for it itself. The stock
   * executor declines (undefined): Apollo's pipeline runs every request and frames every part. The
   * fast one keeps the operation's later payloads (HttpOperation `later`) and runs the documents it
   * knows without Apollo's pipeline (HttpOperation `run`).
   */
  prepare(request: HttpRequest): HttpOperation | undefined;
}

/** An HTTP request as the transport hands it to `Executor.prepare`. */
export interface HttpRequest {
  /** The request's body, parsed. */
  readonly body: unknown;
  /**
   * Whether the executor may answer it without Apollo's pipeline (a POST, a streaming format, a JSON type for a single
   * result, Apollo serving).
   */
  readonly direct: boolean;
  /** The request's header of this (lower-case) name: what an answer's errors read (engine/drain.ts's header). */
  header(name: string): string | undefined;
  /** The request's logger: where the errors of the answers the executor makes are logged, as Apollo's plugins do. */
  readonly logger: Logger;
}

/** One HTTP operation the executor takes part in; the transport frames what it gives. */
export interface HttpOperation {
  /** For the operation's context (GatewayContext `execution`): how the executor knows the operation again. */
  readonly handle: ExecutionHandle;
  /**
   * Runs the request without Apollo's pipeline when the executor knows its document and can run it whole: its answer,
   * made as Apollo's pipeline makes it with the gateway's options and plugins (graphql/error-answers.ts), the
   * transport framing it. Undefined, before anything has run: Apollo's pipeline runs it (then `answered`). `context` is
   * the operation's.
   */
  run(context: GatewayContext): Promise<DirectAnswer | undefined>;
  /** Apollo ran the request (`query`, its text) and answered it, streamed or not. */
  answered(query: unknown, streamed: boolean): void;
  /** The later payloads the executor gives itself, once it has run; undefined: they are all in Apollo's parts. */
  later(): LaterDelivery | undefined;
  /** The answer is over (written, or its client went away): nothing more is made, the executor's streams end. */
  close(): void;
}

/**
 * An answer the executor made without Apollo's pipeline: the status and headers its errors set (none: 200), and its
 * one result's JSON (the transport gives it the content type Apollo would, for the request's Accept) or its streamed
 * first part.
 */
export interface DirectAnswer {
  readonly status: number | undefined;
  readonly headers: ReadonlyMap<string, string>;
  readonly body:
    { readonly kind: 'single'; readonly json: string } | { readonly kind: 'streamed'; readonly first: InitialPart };
}

/** A streamed answer's first part: its JSON (the initial result), and whether more is to come. */
export interface InitialPart {
  readonly json: string;
  readonly hasNext: boolean;
}

/** A later payload serialised, its errors formatted as Apollo formats a later payload's. */
export interface LaterStep {
  readonly json: string;
  readonly hasNext: boolean;
}

/** An operation's later payloads as the executor gives them to the transport. */
export interface LaterDelivery {
  /** Where payloads go that are written between `next`s (leaf streams' items): before the first `next`. */
  open(sink: LaterSink): void;
  /** The next later payload; undefined after the last. */
  next(): Promise<LaterStep | undefined>;
  /** The payload `next` gave went out: what waited for it (leaf streams) writes. */
  after(): void;
  /** Nothing more is taken. */
  close(): void;
}

/** Where the transport takes the payloads an executor writes between `next`s (leaf streams' items). */
export interface LaterSink {
  /** Writes one later payload (its JSON: `hasNext` is true). */
  write(json: string): void;
  /** Whether the client reads slower than the response is written. */
  full(): boolean;
  /** Calls back once the response takes more again. */
  onDrain(callback: () => void): void;
  /** Ends the response with an error thrown while writing outside the transport's own calls. */
  fail(error: unknown): void;
}
