import type { Logger } from 'pino';
import type { UpstreamClient } from '../upstream/client.js';
import type { AgentEntry, AgentKind } from './agent.js';

/** What the gateway gives an agent definition to build its client with. */
export interface AgentDependencies {
  /** The gateway's logger. */
  logger: Logger;
}

/** What the built-in kinds get besides: the gateway's one HTTP client (pooling, retries, upstream errors). */
export interface BuiltInAgentDependencies extends AgentDependencies {
  upstream: UpstreamClient;
}

/**
 * An agent configured by name in `createGateway({ agents })`: made with `agUiAgent(…)` or
 * `langGraphAgent(…)`, or written for a kind of agent of your own. `create` is called once, when the
 * gateway is built, and returns the agent's entry: its name, a description, its kind, and the
 * AgentClient that streams its answers into a RunWriter. Options are checked there: throw a
 * ConfigurationError naming `where` (such as `options.agents.researcher`).
 */
export interface AgentDefinition {
  readonly kind: AgentKind;
  create(name: string, dependencies: AgentDependencies, where: string): AgentEntry;
}
