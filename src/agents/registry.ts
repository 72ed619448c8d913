import type { Logger } from 'pino';
import { AgentNotFoundError } from '../core/errors.js';
import type { AgentEntry, AgentSource } from './agent.js';

/**
 * Every agent the gateway can run, merged from its sources (configured agents first, then the
 * agents remote endpoints report). A name is served by the first source that has it. Lookups
 * never wait longer than `discoveryWaitMs` for a source that has not answered yet, so a slow or
 * dead endpoint does not hold up requests that do not need it.
 */
export class AgentRegistry {
  constructor(
    private readonly sources: readonly AgentSource[],
    private readonly discoveryWaitMs: number,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.known().length;
  }

  /** The agents known now, without waiting. */
  known(): AgentEntry[] {
    const byName = new Map<string, AgentEntry>();
    for (const source of this.sources) {
      for (const agent of source.agents()) {
        if (byName.has(agent.name)) {
          this.logger.debug({ agent: agent.name }, 'two agent sources offer the same name; the first is used');
          continue;
        }
        byName.set(agent.name, agent);
      }
    }
    return [...byName.values()];
  }

  /** The agents, once every source has answered its first discovery (or the wait is over). */
  async list(): Promise<AgentEntry[]> {
    await this.ready();
    return this.known();
  }

  /** Finds an agent by name, waiting for first discoveries if need be; throws AGENT_NOT_FOUND otherwise. */
  async resolve(name: string): Promise<AgentEntry> {
    const found = this.known().find((agent) => agent.name === name);
    if (found) return found;
    await this.ready();
    const agents = this.known();
    const agent = agents.find((entry) => entry.name === name);
    if (agent) return agent;
    throw new AgentNotFoundError(
      name,
      agents.map((entry) => entry.name),
      this.sources.filter((source) => source.unreachable).length,
    );
  }

  find(name: string): AgentEntry | undefined {
    return this.known().find((agent) => agent.name === name);
  }

  /** Resolves once every source has answered its first discovery, or failed to, or the wait is over. */
  async ready(): Promise<void> {
    await Promise.all(this.sources.map((source) => source.ready(this.discoveryWaitMs)));
  }
}
