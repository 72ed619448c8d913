// The public API of Copilot Gateway: the values below, and every type from ./public-types.ts (chosen
// on purpose; see there).
import generatedPossibleTypes from '../generated/possible-types.js';

export type * from './public-types.js';

export { createGateway } from './gateway.js';
export { OpenAIAdapter } from './adapters/openai.js';
export { AnthropicAdapter } from './adapters/anthropic.js';
export { GoogleAdapter } from './adapters/google.js';
export { LangChainAdapter } from './adapters/langchain.js';
export { DemoAdapter, demoTimeAction } from './adapters/demo.js';
export { EmptyAdapter } from './adapters/empty.js';
// The errors a model adapter, an agent kind, an action, a hook or an authenticator may throw: each fixes its code
// (and so its status, severity and visibility) from the table, ERROR_CODES.
export {
  ActionFailedError,
  ActionTimeoutError,
  AuthUnavailableError,
  BadUserInputError,
  ConfigurationError,
  ERROR_CODES,
  GatewayError,
  HookFailedError,
  LimitExceededError,
  NotSupportedError,
  OverloadedError,
  RateLimitedError,
  UnauthenticatedError,
  UpstreamError,
} from './core/errors.js';
export { agUiAgent } from './ag-ui/agent.js';
export { langGraphAgent } from './agents/langgraph.js';
export { anyOf } from './auth/authenticate.js';
export { apiKeyAuthenticator } from './auth/api-keys.js';
export { jwtAuthenticator } from './auth/jwt.js';

/** The members of the schema's unions and interfaces, for Apollo Client: `new InMemoryCache({ possibleTypes })`. */
export const possibleTypes = generatedPossibleTypes.possibleTypes;
