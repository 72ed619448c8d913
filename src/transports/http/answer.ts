import type { ServerResponse } from 'node:http';
import type { HTTPGraphQLResponse } from '@apollo/server';
import type { Logger } from 'pino';
import type { HttpOperation, LaterDelivery, LaterStep } from '../../graphql/executor.js';
import { PartWriter } from '../part-writer.js';
import { drained } from '../responses.js';
import {
  MULTIPART_CONTENT_TYPE,
  MULTIPART_END,
  MULTIPART_KEEP_ALIVE,
  MULTIPART_START,
  multipartPart,
} from './multipart.js';
import type { Acceptance } from './negotiation.js';
import { SSE_COMMENT, SSE_COMPLETE, SSE_CONTENT_TYPE, sseEvent, toSseEvent } from './sse.js';

/**
 * Writes a GraphQL answer: one result, or a streamed one as multipart/mixed (what the stock client
 * asks for) or SSE, each part as soon as it is ready: Apollo's parts as Apollo framed them, and the
 * later payloads the executor gives itself (HttpOperation `later`), framed here as Apollo frames them.
 */
export async function writeResponse(
  res: ServerResponse,
  response: HTTPGraphQLResponse,
  acceptance: Readonly<Acceptance>,
  { keepAliveMs, writeIntervalMs }: { keepAliveMs: number; writeIntervalMs: number },
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
    const json = /^application\/(graphql-response\+)?json\b/i.test(response.headers.get('content-type') ?? '');
    if (res.statusCode === 200 && !acceptance.json && (acceptance.multipart || acceptance.sse) && json) {
      // As the last payload of every streamed answer, it says there is nothing more (§2.1).
      const trimmed = body.trimEnd();
      const last = trimmed.endsWith('}') ? `${trimmed.slice(0, -1)},"hasNext":false}` : trimmed;
      res.setHeader('cache-control', 'no-cache, no-transform');
      if (acceptance.multipart) {
        res.setHeader('content-type', MULTIPART_CONTENT_TYPE);
        res.end(`${MULTIPART_START}${multipartPart(last, false)}`);
      } else {
        res.setHeader('content-type', SSE_CONTENT_TYPE);
        res.end(sseEvent(last) + SSE_COMPLETE);
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
  res.setHeader('content-type', sse ? SSE_CONTENT_TYPE : MULTIPART_CONTENT_TYPE);
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
    res.write(SSE_COMMENT);
    keepAlive = setInterval(() => res.write(SSE_COMMENT), keepAliveMs);
  } else {
    keepAlive = setInterval(() => {
      if (quiet && !closed && !res.destroyed) res.write(MULTIPART_KEEP_ALIVE);
      quiet = true;
    }, keepAliveMs);
  }
  // Parts leave joined: a turn's worth in one write, and a flowing stream's later payloads at most once per
  // write interval (see PartWriter).
  const writer = new PartWriter(res, writeIntervalMs);
  let failed = false;
  const send = (wire: string, paced: boolean): void => {
    writer.send(wire, paced);
    quiet = false;
  };
  /** A part as Apollo frames it in multipart (sent as it is, or as an SSE event). */
  const sendPart = (part: string, later: boolean): void => {
    const last = part.endsWith(MULTIPART_END);
    if (!sse && last) closed = true;
    send(sse ? toSseEvent(part) : part, later && !last);
  };
  /** A later payload given as its JSON by the executor (a leaf stream's item too), framed as Apollo frames it. */
  const sendPayloadJson = (json: string, hasNext: boolean): void => {
    if (sse) return send(sseEvent(json), hasNext);
    if (!hasNext) closed = true;
    send(multipartPart(json, hasNext), hasNext);
  };
  // Backpressure: while the client reads slower than parts come, nothing more is taken.
  const room = (): Promise<void> | undefined => (res.writableNeedDrain && !res.destroyed ? drained(res) : undefined);
  // Apollo's parts: the initial result, then (when the executor does not give the later payloads itself) every later
  // one.
  const parts = (): Promise<IteratorResult<string, void>> => chunks.next();
  /** A later payload the executor gives goes out, as Apollo would write it. */
  const sendLater = (later: LaterDelivery, payload: LaterStep): void => {
    sendPayloadJson(payload.json, payload.hasNext);
    // Leaf streams whose message this payload carried write after it.
    later.after();
  };
  // The executor's later payloads, when it gives them itself (after the initial part, once it has run).
  let later: LaterDelivery | undefined;
  try {
    const initial = await parts();
    if (initial.done || res.destroyed) return;
    sendPart(initial.value, false);
    later = operation?.later();
    if (later === undefined) {
      for (let part = await parts(); !part.done && !res.destroyed; part = await parts()) {
        sendPart(part.value, true);
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
        sendLater(delivery, step);
        const full = room();
        if (full) await full;
      }
    }
    if (sse) send(SSE_COMPLETE, false);
  } catch (error) {
    // The answer cannot be finished. Once it has begun, the client sees it cut (not a clean end with
    // more announced); before that, the caller answers 500. Nothing waiting is written.
    failed = true;
    writer.discard();
    if (res.headersSent) res.destroy(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    clearInterval(keepAlive);
    // Whatever is left unread ends: the executor's streams (their runs were aborted when the
    // response closed) and Apollo's body.
    operation?.close();
    writer.flush();
    void chunks.return?.(undefined)?.catch(() => undefined);
    if (!res.destroyed && !failed) res.end();
  }
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
