import { createHash } from 'node:crypto';
import type { Client } from '@langchain/langgraph-sdk';
import type { Logger } from 'pino';
import { ConfigurationError, GatewayError, UpstreamError } from '../core/errors.js';
import { isWellFormedText } from '../core/ids.js';
import { loadOnFirstUse } from '../core/load-on-first-use.js';
import type { Principal } from '../core/principal.js';
import type { RunWriter } from '../core/writer.js';
import type { UpstreamClient } from '../upstream/client.js';
import { errorCodes, upstreamNetworkError, upstreamStatusError } from '../upstream/errors.js';
import type { AgentClient, AgentEntry, AgentRequest, AgentThreadState, LoadStateRequest } from './agent.js';
import type { AgentDefinition, BuiltInAgentDependencies } from './definitions.js';
import { agentError, badAgentResponse, namingAgent, who } from './errors.js';
import { UpstreamHttpSettings, type UpstreamHttpOptions } from './http-options.js';
import { langChainToCopilotKit, toLangChainMessages } from './langchain-messages.js';
import { LangGraphEventInterpreter } from './langgraph-events.js';
import { StateSync, objectOf, type ThreadStateLike } from './langgraph-state.js';

/** A graph deployed on LangGraph Platform (LangGraph Server, `langgraph dev`, LangSmith deployments). */
export interface LangGraphAgentOptions extends UpstreamHttpOptions {
  /** The deployment's URL, such as "http://localhost:2024". */
  deploymentUrl: string;
  /** The graph to run (its id in langgraph.json). */
  graphId: string;
  /** The LangSmith API key, sent as `x-api-key`. */
  apiKey?: string;
  /** What the agent does, shown in `availableAgents` and to a model that may hand over to it. */
  description?: string;
}

/** Configures a LangGraph Platform graph for `createGateway({ agents: { name: langGraphAgent({ … }) } })`. */
export function langGraphAgent(options: LangGraphAgentOptions): AgentDefinition {
  return {
    kind: 'langgraph',
    create(name: string, dependencies: BuiltInAgentDependencies, where: string): AgentEntry {
      if (options === null || typeof options !== 'object')
        throw new ConfigurationError(`${where} must be langGraphAgent({ deploymentUrl, graphId }).`);
      if (typeof options.deploymentUrl !== 'string' || !/^https?:\/\/\S+$/i.test(options.deploymentUrl)) {
        throw new ConfigurationError(
          `${where}.deploymentUrl must be an http(s) URL such as "http://localhost:2024" (got ` +
            `${JSON.stringify(options.deploymentUrl)}).`,
        );
      }
      if (typeof options.graphId !== 'string' || !options.graphId)
        throw new ConfigurationError(`${where}.graphId must be the id of a graph of the deployment.`);
      if (options.apiKey !== undefined && typeof options.apiKey !== 'string')
        throw new ConfigurationError(`${where}.apiKey must be a string.`);
      if (options.description !== undefined && typeof options.description !== 'string')
        throw new ConfigurationError(`${where}.description must be a string.`);
      const settings = new UpstreamHttpSettings(options, where);
      return {
        name,
        description: options.description ?? '',
        kind: 'langgraph',
        client: new LangGraphAgentClient(options, settings, dependencies.upstream),
      };
    },
  };
}

type SdkClient = InstanceType<typeof Client>;

/** The SDK, loaded on the first LangGraph call, not at start-up (most gateways have no LangGraph agent). */
const loadSdk = loadOnFirstUse(() => import('@langchain/langgraph-sdk'));

/**
 * Runs a LangGraph Platform graph with @langchain/langgraph-sdk, whose HTTP goes through the
 * gateway's upstream client (pool, retries, timeouts): the assistant is looked up by graph id,
 * the thread created or reused, and `runs.stream` read in the `events`, `values` and `updates`
 * modes. Events go through the same interpreter as a remote endpoint's LangGraph lines; values
 * become agent state (without the messages, which the client already streams), `__interrupt__`
 * becomes an interrupt, an `error` event fails the run. A client that goes away cancels the run on
 * the deployment. When the run ends, the thread's final state is sent with its messages.
 */
class LangGraphAgentClient implements AgentClient {
  private assistant: Promise<string> | undefined;

  constructor(
    private readonly options: LangGraphAgentOptions,
    private readonly settings: UpstreamHttpSettings,
    private readonly upstream: UpstreamClient,
  ) {}

