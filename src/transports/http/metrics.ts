import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { bearerToken } from '../../auth/authenticate.js';
import { UnauthenticatedError } from '../../core/errors.js';
import { headerValue } from '../access.js';
import { sendGatewayError } from '../responses.js';
import { sendUnexpected } from './refusals.js';

/** GET /metrics: Prometheus's text, behind a bearer token when one is set (its keyMatcher). */
export interface MetricsRoute {
  render: () => Promise<{ contentType: string; body: string }>;
  token?: (credential: string) => number;
}

/**
 * Prometheus's scrape: the metrics' text, behind the token when one is set (compared in constant time,
 * as API keys are).
 */
export function serveMetrics(req: IncomingMessage, res: ServerResponse, metrics: MetricsRoute, log: Logger): void {
  if (metrics.token && metrics.token(bearerToken(headerValue(req.headers.authorization)) ?? '') === -1) {
    res.setHeader('www-authenticate', 'Bearer');
    return sendGatewayError(res, new UnauthenticatedError('The metrics need "Authorization: Bearer <METRICS_TOKEN>".'));
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
