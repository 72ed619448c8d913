import type { RemoteEndpointOptions } from '../agents/copilotkit-endpoint.js';
import type { AgentDefinition } from '../agents/definitions.js';
import type { Authenticate } from '../auth/authenticate.js';
import { ConfigurationError } from '../core/errors.js';
import type { GuardrailsOptions } from '../engine/guardrails.js';

// Checks of one option's value each, for the readers in options.ts (and NODE_ENV's and the path's, which env.ts
// checks too): each returns the value as the gateway uses it, or throws a ConfigurationError naming the option.

/** The values of NODE_ENV the gateway knows; unset or empty is development. */
const NODE_ENVIRONMENTS = ['production', 'development', 'test'] as const;

/**
 * The environment NODE_ENV asks for: production, or development (which "test" is). Anything else is a
 * mistake (such as "prod"), refused rather than silently run as development: in development the
 * gateway is open to explorers and says more in its errors.
 */
export function environmentOf(nodeEnv: string | undefined): 'development' | 'production' {
  const value = nodeEnv?.trim() ?? '';
  if (value === 'production') return 'production';
  if (value === '' || value === 'development' || value === 'test') return 'development';
  throw new ConfigurationError(
    `NODE_ENV must be ${NODE_ENVIRONMENTS.join(', ')} or unset (got ${JSON.stringify(nodeEnv)}).`,
  );
}

/** Whether `path` can be where the gateway answers: a URL path, not one of the health checks'. */
export function isGatewayPath(path: unknown): path is string {
  return typeof path === 'string' && /^\/[\w\-./~]*$/.test(path) && path !== '/health' && path !== '/ready';
}

export function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new ConfigurationError(`options.${name} must be true or false.`);
  return value;
}

export function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(
      `options.${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)}).`,
    );
  }
  return value;
}

export function resolveAuthenticate(authenticate: unknown): Authenticate | undefined {
  if (authenticate === undefined) return undefined;
  if (typeof authenticate !== 'function') {
    throw new ConfigurationError(
      'options.authenticate must be a function (request) => principal | null, such as apiKeyAuthenticator([...]) or ' +
        'jwtAuthenticator({...}).',
    );
  }
  return authenticate as Authenticate;
}

export function resolveMetricsToken(metrics: unknown): string | undefined {
  if (metrics === undefined || typeof metrics === 'boolean') return undefined;
  if (metrics === null || typeof metrics !== 'object')
    throw new ConfigurationError('options.metrics must be true, false or {token}.');
  const token = (metrics as { token?: unknown }).token;
  if (token !== undefined && (typeof token !== 'string' || token.length < 16))
    throw new ConfigurationError('options.metrics.token must be at least 16 characters.');
  return token as string | undefined;
}

export function resolveGuardrails(options: GuardrailsOptions | undefined): GuardrailsOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError('options.guardrails must be an object: {url?, timeoutMs?}.');
  if (options.url !== undefined && (typeof options.url !== 'string' || !/^https?:\/\//.test(options.url))) {
    throw new ConfigurationError(`options.guardrails.url must be an http(s) URL (got ${JSON.stringify(options.url)}).`);
  }
  return {
    ...(options.url ? { url: options.url } : {}),
    timeoutMs: integerOption('guardrails.timeoutMs', options.timeoutMs, 10_000, 100, 600_000),
  };
}

export function resolveAgents(agents: unknown): Record<string, AgentDefinition> {
  if (agents === undefined) return {};
  if (agents === null || typeof agents !== 'object' || Array.isArray(agents)) {
    throw new ConfigurationError(
      'options.agents must be an object of agent names to agUiAgent(…) or langGraphAgent(…).',
    );
  }
  for (const [name, definition] of Object.entries(agents)) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw new ConfigurationError(
        `options.agents: the name ${JSON.stringify(name)} must be 1 to 64 letters, digits, "_" or "-".`,
      );
    }
    if (!definition || typeof (definition as AgentDefinition).create !== 'function') {
      throw new ConfigurationError(`options.agents.${name} must be made with agUiAgent(…) or langGraphAgent(…).`);
    }
  }
  return agents as Record<string, AgentDefinition>;
}

export function resolveEndpoints(endpoints: unknown): RemoteEndpointOptions[] {
  if (endpoints === undefined) return [];
  if (!Array.isArray(endpoints))
    throw new ConfigurationError('options.remoteEndpoints must be an array of URLs or endpoint options.');
  const seen = new Set<string>();
  const resolved: RemoteEndpointOptions[] = [];
  endpoints.forEach((endpoint, index) => {
    const options: RemoteEndpointOptions = typeof endpoint === 'string' ? { url: endpoint } : endpoint;
    if (options === null || typeof options !== 'object')
      throw new ConfigurationError(`options.remoteEndpoints[${index}] must be a URL or an object with a url.`);
    const key = String(options.url).replace(/\/+$/, '');
    if (seen.has(key)) return; // the same endpoint twice is one endpoint
    seen.add(key);
    resolved.push(options);
  });
  return resolved;
}
