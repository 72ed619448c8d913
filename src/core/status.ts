import type { GatewayError } from './errors.js';

/** The status of one streamed message (text or action call). */
export type MessageStatus =
  | { code: 'Pending' }
  | { code: 'Success' }
  | { code: 'Failed'; reason: string };

export type FailedReason = 'GUARDRAILS_VALIDATION_FAILED' | 'MESSAGE_STREAM_INTERRUPTED' | 'UNKNOWN_ERROR';

/** The terminal status of a run. */
export type RunStatus =
  | { code: 'Pending' }
  | { code: 'Success' }
  | { code: 'Failed'; reason: FailedReason; details: FailedRunDetails };

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

export function failedRun(error: GatewayError, requestId?: string): RunStatus {
  const reason: FailedReason =
    error.code === 'CLIENT_DISCONNECTED' || error.code === 'UPSTREAM_STREAM_INTERRUPTED' || error.code === 'RUN_STOPPED' || error.code === 'INSTANCE_LOST'
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
