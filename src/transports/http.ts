import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeaderMap, type ApolloServer, type HTTPGraphQLRequest, type HTTPGraphQLResponse } from '@apollo/server';
import type { Logger } from 'pino';
import { drained, sendJson } from './responses.js';
import { OPERATION_ENDED } from '../core/abort.js';
import { statusOf, type ErrorCode, type GatewayError } from '../core/errors.js';
import type { GatewayContext } from '../graphql/context.js';
import type { Executor, HttpOperation, InitialPart, LaterDelivery, LaterStep } from '../graphql/executor.js';
import { TOO_DEEP_DOCUMENT } from '../graphql/documents.js';
import { MAX_NESTING, textNestsDeeperThan } from '../core/depth.js';
import type { RunLauncher } from '../engine/launcher.js';
import { NO_BODY, type AgUiTransport } from '../ag-ui/serve.js';
import { bearerToken } from '../auth/authenticate.js';
import { headerValue, type AccessControl, type Admitted } from './access.js';
import { isSameOrigin, type CorsPolicy } from './cors.js';
import type { OfflineExplorer } from './explorer.js';
import type { HostPolicy } from './hosts.js';

export interface HttpTransportOptions {
  apollo: ApolloServer<GatewayContext>;
  launcher: RunLauncher;
  path: string;
  cors: CorsPolicy;
  hosts: HostPolicy;
  logger: Logger;
  maxBodyBytes: number;
  /** Milliseconds between keep-alive signals on a streamed response (SSE comments, multipart parts holding `{}`), so idle proxies do not cut a long run. */
  keepAliveMs: number;
  /**
   * Whether the explorers are served: Apollo Sandbox (GET with text/html) and the offline explorer
   * at `<path>/graphiql`. Off, a browser gets a page saying so.
   */
  sandbox: boolean;
  explorer: OfflineExplorer;
  /** The AG-UI runtime protocol (CopilotKit ≥1.50) under the same path. */
  agUi: AgUiTransport;
  /** Authentication and requests per minute, checked before a request is read. */
  access: AccessControl;
  /** GET /metrics: Prometheus's text, behind a bearer token when one is set (its keyMatcher). Absent: 404. */
  metrics?: { render: () => Promise<{ contentType: string; body: string }>; token?: (credential: string) => number };
  /** Told when a streamed response starts and ends (metrics). */
  onStream?: (delta: 1 | -1) => void;
  /** What runs the operations: asked first what it does for a request itself (Executor `prepare`). */
  executor: Executor;
  /** Whether Apollo serves operations (started, not stopped): the executor answers a request itself only then. */
  apolloServing: () => boolean;
  /** Whether the gateway is draining: answers ask clients to close their connections. */
  draining: () => boolean;
  /** What `/ready` answers: whether this instance should get traffic, and why. */
  readiness: () => { ready: boolean; checks: Record<string, unknown> };
}

/** What the handler knows of a request once it is past the door. */
interface AdmittedRequest {
  pathname: string;
  search: string;
  agUiRoute: boolean;
  wantsPage: boolean;
  requestId: string;
  log: Logger;
  /** `log`'s own fields (see RunCaller.logParent). */
  logBindings: Record<string, unknown>;
}

/** What the client can take, read from its Accept header. */
interface Acceptance {
  multipart: boolean;
  sse: boolean;
  /** A JSON type (`application/json`, `application/graphql-response+json`, `application/*`, `*\/*`), or no Accept at all. */
  json: boolean;
}

/**
 * A part framed as Apollo frames its later parts (each ends with the delimiter and its line break,
 * "\r\n---\r\n", and the next begins with its header) holding `{}`: Apollo Client skips a result with no
 * keys; urql merges it into what it has (data, errors and hasNext unchanged).
 */
const MULTIPART_KEEP_ALIVE = 'content-type: application/json; charset=utf-8\r\n\r\n{}\r\n---\r\n';
/** A later payload framed as Apollo frames it in `multipart/mixed; deferSpec=20220824` (its writeMultipartBody). */
function multipartPart(json: string, hasNext: boolean): string {
  return `content-type: application/json; charset=utf-8\r\n\r\n${json}\r\n---${hasNext ? '' : '--'}\r\n`;
}
/** How Apollo's last chunk ends: the closing delimiter. */
const MULTIPART_END = '-----\r\n';
/** The event that ends an SSE answer. */
const SSE_COMPLETE = 'event: complete\ndata:\n\n';

