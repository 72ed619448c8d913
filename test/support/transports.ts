import { CopilotRuntimeClient, GenerateCopilotResponseDocument } from '@copilotkit/runtime-client-gql';
import { Client as UrqlClient, cacheExchange, fetchExchange } from '@urql/core';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * One run as any client sees it, whatever transport carried it: the messages (finished), the meta
 * events and the run's status. The behaviour suite asserts on this, once for every transport.
 */
export interface Outcome {
  messages: OutcomeMessage[];
  metaEvents: OutcomeMetaEvent[];
  status: { code: string; reason?: string; details?: any };
  /** GraphQL errors raised before the run (the run never started). */
  errors?: { message: string; extensions?: any }[];
}

export type OutcomeMessage =
  | { type: 'text'; id: string; content: string; status: string }
  | { type: 'action'; id: string; name: string; args: string; status: string }
  | { type: 'result'; actionExecutionId: string; actionName: string; result: string }
  | { type: 'state'; agentName: string; nodeName: string; state: any; running: boolean; active: boolean };

export interface OutcomeMetaEvent {
  name: string;
  value: string;
  messages?: { type: string; id: string; content?: string }[];
}

export interface RunOptions {
  properties?: Record<string, unknown>;
  /** Abort the request as soon as the first text chunk has arrived (the outcome is then partial). */
  abortOnFirstText?: boolean;
  /** Request headers (over graphql-ws: connection_init's payload, names lowercased). */
  headers?: Record<string, string>;
}

/** A client transport: the stock client over multipart HTTP, urql over SSE, or graphql-ws. */
export interface Transport {
  name: 'multipart' | 'sse' | 'graphql-ws';
  run(gateway: { url: string; wsUrl: string }, data: unknown, options?: RunOptions): Promise<Outcome>;
}

// --- multipart: the unmodified stock client ------------------------------------------------------

const multipart: Transport = {
  name: 'multipart',
  async run(gateway, data, options = {}) {
    // The stock client reports GraphQL errors (those with a visibility) to handleGQLErrors and
    // leaves its stream open, as the reference client does: the error ends the wait here.
    let reportError!: (error: any) => void;
    const errored = new Promise<{ error: any }>((resolve) => (reportError = (error) => resolve({ error })));
    const client = new CopilotRuntimeClient({
      url: gateway.url,
      handleGQLErrors: reportError,
      ...(options.headers ? { headers: options.headers } : {}),
    });
    const controller = new AbortController();
    const stream = client.asStream(
      client.generateCopilotResponse({ data: data as any, properties: options.properties, signal: controller.signal }),
    );
    const reader = stream.getReader();
    let last: any;
    for (;;) {
      const next = await Promise.race([reader.read(), errored]);
      if ('error' in next) {
        await reader.cancel().catch(() => {});
        return {
          messages: [],
          metaEvents: [],
          status: { code: 'Errors' },
          errors: next.error.graphQLErrors ?? [next.error],
        };
      }
      if (next.done) break;
      last = next.value;
      if (options.abortOnFirstText && last.generateCopilotResponse?.messages?.some((m: any) => m.content?.length)) {
        controller.abort();
        await reader.cancel().catch(() => {});
        break;
      }
    }
    return fromMutationResult(last?.generateCopilotResponse);
  },
};

// --- SSE: urql, accepting only text/event-stream ----------------------------------------------

