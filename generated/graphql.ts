/* eslint-disable */
// Written by graphql-codegen from schema/*.graphql. Do not edit; run `npm run codegen`.
import type { GraphQLResolveInfo, GraphQLScalarType, GraphQLScalarTypeConfig } from 'graphql';
import type { CopilotResponseModel, MessageOutputModel, TextMessageOutputModel, ActionExecutionMessageOutputModel, ResultMessageOutputModel, AgentStateMessageOutputModel, ImageMessageOutputModel, CopilotThreadModel } from '../src/views/models.js';
import type { MessageStatus as MessageStatusModel, RunStatus } from '../src/core/status.js';
import type { MetaEventPayload, SequencedEvent } from '../src/core/events.js';
import type { AgentStateRecord, RunRecord } from '../src/threads/store.js';
import type { GatewayContext } from '../src/graphql/context.js';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type ResolverFn<TResult, TParent, TContext, TArgs> = (parent: TParent, args: TArgs, context: TContext, info: GraphQLResolveInfo) => Promise<TResult> | TResult | (TResult extends Array<infer U> ? AsyncIterable<U> : never)
export type RequireFields<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /**
   * A date-time string at UTC, such as 2007-12-03T10:15:30Z, in the RFC 3339 profile of ISO 8601.
   * Serialized to and parsed from an ISO 8601 string.
   */
  DateTimeISO: { input: Date | string; output: Date | string; }
  /** The `JSON` scalar type represents JSON values as specified by [ECMA-404](http://www.ecma-international.org/publications/files/ECMA-ST/ECMA-404.pdf). */
  JSON: { input: unknown; output: unknown; }
  /** The `JSONObject` scalar type represents JSON objects as specified by [ECMA-404](http://www.ecma-international.org/publications/files/ECMA-ST/ECMA-404.pdf). */
  JSONObject: { input: Record<string, unknown>; output: Record<string, unknown>; }
};

