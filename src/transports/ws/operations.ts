import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { isIncrementalResults } from '@graphql-tools/executor';
import { getOperationAST, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { ServerOptions } from 'graphql-ws';
import type { Logger } from 'pino';
import { OPERATION_ENDED } from '../../core/abort.js';
import type { RunLauncher } from '../../engine/launcher.js';
import type { AnswerOutput } from '../slow-readers.js';
import type { GatewayContext } from '../../graphql/context.js';
import { EndingStream } from '../../graphql/ending-stream.js';
import type { Executor, ResultSink, SubscribeOutcome } from '../../graphql/executor.js';
import type { ConnectionExtra } from './connection.js';
import { WsResultSink } from './messages.js';

// Serving one operation once graphql-ws has admitted it: its context, its run's end, and the results
// graphql-ws reads (queries and the mutation through EndingStream, subscriptions from the executor).

/**
 * One operation's execution arguments: graphql-ws hands the same object (onSubscribe's) to `context`,
 * `execute` and `subscribe`, and keeps it until the operation ends. What the transport keeps of the
 * operation rides on it, set by `context` (operationContext), rather than on the GraphQL context,
 * which resolvers and the executor see.
 */
interface OperationArgs extends ExecutionArgs {
  contextValue: GatewayContext;
  /** Aborts a query's or mutation's run when the operation ends (operationEnd); none for a subscription. */
  controller: AbortController | undefined;
  /**
   * The payload of the parsed message graphql-ws holds (typed read-only for hooks): the client's
   * own, or an empty one when the transport kept the payload (slimSubscribe). Emptied once a
   * subscription's stream exists (serveSubscription).
   */
  message: { variables?: unknown; query: string } | undefined;
  /** Where a subscription's results go when its stream is pushed (graphql/fast/push-stream.ts). */
  sink: ResultSink | undefined;
  /** Where the operation's runs are counted for its connection, until it ends (operationEnd). */
  output: AnswerOutput | undefined;
}

/** The arguments of an operation whose context operationContext made: what `execute` and `subscribe` are given. */
function operationArgs(args: ExecutionArgs): OperationArgs {
  return args as OperationArgs;
}

/**
 * graphql-ws's `context` hook: an operation's GraphQL context, and what the transport keeps of the
 * operation beside it (OperationArgs).
 */
export function operationContext(
  launcher: RunLauncher,
  logger: Logger,
  holdOutput?: (socket: Socket) => AnswerOutput,
): NonNullable<ServerOptions<Record<string, unknown>, ConnectionExtra>['context']> {
  return (ctx, id, payload, args): GatewayContext => {
    const requestId = randomUUID();
    const bindings = { requestId, operationId: id, transport: 'ws' };
    // A subscription's stream stops its run when it ends; queries and mutations get a signal.
    // A subscription (held for long, thousands at once) passes its log fields on to its run's
    // logger instead of having a child logger of its own.
    const subscription = getOperationAST(args.document, args.operationName)?.operation === 'subscription';
    const controller = subscription ? undefined : new AbortController();
    const operation = operationArgs(args);
    operation.controller = controller;
    operation.message = payload as OperationArgs['message'];
    operation.sink = subscription && ctx.extra.socket ? new WsResultSink(ctx.extra.socket, id) : undefined;
    const output = ctx.extra.tcp && holdOutput ? holdOutput(ctx.extra.tcp) : undefined;
    operation.output = output;
    return {
      requestId,
      logger: subscription ? logger : logger.child(bindings),
      logBindings: subscription ? bindings : undefined,
      signal: controller?.signal,
      launcher,
      allowance: { used: false },
      storedReads: { threads: 0, values: 0 },
      acceptsIncremental: true,
      // Browsers cannot set headers on a WebSocket: the key comes in connection_init's payload.
      publicApiKey: stringParam(ctx.connectionParams, 'x-copilotcloud-public-api-key'),
      principal: ctx.extra.admitted?.principal,
      client:
        ctx.extra.admitted?.client ??
        (ctx.extra.facts ? `ip:${ctx.extra.facts.clientAddress ?? 'unknown'}` : undefined),
      output,
    };
  };
}

/**
 * Called once when an operation ends (its last result, an error, the client's `complete`, a closed
 * socket): a query's or mutation's signal is aborted, which stops the run it started, and one log
 * line says so. Subscriptions have no signal: ending their event stream returns its source, which
 * aborts the run (graphql/fast/subscribe.ts).
 */
function operationEnd(args: OperationArgs): () => void {
  const context = args.contextValue;
  const started = performance.now();
  return () => {
    args.controller?.abort(OPERATION_ENDED);
    args.output?.release();
    context.logger.info(
      {
        ...context.logBindings,
        operationName: args.operationName ?? null,
        durationMs: Math.round(performance.now() - started),
      },
      'operation completed',
    );
  };
}

/**
 * Queries and the mutation: an iterator handed over at once, before the result is ready, so that a
 * `complete` while a plain (not streamed) mutation waits for its run reaches `return()` and stops it.
 */
export function serveExecution(args: ExecutionArgs, executor: Executor): AsyncGenerator<ExecutionResult> {
  return new EndingStream(executionParts(args, executor), operationEnd(operationArgs(args)));
}

async function* executionParts(args: ExecutionArgs, executor: Executor): AsyncGenerator<ExecutionResult> {
  // The executor as Apollo runs it for HTTP.
  const result = await executor.execute(args);
  if (isIncrementalResults(result)) {
    // @defer/@stream over graphql-ws: the initial result, then each incremental payload.
    yield result.initialResult as ExecutionResult;
    yield* result.subsequentResults as AsyncIterable<ExecutionResult>;
  } else {
    yield result as ExecutionResult;
  }
}

/** Subscriptions: the response stream (or the error result) once the source stream exists. */
export async function serveSubscription(
  args: ExecutionArgs,
  subscribe: Executor['subscribe'],
): Promise<SubscribeOutcome> {
  const operation = operationArgs(args);
  const end = operationEnd(operation);
  let result;
  try {
    // The response stream ends the operation itself (calls `end`) however it ends: no wrapper per stream.
    result = await subscribe(args, end, operation.sink);
  } catch (error) {
    end();
    throw error;
  }
  if ('next' in result) {
    // graphql-ws keeps the subscribe message and these arguments until the operation ends. The run
    // has its input now and the event stream what it needs: the variables (the whole conversation,
    // parsed) and the query text are let go instead of being held for the stream's life.
    if (operation.message) Object.assign(operation.message, { variables: undefined, query: '' });
    operation.message = undefined;
    args.variableValues = undefined;
    return result;
  }
  end();
  return result;
}

function stringParam(params: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = params?.[name];
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}
