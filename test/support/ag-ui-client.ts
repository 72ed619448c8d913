import { HttpAgent, runHttpRequest, transformHttpEventStream } from '../clients/ag-ui-client-0059.js';

// @ag-ui/client 0.0.59 (the version CopilotKit 1.74's client pins): its HttpAgent runs the request,
// parses the SSE, checks every event against @ag-ui/core's schemas and the lifecycle rules, and applies
// them to its messages and state. CopilotKit's client is an HttpAgent whose URL and body depend on the
// runtime's form; these two subclasses do what it does for each form (REST routes, or the single-route
// envelope), and add connect, which HttpAgent leaves to subclasses.

type Input = Parameters<HttpAgent['run']>[0];

/** The multi-route form: `{base}/agent/{id}/run`, `…/connect`. */
export class RestRuntimeAgent extends HttpAgent {
  constructor(
    private readonly base: string,
    agentId: string,
    options: { threadId?: string; headers?: Record<string, string> } = {},
  ) {
    super({ url: `${base}/agent/${encodeURIComponent(agentId)}/run`, agentId, ...options });
  }

  protected override connect(input: Input) {
    const url = `${this.base}/agent/${encodeURIComponent(this.agentId!)}/connect`;
    return transformHttpEventStream(runHttpRequest(() => this.fetch(url, this.requestInit(input))));
  }
}

/** The single-route form: every call a POST of `{method, params, body}` to the one URL. */
export class SingleRouteRuntimeAgent extends HttpAgent {
  private method = 'agent/run';

  constructor(url: string, agentId: string, options: { threadId?: string } = {}) {
    super({ url, agentId, ...options });
  }

  protected override requestInit(input: Input): RequestInit {
    const init = super.requestInit(input);
    return {
      ...init,
      body: JSON.stringify({
        method: this.method,
        params: { agentId: this.agentId },
        body: JSON.parse(init.body as string),
      }),
    };
  }

  protected override connect(input: Input) {
    this.method = 'agent/connect';
    try {
      const init = this.requestInit(input);
      return transformHttpEventStream(runHttpRequest(() => this.fetch(this.url, init)));
    } finally {
      this.method = 'agent/run';
    }
  }
}

/** Collects the events an agent run applied (through the client's own pipeline), by type. */
export function eventLog() {
  const events: any[] = [];
  return { events, subscriber: { onEvent: ({ event }: { event: any }) => void events.push(event) } };
}