/** The format Apollo streams in: the one the stock client (urql) merges correctly. */
const LEGACY_MULTIPART = 'multipart/mixed; deferSpec=20220824';
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * GraphQL over HTTP on node:http, in front of Apollo Server: CORS, request ids, body limits, and
 * incremental delivery as multipart/mixed (what the stock client asks for) or SSE. Each part is
 * written as soon as it is ready; a client that goes away aborts its run.
 */
export function createHttpHandler(options: HttpTransportOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { apollo, path, cors, logger, access } = options;

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
      log.info(
        { method: req.method, path: req.url, status: res.statusCode, durationMs: Math.round(performance.now() - started) },
        'request completed',
      );
    });

    // Split by hand: `new URL` throws on request targets such as "//[", and nothing here may throw.
    const { pathname, search } = splitTarget(req.url ?? '/');
    if (!options.hosts.isAllowed(req.headers.host)) {
      return sendError(res, 'FORBIDDEN_HOST', `Host ${req.headers.host} is not served in development. Add it to ALLOWED_HOSTS.`);
    }
    if (pathname === '/health' && (req.method === 'GET' || req.method === 'HEAD')) {
      return sendJson(res, 200, { status: 'ok' });
    }
    if (pathname === '/ready' && (req.method === 'GET' || req.method === 'HEAD')) {
      const { ready, checks } = options.readiness();
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks });
    }
    // Draining: each answer asks the client to open its next request elsewhere.
    if (options.draining()) res.shouldKeepAlive = false;
    if (pathname === '/metrics' && options.metrics && (req.method === 'GET' || req.method === 'HEAD')) {
      return serveMetrics(req, res, options.metrics, log);
    }
    if (options.explorer.owns(pathname) && (req.method === 'GET' || req.method === 'HEAD')) {
      if (!options.sandbox) return sendPage(res, explorerOffPage(path), 404);
      return options.explorer.serve(req, res, pathname);
    }
    const agUiRoute = options.agUi.owns(pathname);
    if (pathname !== path && !agUiRoute) {
      return sendError(res, 'NOT_FOUND', `Not found. The GraphQL endpoint is ${path}.`);
    }

    const origin = req.headers.origin;
    const originAllowed = typeof origin === 'string' && cors.isAllowed(origin);
    if (originAllowed) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('access-control-expose-headers', 'x-request-id, retry-after');
    }
    res.setHeader('vary', 'Origin');
    if (req.method === 'OPTIONS') {
      if (!originAllowed) {
        const message = typeof origin === 'string'
          ? `The origin ${origin} is not allowed. Add it to CORS_ORIGINS.`
          : 'A CORS preflight needs an Origin header.';
        return sendError(res, 'FORBIDDEN_ORIGIN', message);
      }
      res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
      const requested = req.headers['access-control-request-headers'];
      if (requested) res.setHeader('access-control-allow-headers', requested);
      res.setHeader('access-control-max-age', '600');
      res.statusCode = 204;
      res.end();
      return;
    }

    // A browser opening the endpoint (no query, however its parameters are encoded): the explorer's page.
    const wantsPage = !agUiRoute && req.method === 'GET' && /text\/html/i.test(req.headers.accept ?? '') && !new URLSearchParams(search).has('query');
    if (wantsPage && !options.sandbox) return sendPage(res, explorerOffPage(path));
    // Sandbox's page is public; everything it (or anyone) asks of the endpoint is authenticated and counted.
    if (wantsPage || !access.active) {
      return serve(req, res, { principal: undefined, client: `ip:${access.clientAddress(req) ?? 'unknown'}` }, { pathname, search, agUiRoute, wantsPage, requestId, log, logBindings });
    }
    void access.admitHttp(req, log).then(
      (admission) => {
        if ('error' in admission) return sendRefusal(res, admission.error, agUiRoute, requestId);
        serve(req, res, admission, { pathname, search, agUiRoute, wantsPage, requestId, log, logBindings });
      },
      (error: unknown) => {
        log.error({ err: error }, 'unexpected error admitting a request');
        sendUnexpected(res, requestId);
      },
    );
  };

  /** A request past the door: AG-UI, or GraphQL through Apollo. */
  const serve = (req: IncomingMessage, res: ServerResponse, admitted: Admitted, request: AdmittedRequest): void => {
    const { pathname, search, agUiRoute, wantsPage, requestId, log, logBindings } = request;
    const origin = req.headers.origin;
    const originAllowed = typeof origin === 'string' && cors.isAllowed(origin);
    if (agUiRoute) {
      // Cross-site request forgery: a stop may be posted without a body, which a page elsewhere could
      // send without a preflight. Browsers name the page's origin on every cross-origin POST.
      if (req.method === 'POST' && typeof origin === 'string' && !originAllowed && !isSameOrigin(origin, req.headers.host)) {
        return sendJson(res, 403, { error: 'FORBIDDEN_ORIGIN', message: `The origin ${origin} is not allowed. Add it to CORS_ORIGINS.`, code: 'FORBIDDEN_ORIGIN', requestId });
      }
      const caller = { requestId, logger: log, logParent: logger, logBindings, publicApiKey: headerValue(req.headers['x-copilotcloud-public-api-key']), principal: admitted.principal, client: admitted.client };
      void options.agUi.route(req, res, pathname, () => readAgUiBody(req, res, options.maxBodyBytes), caller).catch((error) => {
        log.error({ err: error }, 'unexpected error in the AG-UI transport');
        sendUnexpected(res, requestId);
      });
      return;
    }

    // Apollo's CSRF prevention, answered in the gateway's words (a GET for Sandbox's page passes).
    if (!(wantsPage && options.sandbox) && isSimpleRequest(req)) {
      return sendError(
        res,
        'BAD_REQUEST',
        'Refused as a possible cross-site request forgery: send GraphQL by POST with content-type: application/json, or add the header apollo-require-preflight: true to a GET.',
        { requestId },
      );
    }

    void handleGraphQL(req, res, search, requestId, log, logBindings, admitted, options).catch((error) => {
      log.error({ err: error }, 'unexpected error in the HTTP transport');
      sendUnexpected(res, requestId);
    });
  };

  // Nothing a client sends may take the process down: a synchronous throw is a 500 for that request only.
  return (req, res) => {
    try {
      handle(req, res);
    } catch (error) {
      logger.error({ err: error }, 'unexpected error in the HTTP transport');
      sendUnexpected(res, res.getHeader('x-request-id') as string | undefined);
    }
  };
}

