import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequestError, ForbiddenHostError, ForbiddenOriginError, NotFoundError } from '../../core/errors.js';
import { readAgUiBody } from '../../ag-ui/body.js';
import type { Admitted } from '../access.js';
import { answerPreflight, applyCors, isSameOrigin } from '../cors.js';
import { sendGatewayError, sendJson } from '../responses.js';
import { agUiCaller } from '../../ag-ui/caller.js';
import { serveGraphQL } from './graphql.js';
import type { AdmittedRequest, HttpTransportOptions } from './options.js';
import { serveMetrics } from './metrics.js';
import { explorerOffPage, sendPage } from './pages.js';
import { isSimpleRequest, sendRefusal, sendUnexpected } from './refusals.js';

export type { HttpTransportOptions };

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * GraphQL over HTTP on node:http, in front of Apollo Server: the routes (health, readiness, metrics,
 * the explorers, AG-UI, GraphQL), request ids, CORS and the door (access.ts). What each route does is
 * in a file of its own: GraphQL in graphql.ts (bodies in body.ts, the answer in answer.ts), refusals
 * in refusals.ts. A client that goes away aborts its run.
 */
export function createHttpHandler(options: HttpTransportOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { path, cors, logger, access } = options;

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const headerId = req.headers['x-request-id'];
    const requestId = typeof headerId === 'string' && REQUEST_ID.test(headerId) ? headerId : randomUUID();
    // The request's log fields: its own lines' (a child logger) and its run's, a child of the transport's
    // logger with the same fields rather than a grandchild (RunCaller.logParent).
    const logBindings = { requestId };
    const log = logger.child(logBindings);
    res.setHeader('x-request-id', requestId);
    res.on('finish', () => {
      const durationMs = Math.round(performance.now() - started);
      log.info({ method: req.method, path: req.url, status: res.statusCode, durationMs }, 'request completed');
      // An answer that began before the shutdown (a run's stream) said "keep-alive": its connection is closed
      // right after its end rather than left idle, so that a proxy does not put it back in its pool and send
      // a new request on it just as the instance closes it (a POST lost that way is a 502, never re-sent).
      if (options.shuttingDown() && !req.socket.destroyed) req.socket.end();
    });

    // Split by hand: `new URL` throws on request targets such as "//[", and nothing here may throw.
    const { pathname, search } = splitTarget(req.url ?? '/');
    if (!options.hosts.isAllowed(req.headers.host)) {
      const message = `Host ${req.headers.host} is not served in development. Add it to ALLOWED_HOSTS.`;
      return sendGatewayError(res, new ForbiddenHostError(message));
    }
    const read = req.method === 'GET' || req.method === 'HEAD';
    if (pathname === '/health' && read) {
      return sendJson(res, 200, { status: 'ok' });
    }
    if (pathname === '/ready' && read) {
      const { ready, checks } = options.readiness();
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks });
    }
    // Shutting down: each answer asks the client to open its next request elsewhere.
    if (options.shuttingDown()) res.shouldKeepAlive = false;
    if (pathname === '/metrics' && options.metrics && read) {
      return serveMetrics(req, res, options.metrics, log);
    }
    if (options.explorer.owns(pathname) && read) {
      if (!options.sandbox) return sendPage(res, explorerOffPage(path), 404);
      return options.explorer.serve(req, res, pathname);
    }
    const agUiRoute = options.agUi.owns(pathname);
    if (pathname !== path && !agUiRoute) {
      return sendGatewayError(res, new NotFoundError(`Not found. The GraphQL endpoint is ${path}.`));
    }

    const originAllowed = applyCors(req, res, cors);
    if (req.method === 'OPTIONS') return answerPreflight(req, res, originAllowed);

    // A browser opening the endpoint (no query, however its parameters are encoded): the explorer's page.
    const wantsPage =
      !agUiRoute &&
      req.method === 'GET' &&
      /text\/html/i.test(req.headers.accept ?? '') &&
      !new URLSearchParams(search).has('query');
    if (wantsPage && !options.sandbox) return sendPage(res, explorerOffPage(path));
    const request: AdmittedRequest = { pathname, search, agUiRoute, wantsPage, requestId, log, logBindings };
    // Sandbox's page is public; everything it (or anyone) asks of the endpoint is authenticated and counted.
    if (wantsPage || !access.active) {
      return serve(req, res, { principal: undefined, client: `ip:${access.clientAddress(req) ?? 'unknown'}` }, request);
    }
    void access.admitHttp(req, log).then(
      (admission) => {
        if ('error' in admission) return sendRefusal(res, admission.error, agUiRoute, requestId);
        serve(req, res, admission, request);
      },
      (error: unknown) => {
        log.error({ err: error }, 'unexpected error admitting a request');
        sendUnexpected(res, requestId);
      },
    );
  };

  /** A request past the door: AG-UI, or GraphQL through Apollo. */
  const serve = (req: IncomingMessage, res: ServerResponse, admitted: Admitted, request: AdmittedRequest): void => {
    const { pathname, agUiRoute, wantsPage, requestId, log } = request;
    const origin = req.headers.origin;
    const originAllowed = typeof origin === 'string' && cors.isAllowed(origin);
    if (agUiRoute) {
      // Cross-site request forgery: a stop may be posted without a body, which a page elsewhere could
      // send without a preflight. Browsers name the page's origin on every cross-origin POST.
      const crossSite = typeof origin === 'string' && !originAllowed && !isSameOrigin(origin, req.headers.host);
      if (req.method !== 'GET' && req.method !== 'HEAD' && crossSite) {
        const refused = new ForbiddenOriginError(`The origin ${origin} is not allowed. Add it to CORS_ORIGINS.`);
        return sendGatewayError(res, refused, { agUi: true, requestId });
      }
      const caller = agUiCaller(req, admitted, request, logger);
      const readBody = () => readAgUiBody(req, res, options.maxBodyBytes, options.inputBudget);
      void options.agUi.route(req, res, pathname, readBody, caller).catch((error) => {
        log.error({ err: error }, 'unexpected error in the AG-UI transport');
        sendUnexpected(res, requestId);
      });
      return;
    }

    // Apollo's CSRF prevention, answered in the gateway's words (a GET for Sandbox's page passes).
    if (!(wantsPage && options.sandbox) && isSimpleRequest(req)) {
      const refused = new BadRequestError(
        'Refused as a possible cross-site request forgery: send GraphQL by POST with content-type: application/json, ' +
          'or add the header apollo-require-preflight: true to a GET.',
      );
      return sendGatewayError(res, refused, { requestId });
    }

    void serveGraphQL(req, res, admitted, request, options).catch((error) => {
      log.error({ err: error }, 'unexpected error in the HTTP transport');
      sendUnexpected(res, requestId);
    });
  };

  // Nothing a client sends may take the process down: a synchronous throw is a 500 for that request only.
  const guarded = (req: IncomingMessage, res: ServerResponse): void => {
    try {
      handle(req, res);
    } catch (error) {
      logger.error({ err: error }, 'unexpected error in the HTTP transport');
      sendUnexpected(res, res.getHeader('x-request-id') as string | undefined);
    }
  };
  return (req, res) => {
    if (res.socket) return guarded(req, res);
    // A pipelined request (sent on a connection before the answers to the ones before it): Node keeps its answer
    // in memory until those are sent, where the budget for clients that do not read cannot see it
    // (slow-readers.ts). It is served once its answer has the connection; never, if the connection goes first.
    const onClose = () => res.off('socket', onSocket);
    const onSocket = () => {
      req.off('close', onClose);
      guarded(req, res);
    };
    res.once('socket', onSocket);
    req.once('close', onClose);
  };
}

/** Path and query of a request target: origin-form ("/path?q") by hand, absolute-form ("http://host/path") by URL. */
function splitTarget(target: string): { pathname: string; search: string } {
  if (!target.startsWith('/')) {
    try {
      const url = new URL(target);
      return { pathname: url.pathname, search: url.search };
    } catch {
      return { pathname: target, search: '' };
    }
  }
  const queryAt = target.indexOf('?');
  if (queryAt === -1) return { pathname: target, search: '' };
  return { pathname: target.slice(0, queryAt), search: target.slice(queryAt) };
}
