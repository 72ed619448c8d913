import { DateTimeISOResolver, JSONObjectResolver, JSONResolver } from 'graphql-scalars';
import type { Resolvers } from '../../generated/graphql.js';
import type { RuntimeEventType } from '../engine/events.js';

/** GraphQL type names of the subscription's events, by runtime event type. */
const EVENT_TYPENAMES = {
  RunStarted: 'RunStartedEvent',
  TextMessageStart: 'TextMessageStartEvent',
  TextMessageContent: 'TextMessageContentEvent',
  TextMessageEnd: 'TextMessageEndEvent',
  ActionExecutionStart: 'ActionExecutionStartEvent',
  ActionExecutionArgs: 'ActionExecutionArgsEvent',
  ActionExecutionEnd: 'ActionExecutionEndEvent',
  ActionExecutionResult: 'ActionExecutionResultEvent',
  AgentStateMessage: 'AgentStateMessageEvent',
  MetaEvent: 'RunMetaEvent',
  RunFinished: 'RunFinishedEvent',
} as const satisfies Record<RuntimeEventType, string>;

function unreachable(event: { type: string }): never {
  throw new Error(`Unexpected ${event.type} event.`);
}

/** Thin resolvers: the run launcher and the views do the work. */
export const resolvers: Resolvers = {
  DateTimeISO: DateTimeISOResolver,
  JSON: JSONResolver,
  JSONObject: JSONObjectResolver,

  Query: {
    hello: () => 'Hello World',
    availableAgents: (_parent, _args, { launcher }) => ({ agents: [...launcher.agents] }),
    loadAgentState: (_parent, { data }, { launcher }) => {
      // No agent kinds are configured yet, so every name is unknown; the error lists what there is.
      throw launcher.agentNotFound(data.agentName);
    },
  },

  Mutation: {
    generateCopilotResponse: (_parent, { data, properties }, { launcher, requestId, logger, signal, allowance }) =>
      launcher.startForMutation(data, properties, { requestId, logger, signal, allowance }),
  },

  Subscription: {
    copilotRun: {
      subscribe: (_parent, { data, properties }, { launcher, requestId, logger, signal, allowance }) =>
        launcher.startForSubscription(data, properties, { requestId, logger, signal, allowance }),
      resolve: (event: any) => event,
    },
  },

  BaseMessageOutput: { __resolveType: (message) => message.__typename },
  MessageStatus: { __resolveType: (status) => `${status.code}MessageStatus` },
  ResponseStatus: { __resolveType: (status) => `${status.code}ResponseStatus` },
  BaseResponseStatus: { __resolveType: (status) => `${status.code}ResponseStatus` },
  BaseMetaEvent: { __resolveType: (event) => event.name },
  LangGraphInterruptEvent: { type: () => 'MetaEvent' },
  CopilotKitLangGraphInterruptEvent: { type: () => 'MetaEvent', data: (event) => event },
  CopilotKitLangGraphInterruptEventData: {
    messages: (event) => (event.name === 'CopilotKitLangGraphInterruptEvent' ? (event.messages as any[]) : []),
  },
  TextMessageEndEvent: { messageStatus: (event) => (event.type === 'TextMessageEnd' ? event.status : unreachable(event)) },
  ActionExecutionEndEvent: {
    messageStatus: (event) => (event.type === 'ActionExecutionEnd' ? event.status : unreachable(event)),
  },
  CopilotRunEvent: { __resolveType: (event) => EVENT_TYPENAMES[event.type] },
  RunEvent: { __resolveType: (event) => EVENT_TYPENAMES[event.type] },
};