async function handleGraphQL(
  req: IncomingMessage,
  res: ServerResponse,
  search: string,
  requestId: string,
  log: Logger,
  /** `log`'s own fields, for loggers made from the transport's (see RunCaller.logParent). */
  logBindings: Record<string, unknown>,
  admitted: Admitted,
  options: HttpTransportOptions,
): Promise<void> {
  // When the response is over, nobody can read the run any more: stop it (a no-op once it ended,
  // as it has when the client selected `status`, which resolves only at the end).
  const controller = new AbortController();
  res.on('close', () => controller.abort(OPERATION_ENDED));

  const read = req.method === 'POST' ? await readGraphQLBody(req, res, options.maxBodyBytes) : { body: undefined, tooDeep: false };
  if (read === NO_BODY) return;
  const { body, tooDeep } = read;

  // Nesting that the parser, coercion or an upstream request's JSON.stringify would overflow on.
  if (tooDeep) {
    const message = `The request body nests deeper than ${MAX_NESTING} levels.`;
    if (isAgUiEnvelope(body)) return sendJson(res, 400, { error: 'Invalid request body', message, code: 'BAD_USER_INPUT', requestId });
    return sendError(res, 'BAD_USER_INPUT', message, { requestId });
  }
  const query = typeof (body as { query?: unknown } | undefined)?.query === 'string' ? (body as { query: string }).query : new URLSearchParams(search).get('query');
  if (query && textNestsDeeperThan(query)) return sendError(res, 'GRAPHQL_PARSE_FAILED', TOO_DEEP_DOCUMENT, { requestId });

  // A single-route AG-UI envelope ({method, params, body}) rather than a GraphQL request ({query, …}).
  if (isAgUiEnvelope(body)) {
    return options.agUi.envelope(res, body, { requestId, logger: log, logParent: options.logger, logBindings, publicApiKey: headerValue(req.headers['x-copilotcloud-public-api-key']), principal: admitted.principal, client: admitted.client });
  }

  const { acceptance, apollo: acceptForApollo } = readAccept(req.headers.accept);
  /** The request as Apollo reads it (the headers copied when Apollo is asked). */
  const apolloRequest = (): HTTPGraphQLRequest => {
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    headers.set('accept', acceptForApollo);
    return { method: req.method ?? 'GET', headers, search, body };
  };

  // What the executor does for the request itself (nothing, on the stock executor).
  const direct = req.method === 'POST' && (acceptance.multipart || acceptance.sse) && options.apolloServing();
  const operation = options.executor.prepare({ body, direct });
  const contextValue: GatewayContext = {
    requestId,
    logger: log,
    // The run's logger: a child of the transport's with the request's id, not a grandchild.
    logParent: options.logger,
    logBindings,
    signal: controller.signal,
    launcher: options.launcher,
    allowance: { used: false },
    acceptsIncremental: acceptance.multipart || acceptance.sse,
    publicApiKey: headerValue(req.headers['x-copilotcloud-public-api-key']),
    principal: admitted.principal,
    client: admitted.client,
    execution: operation?.handle,
  };
  const askApollo = (): Promise<HTTPGraphQLResponse> =>
    options.apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest: apolloRequest(), context: async () => contextValue });
  const first = await operation?.run(contextValue);
  let response: HTTPGraphQLResponse;
  if (first === undefined) {
    response = await askApollo();
    operation?.answered(query, response.body.kind === 'chunked');
  } else {
    response = first === 'apollo' ? await askApollo() : answeredDirectly(first, askApollo);
  }
  if (response.body.kind === 'complete' && /^text\/html/i.test(response.headers.get('content-type') ?? '')) {
    response.body.string = options.explorer.withFallbackLink(response.body.string);
  }
  if (response.body.kind === 'complete' || !options.onStream) return writeResponse(res, response, acceptance, options.keepAliveMs, requestId, operation, log);
  options.onStream(1);
  try {
    await writeResponse(res, response, acceptance, options.keepAliveMs, requestId, operation, log);
  } finally {
    options.onStream(-1);
  }
}

