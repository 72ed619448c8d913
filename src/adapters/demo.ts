import { setTimeout as sleep } from 'node:timers/promises';
import type { ServerAction } from '../actions/server-action.js';
import type { ModelAdapter, ModelOutput, ModelRequest } from './adapter.js';

export interface DemoAdapterOptions {
  /** Pause between tokens, so the reply visibly streams. @default 15 */
  tokenDelayMs?: number;
}

/** The most the demo repeats of a client's text. */
const ECHOED_CHARS = 200;

/** The demo's server-side action: the gateway executes it and the demo model reads its result. */
export const demoTimeAction: ServerAction<{ timeZone?: string }> = {
  name: 'getCurrentTime',
  description: "Returns the gateway server's current date and time.",
  parameters: {
    type: 'object',
    properties: {
      timeZone: { type: 'string', description: 'An IANA time zone such as "Europe/Paris". Defaults to UTC.' },
    },
  },
  handler: ({ timeZone }) => {
    const zone = timeZone || 'UTC';
    const now = new Date();
    return { iso: now.toISOString(), timeZone: zone, local: now.toLocaleString('en-US', { timeZone: zone }) };
  },
};

const LABEL = '[demo mode]';

/**
 * A scripted model for trying the gateway with no provider: it streams a clearly labelled reply
 * token by token, and when asked for the time it calls the demo server-side action and then
 * answers from its result, which shows the gateway continuing a run after a server-side action.
 */
export class DemoAdapter implements ModelAdapter {
  readonly name = 'demo';
  private readonly tokenDelayMs: number;

  constructor(options: DemoAdapterOptions = {}) {
    this.tokenDelayMs = options.tokenDelayMs ?? 15;
  }

  async stream(request: ModelRequest, output: ModelOutput, signal: AbortSignal): Promise<void> {
    const last = request.messages[request.messages.length - 1];
    if (last?.kind === 'result') {
      const result = clipped(last.result);
      return this.say(output, signal, `${LABEL} The server-side action "${last.actionName}" returned: ${result}`);
    }
    const lastUser = [...request.messages].reverse().find((m) => m.kind === 'text' && m.role === 'user');
    const question = lastUser?.kind === 'text' ? lastUser.content : '';
    if (/\btime\b/i.test(question) && request.tools.some((tool) => tool.name === demoTimeAction.name)) {
      const id = output.actionStart(null, demoTimeAction.name);
      for (const chunk of ['{"time', 'Zone":', '"UTC"}']) {
        await this.pause(signal);
        output.actionArgs(id, chunk);
      }
      output.actionEnd(id);
      return;
    }
    const echo = clipped(question);
    await this.say(
      output,
      signal,
      `${LABEL} No model provider is configured, so this is a scripted reply. You said: "${echo}". ` +
        'Set OPENAI_API_KEY (and optionally OPENAI_BASE_URL) to talk to a real model. ' +
        'Ask me for the time to see a server-side action run.',
    );
  }

  private async say(output: ModelOutput, signal: AbortSignal, text: string): Promise<void> {
    const id = output.textStart();
    for (const token of text.match(/\S+\s*/g) ?? []) {
      await this.pause(signal);
      output.textContent(id, token);
    }
    output.textEnd(id);
  }

  private async pause(signal: AbortSignal): Promise<void> {
    if (this.tokenDelayMs > 0) await sleep(this.tokenDelayMs, undefined, { signal });
    else signal.throwIfAborted();
  }
}

/**
 * What the demo repeats of a client's text: its first 200 characters. Repeated whole, a long text (any client may
 * send megabytes) made a reply of millions of tokens that streamed for hours, one string each in memory.
 */
function clipped(text: string): string {
  return text.length > ECHOED_CHARS ? `${text.slice(0, ECHOED_CHARS)}…` : text;
}
