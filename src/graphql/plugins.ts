import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, Kind, visit, BREAK, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { GatewayError, statusOf } from '../core/errors.js';
import { DRAIN_REFUSAL_HEADER, drainRefusalStatus, isDrainRefusal } from '../engine/drain.js';
import type { GatewayContext } from './context.js';
import { originalErrorOf } from './errors.js';

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

/** Puts the request id into every error the client gets, so a report can be found in the logs. */
export function requestIdPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, contextValue }) {
          const result = response.body.kind === 'single' ? response.body.singleResult : response.body.initialResult;
          for (const error of result.errors ?? []) {
            (error as { extensions?: Record<string, unknown> }).extensions = {
              ...error.extensions,
              requestId: contextValue.requestId,
            };
          }
        },
      };
    },
  };
}

/**
 * Refusals that say when to try again: a `retry-after` header (RATE_LIMITED, SHUTTING_DOWN). A request
 * refused because the instance is draining is also answered with HTTP 503; other request errors keep the
 * reference's HTTP 200. A proxy that asked (engine/drain.ts) is told the draining refusal with 421 instead
 * when nothing of the operation ran, and sends it on to another instance.
 */
export function refusalPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, request, operation, errors }) {
          const result = response.body.kind === 'single' ? response.body.singleResult : response.body.initialResult;
          for (const error of result.errors ?? []) {
            const code = error.extensions?.code;
            if (code !== 'RATE_LIMITED' && code !== 'SHUTTING_DOWN') continue;
            const retryAfter = (error.extensions?.details as { retryAfterSeconds?: unknown } | undefined)
              ?.retryAfterSeconds;
            if (typeof retryAfter === 'number') response.http.headers.set('retry-after', String(retryAfter));
            if (code === 'SHUTTING_DOWN' && result.data == null) {
              const asked = request.http?.headers.get(DRAIN_REFUSAL_HEADER);
              response.http.status = nothingRan(operation, errors) ? drainRefusalStatus(asked) : 503;
            }
            return;
          }
        },
      };
    },
  };
}

/**
 * Whether the operation did nothing but be refused by the draining launcher: one root field (with two, the
 * other may have done its work before the refusal nulled the whole result) and that field's one error the
 * launcher's refusal, thrown before anything of the run was done.
 */
function nothingRan(operation: OperationDefinitionNode | undefined, errors: readonly GraphQLError[] | undefined) {
  const roots = operation?.selectionSet.selections ?? [];
  return (
    roots.length === 1 &&
    roots[0].kind === Kind.FIELD &&
    errors?.length === 1 &&
    isDrainRefusal(originalErrorOf(errors[0]))
  );
}

/**
 * Logs what clients were told: gateway errors briefly, unexpected ones in full (they were masked);
 * those of the first result and those of later @defer/@stream payloads (an item that failed).
 */
export function errorLoggingPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ contextValue, errors }) {
          logErrors(contextValue, errors);
        },
        async didEncounterSubsequentErrors({ contextValue }, errors) {
          logErrors(contextValue, errors);
        },
      };
    },
  };
}

function logErrors(context: GatewayContext, errors: readonly GraphQLError[]): void {
  for (const error of errors) {
    const original = originalErrorOf(error);
    if (original instanceof GatewayError) {
      context.logger.info({ code: original.code }, `request error: ${original.message}`);
    } else if (original) {
      context.logger.error({ err: original }, 'unexpected error (masked for the client)');
    }
  }
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
