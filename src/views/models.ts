import type { MetaEventPayload } from '../core/events.js';
import type { MessageStatus, RunStatus } from '../core/status.js';
import type { AgentStateRecord, RunRecord } from '../threads/store.js';

/** What the resolvers of CopilotResponse read: one run seen as message containers. */
export interface CopilotResponseModel {
  threadId: string;
  runId: string;
  /** Resolves once the run has ended and every message is closed. */
  status: Promise<RunStatus>;
  messages: AsyncIterable<MessageOutputModel>;
  metaEvents: AsyncIterable<MetaEventPayload>;
  extensions: null;
}

interface MessageBase {
  id: string;
  createdAt: Date;
  /** Resolves when the message has ended. */
  status: Promise<MessageStatus> | MessageStatus;
}

export interface TextMessageOutputModel extends MessageBase {
  __typename: 'TextMessageOutput';
  role: 'user' | 'assistant' | 'system' | 'tool' | 'developer';
  /** Streamed chunks (a finished message, such as one that came with an interrupt: all of them). */
  content: AsyncIterable<string> | string[];
  parentMessageId: string | null;
}

export interface ActionExecutionMessageOutputModel extends MessageBase {
  __typename: 'ActionExecutionMessageOutput';
  name: string;
  arguments: AsyncIterable<string> | string[];
  parentMessageId: string | null;
  scope: null;
}

export interface ResultMessageOutputModel extends MessageBase {
  __typename: 'ResultMessageOutput';
  actionExecutionId: string;
  actionName: string;
  result: string;
}

export interface AgentStateMessageOutputModel extends MessageBase {
  __typename: 'AgentStateMessageOutput';
  threadId: string;
  agentName: string;
  nodeName: string;
  runId: string;
  active: boolean;
  role: 'assistant';
  state: string;
  running: boolean;
}

export interface ImageMessageOutputModel extends MessageBase {
  __typename: 'ImageMessageOutput';
  format: string;
  bytes: string;
  role: 'user' | 'assistant';
  parentMessageId: string | null;
}

export type MessageOutputModel =
  | TextMessageOutputModel
  | ActionExecutionMessageOutputModel
  | ResultMessageOutputModel
  | AgentStateMessageOutputModel
  | ImageMessageOutputModel;

/** What the resolvers of CopilotThread read. */
export interface CopilotThreadModel {
  threadId: string;
  messages: MessageOutputModel[];
  agentStates: AgentStateRecord[];
  runs: RunRecord[];
}
