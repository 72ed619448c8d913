import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeaderMap, type HTTPGraphQLRequest, type HTTPGraphQLResponse } from '@apollo/server';
import { OPERATION_ENDED } from '../../core/abort.js';
import { textNestsDeeperThan } from '../../core/depth.js';
import { ParseFailedError } from '../../core/errors.js';
import type { GatewayContext } from '../../graphql/context.js';
import { TOO_DEEP_DOCUMENT } from '../../graphql/documents.js';
import type { DirectAnswer } from '../../graphql/executor.js';
import { isAgUiEnvelope } from '../../ag-ui/body.js';
import { agUiCaller } from '../../ag-ui/caller.js';
import { headerValue, type Admitted } from '../access.js';
import { sendGatewayError } from '../responses.js';
import { writeResponse } from './answer.js';
import { NO_BODY, nestsTooDeeply, readGraphQLBody } from './body.js';
import type { AdmittedRequest, HttpTransportOptions } from './options.js';
import { MULTIPART_CONTENT_TYPE, MULTIPART_START, multipartPart } from './multipart.js';
import { readAccept } from './negotiation.js';

/** What a GET is read as: no body. */
const NOTHING_READ = Object.freeze({ body: undefined, tooDeep: false });

/**
 * A GraphQL request past the door (or a single-route AG-UI envelope posted to the same path): its body
 * read, what the executor does for it itself asked first (Executor `prepare`), then Apollo's pipeline;
 * the answer written by `writeResponse`.
 */
export async function serveGraphQL(
  req: IncomingMessage,
  res: ServerResponse,
  admitted: Admitted,
  request: AdmittedRequest,
  options: HttpTransportOptions,
): Promise<void> {
  const { search, requestId, log, logBindings } = request;
  // When the response is over, nobody can read the run any more: stop it (a no-op once it ended,
  // as it has when the client selected `status`, which resolves only at the end).
  const controller = new AbortController();
  // The runs it starts count for its connection while its client does not read, until the answer is over.
  const output = options.holdOutput?.(res.socket);
  res.on('close', () => {
    controller.abort(OPERATION_ENDED);
    output?.release();
  });

  const read =
    req.method === 'POST' ? await readGraphQLBody(req, res, options.maxBodyBytes, options.inputBudget) : NOTHING_READ;
  if (read === NO_BODY) return;
  const { body, tooDeep } = read;

  // Nesting that the parser, coercion or an upstream request's JSON.stringify would overflow on.
  if (tooDeep) {
    if (isAgUiEnvelope(body)) {
      return sendGatewayError(res, nestsTooDeeply(), { agUi: true, title: 'Invalid request body', requestId });
    }
    return sendGatewayError(res, nestsTooDeeply(), { requestId });
  }
  const posted = (body as { query?: unknown } | undefined)?.query;
  const query = typeof posted === 'string' ? posted : new URLSearchParams(search).get('query');
  if (query && textNestsDeeperThan(query)) {
    return sendGatewayError(res, new ParseFailedError(TOO_DEEP_DOCUMENT), { requestId });
  }

  // A single-route AG-UI envelope ({method, params, body}) rather than a GraphQL request ({query, …}).
  if (isAgUiEnvelope(body)) {
    return options.agUi.envelope(res, body, agUiCaller(req, admitted, request, options.logger));
  }

  const { acceptance, apollo: acceptForApollo, single } = readAccept(req.headers.accept);
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
  const direct =
    req.method === 'POST' &&
    (acceptance.multipart || acceptance.sse) &&
    single !== undefined &&
    options.apolloServing();
  const operation = options.executor.prepare({
    body,
    direct,
    header: (name) => headerValue(req.headers[name]),
    logger: log,
  });
  const contextValue: GatewayContext = {
    requestId,
    logger: log,
    // The run's logger: a child of the transport's with the request's id, not a grandchild.
    logParent: options.logger,
    logBindings,
    signal: controller.signal,
    launcher: options.launcher,
    allowance: { used: false },
    storedReads: { threads: 0, values: 0 },
    acceptsIncremental: acceptance.multipart || acceptance.sse,
    publicApiKey: headerValue(req.headers['x-copilotcloud-public-api-key']),
    principal: admitted.principal,
    client: admitted.client,
    output,
    execution: operation?.handle,
  };
  const context = async (): Promise<GatewayContext> => contextValue;
  const askApollo = (): Promise<HTTPGraphQLResponse> =>
    options.apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest: apolloRequest(), context });
  const answer = await operation?.run(contextValue);
  let response: HTTPGraphQLResponse;
  if (answer === undefined) {
    response = await askApollo();
    operation?.answered(query, response.body.kind === 'chunked');
  } else {
    response = answeredDirectly(answer, single!);
  }
  if (response.body.kind === 'complete' && /^text\/html/i.test(response.headers.get('content-type') ?? '')) {
    response.body.string = options.explorer.withFallbackLink(response.body.string);
  }
  const pacing = { keepAliveMs: options.keepAliveMs, writeIntervalMs: options.streamWriteIntervalMs };
  if (response.body.kind === 'complete' || !options.onStream) {
    return writeResponse(res, response, acceptance, pacing, requestId, operation, log);
  }
  options.onStream(1);
  try {
    await writeResponse(res, response, acceptance, pacing, requestId, operation, log);
  } finally {
    options.onStream(-1);
  }
}

/**
 * The answer to a request the executor ran without Apollo's pipeline (a known document), as Apollo hands it over: one
 * result with the content type Apollo picks for the request's Accept (`single`), or a streamed answer whose first part
 * is framed as Apollo frames it (its writeMultipartBody).
 */
export function answeredDirectly(answer: DirectAnswer, single: string): HTTPGraphQLResponse {
  const headers = new HeaderMap([...answer.headers]);
  if (answer.body.kind === 'single') {
    // As Apollo: a content type an error's `extensions.http` set stands.
    if (!headers.has('content-type')) headers.set('content-type', single);
    return { status: answer.status, headers, body: { kind: 'complete', string: answer.body.json } };
  }
  headers.set('content-type', MULTIPART_CONTENT_TYPE);
  const { json, hasNext } = answer.body.first;
  async function* parts(): AsyncGenerator<string> {
    yield `${MULTIPART_START}${multipartPart(json, hasNext)}`;
  }
  return { status: answer.status, headers, body: { kind: 'chunked', asyncIterator: parts() } };
}