/**
 * The answer to a request the executor ran without Apollo's pipeline (a known document): its initial
 * part framed as Apollo frames it (its writeMultipartBody). A later payload with errors is Apollo's
 * to format: Apollo's pipeline for this request starts then (the executor gives it the same result),
 * and its first part (the same initial part) is skipped.
 */
function answeredDirectly(initial: InitialPart, askApollo: () => Promise<HTTPGraphQLResponse>): HTTPGraphQLResponse {
  let first: string | undefined = `\r\n---\r\n${multipartPart(initial.json, initial.hasNext)}`;
  let apolloParts: AsyncIterator<string> | undefined;
  const parts: AsyncIterator<string> & AsyncIterable<string> = {
    async next() {
      if (first !== undefined) {
        const value = first;
        first = undefined;
        return { value, done: false };
      }
      if (apolloParts === undefined) {
        const replayed = await askApollo();
        if (replayed.body.kind !== 'chunked') throw new Error('Apollo did not stream the operation it was handed.');
        apolloParts = replayed.body.asyncIterator;
        await apolloParts.next();
      }
      return apolloParts.next();
    },
    async return() {
      first = undefined;
      await apolloParts?.return?.(undefined);
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return {
    status: undefined,
    headers: new HeaderMap([['content-type', 'multipart/mixed; boundary="-"; deferSpec=20220824']]),
    body: { kind: 'chunked', asyncIterator: parts as AsyncIterableIterator<string> },
  };
}

/** Prometheus's scrape: the metrics' text, behind the token when one is set (compared in constant time, as API keys are). */
function serveMetrics(req: IncomingMessage, res: ServerResponse, metrics: NonNullable<HttpTransportOptions['metrics']>, log: Logger): void {
  if (metrics.token && metrics.token(bearerToken(headerValue(req.headers.authorization)) ?? '') === -1) {
    res.setHeader('www-authenticate', 'Bearer');
    return sendError(res, 'UNAUTHENTICATED', 'The metrics need "Authorization: Bearer <METRICS_TOKEN>".');
  }
  metrics.render().then(
    ({ contentType, body }) => {
      res.statusCode = 200;
      res.setHeader('content-type', contentType);
      res.setHeader('cache-control', 'no-store');
      res.end(req.method === 'HEAD' ? undefined : body);
    },
    (error: unknown) => {
      log.error({ err: error }, 'the metrics could not be collected');
      sendUnexpected(res, undefined);
    },
  );
}

async function writeResponse(
  res: ServerResponse,
  response: HTTPGraphQLResponse,
  acceptance: Readonly<Acceptance>,
  keepAliveMs: number,
  requestId: string,
  operation: HttpOperation | undefined,
  log: Logger,
): Promise<void> {
  if (response.body.kind === 'complete') {
    // (Nothing streams: whatever the operation's execution started for later payloads stops.)
    operation?.close();
    res.statusCode = response.status ?? 200;
    for (const [name, value] of response.headers) res.setHeader(name, value);
    const body = res.statusCode >= 400 ? withRequestId(response.body.string, requestId) : response.body.string;
    // A client that takes only a streaming format gets the one result in it (§2): one multipart part,
    // or one SSE event and the end, rather than a JSON type it did not accept. (Refusals with a 4xx
    // status stay JSON, as every HTTP-level error: §5.4.)
    if (res.statusCode === 200 && !acceptance.json && (acceptance.multipart || acceptance.sse) && /^application\/(graphql-response\+)?json\b/i.test(response.headers.get('content-type') ?? '')) {
      // As the last payload of every streamed answer, it says there is nothing more (§2.1).
      const trimmed = body.trimEnd();
      const json = trimmed.endsWith('}') ? `${trimmed.slice(0, -1)},"hasNext":false}` : trimmed;
      res.setHeader('cache-control', 'no-cache, no-transform');
      if (acceptance.multipart) {
        res.setHeader('content-type', 'multipart/mixed; boundary="-"; deferSpec=20220824');
        res.end(`\r\n---\r\n${multipartPart(json, false)}`);
      } else {
        res.setHeader('content-type', 'text/event-stream; charset=utf-8');
        res.end(sseEvent(json) + SSE_COMPLETE);
      }
      return;
    }
    res.end(body);
    return;
  }

  // A streamed operation reaches this point only for a client that takes multipart or SSE: the
  // operation guard plugin answered 406 before execution otherwise.
  const chunks = response.body.asyncIterator;
  const sse = !acceptance.multipart;
  res.statusCode = response.status ?? 200;
  for (const [name, value] of response.headers) {
    if (name !== 'content-type') res.setHeader(name, value);
  }
  res.setHeader('content-type', sse ? 'text/event-stream; charset=utf-8' : 'multipart/mixed; boundary="-"; deferSpec=20220824');
  // Nothing between here and the client may hold a part back: no caching, no transformation
  // (compression), no proxy buffering.
  res.setHeader('cache-control', 'no-cache, no-transform');
  res.setHeader('x-accel-buffering', 'no');
  // The headers leave with the first part in one write: Apollo answers once the initial result
  // exists, so the first part is always ready here.

  // Keep-alive while the model thinks, so that proxies do not cut a silent stream: an SSE comment;
  // in multipart, an empty result `{}` after a quiet interval (see MULTIPART_KEEP_ALIVE). Never after
  // the closing delimiter.
  let keepAlive: NodeJS.Timeout | undefined;
  let quiet = true;
  let closed = false;
  if (sse) {
    res.write(':\n\n');
    keepAlive = setInterval(() => res.write(':\n\n'), keepAliveMs);
  } else {
    keepAlive = setInterval(() => {
      if (quiet && !closed && !res.destroyed) res.write(MULTIPART_KEEP_ALIVE);
      quiet = true;
    }, keepAliveMs);
  }
  // Parts that become ready in the same turn of the event loop go out in one write (one HTTP chunk,
  // one TCP segment when they fit) instead of one each; nothing waits longer than that turn. They
  // are joined here rather than corked: a corked response still makes an HTTP chunk, with its
  // bookkeeping, per write.
  let pending = '';
  let failed = false;
  const flush = () => {
    const text = pending;
    pending = '';
    if (text && !res.destroyed) res.write(text);
  };
  const send = (wire: string): void => {
    if (pending === '') setImmediate(flush);
    pending += wire;
    quiet = false;
    // A turn's worth past the response's buffer goes now, so that `room` sees the pressure.
    if (pending.length >= res.writableHighWaterMark) flush();
  };
  /** A part as Apollo frames it in multipart (sent as it is, or as an SSE event). */
  const sendPart = (part: string): void => {
    if (!sse && part.endsWith(MULTIPART_END)) closed = true;
    send(sse ? toSseEvent(part) : part);
  };
  /** A later payload given as its JSON by the executor (a leaf stream's item too), framed here as Apollo would frame it. */
  const sendPayloadJson = (json: string, hasNext: boolean): void => {
    if (sse) return send(sseEvent(json));
    if (!hasNext) closed = true;
    send(multipartPart(json, hasNext));
  };
  // Backpressure: while the client reads slower than parts come, nothing more is taken.
  const room = (): Promise<void> | undefined => (res.writableNeedDrain && !res.destroyed ? drained(res) : undefined);
  // Apollo's parts: the initial result, then (when the executor's later payloads were not taken)
  // every later one; with them taken, only those handed back to Apollo (they carry errors).
  const parts = (): Promise<IteratorResult<string, void>> => chunks.next();
  /** A later payload the executor gives goes out, as Apollo would write it. */
  const sendLater = async (later: LaterDelivery, payload: LaterStep): Promise<void> => {
    if (payload === 'apollo') {
      // Errors are Apollo's to format (and to tell its plugins of): its next part is this payload.
      const part = await parts();
      if (part.done) throw new Error('Apollo ended the response before the payload it was handed.');
      sendPart(part.value);
    } else {
      sendPayloadJson(payload.json, payload.hasNext);
    }
    // Leaf streams whose message this payload carried write after it.
    later.after();
  };
  // The executor's later payloads, when it gives them itself (after the initial part, once it has run).
  let later: LaterDelivery | undefined;
  try {
    const initial = await parts();
    if (initial.done || res.destroyed) return;
    sendPart(initial.value);
    later = operation?.later();
    if (later === undefined) {
      for (let part = await parts(); !part.done && !res.destroyed; part = await parts()) {
        sendPart(part.value);
        const full = room();
        if (full) await full;
      }
    } else {
      const delivery = later;
      delivery.open({
        write: (json) => sendPayloadJson(json, true),
        full: () => res.writableNeedDrain,
        onDrain: (callback) => res.once('drain', callback),
        fail: (error) => {
          log.error({ err: error }, 'a streamed part could not be written');
          res.destroy(error instanceof Error ? error : new Error(String(error)));
        },
      });
      // A client that goes away ends the leaf streams (and whatever waits for them) at once.
      res.once('close', () => delivery.close());
      for (let step = await delivery.next(); step !== undefined && !res.destroyed; step = await delivery.next()) {
        await sendLater(delivery, step);
        const full = room();
        if (full) await full;
      }
    }
    if (sse) send(SSE_COMPLETE);
  } catch (error) {
    // The answer cannot be finished. Once it has begun, the client sees it cut (not a clean end with
    // more announced); before that, the caller answers 500. Nothing waiting is written.
    failed = true;
    pending = '';
    if (res.headersSent) res.destroy(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    clearInterval(keepAlive);
    // Whatever is left unread ends: the executor's streams (their runs were aborted when the
    // response closed) and Apollo's body.
    operation?.close();
    flush();
    void chunks.return?.(undefined)?.catch(() => undefined);
    if (!res.destroyed && !failed) res.end();
  }
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
  return queryAt === -1 ? { pathname: target, search: '' } : { pathname: target.slice(0, queryAt), search: target.slice(queryAt) };
}

/** Apollo's own error answers (CSRF, batching, bad method, 406) get the request id like every GraphQL error. */
function withRequestId(body: string, requestId: string): string {
  try {
    const parsed = JSON.parse(body);
    if (!Array.isArray(parsed?.errors)) return body;
    for (const error of parsed.errors) error.extensions = { ...error.extensions, requestId };
    return JSON.stringify(parsed);
  } catch {
    return body;
  }
}

/** Apollo writes one JSON payload per multipart chunk; SSE carries the same payload as a `next` event. */
function toSseEvent(chunk: string): string {
  const start = chunk.indexOf('\r\n\r\n') + 4;
  const end = chunk.lastIndexOf('\r\n---');
  return sseEvent(chunk.slice(start, end));
}

function sseEvent(json: string): string {
  return `event: next\ndata: ${json}\n\n`;
}

/** An Accept header read: what the client takes, and what Apollo is shown. */
interface AcceptReading {
  readonly acceptance: Readonly<Acceptance>;
  readonly apollo: string;
}

/**
 * Accept headers already read, by their text: clients send a handful of distinct ones, and reading
 * one (splitting, regular expressions) is about 10 µs a request. Bounded: emptied when full, and
 * long headers are not kept.
 */
const acceptReadings = new Map<string, AcceptReading>();
const MAX_ACCEPT_READINGS = 64;
const MAX_KEPT_ACCEPT_CHARS = 512;

function readAccept(accept: string | undefined): AcceptReading {
  const key = accept ?? '';
  let reading = acceptReadings.get(key);
  if (reading === undefined) {
    reading = { acceptance: Object.freeze(readAcceptance(accept)), apollo: apolloAccept(accept) };
    if (key.length <= MAX_KEPT_ACCEPT_CHARS) {
      if (acceptReadings.size >= MAX_ACCEPT_READINGS) acceptReadings.clear();
      acceptReadings.set(key, reading);
    }
  }
  return reading;
}

/** Parses an Accept header into what matters here (q=0 entries are refusals). */
function readAcceptance(accept: string | undefined): Acceptance {
  const result: Acceptance = { multipart: false, sse: false, json: (accept ?? '').trim() === '' };
  for (const range of (accept ?? '').split(',')) {
    const [type, ...params] = range.trim().toLowerCase().split(';').map((part) => part.trim());
    if (params.some((param) => /^q=0(\.0*)?$/.test(param))) continue;
    if (type === '*/*') result.json = true;
    if (type === 'multipart/mixed' || type === 'multipart/*' || type === '*/*') result.multipart = true;
    else if (type === 'text/event-stream') result.sse = true;
    else if (type === 'application/json' || type === 'application/graphql-response+json' || type === 'application/*') result.json = true;
  }
  return result;
}

/**
 * The Accept header Apollo sees. Apollo runs @defer/@stream only for `multipart/mixed;
 * deferSpec=20220824`, and runs everything else on graphql-js, which cannot resolve the streamed
 * lists. So it always sees that type (the transport decides the real format), after the client's
 * own JSON and HTML types, which Apollo uses for single results and the Sandbox page.
 */
function apolloAccept(accept: string | undefined): string {
  const kept = (accept ?? '')
    .split(',')
    .map((range) => range.trim())
    .filter((range) => /^(application\/(json|graphql-response\+json)|\*\/\*|application\/\*|text\/html)\b/i.test(range));
  if (!kept.some((range) => !/^text\/html/i.test(range))) kept.push('application/json');
  return [...kept, `${LEGACY_MULTIPART};q=0.001`].join(', ');
}

/**
 * The request's body as text. Once settled it keeps nothing: the request's listeners outlive the
 * read (a streamed answer's whole life), and through them this would keep the chunks and, through
 * the promise, the text.
 */
function readBody(req: IncomingMessage, limit: number): Promise<string | 'too-large' | 'aborted'> {
  let resolve: ((value: string | 'too-large' | 'aborted') => void) | undefined;
  const read = new Promise<string | 'too-large' | 'aborted'>((settle) => (resolve = settle));
  let chunks: Buffer[] = [];
  let size = 0;
  const settle = (value: string | 'too-large' | 'aborted') => {
    const settleRead = resolve;
    if (!settleRead) return;
    resolve = undefined;
    chunks = [];
    settleRead(value);
  };
  req.on('data', (chunk: Buffer) => {
    if (!resolve) return;
    size += chunk.length;
    if (size > limit) {
      req.removeAllListeners('data');
      req.resume();
      settle('too-large');
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => resolve && settle(Buffer.concat(chunks).toString('utf8')));
  req.on('error', () => settle('aborted'));
  req.on('close', () => settle('aborted'));
  return read;
}

/**
 * A GraphQL request's body: parsed when it is JSON (with whether it nests too deeply), the text
 * otherwise; NO_BODY once the request has been answered (too large, invalid JSON) or the client left.
 * A function of its own so that the text is not kept, for the answer's whole life, by the frame of
 * the caller that waits on Apollo and the response.
 */
async function readGraphQLBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<{ body: unknown; tooDeep: boolean } | typeof NO_BODY> {
  const raw = await readBody(req, limit);
  if (raw === 'too-large') {
    sendError(res, 'PAYLOAD_TOO_LARGE', `The request body is larger than ${limit} bytes.`);
    return NO_BODY;
  }
  if (raw === 'aborted') return NO_BODY;
  if (!/^application\/(graphql-response\+)?json\b/i.test(req.headers['content-type'] ?? '')) return { body: raw, tooDeep: false };
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    sendError(res, 'BAD_REQUEST', 'The request body is not valid JSON.');
    return NO_BODY;
  }
  // Read on the text, which is valid JSON by now: one pass over its characters, nothing allocated.
  return { body, tooDeep: textNestsDeeperThan(raw) };
}

function isAgUiEnvelope(body: unknown): body is Record<string, unknown> {
  return body !== null && typeof body === 'object' && !Array.isArray(body) && typeof (body as { method?: unknown }).method === 'string' && !('query' in body);
}

/**
 * An AG-UI request's JSON body (undefined when it has none), or NO_BODY once the request has been
 * answered: too large (413), not JSON (415), JSON that does not parse (400).
 */
async function readAgUiBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<unknown> {
  const raw = await readBody(req, limit);
  if (raw === 'aborted') return NO_BODY;
  if (raw === 'too-large') {
    sendJson(res, 413, { error: 'PAYLOAD_TOO_LARGE', message: `The request body is larger than ${limit} bytes.`, code: 'PAYLOAD_TOO_LARGE' });
    return NO_BODY;
  }
  if (raw.trim() === '') return undefined;
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
    sendJson(res, 415, { error: 'Unsupported media type', message: 'Send the body as application/json.', code: 'BAD_REQUEST' });
    return NO_BODY;
  }
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    sendJson(res, 400, { error: 'Invalid JSON', message: 'The request body is not valid JSON.', code: 'BAD_REQUEST' });
    return NO_BODY;
  }
  if (textNestsDeeperThan(raw)) {
    sendJson(res, 400, { error: 'Invalid request body', message: `The request body nests deeper than ${MAX_NESTING} levels.`, code: 'BAD_USER_INPUT' });
    return NO_BODY;
  }
  return body;
}

/** A 500 with the request id, or a cut connection when the answer has already begun. */
function sendUnexpected(res: ServerResponse, requestId: string | undefined): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendError(res, 'INTERNAL_SERVER_ERROR', 'Unexpected error.', requestId ? { requestId } : {});
}

/**
 * A request a browser may send cross-site without a preflight: no content type, or a "simple"
 * one, and none of the headers that force a preflight. Apollo refuses these (CSRF prevention).
 */
function isSimpleRequest(req: IncomingMessage): boolean {
  const contentType = req.headers['content-type'];
  if (contentType !== undefined) {
    const essence = contentType.split(';')[0].trim().toLowerCase();
    if (!['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'].includes(essence)) return false;
  }
  return !['x-apollo-operation-name', 'apollo-require-preflight'].some((name) => {
    const value = req.headers[name];
    return typeof value === 'string' && value.length > 0;
  });
}

/** What a browser opening the endpoint sees when the explorer is off. */
function explorerOffPage(path: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Copilot Gateway</title></head><body>
<h1>Copilot Gateway</h1>
<p>This is a GraphQL endpoint (<code>${path}</code>). Send GraphQL requests to it by POST with <code>content-type: application/json</code>,
or subscribe over WebSocket (graphql-ws, subprotocol <code>graphql-transport-ws</code>) at the same address.</p>
<p>The explorers (Sandbox at this address, the offline explorer at <code>${path}/graphiql</code>) are off. They are served
only when the gateway's <code>sandbox</code> option is on: the default in development, off when <code>NODE_ENV=production</code>.</p>
</body></html>
`;
}

function sendPage(res: ServerResponse, html: string, status = 200): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(html);
}

/**
 * A request refused at the door: 401 (with WWW-Authenticate), 429 (with Retry-After) or 503, in the
 * GraphQL error shape or, for AG-UI routes, AG-UI's JSON error shape.
 */
function sendRefusal(res: ServerResponse, error: GatewayError, agUiRoute: boolean, requestId: string): void {
  if (error.code === 'UNAUTHENTICATED') res.setHeader('www-authenticate', 'Bearer');
  const retryAfter = error.details?.retryAfterSeconds;
  if (typeof retryAfter === 'number') res.setHeader('retry-after', String(retryAfter));
  if (error.status === 503) res.setHeader('retry-after', '5');
  if (agUiRoute) {
    sendJson(res, error.status, { error: error.code, message: error.message, code: error.code, requestId, ...(error.details ? { details: error.details } : {}) });
  } else {
    sendJson(res, error.status, { errors: [{ message: error.message, extensions: { code: error.code, requestId, ...(error.details ? { details: error.details } : {}) } }] });
  }
}

/** An answer of the transport itself, with the status of the code's entry in the error table. */
function sendError(res: ServerResponse, code: ErrorCode, message: string, extensions: Record<string, unknown> = {}): void {
  sendJson(res, statusOf(code), { errors: [{ message, extensions: { code, ...extensions } }] });
}

