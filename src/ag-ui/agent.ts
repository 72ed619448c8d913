import { EventType, type BaseEvent, type RunAgentInput } from '@ag-ui/core';
import type { Subscription } from 'rxjs';
import { ConfigurationError, GatewayError } from '../core/errors.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import type { RunWriter } from '../core/writer.js';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.js';
import { EventSizeGuard } from '../upstream/stream-limits.js';
import type { AgentClient, AgentEntry, AgentRequest, AgentThreadState, LoadStateRequest } from '../agents/agent.js';
import { AgUiEventInterpreter, fromThinking } from './agent-events.js';
import { resumeOf, toAgUiMessages } from './messages.js';
import type { AgentDefinition, BuiltInAgentDependencies } from '../agents/definitions.js';
import { badAgentResponse, namingAgent, who } from '../agents/errors.js';
import { UpstreamHttpSettings, type UpstreamHttpOptions } from '../agents/http-options.js';

/** An agent that speaks AG-UI over HTTP (LangGraph, CrewAI, Mastra, Agno, Pydantic AI and others serve it). */
export interface AgUiAgentOptions extends UpstreamHttpOptions {
  /** Where the agent takes a `RunAgentInput` by POST and answers with a stream of AG-UI events. */
  url: string;
  /** What the agent does, shown in `availableAgents` and to a model that may hand over to it. */
  description?: string;
}

/** Configures an AG-UI agent for `createGateway({ agents: { name: agUiAgent({ url }) } })`. */
export function agUiAgent(options: AgUiAgentOptions): AgentDefinition {
  return {
    kind: 'ag-ui',
    create(name: string, dependencies: BuiltInAgentDependencies, where: string): AgentEntry {
      if (options === null || typeof options !== 'object')
        throw new ConfigurationError(`${where} must be agUiAgent({ url }).`);
      if (typeof options.url !== 'string' || !/^https?:\/\/\S+$/i.test(options.url)) {
        throw new ConfigurationError(
          `${where}.url must be an http(s) URL such as "http://localhost:8000/agent" (got ` +
            `${JSON.stringify(options.url)}).`,
        );
      }
      if (options.description !== undefined && typeof options.description !== 'string')
        throw new ConfigurationError(`${where}.description must be a string.`);
      const settings = new UpstreamHttpSettings(options, where);
      return {
        name,
        description: options.description ?? '',
        kind: 'ag-ui',
        client: new AgUiAgentClient(options.url, settings, dependencies.upstream),
      };
    },
  };
}

/** The values of @ag-ui/client's HttpEventType (its stream parsers read these events). */
const HTTP_HEADERS = 'headers';
const HTTP_DATA = 'data';

const KNOWN_EVENT_TYPES = new Set<string>(Object.values(EventType));

/**
 * Runs an AG-UI agent: POSTs a RunAgentInput through the gateway's upstream client (retries,
 * timeouts, aborts) and reads the event stream with @ag-ui/client's parsers (SSE, or protobuf when
 * the agent answers `application/vnd.ag-ui.event+proto`) and chunk expansion, checking each event
 * against @ag-ui/core's schemas. Nothing is shared between runs: each gets its own stream and state.
 * (@ag-ui/client's HttpAgent is not used: one instance per agent would share state across users,
 * and its reader lets a cut connection escape as an unhandled rejection.)
 */
class AgUiAgentClient implements AgentClient {
  constructor(
    private readonly url: string,
    private readonly settings: UpstreamHttpSettings,
    private readonly upstream: UpstreamClient,
  ) {}

  async run(request: AgentRequest, out: RunWriter, signal: AbortSignal): Promise<void> {
    try {
      const libraries = await loadAgUiLibraries();
      const response = await this.upstream.request({
        url: this.url,
        json: this.input(request),
        headers: {
          accept: 'text/event-stream',
          ...(await this.settings.headersFor({
            properties: request.properties,
            call: 'run',
            agentName: request.agentName,
            threadId: request.threadId,
            principal: request.principal,
          })),
        },
        who: who(request.agentName),
        policy: this.settings.policy,
        signal,
        logger: request.logger,
      });
      const interpreter = new AgUiEventInterpreter(
        out,
        request.agentName,
        request.state,
        messageIds(request),
        request.logger,
      );
      await this.read(libraries, response, request, interpreter, signal);
    } catch (error) {
      throw namingAgent(error, request.agentName);
    }
  }

