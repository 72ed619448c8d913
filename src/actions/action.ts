import type { Logger } from 'pino';
import type { Principal } from '../core/principal.js';
import type { ToolDefinition } from '../core/messages.js';

/** What an action is given besides its arguments. */
export interface ActionContext {
  threadId: string;
  runId: string;
  /** The request's `properties` argument. */
  properties: Record<string, unknown>;
  /** Aborted when the client goes away or the action times out. */
  signal: AbortSignal;
  logger: Logger;
  /** Who asked for the run, when authentication is on. */
  principal?: Principal;
}

/**
 * An action the gateway executes when a model or an agent calls it: a server-side action declared
 * in code, or a remote action of a CopilotKit endpoint. Its result is any JSON value or a string.
 */
export interface ExecutableAction extends ToolDefinition {
  /** Where it runs, for logs: "local", or the remote endpoint's label. Never sent to clients. */
  readonly source: string;
  execute(args: Record<string, unknown>, context: ActionContext): unknown;
}

/** Something that offers actions: the local registry, a remote endpoint (from its cached discovery). */
export interface ActionSource {
  /** The actions available now; never waits and never throws. */
  actions(): readonly ExecutableAction[];
}

const NO_ACTIONS: ReadonlyMap<string, ExecutableAction> = new Map();

/** The actions of one run, by name: local ones first, then remote ones whose names are still free. */
export class ActionCatalog {
  private readonly byName: ReadonlyMap<string, ExecutableAction>;

  constructor(sources: readonly ActionSource[], logger?: Logger) {
    let byName: Map<string, ExecutableAction> | undefined;
    for (const source of sources) {
      for (const action of source.actions()) {
        const existing = byName?.get(action.name);
        if (existing) {
          logger?.debug(
            { action: action.name, kept: existing.source, dropped: action.source },
            'two actions share a name; the first is kept',
          );
          continue;
        }
        (byName ??= new Map()).set(action.name, action);
      }
    }
    // A run keeps its catalog for its life; runs without actions share one empty map.
    this.byName = byName ?? NO_ACTIONS;
  }

  get(name: string): ExecutableAction | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  get size(): number {
    return this.byName.size;
  }

  /** The actions themselves, in catalog order. */
  actions(): ExecutableAction[] {
    return [...this.byName.values()];
  }

  tools(): ToolDefinition[] {
    return [...this.byName.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
  }
}