/** A chunk of an action call's JSON-encoded arguments, to be concatenated in order. */
export type ActionExecutionArgsEvent = RunEvent & {
  __typename?: 'ActionExecutionArgsEvent';
  /** The action execution the chunk belongs to. */
  actionExecutionId: Scalars['String']['output'];
  /** The arguments chunk. */
  args: Scalars['String']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** An action call's arguments are complete. */
export type ActionExecutionEndEvent = RunEvent & {
  __typename?: 'ActionExecutionEndEvent';
  /** The action execution that ended. */
  actionExecutionId: Scalars['String']['output'];
  /** Success, or Failed when the run failed while the call was open. */
  messageStatus: MessageStatus;
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** An action execution requested by the model earlier in the conversation. */
export type ActionExecutionMessageInput = {
  /** The JSON-encoded arguments. */
  arguments: Scalars['String']['input'];
  /** The action's name. */
  name: Scalars['String']['input'];
  /** The id of the assistant message that made the call. */
  parentMessageId?: InputMaybe<Scalars['String']['input']>;
  /**
   * Deprecated; ignored.
   * @deprecated This field will be removed in a future version
   */
  scope?: InputMaybe<Scalars['String']['input']>;
};

/** A call of an action (a tool) requested by the model. */
export type ActionExecutionMessageOutput = BaseMessageOutput & {
  __typename?: 'ActionExecutionMessageOutput';
  /** The JSON-encoded arguments, as chunks to be concatenated. Request with `@stream`. */
  arguments: Array<Scalars['String']['output']>;
  /** When the call was started. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The action execution's id; results refer to it. */
  id: Scalars['String']['output'];
  /** The name of the action to execute. */
  name: Scalars['String']['output'];
  /** The id of the assistant message that made the call. */
  parentMessageId?: Maybe<Scalars['String']['output']>;
  /**
   * Deprecated and always null.
   * @deprecated This field will be removed in a future version
   */
  scope?: Maybe<Scalars['String']['output']>;
  /** The call's final status. */
  status: MessageStatus;
};

/**
 * An action execution run on the server side has a result: a server-side or remote action, an agent's own
 * tool, or the model handing over to an agent ("<name> agent started").
 */
export type ActionExecutionResultEvent = RunEvent & {
  __typename?: 'ActionExecutionResultEvent';
  /** The action execution this result answers. */
  actionExecutionId: Scalars['String']['output'];
  /** The action's name. */
  actionName: Scalars['String']['output'];
  /** The id of the result message ("result-" followed by the action execution id). */
  messageId: Scalars['String']['output'];
  /** The result, as in ResultMessageOutput.result. */
  result: Scalars['String']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** The model calls an action. */
export type ActionExecutionStartEvent = RunEvent & {
  __typename?: 'ActionExecutionStartEvent';
  /** The action execution's id. */
  actionExecutionId: Scalars['String']['output'];
  /** The action's name. */
  actionName: Scalars['String']['output'];
  /** The id of the assistant message that makes the call. */
  parentMessageId?: Maybe<Scalars['String']['output']>;
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** An action the frontend can execute. */
export type ActionInput = {
  /** Whether the model may call it; `enabled` when absent. */
  available?: InputMaybe<ActionInputAvailability>;
  /** What the action does, for the model. */
  description: Scalars['String']['input'];
  /** The JSON Schema of the action's parameters, JSON-encoded. */
  jsonSchema: Scalars['String']['input'];
  /** The action's name (the tool name the model sees). */
  name: Scalars['String']['input'];
};

/** The availability of the frontend action */
export type ActionInputAvailability =
  /** Not offered to the model. */
  | 'disabled'
  /** Offered to the model. */
  | 'enabled'
  /** Kept for remote agents; not offered to the model. */
  | 'remote';

/** An agent the gateway can run. */
export type Agent = {
  __typename?: 'Agent';
  /** What the agent does; an empty string when it has no description. */
  description: Scalars['String']['output'];
  /** Stable identifier of the agent. */
  id: Scalars['String']['output'];
  /** Name used in `agentSession.agentName` and `loadAgentState`. */
  name: Scalars['String']['output'];
};

/** Run an agent instead of the model. */
export type AgentSessionInput = {
  /** The agent's name. */
  agentName: Scalars['String']['input'];
  /** The node to start from. */
  nodeName?: InputMaybe<Scalars['String']['input']>;
  /** The agent's thread. */
  threadId?: InputMaybe<Scalars['String']['input']>;
};

/** The state of an agent, as the client knows it. */
export type AgentStateInput = {
  /** The agent's name. */
  agentName: Scalars['String']['input'];
  /** The agent's configuration as a JSON-encoded object. */
  config?: InputMaybe<Scalars['String']['input']>;
  /** The state as a JSON-encoded object. */
  state: Scalars['String']['input'];
};

/** A snapshot of an agent's state. */
export type AgentStateMessageEvent = RunEvent & {
  __typename?: 'AgentStateMessageEvent';
  /** Whether the agent is the active one. */
  active: Scalars['Boolean']['output'];
  /** The agent's name. */
  agentName: Scalars['String']['output'];
  /** The snapshot's message id. */
  messageId: Scalars['String']['output'];
  /** The node of the agent's graph that is running. */
  nodeName: Scalars['String']['output'];
  /** The role of the agent's messages. */
  role: MessageRole;
  /** The agent's run id. */
  runId: Scalars['String']['output'];
  /** Whether the agent is still running. */
  running: Scalars['Boolean']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
  /** The state as a JSON-encoded object. */
  state: Scalars['String']['output'];
  /** The thread the agent runs on. */
  threadId: Scalars['String']['output'];
};

/** A snapshot of an agent's state. */
export type AgentStateMessageInput = {
  /** Whether the agent was the active one. */
  active: Scalars['Boolean']['input'];
  /** The agent's name. */
  agentName: Scalars['String']['input'];
  /** The node of the agent's graph. */
  nodeName: Scalars['String']['input'];
  /** The role of the agent's messages. */
  role: MessageRole;
  /** The agent's run id. */
  runId: Scalars['String']['input'];
  /** Whether the agent was running. */
  running: Scalars['Boolean']['input'];
  /** The state as a JSON-encoded object. */
  state: Scalars['String']['input'];
  /** The thread the agent runs on. */
  threadId: Scalars['String']['input'];
};

/** A snapshot of an agent's state. */
export type AgentStateMessageOutput = BaseMessageOutput & {
  __typename?: 'AgentStateMessageOutput';
  /** Whether the agent is the active one. */
  active: Scalars['Boolean']['output'];
  /** The agent's name. */
  agentName: Scalars['String']['output'];
  /** When the snapshot was taken. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The message's id. */
  id: Scalars['String']['output'];
  /** The node of the agent's graph that is running. */
  nodeName: Scalars['String']['output'];
  /** The role of the agent's messages. */
  role: MessageRole;
  /** The agent's run id. */
  runId: Scalars['String']['output'];
  /** Whether the agent is still running. */
  running: Scalars['Boolean']['output'];
  /** The state as a JSON-encoded object. */
  state: Scalars['String']['output'];
  /** The message's final status. */
  status: MessageStatus;
  /** The thread the agent runs on. */
  threadId: Scalars['String']['output'];
};

/** The list of agents available on this gateway. */
export type AgentsResponse = {
  __typename?: 'AgentsResponse';
  /** Every configured agent. */
  agents: Array<Agent>;
};

/** Fields shared by every message the gateway returns. */
export type BaseMessageOutput = {
  /** When the message was created. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The message's id. */
  id: Scalars['String']['output'];
  /** Success or Failed, once the message has ended. Request it with `@defer` to get it as soon as the message ends. */
  status: MessageStatus;
};

/** Fields shared by every meta event. */
export type BaseMetaEvent = {
  /** Which meta event this is. */
  name: MetaEventName;
  /** Always "MetaEvent". */
  type: Scalars['String']['output'];
};

/** Fields shared by every response status. */
export type BaseResponseStatus = {
  /** Pending, Success or Failed. */
  code: ResponseStatusCode;
};

/** Copilot Cloud options. */
export type CloudInput = {
  /** Input validation rules. */
  guardrails?: InputMaybe<GuardrailsInput>;
};

/** A piece of readable context from the frontend. */
export type CopilotContextInput = {
  /** What the value is. */
  description: Scalars['String']['input'];
  /** The value. */
  value: Scalars['String']['input'];
};

/** A LangGraph interrupt raised through CopilotKit, with messages. */
export type CopilotKitLangGraphInterruptEvent = BaseMetaEvent & {
  __typename?: 'CopilotKitLangGraphInterruptEvent';
  /** The interrupt's value and messages. */
  data: CopilotKitLangGraphInterruptEventData;
  /** Always CopilotKitLangGraphInterruptEvent. */
  name: MetaEventName;
  /** The user's response, once given. */
  response?: Maybe<Scalars['String']['output']>;
  /** Always "MetaEvent". */
  type: Scalars['String']['output'];
};

/** The payload of a CopilotKitLangGraphInterruptEvent. */
export type CopilotKitLangGraphInterruptEventData = {
  __typename?: 'CopilotKitLangGraphInterruptEventData';
  /** Messages that came with the interrupt. */
  messages: Array<BaseMessageOutput>;
  /** The interrupt's value. */
  value: Scalars['String']['output'];
};

/** The type of Copilot request */
export type CopilotRequestType =
  /** A chat turn. */
  | 'Chat'
  /** Suggestions for the chat. */
  | 'Suggestion'
  /** A one-off task. */
  | 'Task'
  /** A textarea autocompletion. */
  | 'TextareaCompletion'
  /** A textarea popover edit. */
  | 'TextareaPopover';

/** The streamed response of one run. */
export type CopilotResponse = {
  __typename?: 'CopilotResponse';
  /** Provider-specific extensions of the response. */
  extensions?: Maybe<ExtensionsResponse>;
  /** The messages the run produced, in order. Request with `@stream` to receive each one as it starts. */
  messages: Array<BaseMessageOutput>;
  /** Meta events (such as agent interrupts) raised during the run. Request with `@stream`. */
  metaEvents?: Maybe<Array<BaseMetaEvent>>;
  /** The run's id: the `runId` the client proposed, or one the gateway made. */
  runId?: Maybe<Scalars['String']['output']>;
  /** The run's final status. Resolves when the run has ended; request it with `@defer`. */
  status: ResponseStatus;
  /** The thread this run belongs to: the one sent by the client, or a new one. */
  threadId: Scalars['String']['output'];
};

/** One event of a run, in the order the run produced it. */
export type CopilotRunEvent = ActionExecutionArgsEvent | ActionExecutionEndEvent | ActionExecutionResultEvent | ActionExecutionStartEvent | AgentStateMessageEvent | ReasoningContentEvent | ReasoningEndEvent | ReasoningStartEvent | RunFinishedEvent | RunMetaEvent | RunStartedEvent | TextMessageContentEvent | TextMessageEndEvent | TextMessageStartEvent;

/** A thread as the gateway keeps it. */
export type CopilotThread = {
  __typename?: 'CopilotThread';
  /** The latest state of each agent that ran on the thread. */
  agentStates: Array<CopilotThreadAgentState>;
  /**
   * The conversation as of the thread's latest run: the messages it was given (each id once), then what it produced
   * (so far, while it runs). Every message has status Success.
   */
  messages: Array<BaseMessageOutput>;
  /** The thread's runs, oldest first (the most recent ones, up to the store's bound). */
  runs: Array<CopilotThreadRun>;
  /** The thread's id. */
  threadId: Scalars['ID']['output'];
};

/** The latest state an agent reported on a thread. */
export type CopilotThreadAgentState = {
  __typename?: 'CopilotThreadAgentState';
  /** Whether the agent was the active one. */
  active: Scalars['Boolean']['output'];
  /** The agent's name. */
  agentName: Scalars['String']['output'];
  /** The node of the agent's graph that reported it. */
  nodeName: Scalars['String']['output'];
  /** The run in which it was reported. */
  runId: Scalars['ID']['output'];
  /** Whether the agent was still running when it reported it. */
  running: Scalars['Boolean']['output'];
  /** The state as a JSON-encoded object. */
  state: Scalars['String']['output'];
};

/**
 * A page of a thread list. Forward-only cursor paging, Relay-style but without `edges`: the gateway pages by keyset and
 * gives one cursor per page (where the next page starts, after the page's last thread), not one per thread. An edge
 * cursor that was not its own thread's position would resume a client in the wrong place, so there are no edges: read
 * `nodes`, and `pageInfo.endCursor` to go on.
 */
export type CopilotThreadConnection = {
  __typename?: 'CopilotThreadConnection';
  /** The page's threads, most recently run first. */
  nodes: Array<CopilotThreadSummary>;
  /** Whether there is a next page, and where it starts. */
  pageInfo: CopilotThreadPageInfo;
};

/** Where a thread list goes on (forward paging only). */
export type CopilotThreadPageInfo = {
  __typename?: 'CopilotThreadPageInfo';
  /**
   * What to pass as `after` for the next page: opaque, valid as long as the list is. `null` on the last page (there is
   * nothing after it to point to: threads run since sort first, on a new first page).
   */
  endCursor?: Maybe<Scalars['String']['output']>;
  /** Whether threads follow this page. */
  hasNextPage: Scalars['Boolean']['output'];
};

/** One run of a thread. */
export type CopilotThreadRun = {
  __typename?: 'CopilotThreadRun';
  /** When it ended; null while it runs. */
  finishedAt?: Maybe<Scalars['DateTimeISO']['output']>;
  /** The sequence of the run's last stored event: -1 before any, the RunFinishedEvent's once it has ended. */
  lastSequence: Scalars['Int']['output'];
  /** The run's id. */
  runId: Scalars['ID']['output'];
  /** When the run started. */
  startedAt: Scalars['DateTimeISO']['output'];
  /** Pending while it runs; then Success, or Failed with a reason and details (as RunFinishedEvent.status). */
  status: ResponseStatus;
};

/** A thread as the thread list shows it (the `ThreadRecord` of CopilotKit's `/threads`, without organisations). */
export type CopilotThreadSummary = {
  __typename?: 'CopilotThreadSummary';
  /** The agent its first run was for: `default` for the model itself. */
  agentId: Scalars['String']['output'];
  /** Whether it is archived (left out of the list unless `includeArchived`). */
  archived: Scalars['Boolean']['output'];
  /** When its first run started. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The thread's id (as `GenerateCopilotResponseInput.threadId` and `copilotThread(threadId)`). */
  id: Scalars['ID']['output'];
  /** When its latest run started (the list's order). */
  lastRunAt: Scalars['DateTimeISO']['output'];
  /** Its first user message's text (on one line, at most 100 characters) until renamed; null before it has one. */
  name?: Maybe<Scalars['String']['output']>;
  /** Its last change: a run started, a rename or an archive. */
  updatedAt: Scalars['DateTimeISO']['output'];
};

/** Provider-specific extensions of a request. */
export type ExtensionsInput = {
  /** OpenAI Assistants API ids. */
  openaiAssistantAPI?: InputMaybe<OpenAiApiAssistantApiInput>;
};

/** Provider-specific extensions of a response. */
export type ExtensionsResponse = {
  __typename?: 'ExtensionsResponse';
  /** OpenAI Assistants API ids, when that API is used. */
  openaiAssistantAPI?: Maybe<OpenAiApiAssistantApiResponse>;
};

/** The message was cut short because its run failed. */
export type FailedMessageStatus = {
  __typename?: 'FailedMessageStatus';
  /** Always Failed. */
  code: MessageStatusCode;
  /** Why the message did not complete. */
  reason: Scalars['String']['output'];
};

/** The run failed. Messages still open when it failed end with a FailedMessageStatus. */
export type FailedResponseStatus = BaseResponseStatus & {
  __typename?: 'FailedResponseStatus';
  /** Always Failed. */
  code: ResponseStatusCode;
  /**
   * What went wrong: `{description, code, requestId, originalError: {code, statusCode, severity, visibility, message, details?}}`.
   * See PROTOCOL.md for the codes.
   */
  details?: Maybe<Scalars['JSON']['output']>;
  /** The category of the failure. */
  reason: FailedResponseStatusReason;
};

/** Why a run failed. */
export type FailedResponseStatusReason =
  /** Input was rejected by guardrails. */
  | 'GUARDRAILS_VALIDATION_FAILED'
  /** The stream of messages was interrupted. */
  | 'MESSAGE_STREAM_INTERRUPTED'
  /** Any other failure; `details.code` says which. */
  | 'UNKNOWN_ERROR';

/** Model parameters for one run. */
export type ForwardedParametersInput = {
  /** The most tokens the model may produce. */
  maxTokens?: InputMaybe<Scalars['Float']['input']>;
  /** The model to use instead of the configured one. */
  model?: InputMaybe<Scalars['String']['input']>;
  /** Sequences that stop generation. */
  stop?: InputMaybe<Array<Scalars['String']['input']>>;
  /** Sampling temperature. */
  temperature?: InputMaybe<Scalars['Float']['input']>;
  /** How the model picks tools: "auto", "none", "required" or "function". */
  toolChoice?: InputMaybe<Scalars['String']['input']>;
  /** The tool to call when `toolChoice` is "function". */
  toolChoiceFunctionName?: InputMaybe<Scalars['String']['input']>;
};

/** What the frontend offers. */
export type FrontendInput = {
  /** The frontend's actions, offered to the model as tools. */
  actions: Array<ActionInput>;
  /** Deprecated free-form context; ignored. */
  toDeprecate_fullContext?: InputMaybe<Scalars['String']['input']>;
  /** The page the request comes from. */
  url?: InputMaybe<Scalars['String']['input']>;
};

/** Everything one run needs. */
export type GenerateCopilotResponseInput = {
  /** Run an agent instead of the model. */
  agentSession?: InputMaybe<AgentSessionInput>;
  /** State of the agent being run. */
  agentState?: InputMaybe<AgentStateInput>;
  /** States of the agents known to the client. */
  agentStates?: InputMaybe<Array<AgentStateInput>>;
  /** Copilot Cloud options (guardrails). */
  cloud?: InputMaybe<CloudInput>;
  /** Readable context the frontend shares with the copilot; given to the model as a system message. */
  context?: InputMaybe<Array<CopilotContextInput>>;
  /** Provider-specific extensions of the request. */
  extensions?: InputMaybe<ExtensionsInput>;
  /** Model parameters to apply to this run. */
  forwardedParameters?: InputMaybe<ForwardedParametersInput>;
  /** The frontend's actions and page. */
  frontend: FrontendInput;
  /** The whole conversation so far, oldest first. */
  messages: Array<MessageInput>;
  /** Meta events sent back by the client, such as answers to interrupts. */
  metaEvents?: InputMaybe<Array<MetaEventInput>>;
  /** What kind of request this is. */
  metadata: GenerateCopilotResponseMetadataInput;
  /** A run id proposed by the client; the gateway makes its own when absent. */
  runId?: InputMaybe<Scalars['String']['input']>;
  /** The thread to continue; a new id is made when absent. */
  threadId?: InputMaybe<Scalars['String']['input']>;
};

/** What kind of request this is. */
export type GenerateCopilotResponseMetadataInput = {
  /** The kind of request. */
  requestType?: InputMaybe<CopilotRequestType>;
};

/** Guardrails for the user's input. */
export type GuardrailsInput = {
  /** The rules to validate the input with. */
  inputValidationRules: GuardrailsRuleInput;
};

/** Topics to allow or deny. */
export type GuardrailsRuleInput = {
  /** Topics that are allowed. */
  allowList?: InputMaybe<Array<Scalars['String']['input']>>;
  /** Topics that are denied. */
  denyList?: InputMaybe<Array<Scalars['String']['input']>>;
};

/** An image message. */
export type ImageMessageInput = {
  /** The image, base64-encoded. */
  bytes: Scalars['String']['input'];
  /** The image format, such as "png" or "jpeg". */
  format: Scalars['String']['input'];
  /** The id of the message this one belongs to. */
  parentMessageId?: InputMaybe<Scalars['String']['input']>;
  /** Who sent it. */
  role: MessageRole;
};

/** An image message. */
export type ImageMessageOutput = BaseMessageOutput & {
  __typename?: 'ImageMessageOutput';
  /** The image, base64-encoded. */
  bytes: Scalars['String']['output'];
  /** When the message was created. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The image format, such as "png" or "jpeg". */
  format: Scalars['String']['output'];
  /** The message's id. */
  id: Scalars['String']['output'];
  /** The id of the message this one belongs to, if any. */
  parentMessageId?: Maybe<Scalars['String']['output']>;
  /** Who sent the image. */
  role: MessageRole;
  /** The message's final status. */
  status: MessageStatus;
};

/** A LangGraph interrupt: the agent waits for the user's answer. */
export type LangGraphInterruptEvent = BaseMetaEvent & {
  __typename?: 'LangGraphInterruptEvent';
  /** Always LangGraphInterruptEvent. */
  name: MetaEventName;
  /** The user's response, once given. */
  response?: Maybe<Scalars['String']['output']>;
  /** Always "MetaEvent". */
  type: Scalars['String']['output'];
  /** The interrupt's value, JSON-encoded unless it is a string. */
  value: Scalars['String']['output'];
};

/** Which agent state to load. */
export type LoadAgentStateInput = {
  /** The agent's name. */
  agentName: Scalars['String']['input'];
  /** The thread id. */
  threadId: Scalars['String']['input'];
};

/** The saved state of an agent on a thread. */
export type LoadAgentStateResponse = {
  __typename?: 'LoadAgentStateResponse';
  /** The thread's messages as a JSON-encoded array ("[]" when there are none). */
  messages: Scalars['String']['output'];
  /** The agent's state as a JSON-encoded object ("{}" when there is none). */
  state: Scalars['String']['output'];
  /** Whether the thread is known for this agent. */
  threadExists: Scalars['Boolean']['output'];
  /** The thread that was asked for. */
  threadId: Scalars['String']['output'];
};

/** One message of the conversation. Exactly one of the message fields is set. */
export type MessageInput = {
  /** An action execution requested by the model. */
  actionExecutionMessage?: InputMaybe<ActionExecutionMessageInput>;
  /** A snapshot of an agent's state. */
  agentStateMessage?: InputMaybe<AgentStateMessageInput>;
  /** When the message was created. */
  createdAt: Scalars['DateTimeISO']['input'];
  /** The message's id. */
  id: Scalars['String']['input'];
  /** An image. */
  imageMessage?: InputMaybe<ImageMessageInput>;
  /** The result of an action execution. */
  resultMessage?: InputMaybe<ResultMessageInput>;
  /** A text message. */
  textMessage?: InputMaybe<TextMessageInput>;
};

/** The role of the message */
export type MessageRole =
  /** The model or agent. */
  | 'assistant'
  /** Developer instructions for the model. */
  | 'developer'
  /** Instructions for the model. */
  | 'system'
  /** A tool result. */
  | 'tool'
  /** The end user. */
  | 'user';

/** The status of one message. */
export type MessageStatus = FailedMessageStatus | PendingMessageStatus | SuccessMessageStatus;

/** The codes of a message status. */
export type MessageStatusCode =
  /** Cut short. */
  | 'Failed'
  /** Still being produced. */
  | 'Pending'
  /** Produced completely. */
  | 'Success';

/** A meta event sent back by the client. */
export type MetaEventInput = {
  /** Messages that go with it. */
  messages?: InputMaybe<Array<MessageInput>>;
  /** Which meta event. */
  name: MetaEventName;
  /** The user's response. */
  response?: InputMaybe<Scalars['String']['input']>;
  /** The event's value. */
  value: Scalars['String']['input'];
};

/** Meta event types */
export type MetaEventName =
  /** A LangGraph interrupt with the messages that came with it. */
  | 'CopilotKitLangGraphInterruptEvent'
  /** A LangGraph interrupt with its raw value. */
  | 'LangGraphInterruptEvent';

/** Operations that start work. */
export type Mutation = {
  __typename?: 'Mutation';
  /**
   * Archives one of the caller's threads (or brings it back with `archived: false`): an archived thread is left out of
   * `copilotThreads` unless `includeArchived` asks for it, and is otherwise kept as it was. The thread as listed
   * afterwards; `null` when the caller has no such thread (as `renameCopilotThread`).
   */
  archiveCopilotThread?: Maybe<CopilotThreadSummary>;
  /**
   * Deletes one of the caller's threads: a run going on is stopped first (its clients see it end Failed with details
   * code RUN_STOPPED, "the thread was deleted"), then every record of the thread goes (its transcript, states, runs and
   * their events). `true` when it was deleted; `false` when the caller has no such thread (one that does not exist
   * and another caller's are answered alike).
   */
  deleteCopilotThread: Scalars['Boolean']['output'];
  /**
   * Runs the model (or an agent) on the given conversation and streams the answer. Use `messages @stream`,
   * `content @stream` / `arguments @stream` and `@defer` on `status` to receive it incrementally.
   */
  generateCopilotResponse: CopilotResponse;
  /**
   * Renames one of the caller's threads (the list shows a thread under its first user message's text until it is
   * renamed). The thread as listed afterwards; `null` when the caller has no such thread: one that does not exist and
   * another caller's are answered alike. An empty or too long name is BAD_USER_INPUT; the list off, NOT_SUPPORTED.
   */
  renameCopilotThread?: Maybe<CopilotThreadSummary>;
  /**
   * Stops the running run of a thread (that run only, when `runId` is given), from any gateway instance: its
   * upstream work is cancelled and it ends with a Failed status whose details code is RUN_STOPPED. `true` when a run
   * was running and has been told to stop; `false` when none was.
   */
  stopCopilotRun: Scalars['Boolean']['output'];
};


/** Operations that start work. */
export type MutationArchiveCopilotThreadArgs = {
  archived?: Scalars['Boolean']['input'];
  threadId: Scalars['ID']['input'];
};


/** Operations that start work. */
export type MutationDeleteCopilotThreadArgs = {
  threadId: Scalars['ID']['input'];
};


/** Operations that start work. */
export type MutationGenerateCopilotResponseArgs = {
  data: GenerateCopilotResponseInput;
  properties?: InputMaybe<Scalars['JSONObject']['input']>;
};


/** Operations that start work. */
export type MutationRenameCopilotThreadArgs = {
  name: Scalars['String']['input'];
  threadId: Scalars['ID']['input'];
};


/** Operations that start work. */
export type MutationStopCopilotRunArgs = {
  runId?: InputMaybe<Scalars['ID']['input']>;
  threadId: Scalars['ID']['input'];
};

/** Ids of an OpenAI Assistants API run. */
export type OpenAiApiAssistantApiInput = {
  /** The Assistants API run id. */
  runId?: InputMaybe<Scalars['String']['input']>;
  /** The Assistants API thread id. */
  threadId?: InputMaybe<Scalars['String']['input']>;
};

/** Ids of an OpenAI Assistants API run. */
export type OpenAiApiAssistantApiResponse = {
  __typename?: 'OpenAIApiAssistantAPIResponse';
  /** The Assistants API run id. */
  runId?: Maybe<Scalars['String']['output']>;
  /** The Assistants API thread id. */
  threadId?: Maybe<Scalars['String']['output']>;
};

/** The message is still being produced. */
export type PendingMessageStatus = {
  __typename?: 'PendingMessageStatus';
  /** Always Pending. */
  code: MessageStatusCode;
};

/** The run is still going. */
export type PendingResponseStatus = BaseResponseStatus & {
  __typename?: 'PendingResponseStatus';
  /** Always Pending. */
  code: ResponseStatusCode;
};

/** Read-only operations: health check, agent discovery and agent state. */
export type Query = {
  __typename?: 'Query';
  /** The agents this gateway can run, as configured. An empty list when none are configured. */
  availableAgents: AgentsResponse;
  /**
   * A thread the gateway ran, as its thread store keeps it: the conversation (to restore a chat after a reload),
   * the latest state of each agent, and its runs. `null` for a thread the store does not have (never ran here, or
   * expired).
   */
  copilotThread?: Maybe<CopilotThread>;
  /**
   * A page of the caller's threads of one agent, most recently run first (ties by id): the list CopilotKit ≥1.50
   * frontends read from `GET /threads`, for GraphQL clients. With authentication on, each caller lists its own threads
   * only; without it the list is off (NOT_SUPPORTED) unless the gateway serves it to everyone
   * (`threads.listAnonymous`, THREAD_LIST_ANONYMOUS=true), and then it lists the threads that belong to no one. Paging
   * is forward only, by keyset: threads started while a client pages sort before its cursor, so a page never shifts.
   * A `first` outside 1..200 or a cursor this gateway did not give is BAD_USER_INPUT.
   */
  copilotThreads: CopilotThreadConnection;
  /** Health check. Always returns "Hello World". */
  hello: Scalars['String']['output'];
  /**
   * The saved state of one agent on one thread: from the thread store when it holds that agent's state,
   * otherwise from the agent. Fails with AGENT_NOT_FOUND (listing the available agents) when no agent
   * has the name and the store holds no state of it.
   */
  loadAgentState: LoadAgentStateResponse;
};


/** Read-only operations: health check, agent discovery and agent state. */
export type QueryCopilotThreadArgs = {
  threadId: Scalars['ID']['input'];
};


/** Read-only operations: health check, agent discovery and agent state. */
export type QueryCopilotThreadsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  agentId?: Scalars['String']['input'];
  first?: InputMaybe<Scalars['Int']['input']>;
  includeArchived?: InputMaybe<Scalars['Boolean']['input']>;
};


/** Read-only operations: health check, agent discovery and agent state. */
export type QueryLoadAgentStateArgs = {
  data: LoadAgentStateInput;
};

/** A chunk of the model's reasoning. */
export type ReasoningContentEvent = RunEvent & {
  __typename?: 'ReasoningContentEvent';
  /** The text chunk (one or more tokens). */
  content: Scalars['String']['output'];
  /** The reasoning message the chunk belongs to. */
  messageId: Scalars['String']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** The reasoning message has ended (also when the run ends while it is open). */
export type ReasoningEndEvent = RunEvent & {
  __typename?: 'ReasoningEndEvent';
  /** The reasoning message that ended. */
  messageId: Scalars['String']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/**
 * The model has started showing its reasoning (its "thinking"), where the model or agent shows it: a message apart
 * from the answer, never part of the conversation sent back to the model. Not in the reference contract: the
 * mutation's messages never include it.
 */
export type ReasoningStartEvent = RunEvent & {
  __typename?: 'ReasoningStartEvent';
  /** The reasoning message's id, unique in the run. */
  messageId: Scalars['String']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** The final status of a run. */
export type ResponseStatus = FailedResponseStatus | PendingResponseStatus | SuccessResponseStatus;

/** The codes of a response status. */
export type ResponseStatusCode =
  /** The run failed. */
  | 'Failed'
  /** The run is still going. */
  | 'Pending'
  /** The run ended normally. */
  | 'Success';

/** The result of an action execution. */
export type ResultMessageInput = {
  /** The action execution this result answers. */
  actionExecutionId: Scalars['String']['input'];
  /** The action's name. */
  actionName: Scalars['String']['input'];
  /** The id of the message this one belongs to. */
  parentMessageId?: InputMaybe<Scalars['String']['input']>;
  /** The result, passed to the model verbatim. */
  result: Scalars['String']['input'];
};

/**
 * The result of an action execution run on the server side: a server-side or remote action, an agent's own
 * tool, or the "<name> agent started" result of the model handing over to an agent.
 */
export type ResultMessageOutput = BaseMessageOutput & {
  __typename?: 'ResultMessageOutput';
  /** The action execution this result answers. */
  actionExecutionId: Scalars['String']['output'];
  /** The name of the action that was executed. */
  actionName: Scalars['String']['output'];
  /** When the result was produced. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The message's id: "result-" followed by the action execution id. */
  id: Scalars['String']['output'];
  /**
   * The result: the handler's string as it is, anything else JSON-encoded. A failure is
   * `{"error":{"code":...,"message":...},"result":""}`.
   */
  result: Scalars['String']['output'];
  /** The message's final status. */
  status: MessageStatus;
};

/** What happens to a run when its client goes away before it ends. */
export type RunDisconnectPolicy =
  /** The run is aborted, and its upstream work (model call, agent run, actions) cancelled. The default. */
  | 'CANCEL'
  /** The run goes on to its end and its events are kept: join it again with joinCopilotRun. */
  | 'CONTINUE';

/** Fields shared by every event of a run. */
export type RunEvent = {
  /**
   * The event's number in its run, given where the run emits it: 0 for the RunStartedEvent, then one more per
   * event (a run whose record Redis lost part of is ended after every number it gave, skipping the lost ones). A
   * chunk event into which later chunks of the same message were merged (for a reader that fell behind) carries the
   * number of the last of them, so the numbers one subscriber sees always rise but may skip.
   */
  sequence: Scalars['Int']['output'];
};

/** The run has ended. Always the last event; the subscription completes after it. */
export type RunFinishedEvent = RunEvent & {
  __typename?: 'RunFinishedEvent';
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
  /** Success, or Failed with a reason and details. */
  status: ResponseStatus;
  /**
   * What the run's model calls used, one entry per provider and model, where the providers reported it (OpenAI when
   * asked for it, Anthropic, Gemini, AG-UI agents that report it); null when none did. Not in the reference contract.
   */
  usage?: Maybe<Array<TokenUsage>>;
};

/** A meta event, such as an agent interrupt. */
export type RunMetaEvent = RunEvent & {
  __typename?: 'RunMetaEvent';
  /** The meta event. */
  event: BaseMetaEvent;
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** The run has started. Always the first event. */
export type RunStartedEvent = RunEvent & {
  __typename?: 'RunStartedEvent';
  /** The run's id. */
  runId: Scalars['String']['output'];
  /** Always 0. */
  sequence: Scalars['Int']['output'];
  /** The thread the run belongs to. */
  threadId: Scalars['String']['output'];
};

/** Long-lived operations, served over graphql-ws (WebSocket) on the GraphQL path. */
export type Subscription = {
  __typename?: 'Subscription';
  /**
   * Runs the model (or an agent) exactly like `generateCopilotResponse` and streams the run as ordered events:
   * first a RunStartedEvent, last a RunFinishedEvent with the final status. Unsubscribing aborts the run, unless
   * `onDisconnect` is CONTINUE.
   */
  copilotRun: CopilotRunEvent;
  /**
   * Attaches to a run of a thread (its latest when `runId` is omitted), from any gateway instance, whether it is
   * running or finished: replays the run's events after `afterSequence` (all of them when omitted), merging
   * consecutive chunks of one message, then follows the run live until its RunFinishedEvent, then completes.
   * Sequences are the run's own. An unknown thread or run is RUN_NOT_FOUND. Ending this subscription never stops
   * the run.
   */
  joinCopilotRun: CopilotRunEvent;
};


/** Long-lived operations, served over graphql-ws (WebSocket) on the GraphQL path. */
export type SubscriptionCopilotRunArgs = {
  data: GenerateCopilotResponseInput;
  onDisconnect?: InputMaybe<RunDisconnectPolicy>;
  properties?: InputMaybe<Scalars['JSONObject']['input']>;
};


/** Long-lived operations, served over graphql-ws (WebSocket) on the GraphQL path. */
export type SubscriptionJoinCopilotRunArgs = {
  afterSequence?: InputMaybe<Scalars['Int']['input']>;
  runId?: InputMaybe<Scalars['ID']['input']>;
  threadId: Scalars['ID']['input'];
};

/** The message was produced completely. */
export type SuccessMessageStatus = {
  __typename?: 'SuccessMessageStatus';
  /** Always Success. */
  code: MessageStatusCode;
};

/** The run ended normally. */
export type SuccessResponseStatus = BaseResponseStatus & {
  __typename?: 'SuccessResponseStatus';
  /** Always Success. */
  code: ResponseStatusCode;
};

/** A chunk of a text message. Chunks of one message are to be concatenated in order. */
export type TextMessageContentEvent = RunEvent & {
  __typename?: 'TextMessageContentEvent';
  /** The text chunk (one or more tokens). */
  content: Scalars['String']['output'];
  /** The message the chunk belongs to. */
  messageId: Scalars['String']['output'];
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** A text message has ended. */
export type TextMessageEndEvent = RunEvent & {
  __typename?: 'TextMessageEndEvent';
  /** The message that ended. */
  messageId: Scalars['String']['output'];
  /**
   * Success, or Failed when the run failed while the message was open. (Not named `status`, so that one
   * document can select it and RunFinishedEvent.status side by side.)
   */
  messageStatus: MessageStatus;
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/** A text message. */
export type TextMessageInput = {
  /** The text. */
  content: Scalars['String']['input'];
  /** The id of the message this one belongs to. */
  parentMessageId?: InputMaybe<Scalars['String']['input']>;
  /** Who wrote it. */
  role: MessageRole;
};

/** A text message, streamed chunk by chunk. */
export type TextMessageOutput = BaseMessageOutput & {
  __typename?: 'TextMessageOutput';
  /** The text, as chunks to be concatenated. Request with `@stream` to receive tokens as they arrive. */
  content: Array<Scalars['String']['output']>;
  /** When the message was created. */
  createdAt: Scalars['DateTimeISO']['output'];
  /** The message's id. */
  id: Scalars['String']['output'];
  /** The id of the message this one belongs to, if any. */
  parentMessageId?: Maybe<Scalars['String']['output']>;
  /** Who wrote the message (the model answers as `assistant`). */
  role: MessageRole;
  /** The message's final status. */
  status: MessageStatus;
};

/** A text message starts. */
export type TextMessageStartEvent = RunEvent & {
  __typename?: 'TextMessageStartEvent';
  /** The new message's id. */
  messageId: Scalars['String']['output'];
  /** The id of the message this one belongs to, if any. */
  parentMessageId?: Maybe<Scalars['String']['output']>;
  /** Who writes the message. */
  role: MessageRole;
  /** The event's position in its run. */
  sequence: Scalars['Int']['output'];
};

/**
 * Tokens a run's calls of one model used, as its provider reported them (AG-UI 1.0's TokenUsage). Every count is
 * null where the provider does not report it.
 */
export type TokenUsage = {
  __typename?: 'TokenUsage';
  /** Of inputTokens, those written to the provider's cache. */
  cacheWriteInputTokens?: Maybe<Scalars['Int']['output']>;
  /** Of inputTokens, those read from the provider's cache. */
  cachedInputTokens?: Maybe<Scalars['Int']['output']>;
  /** Tokens sent to the model, cached ones included. */
  inputTokens?: Maybe<Scalars['Int']['output']>;
  /** The model called. */
  model?: Maybe<Scalars['String']['output']>;
  /** Tokens the model produced, reasoning included. */
  outputTokens?: Maybe<Scalars['Int']['output']>;
  /** The provider, such as "openai", "anthropic" or "google"; an agent's name for what an agent reported. */
  provider?: Maybe<Scalars['String']['output']>;
  /** Of outputTokens, those spent reasoning. */
  reasoningTokens?: Maybe<Scalars['Int']['output']>;
  /** All tokens, as the provider counts them. */
  totalTokens?: Maybe<Scalars['Int']['output']>;
};



export type ResolverTypeWrapper<T> = Promise<T> | T;


export type ResolverWithResolve<TResult, TParent, TContext, TArgs> = {
  resolve: ResolverFn<TResult, TParent, TContext, TArgs>;
};
export type Resolver<TResult, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = ResolverFn<TResult, TParent, TContext, TArgs> | ResolverWithResolve<TResult, TParent, TContext, TArgs>;

export type SubscriptionSubscribeFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => AsyncIterable<TResult> | Promise<AsyncIterable<TResult>>;

export type SubscriptionResolveFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

export interface SubscriptionSubscriberObject<TResult, TKey extends string, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<{ [key in TKey]: TResult }, TParent, TContext, TArgs>;
  resolve?: SubscriptionResolveFn<TResult, { [key in TKey]: TResult }, TContext, TArgs>;
}

export interface SubscriptionResolverObject<TResult, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<any, TParent, TContext, TArgs>;
  resolve: SubscriptionResolveFn<TResult, any, TContext, TArgs>;
}

export type SubscriptionObject<TResult, TKey extends string, TParent, TContext, TArgs> =
  | SubscriptionSubscriberObject<TResult, TKey, TParent, TContext, TArgs>
  | SubscriptionResolverObject<TResult, TParent, TContext, TArgs>;

export type SubscriptionResolver<TResult, TKey extends string, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> =
  | ((...args: any[]) => SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>)
  | SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>;

export type TypeResolveFn<TTypes, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (
  parent: TParent,
  context: TContext,
  info: GraphQLResolveInfo
) => Maybe<TTypes> | Promise<Maybe<TTypes>>;

export type IsTypeOfResolverFn<T = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (obj: T, context: TContext, info: GraphQLResolveInfo) => boolean | Promise<boolean>;

export type NextResolverFn<T> = () => Promise<T>;

export type DirectiveResolverFn<TResult = Record<PropertyKey, never>, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = (
  next: NextResolverFn<TResult>,
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;





/** Mapping between all available schema types and the resolvers types */
export type ResolversTypes = {
  ActionExecutionArgsEvent: ResolverTypeWrapper<SequencedEvent>;
  ActionExecutionEndEvent: ResolverTypeWrapper<SequencedEvent>;
  ActionExecutionMessageInput: ActionExecutionMessageInput;
  ActionExecutionMessageOutput: ResolverTypeWrapper<ActionExecutionMessageOutputModel>;
  ActionExecutionResultEvent: ResolverTypeWrapper<SequencedEvent>;
  ActionExecutionStartEvent: ResolverTypeWrapper<SequencedEvent>;
  ActionInput: ActionInput;
  ActionInputAvailability: ActionInputAvailability;
  Agent: ResolverTypeWrapper<Agent>;
  AgentSessionInput: AgentSessionInput;
  AgentStateInput: AgentStateInput;
  AgentStateMessageEvent: ResolverTypeWrapper<SequencedEvent>;
  AgentStateMessageInput: AgentStateMessageInput;
  AgentStateMessageOutput: ResolverTypeWrapper<AgentStateMessageOutputModel>;
  AgentsResponse: ResolverTypeWrapper<AgentsResponse>;
  BaseMessageOutput: ResolverTypeWrapper<MessageOutputModel>;
  BaseMetaEvent: ResolverTypeWrapper<MetaEventPayload>;
  BaseResponseStatus: ResolverTypeWrapper<RunStatus>;
  Boolean: ResolverTypeWrapper<Scalars['Boolean']['output']>;
  CloudInput: CloudInput;
  CopilotContextInput: CopilotContextInput;
  CopilotKitLangGraphInterruptEvent: ResolverTypeWrapper<MetaEventPayload>;
  CopilotKitLangGraphInterruptEventData: ResolverTypeWrapper<MetaEventPayload>;
  CopilotRequestType: CopilotRequestType;
  CopilotResponse: ResolverTypeWrapper<CopilotResponseModel>;
  CopilotRunEvent: ResolverTypeWrapper<SequencedEvent>;
  CopilotThread: ResolverTypeWrapper<CopilotThreadModel>;
  CopilotThreadAgentState: ResolverTypeWrapper<AgentStateRecord>;
  CopilotThreadConnection: ResolverTypeWrapper<CopilotThreadConnection>;
  CopilotThreadPageInfo: ResolverTypeWrapper<CopilotThreadPageInfo>;
  CopilotThreadRun: ResolverTypeWrapper<RunRecord>;
  CopilotThreadSummary: ResolverTypeWrapper<CopilotThreadSummary>;
  DateTimeISO: ResolverTypeWrapper<Scalars['DateTimeISO']['output']>;
  ExtensionsInput: ExtensionsInput;
  ExtensionsResponse: ResolverTypeWrapper<ExtensionsResponse>;
  FailedMessageStatus: ResolverTypeWrapper<MessageStatusModel>;
  FailedResponseStatus: ResolverTypeWrapper<RunStatus>;
  FailedResponseStatusReason: FailedResponseStatusReason;
  Float: ResolverTypeWrapper<Scalars['Float']['output']>;
  ForwardedParametersInput: ForwardedParametersInput;
  FrontendInput: FrontendInput;
  GenerateCopilotResponseInput: GenerateCopilotResponseInput;
  GenerateCopilotResponseMetadataInput: GenerateCopilotResponseMetadataInput;
  GuardrailsInput: GuardrailsInput;
  GuardrailsRuleInput: GuardrailsRuleInput;
  ID: ResolverTypeWrapper<Scalars['ID']['output']>;
  ImageMessageInput: ImageMessageInput;
  ImageMessageOutput: ResolverTypeWrapper<ImageMessageOutputModel>;
  Int: ResolverTypeWrapper<Scalars['Int']['output']>;
  JSON: ResolverTypeWrapper<Scalars['JSON']['output']>;
  JSONObject: ResolverTypeWrapper<Scalars['JSONObject']['output']>;
  LangGraphInterruptEvent: ResolverTypeWrapper<MetaEventPayload>;
  LoadAgentStateInput: LoadAgentStateInput;
  LoadAgentStateResponse: ResolverTypeWrapper<LoadAgentStateResponse>;
  MessageInput: MessageInput;
  MessageRole: MessageRole;
  MessageStatus: ResolverTypeWrapper<MessageStatusModel>;
  MessageStatusCode: MessageStatusCode;
  MetaEventInput: MetaEventInput;
  MetaEventName: MetaEventName;
  Mutation: ResolverTypeWrapper<Record<PropertyKey, never>>;
  OpenAIApiAssistantAPIInput: OpenAiApiAssistantApiInput;
  OpenAIApiAssistantAPIResponse: ResolverTypeWrapper<OpenAiApiAssistantApiResponse>;
  PendingMessageStatus: ResolverTypeWrapper<MessageStatusModel>;
  PendingResponseStatus: ResolverTypeWrapper<RunStatus>;
  Query: ResolverTypeWrapper<Record<PropertyKey, never>>;
  ReasoningContentEvent: ResolverTypeWrapper<ReasoningContentEvent>;
  ReasoningEndEvent: ResolverTypeWrapper<ReasoningEndEvent>;
  ReasoningStartEvent: ResolverTypeWrapper<ReasoningStartEvent>;
  ResponseStatus: ResolverTypeWrapper<RunStatus>;
  ResponseStatusCode: ResponseStatusCode;
  ResultMessageInput: ResultMessageInput;
  ResultMessageOutput: ResolverTypeWrapper<ResultMessageOutputModel>;
  RunDisconnectPolicy: RunDisconnectPolicy;
  RunEvent: ResolverTypeWrapper<SequencedEvent>;
  RunFinishedEvent: ResolverTypeWrapper<SequencedEvent>;
  RunMetaEvent: ResolverTypeWrapper<SequencedEvent>;
  RunStartedEvent: ResolverTypeWrapper<SequencedEvent>;
  String: ResolverTypeWrapper<Scalars['String']['output']>;
  Subscription: ResolverTypeWrapper<Record<PropertyKey, never>>;
  SuccessMessageStatus: ResolverTypeWrapper<MessageStatusModel>;
  SuccessResponseStatus: ResolverTypeWrapper<RunStatus>;
  TextMessageContentEvent: ResolverTypeWrapper<SequencedEvent>;
  TextMessageEndEvent: ResolverTypeWrapper<SequencedEvent>;
  TextMessageInput: TextMessageInput;
  TextMessageOutput: ResolverTypeWrapper<TextMessageOutputModel>;
  TextMessageStartEvent: ResolverTypeWrapper<SequencedEvent>;
  TokenUsage: ResolverTypeWrapper<TokenUsage>;
};

/** Mapping between all available schema types and the resolvers parents */
export type ResolversParentTypes = {
  ActionExecutionArgsEvent: SequencedEvent;
  ActionExecutionEndEvent: SequencedEvent;
  ActionExecutionMessageInput: ActionExecutionMessageInput;
  ActionExecutionMessageOutput: ActionExecutionMessageOutputModel;
  ActionExecutionResultEvent: SequencedEvent;
  ActionExecutionStartEvent: SequencedEvent;
  ActionInput: ActionInput;
  Agent: Agent;
  AgentSessionInput: AgentSessionInput;
  AgentStateInput: AgentStateInput;
  AgentStateMessageEvent: SequencedEvent;
  AgentStateMessageInput: AgentStateMessageInput;
  AgentStateMessageOutput: AgentStateMessageOutputModel;
  AgentsResponse: AgentsResponse;
  BaseMessageOutput: MessageOutputModel;
  BaseMetaEvent: MetaEventPayload;
  BaseResponseStatus: RunStatus;
  Boolean: Scalars['Boolean']['output'];
  CloudInput: CloudInput;
  CopilotContextInput: CopilotContextInput;
  CopilotKitLangGraphInterruptEvent: MetaEventPayload;
  CopilotKitLangGraphInterruptEventData: MetaEventPayload;
  CopilotResponse: CopilotResponseModel;
  CopilotRunEvent: SequencedEvent;
  CopilotThread: CopilotThreadModel;
  CopilotThreadAgentState: AgentStateRecord;
  CopilotThreadConnection: CopilotThreadConnection;
  CopilotThreadPageInfo: CopilotThreadPageInfo;
  CopilotThreadRun: RunRecord;
  CopilotThreadSummary: CopilotThreadSummary;
  DateTimeISO: Scalars['DateTimeISO']['output'];
  ExtensionsInput: ExtensionsInput;
  ExtensionsResponse: ExtensionsResponse;
  FailedMessageStatus: MessageStatusModel;
  FailedResponseStatus: RunStatus;
  Float: Scalars['Float']['output'];
  ForwardedParametersInput: ForwardedParametersInput;
  FrontendInput: FrontendInput;
  GenerateCopilotResponseInput: GenerateCopilotResponseInput;
  GenerateCopilotResponseMetadataInput: GenerateCopilotResponseMetadataInput;
  GuardrailsInput: GuardrailsInput;
  GuardrailsRuleInput: GuardrailsRuleInput;
  ID: Scalars['ID']['output'];
  ImageMessageInput: ImageMessageInput;
  ImageMessageOutput: ImageMessageOutputModel;
  Int: Scalars['Int']['output'];
  JSON: Scalars['JSON']['output'];
  JSONObject: Scalars['JSONObject']['output'];
  LangGraphInterruptEvent: MetaEventPayload;
  LoadAgentStateInput: LoadAgentStateInput;
  LoadAgentStateResponse: LoadAgentStateResponse;
  MessageInput: MessageInput;
  MessageStatus: MessageStatusModel;
  MetaEventInput: MetaEventInput;
  Mutation: Record<PropertyKey, never>;
  OpenAIApiAssistantAPIInput: OpenAiApiAssistantApiInput;
  OpenAIApiAssistantAPIResponse: OpenAiApiAssistantApiResponse;
  PendingMessageStatus: MessageStatusModel;
  PendingResponseStatus: RunStatus;
  Query: Record<PropertyKey, never>;
  ReasoningContentEvent: ReasoningContentEvent;
  ReasoningEndEvent: ReasoningEndEvent;
  ReasoningStartEvent: ReasoningStartEvent;
  ResponseStatus: RunStatus;
  ResultMessageInput: ResultMessageInput;
  ResultMessageOutput: ResultMessageOutputModel;
  RunEvent: SequencedEvent;
  RunFinishedEvent: SequencedEvent;
  RunMetaEvent: SequencedEvent;
  RunStartedEvent: SequencedEvent;
  String: Scalars['String']['output'];
  Subscription: Record<PropertyKey, never>;
  SuccessMessageStatus: MessageStatusModel;
  SuccessResponseStatus: RunStatus;
  TextMessageContentEvent: SequencedEvent;
  TextMessageEndEvent: SequencedEvent;
  TextMessageInput: TextMessageInput;
  TextMessageOutput: TextMessageOutputModel;
  TextMessageStartEvent: SequencedEvent;
  TokenUsage: TokenUsage;
};

export type DeferDirectiveArgs = {
  if?: Scalars['Boolean']['input'];
  label?: Maybe<Scalars['String']['input']>;
};

export type DeferDirectiveResolver<Result, Parent, ContextType = GatewayContext, Args = DeferDirectiveArgs> = DirectiveResolverFn<Result, Parent, ContextType, Args>;

export type StreamDirectiveArgs = {
  if?: Scalars['Boolean']['input'];
  initialCount?: Maybe<Scalars['Int']['input']>;
  label?: Maybe<Scalars['String']['input']>;
};

export type StreamDirectiveResolver<Result, Parent, ContextType = GatewayContext, Args = StreamDirectiveArgs> = DirectiveResolverFn<Result, Parent, ContextType, Args>;

export type ActionExecutionArgsEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ActionExecutionArgsEvent'] = ResolversParentTypes['ActionExecutionArgsEvent']> = {
  actionExecutionId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  args?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ActionExecutionEndEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ActionExecutionEndEvent'] = ResolversParentTypes['ActionExecutionEndEvent']> = {
  actionExecutionId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  messageStatus?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ActionExecutionMessageOutputResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ActionExecutionMessageOutput'] = ResolversParentTypes['ActionExecutionMessageOutput']> = {
  arguments?: Resolver<Array<ResolversTypes['String']>, ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  parentMessageId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  scope?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  status?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ActionExecutionResultEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ActionExecutionResultEvent'] = ResolversParentTypes['ActionExecutionResultEvent']> = {
  actionExecutionId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  actionName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  result?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ActionExecutionStartEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ActionExecutionStartEvent'] = ResolversParentTypes['ActionExecutionStartEvent']> = {
  actionExecutionId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  actionName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  parentMessageId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type AgentResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Agent'] = ResolversParentTypes['Agent']> = {
  description?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type AgentStateMessageEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['AgentStateMessageEvent'] = ResolversParentTypes['AgentStateMessageEvent']> = {
  active?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  agentName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  nodeName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  role?: Resolver<ResolversTypes['MessageRole'], ParentType, ContextType>;
  runId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  running?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  state?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  threadId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type AgentStateMessageOutputResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['AgentStateMessageOutput'] = ResolversParentTypes['AgentStateMessageOutput']> = {
  active?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  agentName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  nodeName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  role?: Resolver<ResolversTypes['MessageRole'], ParentType, ContextType>;
  runId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  running?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  state?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  status?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  threadId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type AgentsResponseResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['AgentsResponse'] = ResolversParentTypes['AgentsResponse']> = {
  agents?: Resolver<Array<ResolversTypes['Agent']>, ParentType, ContextType>;
};

export type BaseMessageOutputResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['BaseMessageOutput'] = ResolversParentTypes['BaseMessageOutput']> = {
  __resolveType: TypeResolveFn<'ActionExecutionMessageOutput' | 'AgentStateMessageOutput' | 'ImageMessageOutput' | 'ResultMessageOutput' | 'TextMessageOutput', ParentType, ContextType>;
};

export type BaseMetaEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['BaseMetaEvent'] = ResolversParentTypes['BaseMetaEvent']> = {
  __resolveType: TypeResolveFn<'CopilotKitLangGraphInterruptEvent' | 'LangGraphInterruptEvent', ParentType, ContextType>;
};

export type BaseResponseStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['BaseResponseStatus'] = ResolversParentTypes['BaseResponseStatus']> = {
  __resolveType: TypeResolveFn<'FailedResponseStatus' | 'PendingResponseStatus' | 'SuccessResponseStatus', ParentType, ContextType>;
};

export type CopilotKitLangGraphInterruptEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotKitLangGraphInterruptEvent'] = ResolversParentTypes['CopilotKitLangGraphInterruptEvent']> = {
  data?: Resolver<ResolversTypes['CopilotKitLangGraphInterruptEventData'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['MetaEventName'], ParentType, ContextType>;
  response?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  type?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type CopilotKitLangGraphInterruptEventDataResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotKitLangGraphInterruptEventData'] = ResolversParentTypes['CopilotKitLangGraphInterruptEventData']> = {
  messages?: Resolver<Array<ResolversTypes['BaseMessageOutput']>, ParentType, ContextType>;
  value?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type CopilotResponseResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotResponse'] = ResolversParentTypes['CopilotResponse']> = {
  extensions?: Resolver<Maybe<ResolversTypes['ExtensionsResponse']>, ParentType, ContextType>;
  messages?: Resolver<Array<ResolversTypes['BaseMessageOutput']>, ParentType, ContextType>;
  metaEvents?: Resolver<Maybe<Array<ResolversTypes['BaseMetaEvent']>>, ParentType, ContextType>;
  runId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  status?: Resolver<ResolversTypes['ResponseStatus'], ParentType, ContextType>;
  threadId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type CopilotRunEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotRunEvent'] = ResolversParentTypes['CopilotRunEvent']> = {
  __resolveType: TypeResolveFn<'ActionExecutionArgsEvent' | 'ActionExecutionEndEvent' | 'ActionExecutionResultEvent' | 'ActionExecutionStartEvent' | 'AgentStateMessageEvent' | 'ReasoningContentEvent' | 'ReasoningEndEvent' | 'ReasoningStartEvent' | 'RunFinishedEvent' | 'RunMetaEvent' | 'RunStartedEvent' | 'TextMessageContentEvent' | 'TextMessageEndEvent' | 'TextMessageStartEvent', ParentType, ContextType>;
};

export type CopilotThreadResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotThread'] = ResolversParentTypes['CopilotThread']> = {
  agentStates?: Resolver<Array<ResolversTypes['CopilotThreadAgentState']>, ParentType, ContextType>;
  messages?: Resolver<Array<ResolversTypes['BaseMessageOutput']>, ParentType, ContextType>;
  runs?: Resolver<Array<ResolversTypes['CopilotThreadRun']>, ParentType, ContextType>;
  threadId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
};

export type CopilotThreadAgentStateResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotThreadAgentState'] = ResolversParentTypes['CopilotThreadAgentState']> = {
  active?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  agentName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  nodeName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  runId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  running?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  state?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type CopilotThreadConnectionResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotThreadConnection'] = ResolversParentTypes['CopilotThreadConnection']> = {
  nodes?: Resolver<Array<ResolversTypes['CopilotThreadSummary']>, ParentType, ContextType>;
  pageInfo?: Resolver<ResolversTypes['CopilotThreadPageInfo'], ParentType, ContextType>;
};

export type CopilotThreadPageInfoResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotThreadPageInfo'] = ResolversParentTypes['CopilotThreadPageInfo']> = {
  endCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  hasNextPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
};

export type CopilotThreadRunResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotThreadRun'] = ResolversParentTypes['CopilotThreadRun']> = {
  finishedAt?: Resolver<Maybe<ResolversTypes['DateTimeISO']>, ParentType, ContextType>;
  lastSequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  runId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  startedAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  status?: Resolver<ResolversTypes['ResponseStatus'], ParentType, ContextType>;
};

export type CopilotThreadSummaryResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CopilotThreadSummary'] = ResolversParentTypes['CopilotThreadSummary']> = {
  agentId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  archived?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  lastRunAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  name?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  updatedAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
};

export interface DateTimeIsoScalarConfig extends GraphQLScalarTypeConfig<ResolversTypes['DateTimeISO'], any> {
  name: 'DateTimeISO';
}

export type ExtensionsResponseResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ExtensionsResponse'] = ResolversParentTypes['ExtensionsResponse']> = {
  openaiAssistantAPI?: Resolver<Maybe<ResolversTypes['OpenAIApiAssistantAPIResponse']>, ParentType, ContextType>;
};

export type FailedMessageStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['FailedMessageStatus'] = ResolversParentTypes['FailedMessageStatus']> = {
  code?: Resolver<ResolversTypes['MessageStatusCode'], ParentType, ContextType>;
  reason?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type FailedResponseStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['FailedResponseStatus'] = ResolversParentTypes['FailedResponseStatus']> = {
  code?: Resolver<ResolversTypes['ResponseStatusCode'], ParentType, ContextType>;
  details?: Resolver<Maybe<ResolversTypes['JSON']>, ParentType, ContextType>;
  reason?: Resolver<ResolversTypes['FailedResponseStatusReason'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ImageMessageOutputResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ImageMessageOutput'] = ResolversParentTypes['ImageMessageOutput']> = {
  bytes?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  format?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  parentMessageId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  role?: Resolver<ResolversTypes['MessageRole'], ParentType, ContextType>;
  status?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export interface JsonScalarConfig extends GraphQLScalarTypeConfig<ResolversTypes['JSON'], any> {
  name: 'JSON';
}

export interface JsonObjectScalarConfig extends GraphQLScalarTypeConfig<ResolversTypes['JSONObject'], any> {
  name: 'JSONObject';
}

export type LangGraphInterruptEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['LangGraphInterruptEvent'] = ResolversParentTypes['LangGraphInterruptEvent']> = {
  name?: Resolver<ResolversTypes['MetaEventName'], ParentType, ContextType>;
  response?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  type?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  value?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type LoadAgentStateResponseResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['LoadAgentStateResponse'] = ResolversParentTypes['LoadAgentStateResponse']> = {
  messages?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  state?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  threadExists?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  threadId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type MessageStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['MessageStatus'] = ResolversParentTypes['MessageStatus']> = {
  __resolveType: TypeResolveFn<'FailedMessageStatus' | 'PendingMessageStatus' | 'SuccessMessageStatus', ParentType, ContextType>;
};

export type MutationResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Mutation'] = ResolversParentTypes['Mutation']> = {
  archiveCopilotThread?: Resolver<Maybe<ResolversTypes['CopilotThreadSummary']>, ParentType, ContextType, RequireFields<MutationArchiveCopilotThreadArgs, 'archived' | 'threadId'>>;
  deleteCopilotThread?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType, RequireFields<MutationDeleteCopilotThreadArgs, 'threadId'>>;
  generateCopilotResponse?: Resolver<ResolversTypes['CopilotResponse'], ParentType, ContextType, RequireFields<MutationGenerateCopilotResponseArgs, 'data'>>;
  renameCopilotThread?: Resolver<Maybe<ResolversTypes['CopilotThreadSummary']>, ParentType, ContextType, RequireFields<MutationRenameCopilotThreadArgs, 'name' | 'threadId'>>;
  stopCopilotRun?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType, RequireFields<MutationStopCopilotRunArgs, 'threadId'>>;
};

export type OpenAiApiAssistantApiResponseResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['OpenAIApiAssistantAPIResponse'] = ResolversParentTypes['OpenAIApiAssistantAPIResponse']> = {
  runId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  threadId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
};

export type PendingMessageStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['PendingMessageStatus'] = ResolversParentTypes['PendingMessageStatus']> = {
  code?: Resolver<ResolversTypes['MessageStatusCode'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type PendingResponseStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['PendingResponseStatus'] = ResolversParentTypes['PendingResponseStatus']> = {
  code?: Resolver<ResolversTypes['ResponseStatusCode'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type QueryResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Query'] = ResolversParentTypes['Query']> = {
  availableAgents?: Resolver<ResolversTypes['AgentsResponse'], ParentType, ContextType>;
  copilotThread?: Resolver<Maybe<ResolversTypes['CopilotThread']>, ParentType, ContextType, RequireFields<QueryCopilotThreadArgs, 'threadId'>>;
  copilotThreads?: Resolver<ResolversTypes['CopilotThreadConnection'], ParentType, ContextType, RequireFields<QueryCopilotThreadsArgs, 'agentId' | 'first' | 'includeArchived'>>;
  hello?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  loadAgentState?: Resolver<ResolversTypes['LoadAgentStateResponse'], ParentType, ContextType, RequireFields<QueryLoadAgentStateArgs, 'data'>>;
};

export type ReasoningContentEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ReasoningContentEvent'] = ResolversParentTypes['ReasoningContentEvent']> = {
  content?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ReasoningEndEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ReasoningEndEvent'] = ResolversParentTypes['ReasoningEndEvent']> = {
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ReasoningStartEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ReasoningStartEvent'] = ResolversParentTypes['ReasoningStartEvent']> = {
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type ResponseStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ResponseStatus'] = ResolversParentTypes['ResponseStatus']> = {
  __resolveType: TypeResolveFn<'FailedResponseStatus' | 'PendingResponseStatus' | 'SuccessResponseStatus', ParentType, ContextType>;
};

export type ResultMessageOutputResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ResultMessageOutput'] = ResolversParentTypes['ResultMessageOutput']> = {
  actionExecutionId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  actionName?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  result?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  status?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type RunEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RunEvent'] = ResolversParentTypes['RunEvent']> = {
  __resolveType: TypeResolveFn<'ActionExecutionArgsEvent' | 'ActionExecutionEndEvent' | 'ActionExecutionResultEvent' | 'ActionExecutionStartEvent' | 'AgentStateMessageEvent' | 'ReasoningContentEvent' | 'ReasoningEndEvent' | 'ReasoningStartEvent' | 'RunFinishedEvent' | 'RunMetaEvent' | 'RunStartedEvent' | 'TextMessageContentEvent' | 'TextMessageEndEvent' | 'TextMessageStartEvent', ParentType, ContextType>;
};

export type RunFinishedEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RunFinishedEvent'] = ResolversParentTypes['RunFinishedEvent']> = {
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  status?: Resolver<ResolversTypes['ResponseStatus'], ParentType, ContextType>;
  usage?: Resolver<Maybe<Array<ResolversTypes['TokenUsage']>>, ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type RunMetaEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RunMetaEvent'] = ResolversParentTypes['RunMetaEvent']> = {
  event?: Resolver<ResolversTypes['BaseMetaEvent'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type RunStartedEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RunStartedEvent'] = ResolversParentTypes['RunStartedEvent']> = {
  runId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  threadId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type SubscriptionResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Subscription'] = ResolversParentTypes['Subscription']> = {
  copilotRun?: SubscriptionResolver<ResolversTypes['CopilotRunEvent'], "copilotRun", ParentType, ContextType, RequireFields<SubscriptionCopilotRunArgs, 'data' | 'onDisconnect'>>;
  joinCopilotRun?: SubscriptionResolver<ResolversTypes['CopilotRunEvent'], "joinCopilotRun", ParentType, ContextType, RequireFields<SubscriptionJoinCopilotRunArgs, 'threadId'>>;
};

export type SuccessMessageStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['SuccessMessageStatus'] = ResolversParentTypes['SuccessMessageStatus']> = {
  code?: Resolver<ResolversTypes['MessageStatusCode'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type SuccessResponseStatusResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['SuccessResponseStatus'] = ResolversParentTypes['SuccessResponseStatus']> = {
  code?: Resolver<ResolversTypes['ResponseStatusCode'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type TextMessageContentEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['TextMessageContentEvent'] = ResolversParentTypes['TextMessageContentEvent']> = {
  content?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type TextMessageEndEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['TextMessageEndEvent'] = ResolversParentTypes['TextMessageEndEvent']> = {
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  messageStatus?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type TextMessageOutputResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['TextMessageOutput'] = ResolversParentTypes['TextMessageOutput']> = {
  content?: Resolver<Array<ResolversTypes['String']>, ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['DateTimeISO'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  parentMessageId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  role?: Resolver<ResolversTypes['MessageRole'], ParentType, ContextType>;
  status?: Resolver<ResolversTypes['MessageStatus'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type TextMessageStartEventResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['TextMessageStartEvent'] = ResolversParentTypes['TextMessageStartEvent']> = {
  messageId?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  parentMessageId?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  role?: Resolver<ResolversTypes['MessageRole'], ParentType, ContextType>;
  sequence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
};

export type TokenUsageResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['TokenUsage'] = ResolversParentTypes['TokenUsage']> = {
  cacheWriteInputTokens?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  cachedInputTokens?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  inputTokens?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  model?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  outputTokens?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  provider?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  reasoningTokens?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  totalTokens?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
};

export type Resolvers<ContextType = GatewayContext> = {
  ActionExecutionArgsEvent?: ActionExecutionArgsEventResolvers<ContextType>;
  ActionExecutionEndEvent?: ActionExecutionEndEventResolvers<ContextType>;
  ActionExecutionMessageOutput?: ActionExecutionMessageOutputResolvers<ContextType>;
  ActionExecutionResultEvent?: ActionExecutionResultEventResolvers<ContextType>;
  ActionExecutionStartEvent?: ActionExecutionStartEventResolvers<ContextType>;
  Agent?: AgentResolvers<ContextType>;
  AgentStateMessageEvent?: AgentStateMessageEventResolvers<ContextType>;
  AgentStateMessageOutput?: AgentStateMessageOutputResolvers<ContextType>;
  AgentsResponse?: AgentsResponseResolvers<ContextType>;
  BaseMessageOutput?: BaseMessageOutputResolvers<ContextType>;
  BaseMetaEvent?: BaseMetaEventResolvers<ContextType>;
  BaseResponseStatus?: BaseResponseStatusResolvers<ContextType>;
  CopilotKitLangGraphInterruptEvent?: CopilotKitLangGraphInterruptEventResolvers<ContextType>;
  CopilotKitLangGraphInterruptEventData?: CopilotKitLangGraphInterruptEventDataResolvers<ContextType>;
  CopilotResponse?: CopilotResponseResolvers<ContextType>;
  CopilotRunEvent?: CopilotRunEventResolvers<ContextType>;
  CopilotThread?: CopilotThreadResolvers<ContextType>;
  CopilotThreadAgentState?: CopilotThreadAgentStateResolvers<ContextType>;
  CopilotThreadConnection?: CopilotThreadConnectionResolvers<ContextType>;
  CopilotThreadPageInfo?: CopilotThreadPageInfoResolvers<ContextType>;
  CopilotThreadRun?: CopilotThreadRunResolvers<ContextType>;
  CopilotThreadSummary?: CopilotThreadSummaryResolvers<ContextType>;
  DateTimeISO?: GraphQLScalarType;
  ExtensionsResponse?: ExtensionsResponseResolvers<ContextType>;
  FailedMessageStatus?: FailedMessageStatusResolvers<ContextType>;
  FailedResponseStatus?: FailedResponseStatusResolvers<ContextType>;
  ImageMessageOutput?: ImageMessageOutputResolvers<ContextType>;
  JSON?: GraphQLScalarType;
  JSONObject?: GraphQLScalarType;
  LangGraphInterruptEvent?: LangGraphInterruptEventResolvers<ContextType>;
  LoadAgentStateResponse?: LoadAgentStateResponseResolvers<ContextType>;
  MessageStatus?: MessageStatusResolvers<ContextType>;
  Mutation?: MutationResolvers<ContextType>;
  OpenAIApiAssistantAPIResponse?: OpenAiApiAssistantApiResponseResolvers<ContextType>;
  PendingMessageStatus?: PendingMessageStatusResolvers<ContextType>;
  PendingResponseStatus?: PendingResponseStatusResolvers<ContextType>;
  Query?: QueryResolvers<ContextType>;
  ReasoningContentEvent?: ReasoningContentEventResolvers<ContextType>;
  ReasoningEndEvent?: ReasoningEndEventResolvers<ContextType>;
  ReasoningStartEvent?: ReasoningStartEventResolvers<ContextType>;
  ResponseStatus?: ResponseStatusResolvers<ContextType>;
  ResultMessageOutput?: ResultMessageOutputResolvers<ContextType>;
  RunEvent?: RunEventResolvers<ContextType>;
  RunFinishedEvent?: RunFinishedEventResolvers<ContextType>;
  RunMetaEvent?: RunMetaEventResolvers<ContextType>;
  RunStartedEvent?: RunStartedEventResolvers<ContextType>;
  Subscription?: SubscriptionResolvers<ContextType>;
  SuccessMessageStatus?: SuccessMessageStatusResolvers<ContextType>;
  SuccessResponseStatus?: SuccessResponseStatusResolvers<ContextType>;
  TextMessageContentEvent?: TextMessageContentEventResolvers<ContextType>;
  TextMessageEndEvent?: TextMessageEndEventResolvers<ContextType>;
  TextMessageOutput?: TextMessageOutputResolvers<ContextType>;
  TextMessageStartEvent?: TextMessageStartEventResolvers<ContextType>;
  TokenUsage?: TokenUsageResolvers<ContextType>;
};

export type DirectiveResolvers<ContextType = GatewayContext> = {
  defer?: DeferDirectiveResolver<any, any, ContextType>;
  stream?: StreamDirectiveResolver<any, any, ContextType>;
};