  /** AG-UI has no call for a thread's saved state: the agent knows no thread the gateway can ask about. */
  async loadState(_request: LoadStateRequest): Promise<AgentThreadState> {
    return { threadExists: false, state: {}, messages: [] };
  }

  private input(request: AgentRequest): RunAgentInput {
    const { command, resume } = resumeOf(request.metaEvents);
    return {
      threadId: request.threadId,
      runId: request.runId,
      state: request.state,
      messages: toAgUiMessages(request.messages),
      tools: request.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
      context: request.context.map(({ description, value }) => ({ description, value })),
      forwardedProps: {
        ...this.settings.bodyProperties(request.properties),
        ...(Object.keys(request.config).length ? { config: request.config } : {}),
        ...(request.nodeName ? { nodeName: request.nodeName } : {}),
        ...(command ? { command } : {}),
      },
      ...(resume ? { resume } : {}),
    };
  }

  private read(
    libraries: AgUiLibraries,
    response: UpstreamResponse,
    request: AgentRequest,
    interpreter: AgUiEventInterpreter,
    signal: AbortSignal,
  ): Promise<void> {
    const { Observable, filter, map, transformHttpEventStream, transformChunks, EventSchema, protobufType } = libraries;
    const agentName = request.agentName;
    const httpEvents = new Observable<unknown>((subscriber) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      subscriber.next({ type: HTTP_HEADERS, status: response.status, headers });
      // @ag-ui/client reads protobuf when the content type is exactly AG-UI's (its parser caps a frame at 10 MB),
      // and SSE for any other, so the same test decides here: a look-alike type must not escape the SSE cap.
      const protobuf = headers.get('content-type') === protobufType;
      // Its SSE parser splits events on "\n\n" only; SSE also allows CRLF and CR line ends.
      const lines = protobuf ? undefined : new LineEndings();
      // Its SSE parser holds an event until the blank line that ends it; @ag-ui/client 1.0 caps that at 10 MB, and
      // the gateway's own cap (16 MiB, as for every upstream) stays in case a later version does not.
      const size = protobuf ? undefined : new EventSizeGuard(who(agentName));
      let stopped = false;
      void (async () => {
        try {
          for await (const chunk of response.body) {
            if (stopped) return;
            size?.check(chunk);
            subscriber.next({ type: HTTP_DATA, data: lines ? lines.normalize(chunk) : chunk });
          }
          const rest = lines?.end();
          if (rest) subscriber.next({ type: HTTP_DATA, data: rest });
          subscriber.complete();
        } catch (error) {
          subscriber.error(signal.aborted ? signal.reason : error);
        }
      })();
      return () => {
        stopped = true;
        response.body.on('error', () => {}); // ending a body nobody reads is not an error
        response.body.destroy();
      };
    });

    const events = transformHttpEventStream(httpEvents as never).pipe(
      map(fromThinking(`thinking-${request.runId}`)),
      filter((event) => {
        if (KNOWN_EVENT_TYPES.has(event.type)) return true;
        request.logger.debug({ agent: agentName, type: event.type }, 'agent event of an unknown type skipped');
        return false;
      }),
      map((event) => checked(EventSchema, event, agentName)),
      transformChunks(),
    );

    return new Promise<void>((resolve, reject) => {
      let settled = false;
      // Assigned once, but `settle` may run inside subscribe(), before the assignment: a const would throw there.
      // eslint-disable-next-line prefer-const
      let subscription: Subscription | undefined;
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        subscription?.unsubscribe();
        if (error === undefined) resolve();
        else reject(streamError(error, agentName, signal));
      };
      // Every handler catches: RxJS reports a throwing subscriber as an uncaught exception.
      subscription = events.subscribe({
        next: (event) => {
          if (settled) return;
          try {
            interpreter.handle(event);
          } catch (error) {
            settle(error);
          }
        },
        error: (error) => settle(error),
        complete: () => {
          try {
            interpreter.end();
            settle();
          } catch (error) {
            settle(error);
          }
        },
      });
      if (settled) subscription.unsubscribe();
    });
  }
}

