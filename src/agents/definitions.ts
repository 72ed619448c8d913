import type { Logger } from 'pino';
import type { UpstreamClient } from '../upstream/client.js';
import type { AgentEntry } from './agent.js';

/** What a configured agent is built with. */
export interface AgentDependencies {
  upstream: UpstreamClient;
  logger: Logger;
}

/**
 * An agent configured by name in `createGateway({ agents })`, made with `agUiAgent(…)` or
 * `langGraphAgent(…)`. Its options are checked when the gateway is built.
 */
export interface AgentDefinition {
  readonly kind: AgentEntry['kind'];
  create(name: string, dependencies: AgentDependencies, where: string): AgentEntry;
}
