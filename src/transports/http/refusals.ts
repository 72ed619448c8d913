import type { IncomingMessage, ServerResponse } from 'node:http';
import { InternalError, type GatewayError } from '../../core/errors.js';
import { sendGatewayError } from '../responses.js';

/**
 * A request refused at the door: 401 (with WWW-Authenticate), 429 (with Retry-After) or 503, in the
 * GraphQL error shape or, for AG-UI routes, AG-UI's JSON error shape.
 */
export function sendRefusal(res: ServerResponse, error: GatewayError, agUiRoute: boolean, requestId: string): void {
  if (error.code === 'UNAUTHENTICATED') res.setHeader('www-authenticate', 'Bearer');
  if (error.status === 503) res.setHeader('retry-after', '5');
  sendGatewayError(res, error, { agUi: agUiRoute, requestId });
}

/** A 500 with the request id, or a cut connection when the answer has already begun. */
export function sendUnexpected(res: ServerResponse, requestId: string | undefined): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendGatewayError(res, new InternalError('Unexpected error.'), { requestId });
}

/**
 * A request a browser may send cross-site without a preflight: no content type, or a "simple"
 * one, and none of the headers that force a preflight. Apollo refuses these (CSRF prevention).
 */
export function isSimpleRequest(req: IncomingMessage): boolean {
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
