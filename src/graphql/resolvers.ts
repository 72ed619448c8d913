import { DateTimeISOResolver, JSONObjectResolver, JSONResolver } from 'graphql-scalars';
import type { CopilotThreadSummary, QueryCopilotThreadsArgs, Resolvers } from '../../generated/graphql.js';
import type { RuntimeEventType } from '../core/events.js';
import { checkAnswerSize, countThreadRead } from './answer-size.js';
import { callerOf, claimRun } from './context.js';
import { BadUserInputError } from '../core/errors.js';
import { DEFAULT_THREAD_PAGE, MAX_THREAD_PAGE, type ThreadListRequest } from '../engine/thread-pages.js';
import type { ThreadSummary } from '../threads/store.js';
import { checkedId, checkedText, runRequestFromInput } from './input.js';
import { createCopilotResponseView } from '../views/copilot-response.js';
import { messageOutputs } from '../views/messages.js';
import { RunEventStream } from '../views/run-events.js';

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
  ReasoningStart: 'ReasoningStartEvent',
  ReasoningContent: 'ReasoningContentEvent',
  ReasoningEnd: 'ReasoningEndEvent',
  RunFinished: 'RunFinishedEvent',
} as const satisfies Record<RuntimeEventType, string>;

function unreachable(event: { type: string }): never {
  throw new Error(`Unexpected ${event.type} event.`);
}

/** Thin resolvers: the input conversion, the run launcher and the views do the work. */
export const resolvers: Resolvers = {
  DateTimeISO: DateTimeISOResolver,
  JSON: JSONResolver,
  JSONObject: JSONObjectResolver,

  Query: {
    hello: () => 'Hello World',
    availableAgents: async (_parent, _args, { launcher }) => ({
      agents: (await launcher.listAgents()).map((agent) => ({
        id: agent.name,
        name: agent.name,
        description: agent.description,
      })),
    }),
    copilotThread: async (_parent, { threadId }, { launcher, principal, storedReads }, info) => {
      countThreadRead(info, storedReads);
      const thread = await launcher.threadService.thread(checkedId(threadId, 'threadId'), principal);
      if (!thread) return null;
      const { messages, runs, agentStates } = thread;
      checkAnswerSize(
        info,
        { messages: messages.length, runs: runs.length, agentStates: agentStates.length },
        storedReads,
      );
      return {
        threadId: thread.threadId,
        messages: messageOutputs(messages, runs[runs.length - 1]?.startedAt),
        agentStates,
        runs,
      };
    },
    copilotThreads: async (_parent, args, { launcher, principal }) => {
      const page = await launcher.threadService.list.page(threadListRequest(args), principal);
      return {
        nodes: page.threads.map(summaryOutput),
        pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: page.nextCursor },
      };
    },
    loadAgentState: async (_parent, { data }, context, info) => {
      countThreadRead(info, context.storedReads);
      const agentName = checkedText(data.agentName, 'agentName');
      const threadId = checkedText(data.threadId, 'threadId');
      const state = await context.launcher.loadAgentState(agentName, threadId, {}, callerOf(context));
      return {
        threadId: data.threadId,
        threadExists: state.threadExists,
        state: JSON.stringify(state.state),
        messages: JSON.stringify(state.messages),
      };
    },
  },

  Mutation: {
    generateCopilotResponse: (_parent, { data, properties }, context) => {
      const caller = claimRun(context);
      return context.launcher.start(runRequestFromInput(data, properties), caller, createCopilotResponseView);
    },
    stopCopilotRun: (_parent, { threadId, runId }, { launcher, principal }) =>
      launcher.threadService.stop(
        checkedId(threadId, 'threadId'),
        runId == null ? undefined : checkedId(runId, 'runId'),
        principal,
      ),
    // A thread that is not the caller's (missing, or another's) answers null / false, as copilotThread and
    // stopCopilotRun do: the answer never tells a thread id of someone else's from one never used.
    renameCopilotThread: async (_parent, { threadId, name }, { launcher, principal }) => {
      const change = { name };
      const updated = await launcher.threadService.list.update(checkedId(threadId, 'threadId'), change, principal);
      return updated ? summaryOutput(updated) : null;
    },
    archiveCopilotThread: async (_parent, { threadId, archived }, { launcher, principal }) => {
      const change = { archived: archived !== false };
      const updated = await launcher.threadService.list.update(checkedId(threadId, 'threadId'), change, principal);
      return updated ? summaryOutput(updated) : null;
    },
    deleteCopilotThread: (_parent, { threadId }, { launcher, principal }) =>
      launcher.threadService.list.remove(checkedId(threadId, 'threadId'), principal),
  },

  Subscription: {
    copilotRun: {
      subscribe: (_parent, { data, properties, onDisconnect }, context) => {
        const caller = claimRun(context);
        const keepRunning = onDisconnect === 'CONTINUE';
        return context.launcher.start(
          runRequestFromInput(data, properties),
          caller,
          (run) => new RunEventStream(run, keepRunning),
        );
      },
      resolve: (event: any) => event,
    },
    joinCopilotRun: {
      subscribe: async (_parent, { threadId, runId, afterSequence }, { launcher, principal, output }) => {
        if (afterSequence != null && afterSequence < 0) {
          throw new BadUserInputError('afterSequence must be 0 or more (omit it to replay the whole run).', {
            field: 'afterSequence',
          });
        }
        const threads = launcher.threadService;
        const thread = checkedId(threadId, 'threadId');
        const run = await threads.joinable(thread, runId == null ? undefined : checkedId(runId, 'runId'), principal);
        return threads.follow(thread, run.runId, afterSequence ?? -1, output);
      },
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
    messages: (event) => (event.name === 'CopilotKitLangGraphInterruptEvent' ? messageOutputs(event.messages) : []),
  },
  TextMessageEndEvent: {
    messageStatus: (event) => (event.type === 'TextMessageEnd' ? event.status : unreachable(event)),
  },
  ActionExecutionEndEvent: {
    messageStatus: (event) => (event.type === 'ActionExecutionEnd' ? event.status : unreachable(event)),
  },
  CopilotRunEvent: { __resolveType: (event) => EVENT_TYPENAMES[event.type] },
  RunEvent: { __resolveType: (event) => EVENT_TYPENAMES[event.type] },
};

/**
 * `copilotThreads`' arguments as the service's list request. An explicit null takes the argument's default, as an
 * omitted one. `first` is checked here, not only by the service, so that the message names the argument the client
 * sent (the service's names `limit`, the REST parameter).
 */
function threadListRequest({ agentId, includeArchived, first, after }: QueryCopilotThreadsArgs): ThreadListRequest {
  const limit = first ?? DEFAULT_THREAD_PAGE;
  if (limit < 1 || limit > MAX_THREAD_PAGE)
    throw new BadUserInputError(`first must be from 1 to ${MAX_THREAD_PAGE} (got ${limit}).`, { field: 'first' });
  return {
    agentId: checkedId(agentId ?? 'default', 'agentId'),
    includeArchived: includeArchived === true,
    limit,
    // Empty as absent, as the REST list's `cursor=`: a client holding a last page's null cursor starts again.
    ...(after ? { cursor: after } : {}),
  };
}

/** A list entry as GraphQL shows it (the owner is the caller, or no one: not shown). */
function summaryOutput(summary: ThreadSummary): CopilotThreadSummary {
  return {
    id: summary.threadId,
    agentId: summary.agentId,
    name: summary.name,
    archived: summary.archived,
    createdAt: summary.createdAt,
    updatedAt: summary.updatedAt,
    lastRunAt: summary.lastRunAt,
  };
}
