// The types of Copilot Gateway's public API, in one place, chosen on purpose: what a user needs to
// configure a gateway, and to write a model adapter, an agent kind, a server action, an authenticator
// or hooks of their own. src/index.ts exports every type from here (and the values beside them).
// Add a type here only when a user must be able to name it; what is not here may change freely.

// The gateway and its options.
export type { Gateway, GatewayOptions } from './gateway.js';
export type { ExecutorName } from './graphql/executor.js';
export type { ModelLimitsOptions } from './engine/model-limits.js';
export type { GuardrailsOptions } from './engine/guardrails.js';
export type { TranscriptionOptions } from './adapters/transcription.js';
export type { ThreadsOptions } from './threads/options.js';
export type { RateLimitOptions } from './limits/rate-limiter.js';
export type { RemoteEndpointOptions } from './agents/copilotkit-endpoint.js';
export type { UpstreamHttpOptions, BeforeRequestContext } from './agents/http-options.js';
export type { RetryPolicy } from './upstream/retry.js';
export type { McpServerOptions } from './actions/mcp.js';

// Hooks and observability.
export type {
  AfterRequestContext,
  BeforeRequestHookContext,
  BeforeRequestResult,
  RequestHookContext,
  RequestHooks,
} from './engine/hooks.js';
export type { LLMErrorData, LLMRequestData, LLMResponseData, ObservabilityOptions } from './adapters/observed.js';

// What a run is made of: messages, tools, the writer a model or an agent writes into.
export type {
  ContextEntry,
  ForwardedParameters,
  Message,
  MetaEventInput,
  Role,
  ToolDefinition,
} from './core/messages.js';
export type { AgentStateSnapshot, MetaEventPayload, TokenUsage } from './core/events.js';
export type { ModelOutput, RunWriter } from './core/writer.js';
export type { ErrorCode, GatewayErrorOptions, Severity, UpstreamErrorCode, Visibility } from './core/errors.js';

// A model adapter of your own, and the built-in ones' options.
export type { ModelAdapter, ModelRequest } from './adapters/adapter.js';
export type { RetryObserver } from './upstream/attempts.js';
export type { OpenAIAdapterOptions } from './adapters/openai.js';
export type { AnthropicAdapterOptions } from './adapters/anthropic.js';
export type { GoogleAdapterOptions } from './adapters/google.js';
export type { LangChainAdapterOptions, LangChainInput, LangChainOutput } from './adapters/langchain.js';
export type { DemoAdapterOptions } from './adapters/demo.js';

// An agent kind of your own (AgentDefinition), and the built-in kinds' options.
export type { AgentDefinition, AgentDependencies } from './agents/definitions.js';
export type {
  AgentClient,
  AgentEntry,
  AgentKind,
  AgentRequest,
  AgentThreadState,
  LoadStateRequest,
} from './agents/agent.js';
export type { AgUiAgentOptions } from './ag-ui/agent.js';
export type { LangGraphAgentOptions } from './agents/langgraph.js';

// Server-side actions.
export type { ServerAction, ServerActionContext } from './actions/server-action.js';

// Authentication.
export type { Authenticate, AuthenticationRequest } from './auth/authenticate.js';
export type { JwtOptions } from './auth/jwt.js';
export type { Principal } from './core/principal.js';
