import { ConfigurationError } from './core/errors.js';
import type { OpenAIAdapterOptions } from './adapters/openai.js';

/** The settings `npm start` reads from the environment (see the README's table). */
export interface EnvironmentSettings {
  port: number;
  host: string;
  path: string;
  environment: 'development' | 'production';
  logLevel: string;
  corsOrigins: string[];
  allowedHosts: string[];
  modelIdleTimeoutMs?: number;
  /** Set when OPENAI_API_KEY or OPENAI_BASE_URL is: provider mode. Otherwise demo mode. */
  openai?: OpenAIAdapterOptions & { model: string };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function readEnvironment(env: NodeJS.ProcessEnv): EnvironmentSettings {
  const environment = env.NODE_ENV === 'production' ? 'production' : 'development';
  const port = env.PORT === undefined || env.PORT === '' ? 4000 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigurationError(`PORT must be a whole number from 0 to 65535 (got ${JSON.stringify(env.PORT)}).`);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigurationError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevel)}).`);
  }
  let modelIdleTimeoutMs: number | undefined;
  if (env.MODEL_IDLE_TIMEOUT_MS) {
    modelIdleTimeoutMs = Number(env.MODEL_IDLE_TIMEOUT_MS);
    if (!Number.isInteger(modelIdleTimeoutMs) || modelIdleTimeoutMs < 1) {
      throw new ConfigurationError(`MODEL_IDLE_TIMEOUT_MS must be a whole number of milliseconds (got ${JSON.stringify(env.MODEL_IDLE_TIMEOUT_MS)}).`);
    }
  }
  const apiKey = env.OPENAI_API_KEY || undefined;
  const baseURL = env.OPENAI_BASE_URL || undefined;
  if (baseURL && !isHttpUrl(baseURL)) {
    throw new ConfigurationError(`OPENAI_BASE_URL must be a URL such as "http://localhost:11434/v1" (got ${JSON.stringify(baseURL)}).`);
  }
  return {
    port,
    // Loopback only while developing; every interface in production (containers, load balancers).
    host: env.HOST || (environment === 'production' ? '0.0.0.0' : '127.0.0.1'),
    path: env.GRAPHQL_PATH || '/api/copilotkit',
    environment,
    logLevel,
    corsOrigins: list(env.CORS_ORIGINS),
    allowedHosts: list(env.ALLOWED_HOSTS),
    ...(modelIdleTimeoutMs !== undefined ? { modelIdleTimeoutMs } : {}),
    ...(apiKey || baseURL ? { openai: { apiKey, baseURL, model: env.OPENAI_MODEL || 'gpt-4o-mini' } } : {}),
  };
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((item) => item.trim()).filter(Boolean);
}
