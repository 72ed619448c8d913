// The public API of Copilot Gateway.
import generatedPossibleTypes from '../generated/possible-types.js';

export { createGateway, type Gateway, type GatewayOptions } from './gateway.js';
export type { ModelLimitsOptions } from './engine/model-limits.js';
export type { AfterRequestContext, BeforeRequestHookContext, BeforeRequestResult, RequestHookContext, RequestHooks } from './engine/hooks.js';
export type { LLMErrorData, LLMRequestData, LLMResponseData, ObservabilityOptions } from './adapters/observed.js';
export type { GuardrailsOptions } from './engine/guardrails.js';
export type { ModelAdapter, ModelRequest } from './adapters/adapter.js';
export type { ModelOutput, RunWriter } from './core/writer.js';
export type { ForwardedParameters, Message, ToolDefinition } from './core/messages.js';
export { OpenAIAdapter, type OpenAIAdapterOptions } from './adapters/openai.js';
export { AnthropicAdapter, type AnthropicAdapterOptions } from './adapters/anthropic.js';
export { GoogleAdapter, type GoogleAdapterOptions } from './adapters/google.js';
export { LangChainAdapter, type LangChainAdapterOptions, type LangChainInput, type LangChainOutput } from './adapters/langchain.js';
export { DemoAdapter, demoTimeAction, type DemoAdapterOptions } from './adapters/demo.js';
export { EmptyAdapter } from './adapters/empty.js';
export type { ServerAction, ServerActionContext } from './actions/server-action.js';
export { GatewayError, ConfigurationError, ERROR_CODES, type ErrorCode } from './core/errors.js';
export { agUiAgent, type AgUiAgentOptions } from './agents/ag-ui.js';
export type { RemoteEndpointOptions } from './agents/copilotkit-endpoint.js';
export type { UpstreamHttpOptions, BeforeRequestContext } from './agents/http-options.js';
export type { RetryPolicy } from './upstream/retry.js';
export { langGraphAgent, type LangGraphAgentOptions } from './agents/langgraph.js';
export type { AgentDefinition } from './agents/definitions.js';
export { anyOf, type Authenticate, type AuthenticationRequest } from './auth/authenticate.js';
export { apiKeyAuthenticator } from './auth/api-keys.js';
export { jwtAuthenticator, type JwtOptions } from './auth/jwt.js';
export type { Principal } from './core/principal.js';
export type { RateLimitOptions } from './limits/rate-limiter.js';

/** The members of the schema's unions and interfaces, for Apollo Client: `new InMemoryCache({ possibleTypes })`. */
export const possibleTypes = generatedPossibleTypes.possibleTypes;