const sse: Transport = {
  name: 'sse',
  run(gateway, data, options = {}) {
    const client = new UrqlClient({
      url: gateway.url,
      exchanges: [cacheExchange, fetchExchange], // as the stock client: cacheExchange adds __typename
      fetchOptions: { headers: { ...options.headers, accept: 'text/event-stream' } },
    });
    // urql never tears a mutation down; like the stock client, abort through the fetch's own signal.
    const controller = new AbortController();
    const abortableFetch: typeof fetch = (url, init) => fetch(url, { ...init, signal: controller.signal });
    return new Promise((resolve, reject) => {
      let last: any;
      let done = false;
      const finish = (outcome: Outcome) => {
        if (done) return;
        done = true;
        resolve(outcome);
      };
      const subscription = client
        .mutation(
          GenerateCopilotResponseDocument,
          { data: data as any, properties: options.properties },
          { fetch: abortableFetch },
        )
        .subscribe((result) => {
          if (result.error) {
            subscription?.unsubscribe();
            if (result.error.graphQLErrors.length) {
              finish({
                messages: [],
                metaEvents: [],
                status: { code: 'Errors' },
                errors: result.error.graphQLErrors.map((e: any) => ({ message: e.message, extensions: e.extensions })),
              });
            } else reject(result.error);
            return;
          }
          last = result.data;
          if (
            options.abortOnFirstText &&
            last?.generateCopilotResponse?.messages?.some((m: any) => m.content?.length)
          ) {
            controller.abort();
            setImmediate(() => subscription.unsubscribe());
            finish(fromMutationResult(last.generateCopilotResponse));
            return;
          }
          if (!result.hasNext) finish(fromMutationResult(last.generateCopilotResponse));
        });
    });
  },
};

function fromMutationResult(response: any): Outcome {
  const messages: OutcomeMessage[] = (response?.messages ?? []).map((message: any): OutcomeMessage => {
    switch (message.__typename) {
      case 'TextMessageOutput':
        return {
          type: 'text',
          id: message.id,
          content: (message.content ?? []).join(''),
          status: message.status?.code,
        };
      case 'ActionExecutionMessageOutput':
        return {
          type: 'action',
          id: message.id,
          name: message.name,
          args: (message.arguments ?? []).join(''),
          status: message.status?.code,
        };
      case 'ResultMessageOutput':
        return {
          type: 'result',
          actionExecutionId: message.actionExecutionId,
          actionName: message.actionName,
          result: message.result,
        };
      case 'AgentStateMessageOutput':
        return {
          type: 'state',
          agentName: message.agentName,
          nodeName: message.nodeName,
          state: JSON.parse(message.state),
          running: message.running,
          active: message.active,
        };
      default:
        throw new Error(`unexpected message ${message.__typename}`);
    }
  });
  const metaEvents: OutcomeMetaEvent[] = (response?.metaEvents ?? []).map((event: any) =>
    event.__typename === 'CopilotKitLangGraphInterruptEvent'
      ? { name: event.name, value: event.data.value, messages: event.data.messages.map(interruptMessage) }
      : { name: event.name, value: event.value },
  );
  const status = response?.status ?? { code: 'Missing' };
  return { messages, metaEvents, status: { code: status.code, reason: status.reason, details: status.details } };
}

function interruptMessage(message: any) {
  return {
    type: message.__typename,
    id: message.id,
    ...(message.content ? { content: [].concat(message.content).join('') } : {}),
  };
}

// --- graphql-ws: the copilotRun subscription ------------------------------------------------------

export const RUN_SUBSCRIPTION = /* GraphQL */ `
  subscription Run($data: GenerateCopilotResponseInput!, $properties: JSONObject) {
    copilotRun(data: $data, properties: $properties) {
      __typename
      ... on RunEvent {
        sequence
      }
      ... on TextMessageStartEvent {
        messageId
      }
      ... on TextMessageContentEvent {
        messageId
        content
      }
      ... on TextMessageEndEvent {
        messageId
        messageStatus {
          __typename
        }
      }
      ... on ActionExecutionStartEvent {
        actionExecutionId
        actionName
      }
      ... on ActionExecutionArgsEvent {
        actionExecutionId
        args
      }
      ... on ActionExecutionEndEvent {
        actionExecutionId
        messageStatus {
          __typename
        }
      }
      ... on ActionExecutionResultEvent {
        actionExecutionId
        actionName
        result
      }
      ... on AgentStateMessageEvent {
        agentName
        nodeName
        state
        running
        active
      }
      ... on RunMetaEvent {
        event {
          __typename
          name
          ... on LangGraphInterruptEvent {
            value
          }
          ... on CopilotKitLangGraphInterruptEvent {
            data {
              value
              messages {
                __typename
                id
                ... on TextMessageOutput {
                  content
                }
              }
            }
          }
        }
      }
      ... on RunFinishedEvent {
        status {
          ... on BaseResponseStatus {
            code
          }
          ... on FailedResponseStatus {
            reason
            details
          }
        }
      }
    }
  }
`;

