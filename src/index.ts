// The public API of Copilot Gateway.
export { createGateway, type Gateway, type GatewayOptions } from './gateway.js';
export type { ModelAdapter, ModelOutput, ModelRequest, ForwardedParameters } from './adapters/adapter.js';
export { OpenAIAdapter, type OpenAIAdapterOptions } from './adapters/openai.js';
export { DemoAdapter, demoTimeAction, type DemoAdapterOptions } from './adapters/demo.js';
export { EmptyAdapter } from './adapters/empty.js';
export type { ServerAction, ServerActionContext } from './actions/server-action.js';
export type { Message, ToolDefinition } from './engine/messages.js';
export { GatewayError, ConfigurationError, type ErrorCode } from './errors.js';