interface AgUiLibraries {
  Observable: typeof import('rxjs').Observable;
  filter: typeof import('rxjs').filter;
  map: typeof import('rxjs').map;
  transformHttpEventStream: typeof import('@ag-ui/client').transformHttpEventStream;
  transformChunks: typeof import('@ag-ui/client').transformChunks;
  EventSchema: typeof import('@ag-ui/core/schemas').EventSchema;
  /** AG-UI's protobuf media type, the content type @ag-ui/client reads as protobuf. */
  protobufType: string;
}

/**
 * @ag-ui/client, RxJS (its streams are Observables) and the event schemas, loaded on the first AG-UI
 * run rather than at start-up: they are the heaviest modules the gateway uses (about 14 MB of heap,
 * 30 MB of RSS; RxJS alone is some 220 modules), and most gateways have no AG-UI agent.
 */
const loadAgUiLibraries = loadOnFirstUse(async (): Promise<AgUiLibraries> => {
  // One after the other (@ag-ui/client imports the other two; see core/load-on-first-use.ts), and
  // the schemas imported here, not through the AG-UI transport's loader (ag-ui/input.ts): a load may
  // not wait on another loader's.
  const schemas = await import('@ag-ui/core/schemas');
  const rxjs = await import('rxjs');
  const client = await import('@ag-ui/client');
  // @ag-ui/proto's constant, re-exported by the encoder (@ag-ui/client loads @ag-ui/proto already).
  const { AGUI_MEDIA_TYPE } = await import('@ag-ui/encoder');
  return {
    protobufType: AGUI_MEDIA_TYPE,
    Observable: rxjs.Observable,
    filter: rxjs.filter,
    map: rxjs.map,
    transformHttpEventStream: client.transformHttpEventStream,
    transformChunks: client.transformChunks,
    EventSchema: schemas.EventSchema,
  };
});

/** An event checked against @ag-ui/core's schema; a malformed one is a bad response naming the agent. */
function checked(EventSchema: AgUiLibraries['EventSchema'], event: BaseEvent, agentName: string): BaseEvent {
  const result = EventSchema.safeParse(event);
  if (result.success) return result.data as BaseEvent;
  const issue = result.error.issues[0];
  const where = issue?.path?.length ? ` (${issue.path.join('.')}: ${issue.message})` : '';
  throw badAgentResponse(agentName, `a ${event.type} event that does not follow the AG-UI schema${where}`);
}

/** What the stream's own errors mean to a run. */
function streamError(error: unknown, agentName: string, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  if (error instanceof GatewayError) return error;
  if (error instanceof SyntaxError) return badAgentResponse(agentName, 'an event that is not JSON');
  const message = error instanceof Error ? error.message : String(error);
  return badAgentResponse(agentName, `a stream the AG-UI client could not read (${message.slice(0, 200)})`);
}

function messageIds(request: AgentRequest): string[] {
  return request.messages.flatMap((message) =>
    message.kind === 'result' ? [message.id, `result:${message.actionExecutionId}`] : [message.id],
  );
}

const CR = 0x0d;
const LF = 0x0a;

/** Turns CRLF and lone CR line ends into LF across chunks (a CR at a chunk's end waits for the next). */
export class LineEndings {
  private pendingCr = false;

  normalize(chunk: Uint8Array): Uint8Array {
    if (!this.pendingCr && !chunk.includes(CR)) return chunk;
    const out = new Uint8Array(chunk.length + 1);
    let length = 0;
    let start = 0;
    if (this.pendingCr) {
      this.pendingCr = false;
      out[length++] = LF;
      if (chunk[0] === LF) start = 1; // the CRLF's LF: already written
    }
    for (let i = start; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte !== CR) {
        out[length++] = byte;
      } else if (i === chunk.length - 1) {
        this.pendingCr = true;
      } else {
        out[length++] = LF;
        if (chunk[i + 1] === LF) i++;
      }
    }
    return out.subarray(0, length);
  }

  /** What is left when the stream ends. */
  end(): Uint8Array | undefined {
    if (!this.pendingCr) return undefined;
    this.pendingCr = false;
    return Uint8Array.of(LF);
  }
}
