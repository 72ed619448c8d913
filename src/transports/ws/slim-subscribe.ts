import { isObject } from '../../core/values.js';

/** A subscribe message's payload, as graphql-ws checks it. */
export interface SubscribePayload {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

/**
 * graphql-ws's handler for a message is an async function that runs until the operation ends, and
 * holds the text it was given all that time. A subscribe message carries the whole conversation
 * (a real one is tens of kilobytes), so it goes to graphql-ws without its payload (an empty query),
 * and onSubscribe, which graphql-ws calls within the same call, takes the payload from the
 * connection's slot. Anything that is not a well-formed subscribe message by graphql-ws's own
 * checks goes as it came, for graphql-ws to judge; so do short ones, which hold little.
 */
export function slimSubscribe(text: string): string | { text: string; id: string; payload: SubscribePayload } {
  if (text.length < 256 || !text.includes('"subscribe"')) return text;
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return text;
  }
  if (!isSubscribeMessage(message)) return text;
  return {
    text: JSON.stringify({ id: message.id, type: 'subscribe', payload: { query: '' } }),
    id: message.id,
    payload: message.payload,
  };
}

/** graphql-ws's checks of a subscribe message (its validateMessage), all of them. */
function isSubscribeMessage(message: unknown): message is { id: string; type: 'subscribe'; payload: SubscribePayload } {
  if (!isObject(message) || message.type !== 'subscribe' || typeof message.id !== 'string' || message.id === '')
    return false;
  const payload = message.payload;
  return (
    isObject(payload) &&
    typeof payload.query === 'string' &&
    (payload.variables == null || isObject(payload.variables)) &&
    (payload.operationName == null || typeof payload.operationName === 'string') &&
    (payload.extensions == null || isObject(payload.extensions))
  );
}

/**
 * The type and id of a `subscribe` or `complete` message (undefined for any other message, or one graphql-ws will
 * refuse), for a message slimSubscribe did not take apart: a short one, or one graphql-ws will refuse. Parsed as
 * graphql-ws parses it (a type spelled with escapes is the same type).
 */
export function operationMessage(text: string): { type: 'subscribe' | 'complete'; id: string } | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (isSubscribeMessage(message)) return { type: 'subscribe', id: message.id };
  if (!isObject(message) || message.type !== 'complete' || typeof message.id !== 'string' || message.id === '') {
    return undefined;
  }
  return { type: 'complete', id: message.id };
}
