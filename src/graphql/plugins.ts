import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, Kind, visit, BREAK, type DocumentNode } from 'graphql';
import { statusOf } from '../core/errors.js';
import { DRAIN_REFUSAL_HEADER } from '../engine/drain.js';
import type { GatewayContext } from './context.js';
import { applyRefusal, logErrors, tagRequestId, type ErrorHead } from './error-answers.js';

/**
 * Checks an HTTP operation once it is parsed and before anything runs: subscriptions belong on
 * WebSocket, and an operation that streams needs a client that takes a streaming format.
 */
export function httpOperationGuardPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, contextValue }) {
          if (operation?.operation === 'subscription') {
            throw new GraphQLError(
              'Subscriptions are served over WebSocket (graphql-ws, subprotocol graphql-transport-ws) at this same ' +
                'path.',
              {
                extensions: { code: 'BAD_REQUEST', http: { status: statusOf('BAD_REQUEST') } },
              },
            );
          }
          if (!contextValue.acceptsIncremental && usesIncrementalDelivery(document)) {
            throw new GraphQLError(
              'This operation uses @defer or @stream: accept multipart/mixed or text/event-stream.',
              {
                extensions: { code: 'NOT_ACCEPTABLE', http: { status: statusOf('NOT_ACCEPTABLE') } },
              },
            );
          }
        },
      };
    },
  };
}

/** Puts the request id into every error of the first result (error-answers.ts tagRequestId). */
export function requestIdPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, contextValue }) {
          const result = response.body.kind === 'single' ? response.body.singleResult : response.body.initialResult;
          tagRequestId(result.errors, contextValue.requestId);
        },
      };
    },
  };
}

/**
 * Refusals that say when to try again, and the draining refusal's status (error-answers.ts applyRefusal); a proxy
 * that asked (engine/drain.ts) is told the draining refusal with 421 when nothing of the operation ran.
 */
export function refusalPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, request, operation, errors }) {
          const result = response.body.kind === 'single' ? response.body.singleResult : response.body.initialResult;
          if (result.errors === undefined) return;
          const head: ErrorHead = { status: response.http.status, headers: new Map() };
          applyRefusal(result, errors, operation, request.http?.headers.get(DRAIN_REFUSAL_HEADER), head);
          response.http.status = head.status;
          for (const [name, value] of head.headers) response.http.headers.set(name, value);
        },
      };
    },
  };
}

/** Logs what clients were told (error-answers.ts logErrors), of the first result and of later payloads. */
export function errorLoggingPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ contextValue, errors }) {
          logErrors(contextValue.logger, errors);
        },
        async didEncounterSubsequentErrors({ contextValue }, errors) {
          logErrors(contextValue.logger, errors);
        },
      };
    },
  };
}

/** Per document: Apollo hands the same parsed document to every request with the same text. */
const incrementalDocuments = new WeakMap<DocumentNode, boolean>();

function usesIncrementalDelivery(document: DocumentNode): boolean {
  let known = incrementalDocuments.get(document);
  if (known === undefined) {
    known = findsIncrementalDirective(document);
    incrementalDocuments.set(document, known);
  }
  return known;
}

function findsIncrementalDirective(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'defer' || node.name.value === 'stream') {
        const condition = node.arguments?.find((arg) => arg.name.value === 'if')?.value;
        if (condition?.kind === Kind.BOOLEAN && !condition.value) return undefined;
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}