const graphqlWs: Transport = {
  name: 'graphql-ws',
  async run(gateway, data, options = {}) {
    const connectionParams = options.headers
      ? Object.fromEntries(Object.entries(options.headers).map(([name, value]) => [name.toLowerCase(), value]))
      : undefined;
    const client = createClient({
      url: gateway.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: true,
      ...(connectionParams ? { connectionParams } : {}),
    });
    const outcome: Outcome = { messages: [], metaEvents: [], status: { code: 'Missing' } };
    const open = new Map<string, OutcomeMessage>();
    const sequences: number[] = [];
    try {
      for await (const result of client.iterate({
        query: RUN_SUBSCRIPTION,
        variables: { data, properties: options.properties },
      })) {
        if (result.errors?.length) {
          return { ...outcome, status: { code: 'Errors' }, errors: result.errors as any };
        }
        const event: any = (result.data as any).copilotRun;
        sequences.push(event.sequence);
        switch (event.__typename) {
          case 'TextMessageStartEvent': {
            const message: OutcomeMessage = { type: 'text', id: event.messageId, content: '', status: 'Pending' };
            open.set(event.messageId, message);
            outcome.messages.push(message);
            break;
          }
          case 'TextMessageContentEvent':
            (open.get(event.messageId) as { content: string }).content += event.content;
            if (options.abortOnFirstText) return outcome; // leaving the loop completes the operation
            break;
          case 'TextMessageEndEvent':
            (open.get(event.messageId) as { status: string }).status = event.messageStatus.__typename.replace(
              'MessageStatus',
              '',
            );
            break;
          case 'ActionExecutionStartEvent': {
            const message: OutcomeMessage = {
              type: 'action',
              id: event.actionExecutionId,
              name: event.actionName,
              args: '',
              status: 'Pending',
            };
            open.set(event.actionExecutionId, message);
            outcome.messages.push(message);
            break;
          }
          case 'ActionExecutionArgsEvent':
            (open.get(event.actionExecutionId) as { args: string }).args += event.args;
            break;
          case 'ActionExecutionEndEvent':
            (open.get(event.actionExecutionId) as { status: string }).status = event.messageStatus.__typename.replace(
              'MessageStatus',
              '',
            );
            break;
          case 'ActionExecutionResultEvent':
            outcome.messages.push({
              type: 'result',
              actionExecutionId: event.actionExecutionId,
              actionName: event.actionName,
              result: event.result,
            });
            break;
          case 'AgentStateMessageEvent':
            outcome.messages.push({
              type: 'state',
              agentName: event.agentName,
              nodeName: event.nodeName,
              state: JSON.parse(event.state),
              running: event.running,
              active: event.active,
            });
            break;
          case 'RunMetaEvent':
            outcome.metaEvents.push(
              event.event.__typename === 'CopilotKitLangGraphInterruptEvent'
                ? {
                    name: event.event.name,
                    value: event.event.data.value,
                    messages: event.event.data.messages.map(interruptMessage),
                  }
                : { name: event.event.name, value: event.event.value },
            );
            break;
          case 'RunFinishedEvent':
            outcome.status = { code: event.status.code, reason: event.status.reason, details: event.status.details };
            break;
        }
      }
      if (sequences.some((sequence, i) => i > 0 && sequence <= sequences[i - 1]))
        throw new Error(`sequence numbers do not rise: ${sequences}`);
      return outcome;
    } finally {
      await client.dispose();
    }
  },
};

export const TRANSPORTS: readonly Transport[] = [multipart, sse, graphqlWs];

/** The text of an outcome's text messages, joined. */
export function textOf(outcome: Outcome): string {
  return outcome.messages.flatMap((message) => (message.type === 'text' ? [message.content] : [])).join('');
}
