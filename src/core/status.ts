import type { GatewayError } from './errors.js';

/** The status of one streamed message (text or action call). */
export type MessageStatus = { code: 'Pending' } | { code: 'Success' } | { code: 'Failed'; reason: string };

export type FailedReason = 'GUARDRAILS_VALIDATION_FAILED' | 'MESSAGE_STREAM_INTERRUPTED' | 'UNKNOWN_ERROR';

/** The terminal status of a run. */
export type RunStatus =
  { code: 'Pending' } | { code: 'Success' } | { code: 'Failed'; reason: FailedReason; details: FailedRunDetails };

export interface FailedRunDetails {
  description: string;
  code: string;
  requestId?: string;
  /** Why the guardrails service denied the request (GUARDRAILS_VALIDATION_FAILED only). */
  guardrailsReason?: string;
  /** The same facts in the shape the reference runtime uses, for clients that read it. */
  originalError: Record<string, unknown>;
}

export const MESSAGE_SUCCESS: MessageStatus = Object.freeze({ code: 'Success' });
export const RUN_SUCCESS: RunStatus = Object.freeze({ code: 'Success' });

export function failedMessage(reason: string): MessageStatus {
  return { code: 'Failed', reason };
}

/**
 * A failed run's status. Its reason decides what the stock client does: UNKNOWN_ERROR shows the
 * description as an error banner; MESSAGE_STREAM_INTERRUPTED shows nothing and keeps the text so far.
 * So a run that must be asked again and was not ended by its user (SHUTTING_DOWN, the grace period
 * over) is UNKNOWN_ERROR. PROTOCOL.md §5.2 and §5.5 say the same (a contract test holds them).
 */
export function failedRun(error: GatewayError, requestId?: string): RunStatus {
  const reason: FailedReason =
    error.code === 'CLIENT_DISCONNECTED' ||
    error.code === 'UPSTREAM_STREAM_INTERRUPTED' ||
    error.code === 'RUN_STOPPED' ||
    error.code === 'INSTANCE_LOST'
      ? 'MESSAGE_STREAM_INTERRUPTED'
      : error.code === 'GUARDRAILS_VALIDATION_FAILED'
        ? 'GUARDRAILS_VALIDATION_FAILED'
        : 'UNKNOWN_ERROR';
  return {
    code: 'Failed',
    reason,
    details: {
      description: error.message,
      code: error.code,
      ...(requestId ? { requestId } : {}),
      // The reference's GuardrailsValidationFailureResponse carries the reason under this name.
      ...(error.code === 'GUARDRAILS_VALIDATION_FAILED' ? { guardrailsReason: error.message } : {}),
      originalError: error.toJSON(),
    },
  };
}
