import { GraphQLError, type ExecutionResult } from 'graphql';
import type { WebSocket } from 'ws';
import type { GatewayError } from '../../core/errors.js';
import { formatGraphQLError } from '../../graphql/errors.js';
import type { ResultSink } from '../../graphql/executor.js';

// What a WebSocket client is sent: a pushed subscription's `next` messages, and errors in the shape
// graphql-ws's `next` and `error` messages carry them.

/**
 * The `next` messages of a pushed subscription (graphql/fast/push-stream.ts), written straight to the
 * socket: graphql-ws's own `next` for a result, with the same hook (`onNext`: errors formatted for
 * the client), the same message (`{"id","type":"next","payload"}`, stringified the same way) and the
 * same pace (the next event is executed once this one is written). What it saves is graphql-ws's
 * loop step per event: a pending promise and its reactions per stream, replaced at every token (and
 * so promoted to the old generation), and an async step with two more per message. graphql-ws still
 * does everything else: the handshake, `complete` and `error` messages, and ending the operation.
 * graphql-ws would check each message before sending it; these always pass (a non-empty id, an
 * object payload). test/ws.test.ts compares the frames with those graphql-ws's own server sends for
 * the same results.
 */
export class WsResultSink implements ResultSink {
  constructor(
    private readonly socket: WebSocket,
    private readonly id: string,
  ) {}

  send(result: ExecutionResult, written: () => void): void {
    const socket = this.socket;
    if (socket.readyState !== socket.OPEN) {
      // Going away: its close ends the operation.
      queueMicrotask(written);
      return;
    }
    // `written` ignores the error ws passes a failed write: the socket's close ends the operation.
    socket.send(nextMessage(this.id, result), written);
  }
}

/** A `next` message as graphql-ws makes one: the `onNext` hook's payload, or the result with its errors as JSON. */
export function nextMessage(id: string, result: ExecutionResult): string {
  // A pushed result's errors are its events' (a field refused): none carries a suggestion.
  let payload: unknown = withWsErrors(result, false);
  if (!payload) {
    if ('errors' in result) {
      const { errors, ...rest } = result;
      payload = errors ? { ...rest, errors: errors.map((error) => error.toJSON()) } : rest;
    } else {
      payload = result;
    }
  }
  return JSON.stringify({ id, type: 'next', payload });
}

/** The `onNext` hook: a result with errors gets them formatted for the client (and coded); others pass (undefined). */
export function withWsErrors(
  result: ExecutionResult & { incremental?: readonly { errors?: readonly GraphQLError[] }[] },
  suggestions: boolean,
): ExecutionResult | undefined {
  const incremental = result.incremental;
  if (!result.errors?.length && !incremental?.some((entry) => entry.errors?.length)) return undefined;
  const format = (errors: readonly GraphQLError[]) => errors.map((error) => formatForWs(error, suggestions));
  return {
    ...result,
    ...(result.errors?.length ? { errors: format(result.errors) } : {}),
    ...(incremental
      ? { incremental: incremental.map((entry) => (entry.errors ? { ...entry, errors: format(entry.errors) } : entry)) }
      : {}),
  } as ExecutionResult;
}

/**
 * An error as a WebSocket client gets it: the gateway's shape (suggestions as formatGraphQLError says), without
 * Apollo's HTTP-only `http` extension.
 */
export function formatForWs(error: GraphQLError, suggestions: boolean) {
  const formatted = formatGraphQLError(error.toJSON(), error, suggestions);
  if (formatted.extensions && 'http' in formatted.extensions) {
    const { http: _http, ...extensions } = formatted.extensions;
    return { ...formatted, extensions };
  }
  return formatted;
}

/** A refusal as graphql-ws's `error` message carries it: a GraphQLError with the code and details in its extensions. */
export function codedError(error: GatewayError): GraphQLError {
  return new GraphQLError(error.message, {
    extensions: { code: error.code, ...(error.details ? { details: error.details } : {}) },
  });
}

/** The most a WebSocket close frame's reason may hold: 125 bytes of payload less the 2-byte code (RFC 6455, 5.5). */
const MAX_CLOSE_REASON_BYTES = 123;

/**
 * `text` as a close reason: whole if it fits in 123 bytes of UTF-8, else cut at a character (never inside
 * one, a surrogate pair included) and ended with "…", so that ws does not throw and the client reads valid UTF-8.
 */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= MAX_CLOSE_REASON_BYTES) return text;
  const room = MAX_CLOSE_REASON_BYTES - Buffer.byteLength('…');
  let kept = '';
  let bytes = 0;
  for (const character of text) {
    const size = Buffer.byteLength(character);
    if (bytes + size > room) break;
    kept += character;
    bytes += size;
  }
  return `${kept}…`;
}
