import { afterEach } from '@jest/globals';
import { pino } from 'pino';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';

export const silentLogger = pino({ level: 'silent' });

export interface RunningGateway {
  gateway: Gateway;
  /** http://127.0.0.1:PORT/api/copilotkit */
  url: string;
  /** ws://127.0.0.1:PORT/api/copilotkit */
  wsUrl: string;
  close(): Promise<void>;
}

/** Starts a real gateway on a free loopback port. */
export async function startGateway(options: GatewayOptions = {}): Promise<RunningGateway> {
  // GATEWAY_EXECUTOR=stock runs a suite on the stock executor (npm test runs the behaviour suites on both).
  const executor = process.env.GATEWAY_EXECUTOR as GatewayOptions['executor'];
  const gateway = createGateway({ logger: silentLogger, ...(executor ? { executor } : {}), ...options });
  const url = await gateway.listen(0, '127.0.0.1');
  return { gateway, url, wsUrl: url.replace(/^http/, 'ws'), close: () => gateway.close() };
}

/** A user message in the shape GenerateCopilotResponseInput takes. */
export function userMessage(content: string, id = `user-${Math.random().toString(36).slice(2)}`) {
  return { id, createdAt: new Date().toISOString(), textMessage: { role: 'user' as const, content } };
}

/** The smallest valid GenerateCopilotResponseInput around some messages. */
export function runInput(messages: unknown[], extra: Record<string, unknown> = {}) {
  return {
    metadata: { requestType: 'Chat' },
    messages,
    frontend: { actions: [], url: 'http://localhost:3000/' },
    ...extra,
  };
}

/** A metric's value in the gateway's `/metrics` (the first sample of that name; NaN when there is none). */
export async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

/** Polls until `check` is true (for effects on other servers that have no event to await). */
export async function eventually(check: () => boolean, what: string, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`Timed out waiting for: ${what}`);
}

/**
 * Gateways a test file starts and closes after each test: `const { start } = gatewaysPerTest(defaults)`.
 * Must be called at the top level of a test file (it registers an afterEach).
 */
export function gatewaysPerTest(defaults: GatewayOptions = {}): {
  start: (options?: GatewayOptions) => Promise<RunningGateway>;
} {
  const running: RunningGateway[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((gateway) => gateway.close()));
  });
  return {
    start: async (options = {}) => {
      const gateway = await startGateway({ ...defaults, ...options });
      running.push(gateway);
      return gateway;
    },
  };
}
