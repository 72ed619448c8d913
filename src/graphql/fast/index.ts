import type { GraphQLSchema } from 'graphql';
import { gatewayErrorFormatter, type ErrorFormatter } from '../error-answers.js';
import type { Executor } from '../executor.js';
import { FastHttp } from './http-operation.js';
import { KnownDocuments } from './known-documents.js';
import { createSubscriber } from './subscribe.js';

export interface FastExecutorOptions {
  /**
   * Whether the executor takes HTTP operations' later payloads and runs known documents without
   * Apollo's pipeline (`prepare`); off, every request passes through Apollo's pipeline (its usage
   * reporting, installed with APOLLO_KEY, needs every later payload). On by default.
   */
  directHttp?: boolean;
  /**
   * How the errors of the answers it makes are shaped: the formatter Apollo is given (graphql/apollo.ts
   * `formatError`), so that both shape them alike. The gateway's without suggestions by default.
   */
  formatError?: ErrorFormatter;
}

/** The gateway's own paths; see Executor. */
export function fastExecutor(schema: GraphQLSchema, options: FastExecutorOptions = {}): Executor {
  const http = new FastHttp(schema, new KnownDocuments(), options.formatError ?? gatewayErrorFormatter(false));
  return {
    name: 'fast',
    execute: http.execute,
    subscribe: createSubscriber(schema),
    prepare: (options.directHttp ?? true) ? (request) => http.prepare(request) : () => undefined,
  };
}
