import { GatewayError, GuardrailsDeniedError, UpstreamError } from '../core/errors.js';
import type { Message } from '../core/messages.js';
import type { UpstreamClient } from '../upstream/client.js';
import { retryPolicy, type RetryPolicy } from '../upstream/retry.js';
import type { RunDriver } from './run.js';

/** Topics a request's `cloud.guardrails.inputValidationRules` allow and deny. */
export interface GuardrailsRules {
  allowList: string[];
  denyList: string[];
}

export interface GuardrailsOptions {
  /** The guardrails service. @default "https://api.cloud.copilotkit.ai" (Copilot Cloud) */
  url?: string;
  /** How long the service may take to answer before the run fails (closed). @default 10000 */
  timeoutMs?: number;
}

const DEFAULT_GUARDRAILS_URL = 'https://api.cloud.copilotkit.ai';
const WHO = 'the guardrails service';

/** What the service answers. */
interface Verdict {
  status: 'allowed' | 'denied';
  reason?: string;
}

/** Whether a request's guardrails apply: rules are set and the last message is the user's. */
export function guardrailsApply(
  rules: GuardrailsRules | undefined,
  messages: readonly Message[],
): rules is GuardrailsRules {
  const last = messages[messages.length - 1];
  return rules !== undefined && last?.kind === 'text' && last.role === 'user';
}

/**
 * Copilot Cloud's input guardrails in front of a run: before the model or agent is called, the last
 * user message (with the earlier turns for context) goes to `POST {url}/guardrails/validate` with the
 * request's public API key. Allowed: the run goes on. Denied: the run says why, in an assistant
 * message, and fails with GUARDRAILS_VALIDATION_FAILED; nothing is called. A service that fails, times
 * out or answers something else fails the run too (closed): the request is never passed on unchecked.
 */
export class Guardrails {
  private readonly url: string;
  private readonly policy: RetryPolicy;

  constructor(
    private readonly upstream: UpstreamClient,
    options: GuardrailsOptions = {},
  ) {
    this.url = `${(options.url ?? DEFAULT_GUARDRAILS_URL).replace(/\/+$/, '')}/guardrails/validate`;
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.policy = retryPolicy({ maxRetries: 1, attemptTimeoutMs: timeoutMs, totalTimeoutMs: timeoutMs }, 'guardrails');
  }

  /** `driver`, behind the check. */
  guard(driver: RunDriver, rules: GuardrailsRules, messages: readonly Message[], publicApiKey: string): RunDriver {
    return async (context) => {
      const verdict = await this.validate(rules, messages, publicApiKey, context.signal, context.logger);
      if (verdict.status === 'allowed') return driver(context);
      const reason = verdict.reason?.trim() || 'This request is outside the topics this assistant may discuss.';
      const messageId = context.writer.textStart();
      context.writer.textContent(messageId, reason);
      context.writer.textEnd(messageId);
      context.logger.info({ guardrailsReason: reason }, 'guardrails denied the request');
      throw new GuardrailsDeniedError(reason, { details: { guardrailsReason: reason } });
    };
  }

  private async validate(
    rules: GuardrailsRules,
    messages: readonly Message[],
    publicApiKey: string,
    signal: AbortSignal,
    logger: import('pino').Logger,
  ): Promise<Verdict> {
    const turns = messages.flatMap((message) =>
      message.kind === 'text' && (message.role === 'user' || message.role === 'assistant')
        ? [{ role: message.role, content: message.content }]
        : [],
    );
    const input = turns.pop()!.content;
    let answer: unknown;
    try {
      answer = await this.upstream.json({
        url: this.url,
        method: 'POST',
        headers: { 'x-copilotcloud-public-api-key': publicApiKey },
        json: { input, validTopics: rules.allowList, invalidTopics: rules.denyList, messages: turns },
        who: WHO,
        policy: this.policy,
        signal,
        logger,
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (error instanceof GatewayError) {
        throw new UpstreamError(
          error.code as 'UPSTREAM_UNAVAILABLE',
          `${error.message.replace(/\.$/, '')}: the request was not checked, so it was not passed on.`,
          {
            cause: error,
            details: error.details,
          },
        );
      }
      throw error;
    }
    const status = (answer as { status?: unknown } | null)?.status;
    if (status !== 'allowed' && status !== 'denied') {
      throw new UpstreamError(
        'UPSTREAM_BAD_RESPONSE',
        'The guardrails service answered without a status of "allowed" or "denied": the request was not passed on.',
      );
    }
    const reason = (answer as { reason?: unknown }).reason;
    return { status, reason: typeof reason === 'string' ? reason : undefined };
  }
}