  async run(request: AgentRequest, out: RunWriter, signal: AbortSignal): Promise<void> {
    const agentName = request.agentName;
    const threadId = langGraphThreadId(request.threadId);
    // The run's own stream: closed when the run ends for any reason, the caller's abort included.
    const stream = new AbortController();
    const onAbort = () => stream.abort(signal.reason);
    if (signal.aborted) stream.abort(signal.reason);
    else signal.addEventListener('abort', onAbort, { once: true });
    let client: SdkClient | undefined;
    let runId: string | undefined;
    let completed = false;
    let graphFailed = false;
    try {
      client = await this.sdk(request, 'run');
      const assistantId = await raceAbort(this.assistantId(agentName, request.logger), stream.signal);
      await client.threads.create({ threadId, ifExists: 'do_nothing', graphId: this.options.graphId, signal });
      const thread = await client.threads.getState(threadId, undefined, { signal });
      const payload = this.payload(request, thread as ThreadStateLike);
      const interpreter = new LangGraphEventInterpreter(out, agentName, request.logger);
      const sync = new StateSync(out, agentName, request.threadId, interpreter);
      const chunks = client.runs.stream(threadId, assistantId, {
        ...payload,
        streamMode: ['events', 'values', 'updates'],
        signal: stream.signal,
        onRunCreated: (run) => {
          runId = run.run_id;
        },
      });
      let line = 0;
      for await (const chunk of chunks as AsyncIterable<{ event: string; data: any }>) {
        line++;
        const mode = chunk.event.split('|')[0];
        switch (mode) {
          case 'metadata':
            runId ??= chunk.data?.run_id;
            break;
          case 'events':
            interpreter.handle(chunk.data, line);
            sync.nodeMayHaveChanged();
            break;
          case 'values':
            sync.values(chunk.data);
            break;
          case 'updates':
            sync.interrupts(chunk.data?.__interrupt__);
            break;
          case 'error':
            graphFailed = true;
            throw agentError(agentName, errorMessage(chunk.data));
          default:
            break;
        }
      }
      signal.throwIfAborted(); // the SDK ends a stream quietly when its signal aborts
      completed = true;
      interpreter.finish();
      const final = (await client.threads.getState(threadId, undefined, { signal: stream.signal })) as ThreadStateLike;
      sync.finish(final);
    } catch (error) {
      // A run that did not finish on the deployment (the client left, its stream broke, its output
      // could not be read) is cancelled there; one the graph itself failed has ended already.
      if (client && runId && !completed && !graphFailed) this.cancel(client, threadId, runId, request.logger);
      throw namingAgent(sdkError(error, agentName, signal), agentName);
    } finally {
      signal.removeEventListener('abort', onAbort);
      stream.abort(new Error('The LangGraph run has ended.'));
    }
  }

  async loadState(request: LoadStateRequest, signal: AbortSignal): Promise<AgentThreadState> {
    try {
      const client = await this.sdk(request, 'state');
      const state = (await client.threads.getState(langGraphThreadId(request.threadId), undefined, {
        signal,
      })) as ThreadStateLike;
      const values = objectOf(state.values);
      if (Object.keys(values).length === 0) return { threadExists: false, state: {}, messages: [] };
      const { messages, __interrupt__: _interrupts, ...rest } = values;
      return { threadExists: true, state: rest, messages: langChainToCopilotKit(messages) };
    } catch (error) {
      if ((error as { status?: number })?.status === 404) return { threadExists: false, state: {}, messages: [] };
      throw namingAgent(sdkError(error, request.agentName, signal), request.agentName);
    }
  }

  /** An SDK client for one run: the run's headers, the gateway's fetch, no retries of its own. */
  private async sdk(
    request: {
      properties: Record<string, unknown>;
      agentName: string;
      logger: Logger;
      threadId?: string;
      principal?: Principal;
    },
    call: string,
  ): Promise<SdkClient> {
    const headers = await this.settings.headersFor({
      properties: request.properties,
      call,
      agentName: request.agentName,
      threadId: request.threadId,
      principal: request.principal,
    });
    const { Client } = await loadSdk();
    return new Client({
      apiUrl: this.options.deploymentUrl,
      // null: never the SDK's own fallback to LANGSMITH_API_KEY in the environment.
      apiKey: this.options.apiKey ?? null,
      defaultHeaders: headers,
      callerOptions: {
        fetch: this.upstream.fetchFor(who(request.agentName), this.settings.policy, request.logger),
        maxRetries: 0,
        maxConcurrency: Infinity,
      },
    });
  }

  /**
   * The graph's assistant, looked up once (again after a failure). The lookup is shared by every
   * run, so it is the gateway's own call: server headers only, its own time limit, no caller's signal.
   */
  private assistantId(agentName: string, logger: Logger): Promise<string> {
    this.assistant ??= this.sdk({ properties: {}, agentName, logger }, 'assistants/search')
      .then((client) =>
        client.assistants.search({
          graphId: this.options.graphId,
          limit: 1,
          signal: AbortSignal.timeout(this.settings.policy.totalTimeoutMs),
        }),
      )
      .then((found) => {
        const id = found[0]?.assistant_id;
        if (!id) {
          throw new UpstreamError(
            'UPSTREAM_REJECTED',
            `The LangGraph deployment of agent "${agentName}" has no assistant for graph "${this.options.graphId}".`,
            {
              details: { agentName, graphId: this.options.graphId },
            },
          );
        }
        return id;
      });
    this.assistant.catch(() => {
      this.assistant = undefined;
    });
    return this.assistant;
  }

