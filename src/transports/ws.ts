import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { execute, subscribe, isIncrementalResults } from '@graphql-tools/executor';
import { GraphQLError, parse, validate, type DocumentNode, type ExecutionArgs, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { RunLauncher } from '../engine/launcher.js';
import type { GatewayContext } from '../graphql/context.js';
import { formatGraphQLError } from '../graphql/errors.js';
import type { CorsPolicy } from './cors.js';

export interface WsTransportOptions {
  server: Server;
  schema: GraphQLSchema;
  launcher: RunLauncher;
  path: string;
  cors: CorsPolicy;
  logger: Logger;
}

/** The per-operation context plus the controller that aborts the operation's run. */
type OperationContext = GatewayContext & { controller: AbortController };

/**
 * graphql-ws on the same server, port and path as HTTP. Every operation works: the `copilotRun`
 * subscription, and queries and the mutation (with @defer/@stream, delivered as `next` messages).
 * Completing an operation or closing the socket aborts the run it started.
 */
export function attachWebSocketTransport(options: WsTransportOptions): { dispose: () => Promise<void> } {
  const { server, schema, launcher, path, cors, logger } = options;
  const wss = new WebSocketServer({
    server,
    path,
    // Browsers always send Origin; refuse cross-site pages that are not allowed, as for HTTP.
    verifyClient: ({ req }: { req: IncomingMessage }) => {
      const origin = req.headers.origin;
      return origin === undefined || cors.isAllowed(origin) || isSameOrigin(origin, req.headers.host);
    },
  });

  const serverCleanup = useServer<Record<string, unknown>, { request: IncomingMessage }>(
    {
      schema,
      context: (ctx, id): OperationContext => {
        const requestId = randomUUID();
        const controller = new AbortController();
        return {
          requestId,
          logger: logger.child({ requestId, operationId: id, transport: 'ws' }),
          signal: controller.signal,
          launcher,
          acceptsIncremental: true,
          controller,
        };
      },
      // Parse and validate here, so that a bad document gets an `error` message with a code
      // instead of graphql-ws closing the whole socket (4500) on a syntax error.
      onSubscribe: (_ctx, _id, payload) => {
        let document: DocumentNode;
        try {
          document = parse(payload.query);
        } catch (error) {
          return [codedError(error as GraphQLError, 'GRAPHQL_PARSE_FAILED')];
        }
        const errors = validate(schema, document);
        if (errors.length) return errors.map((error) => codedError(error, 'GRAPHQL_VALIDATION_FAILED'));
        return { schema, document, operationName: payload.operationName, variableValues: payload.variables };
      },
      execute: (args) => runOperation(args, execute),
      subscribe: (args) => runOperation(args, subscribe),
      onError: (_ctx, _id, _payload, errors) => errors.map((error) => formatGraphQLError(error.toJSON(), error)),
      onNext: (_ctx, _id, _payload, _args, result) => {
        if (!('errors' in result) || !result.errors?.length) return undefined;
        return { ...result, errors: result.errors.map((error) => formatGraphQLError(error.toJSON(), error)) } as any;
      },
    },
    wss,
  );

  return {
    dispose: async () => {
      await serverCleanup.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/**
 * Runs an operation on the tools executor (which streams @defer/@stream and async-iterable lists)
 * and always hands graphql-ws an async generator, so that graphql-ws calls `return()` when the
 * client completes the operation or the socket closes, which aborts the operation's run.
 */
async function* runOperation(args: ExecutionArgs, run: typeof execute | typeof subscribe): AsyncGenerator<any> {
  const context = args.contextValue as OperationContext;
  const started = performance.now();
  try {
    const result: any = await run(args as any);
    if (isIncrementalResults(result)) {
      // @defer/@stream over graphql-ws: the initial result, then each incremental payload.
      yield result.initialResult;
      yield* result.subsequentResults;
    } else if (result && typeof result[Symbol.asyncIterator] === 'function') {
      yield* result;
    } else {
      yield result;
    }
  } finally {
    context.controller.abort();
    context.logger.info(
      { operationName: args.operationName ?? null, durationMs: Math.round(performance.now() - started) },
      'operation completed',
    );
  }
}

function codedError(error: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(error.message, {
    source: error.source,
    positions: error.positions,
    extensions: { ...error.extensions, code },
  });
}

function isSameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}
