import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequestError, UnsupportedMediaTypeError } from '../core/errors.js';
import { nestsDeeperThan } from '../core/depth.js';
import { inputOverloaded, nestsTooDeeply, NO_BODY, readBody, tooLarge } from '../transports/http/body.js';
import type { InputBudget } from '../core/input-budget.js';
import { sendGatewayError } from '../transports/responses.js';

/** Whether a body posted to the GraphQL path is a single-route AG-UI envelope (`{method, params, body}`). */
export function isAgUiEnvelope(body: unknown): body is Record<string, unknown> {
  return (
    body !== null &&
    typeof body === 'object' &&
    !Array.isArray(body) &&
    typeof (body as { method?: unknown }).method === 'string' &&
    !('query' in body)
  );
}

/**
 * An AG-UI request's JSON body (undefined when it has none), or NO_BODY once the request has been
 * answered: too large (413), not JSON (415), JSON that does not parse (400).
 */
export async function readAgUiBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  budget?: InputBudget,
): Promise<unknown> {
  const raw = await readBody(req, limit, budget);
  if (raw === 'aborted') return NO_BODY;
  if (raw === 'too-large') {
    sendGatewayError(res, tooLarge(limit), { agUi: true });
    return NO_BODY;
  }
  if (raw === 'overloaded') {
    sendGatewayError(res, inputOverloaded(budget), { agUi: true });
    return NO_BODY;
  }
  if (raw.trim() === '') return undefined;
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
    const unsupported = new UnsupportedMediaTypeError('Send the body as application/json.');
    sendGatewayError(res, unsupported, { agUi: true, title: 'Unsupported media type' });
    return NO_BODY;
  }
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    const invalid = new BadRequestError('The request body is not valid JSON.');
    sendGatewayError(res, invalid, { agUi: true, title: 'Invalid JSON' });
    return NO_BODY;
  }
  if (nestsDeeperThan(body)) {
    sendGatewayError(res, nestsTooDeeply(), { agUi: true, title: 'Invalid request body' });
    return NO_BODY;
  }
  return body;
}
