import { getOperationAST, type DocumentNode, type GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from 'pino';
import { DRAIN_REFUSAL_HEADER } from '../../engine/drain.js';
import type { DirectAnswer } from '../executor.js';
import {
  applyRefusal,
  asGraphQLError,
  asUserInputError,
  formatErrors,
  logErrors,
  tagRequestId,
  type ErrorFormatter,
  type ErrorHead,
} from '../error-answers.js';
import type { ExecutionOutcome, LaterPayload } from './payloads.js';

// The answers the fast executor makes without Apollo's pipeline (http-operation.ts), as that pipeline makes them with
// the gateway's options and plugins (Apollo Server 5's requestPipeline.ts and runHttpQuery.ts): for an executed
// result, the errors told to the plugins that log them, formatted, any `extensions.http` they carry taken into the
// head, then the hooks that send (the request id into each error, a refusal's retry-after and status); for a later
// payload, its items' errors logged and formatted. test/known-documents.test.ts and test/incremental.test.ts compare
// whole answers with Apollo's, refusals and errors included.

/** What an answer is made with: the request's id, logger and document, and the gateway's error formatter. */
export interface AnswerSetting {
  readonly requestId: string;
  readonly logger: Logger;
  readonly format: ErrorFormatter;
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  /** A request header the answer's head reads (engine/drain.ts's, for a draining refusal). */
  header(name: string): string | undefined;
}

const NO_HEADERS: ReadonlyMap<string, string> = new Map();

/** The answer to an executed operation: one result, or a streamed first part. */
export function answerOf(outcome: ExecutionOutcome, setting: AnswerSetting): DirectAnswer {
  if ('initialResult' in outcome) {
    const initial = outcome.initialResult;
    if (initial.errors === undefined) {
      return { status: undefined, headers: NO_HEADERS, body: streamed(JSON.stringify(initial), initial.hasNext) };
    }
    const errors = initial.errors.map(asUserInputError);
    const head: ErrorHead = { status: undefined, headers: new Map() };
    const result = { ...initial, errors: toldAndFormatted(errors, setting, head) };
    sent(result, errors, setting, head);
    return { status: head.status, headers: head.headers, body: streamed(JSON.stringify(result), result.hasNext) };
  }
  const head: ErrorHead = { status: undefined, headers: new Map() };
  const errors = outcome.errors?.map(asUserInputError);
  const formatted = errors === undefined ? undefined : toldAndFormatted(errors, setting, head);
  // Apollo's rule for an operation that did not execute (a request error): HTTP 400. (The tools executor's variable
  // errors carry that status in their `extensions.http` already.)
  if (formatted?.length && outcome.data === undefined && !head.status) head.status = 400;
  const result = { errors: formatted, data: outcome.data, extensions: outcome.extensions };
  sent(result, errors, setting, head);
  return { status: head.status, headers: head.headers, body: single(result) };
}

/** The answer to an execution that threw: its one error, formatted (masked unless a GatewayError), HTTP 500. */
export function thrownAnswer(thrown: unknown, setting: AnswerSetting): DirectAnswer {
  const errors = [asGraphQLError(thrown)];
  const head: ErrorHead = { status: undefined, headers: new Map() };
  const result = { errors: toldAndFormatted(errors, setting, head) };
  head.status ??= 500;
  sent(result, errors, setting, head);
  return { status: head.status, headers: head.headers, body: single(result) };
}

/** A later payload as Apollo sends it: each item's errors told to the log, then formatted. */
export function formattedLater(payload: LaterPayload, setting: Pick<AnswerSetting, 'logger' | 'format'>): LaterPayload {
  const incremental = payload.incremental;
  if (incremental === undefined) return payload;
  return {
    ...payload,
    incremental: incremental.map((item) => {
      if (item.errors === undefined) return item;
      logErrors(setting.logger, item.errors);
      // Any `http` extension does nothing here: the head went with the first part.
      return { ...item, errors: formatErrors(item.errors, setting.format, { status: undefined, headers: new Map() }) };
    }),
  } as LaterPayload;
}

/** The errors told to the plugins that hear of them (the log), then formatted for the client. */
function toldAndFormatted(
  errors: readonly GraphQLError[],
  setting: AnswerSetting,
  head: ErrorHead,
): GraphQLFormattedError[] {
  logErrors(setting.logger, errors);
  return formatErrors(errors, setting.format, head);
}

/** What the plugins' hooks do as the answer is sent: the request id into its errors, a refusal into its head. */
function sent(
  result: { readonly errors?: readonly GraphQLFormattedError[]; readonly data?: unknown },
  raw: readonly GraphQLError[] | undefined,
  setting: AnswerSetting,
  head: ErrorHead,
): void {
  tagRequestId(result.errors, setting.requestId);
  const operation = getOperationAST(setting.document, setting.operationName) ?? undefined;
  applyRefusal(result, raw, operation, setting.header(DRAIN_REFUSAL_HEADER), head);
}

/** One result as Apollo writes it: its fields in the order errors, data, extensions, and a newline. */
function single(result: { errors?: unknown; data?: unknown; extensions?: unknown }): DirectAnswer['body'] {
  return {
    kind: 'single',
    json: `${JSON.stringify({ errors: result.errors, data: result.data, extensions: result.extensions })}\n`,
  };
}

function streamed(json: string, hasNext: boolean): DirectAnswer['body'] {
  return { kind: 'streamed', first: { json, hasNext } };
}