  private payload(
    request: AgentRequest,
    thread: ThreadStateLike,
  ): { input?: Record<string, unknown> | null; command?: { resume: unknown }; config?: Record<string, unknown> } {
    const known = new Set(
      (Array.isArray(objectOf(thread.values).messages)
        ? (objectOf(thread.values).messages as { id?: string }[])
        : []
      ).map((message) => message?.id),
    );
    let messages = toLangChainMessages(request.messages);
    // The frontend's own system prompt is not the graph's; CopilotKit's runtime leaves it out too.
    if (messages[0]?.type === 'system') messages = messages.slice(1);
    const newMessages = messages.filter((message) => !known.has(message.id));
    const config = Object.keys(request.config).length ? { config: request.config } : {};

    const answer = request.metaEvents.find(
      (event) => event.name === 'LangGraphInterruptEvent' && event.response != null,
    );
    if (answer) return { input: null, command: { resume: parseJson(answer.response!) }, ...config };
    const pending = (thread.tasks ?? []).some((task) => (task.interrupts ?? []).length > 0);
    // A thread waiting on an interrupt that gets new messages instead: the messages are the answer.
    if (pending) return { input: null, command: { resume: newMessages }, ...config };

    const { messages: _omitted, ...state } = request.state;
    return {
      input: {
        ...state,
        messages: newMessages,
        copilotkit: { actions: request.tools, context: request.context },
      },
      ...config,
    };
  }

  private cancel(client: SdkClient, threadId: string, runId: string, logger: Logger): void {
    client.runs.cancel(threadId, runId, false, 'interrupt', { signal: AbortSignal.timeout(5_000) }).then(
      () => logger.debug({ threadId, langGraphRunId: runId }, 'LangGraph run cancelled'),
      (error: unknown) =>
        logger.warn({ threadId, langGraphRunId: runId, err: error }, 'LangGraph run could not be cancelled'),
    );
  }
}

const NAMESPACE = 'copilot-gateway:langgraph-thread:';
/** Parts from NAMESPACE at its last character (`-`, not `:`): no bytes hashed one way are those of the other. */
const UTF16_NAMESPACE = Buffer.from('copilot-gateway:langgraph-thread-utf16:');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * LangGraph thread ids are UUIDs. A client's thread id that is one is used as it is; any other is
 * mapped to a name-based UUID (version 5 layout), the same every time, so the thread carries on.
 * Well-formed text is hashed as UTF-8 (as it always was: the threads already mapped keep their UUIDs);
 * text with a lone surrogate, which the inputs refuse, as its UTF-16 code units, since UTF-8 would turn
 * every lone surrogate into the same U+FFFD and two clients' ids into one LangGraph thread.
 */
export function langGraphThreadId(threadId: string): string {
  if (UUID.test(threadId)) return threadId.toLowerCase();
  const hash = (
    isWellFormedText(threadId)
      ? createHash('sha1').update(NAMESPACE + threadId)
      : createHash('sha1').update(UTF16_NAMESPACE).update(Buffer.from(threadId, 'utf16le'))
  ).digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Waits for `promise`, or rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** What the SDK's errors mean: a status answer after the retries, a broken stream, or one that cannot be read. */
function sdkError(error: unknown, agentName: string, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  if (error instanceof GatewayError) return error;
  // A body that broke off after the answer had started (undici's fetch says "terminated").
  if (errorCodes(error).length > 0 || (error instanceof TypeError && error.message === 'terminated')) {
    return upstreamNetworkError(who(agentName), error, 'stream');
  }
  const status = (error as { status?: unknown })?.status;
  if (typeof status === 'number') {
    const text = (error as { text?: unknown }).text;
    return upstreamStatusError(who(agentName), status, {
      detail: status < 500 && typeof text === 'string' ? detailOf(text) : undefined,
      cause: error,
    });
  }
  if (error instanceof SyntaxError) return badAgentResponse(agentName, 'a stream event that is not JSON');
  return badAgentResponse(
    agentName,
    `something the LangGraph client could not read ` +
      `(${error instanceof Error ? error.message.slice(0, 200) : String(error)})`,
  );
}

function detailOf(text: string): string {
  try {
    const parsed = JSON.parse(text);
    const detail = parsed?.detail ?? parsed?.message ?? parsed?.error ?? text;
    return typeof detail === 'string' ? detail : JSON.stringify(detail);
  } catch {
    return text;
  }
}

function errorMessage(data: unknown): string {
  if (typeof data === 'string') return data;
  const record = objectOf(data);
  const details = objectOf(record.error_details);
  if (typeof details.message === 'string')
    return typeof details.type === 'string' ? `${details.type}: ${details.message}` : details.message;
  if (typeof record.message === 'string')
    return typeof record.error === 'string' ? `${record.error}: ${record.message}` : record.message;
  if (typeof record.error === 'string') return record.error;
  return 'unknown error';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
