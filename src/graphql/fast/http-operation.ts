import type { GraphQLSchema } from 'graphql';
import { answerOf, formattedLater, thrownAnswer, type AnswerSetting } from './direct-answer.js';
import { executeIncrementally, type HttpOperationState } from './incremental.js';
import type { KnownDocuments } from './known-documents.js';
import { LaterPayloads } from './later-payloads.js';
import type { LaterPayload } from './payloads.js';
import { carriesErrors } from '../nulled-paths.js';
import type { ExecutionHandle, GatewayContext } from '../context.js';
import type { ErrorFormatter } from '../error-answers.js';
import type {
  DirectAnswer,
  ExecutionOutcome,
  HttpOperation,
  HttpRequest,
  LaterDelivery,
  LaterSink,
  LaterStep,
} from '../executor.js';

/**
 * The fast executor's side of HTTP (executor.ts `prepare`): each operation's later payloads kept by the
 * executor, found by the handle the context carries, a token with nothing else on it (the payloads and the
 * transport's sink they are written to stay out of resolvers' reach); and the documents it knows run without
 * Apollo's pipeline (known-documents.ts).
 */
export class FastHttp {
  /** Each prepared operation's state by its handle; an operation's ends with it (nothing holds the handle then). */
  private readonly states = new WeakMap<ExecutionHandle, HttpOperationState>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly known: KnownDocuments,
    private readonly format: ErrorFormatter,
  ) {}

  /** The executor's `execute`: an HTTP operation's state found by its context's handle. */
  readonly execute = (args: Parameters<typeof executeIncrementally>[0]): Promise<ExecutionOutcome> => {
    const handle = (args.contextValue as GatewayContext | undefined)?.execution;
    return executeIncrementally(args, handle === undefined ? undefined : this.states.get(handle));
  };

  prepare(request: HttpRequest): HttpOperation {
    const operation = new FastHttpOperation(this.schema, request, this.known, this.format);
    this.states.set(operation.handle, operation.state);
    return operation;
  }
}

class FastHttpOperation implements HttpOperation {
  /** A token, frozen: what `execute` finds the state by. */
  readonly handle: ExecutionHandle = Object.freeze({ executor: 'fast' });
  readonly state: HttpOperationState = { later: new LaterPayloads() };

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly request: HttpRequest,
    private readonly known: KnownDocuments,
    private readonly format: ErrorFormatter,
  ) {}

  /**
   * A known document run as Apollo would run it (the same `executeIncrementally`, with the arguments Apollo gives its
   * executor: no root value, no field resolver of Apollo's), and answered as Apollo's pipeline answers it
   * (direct-answer.ts), refusals and errors included.
   */
  async run(context: GatewayContext): Promise<DirectAnswer | undefined> {
    const { request, known, state } = this;
    const found = request.direct ? known.find(request.body) : undefined;
    if (found === undefined) return undefined;
    const setting: AnswerSetting = {
      requestId: context.requestId,
      logger: context.logger,
      format: this.format,
      document: found.document,
      operationName: found.operationName,
      header: request.header,
    };
    let outcome: ExecutionOutcome;
    try {
      outcome = await executeIncrementally(
        {
          schema: this.schema,
          document: found.document,
          contextValue: context,
          variableValues: found.variables,
          operationName: found.operationName,
        },
        state,
      );
    } catch (error) {
      state.later.close();
      return thrownAnswer(error, setting);
    }
    return answerOf(outcome, setting);
  }

  answered(query: unknown, streamed: boolean): void {
    // A streamed run of a document the leaf-stream plan takes: its text may be run without Apollo next time.
    const planned = this.state.later.planned;
    if (planned !== undefined && streamed && typeof query === 'string') {
      this.known.remember(query, planned);
    }
  }

  later(): LaterDelivery | undefined {
    const later = this.state.later;
    if (later.source === undefined && !later.runPlanned) return undefined;
    return new Delivery(later, { logger: this.request.logger, format: this.format });
  }

  close(): void {
    const later = this.state.later;
    later.close();
    // Whatever is left unread ends: the executor's streams (their runs were aborted when the response closed).
    if (later.source) void later.source.return(undefined).catch(() => undefined);
  }
}

/** The operation's later payloads as the transport takes them: serialised, their errors formatted as Apollo does. */
class Delivery implements LaterDelivery {
  constructor(
    private readonly later: LaterPayloads,
    private readonly setting: Pick<AnswerSetting, 'logger' | 'format'>,
  ) {}

  open(sink: LaterSink): void {
    this.later.open(sink);
  }

  next(): Promise<LaterStep | undefined> {
    return this.later.next().then(this.toStep);
  }

  private readonly toStep = (step: IteratorResult<LaterPayload, void>): LaterStep | undefined => {
    if (step.done) return undefined;
    const payload = carriesErrors(step.value) ? formattedLater(step.value, this.setting) : step.value;
    return { json: JSON.stringify(payload), hasNext: payload.hasNext };
  };

  after(): void {
    this.later.after();
  }

  close(): void {
    this.later.close();
  }
}
