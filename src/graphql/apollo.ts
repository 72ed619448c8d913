import type { Server } from 'node:http';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import type { GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import type { GatewayContext } from './context.js';
import type { ErrorFormatter } from './error-answers.js';
import type { Executor } from './executor.js';
import { errorLoggingPlugin, httpOperationGuardPlugin, refusalPlugin, requestIdPlugin } from './plugins.js';
import { MAX_DOCUMENT_TOKENS, gatewayValidationRules } from './validation.js';

export interface ApolloOptions {
  schema: GraphQLSchema;
  executor: Executor;
  /** The node:http server Apollo's drain plugin closes. */
  server: Server;
  /** Ends the WebSocket transport when Apollo drains (graphql-ws shares the server). */
  drainWebSocket: () => Promise<void>;
  /** Introspection, the landing page and Apollo Studio's origins: on in development (GatewayOptions.sandbox). */
  sandbox: boolean;
  /** How errors are shaped for clients: the one formatter the fast executor is given too (error-answers.ts). */
  formatError: ErrorFormatter;
  logger: Logger;
  /**
   * Apollo's usage reporting (GatewayOptions.apolloUsageReporting): off, it is kept off even where APOLLO_KEY would
   * have Apollo install it, since the fast executor then answers without Apollo's pipeline.
   */
  usageReporting: boolean;
}

/**
 * Apollo Server as the gateway configures it: the schema run by the chosen executor, the gateway's error
 * formatting, validation rules and plugins, and Apollo's own defaults that cost without serving (cache
 * hints, inline traces) off. The HTTP transport hands it the requests the executor does not answer itself.
 */
export function createApollo(options: ApolloOptions): ApolloServer<GatewayContext> {
  const { schema, executor, server, sandbox, logger } = options;
  return new ApolloServer<GatewayContext>({
    schema,
    // Introspection is refused by the gateway's own rule (in its words), not Apollo's.
    introspection: true,
    // Automatic persisted queries: off. No CopilotKit client sends them, and their cache would be one
    // more thing to bound and share across instances.
    persistedQueries: false,
    // Where introspection is off, "Did you mean …" suggestions would reveal the schema anyway.
    hideSchemaDetailsFromClientErrors: !sandbox,
    includeStacktraceInErrorResponses: false,
    // Runs @defer/@stream (and async-iterable lists) on the chosen executor (graphql/executor.ts).
    legacyExperimentalExecuteIncrementally: executor.execute as any,
    formatError: options.formatError,
    validationRules: gatewayValidationRules(sandbox),
    parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS },
    // main.ts owns the process's signals; Apollo re-raising them would change the exit code.
    stopOnTerminationSignals: false,
    logger: apolloLogger(logger),
    // None of these listens to willSendSubsequentPayload, and their hooks are also called, through the same
    // functions (error-answers.ts), for the answers and later payloads the fast executor makes without Apollo.
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: server }),
      // Apollo installs these by default. Cache hints: nothing here is cacheable, and the plugin wraps
      // every field's resolver, which runs for every streamed item. Inline traces: for subgraphs only.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ...(options.usageReporting ? [] : [ApolloServerPluginUsageReportingDisabled()]),
      {
        async serverWillStart() {
          return { drainServer: options.drainWebSocket };
        },
      },
      errorLoggingPlugin(),
      requestIdPlugin(),
      refusalPlugin(),
      httpOperationGuardPlugin(),
      sandbox
        ? ApolloServerPluginLandingPageLocalDefault({ embed: { runTelemetry: false }, includeCookies: true })
        : ApolloServerPluginLandingPageDisabled(),
    ],
  });
}

/** Apollo's log lines, through the gateway's logger (component "apollo"). */
function apolloLogger(logger: Logger) {
  const apollo = logger.child({ component: 'apollo' });
  return {
    debug: (message: string) => apollo.debug(message),
    info: (message: string) => apollo.info(message),
    warn: (message: string) => apollo.warn(message),
    error: (message: string) => apollo.error(message),
  };
}
