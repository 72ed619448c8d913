// The gateway's offline explorer: GraphiQL, bundled from npm into build/ by `npm run explorer` (committed;
// `npm run build` copies it into dist/explorer/) and served by the gateway at <endpoint>/graphiql, so every
// operation (the copilotRun subscription too, over graphql-ws) can be tried from a browser with no network
// beyond the gateway.
import { createGraphiQLFetcher, isAsyncIterable, type Fetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { getOperationAST, parse, type ExecutionResult } from 'graphql';
import 'graphiql/graphiql.css';
import { createRoot } from 'react-dom/client';

const root = document.getElementById('graphiql')!;
// The page names its endpoint; the same address serves GraphQL over HTTP and over WebSocket.
const url = new URL(root.dataset.endpoint ?? '/api/copilotkit', window.location.href).href;
const overWire = createGraphiQLFetcher({ url, subscriptionUrl: url.replace(/^http/, 'ws') });

/**
 * GraphiQL shows each result of a subscription in place of the one before (it merges only incremental
 * payloads, those with `hasNext`), so a run's events flashed by and left only the last: never the
 * streamed text. For a subscription, each result shown is instead every event so far, in a list per
 * root field, so the text builds up as it arrives. Queries and mutations (@defer/@stream) are untouched.
 */
const fetcher: Fetcher = async (params, options) => {
  const value = await overWire(params, options);
  return isSubscription(params.query, params.operationName) && isAsyncIterable(value)
    ? accumulated(value as AsyncIterable<ExecutionResult>)
    : value;
};

function isSubscription(query: string, operationName?: string | null): boolean {
  try {
    return getOperationAST(parse(query), operationName ?? undefined)?.operation === 'subscription';
  } catch {
    return false; // not parsed: the gateway says what is wrong
  }
}

/** The results, each as all of them so far: `{data: {field: [first, …, latest]}, errors?}`. */
function accumulated(results: AsyncIterable<ExecutionResult>): AsyncIterableIterator<ExecutionResult> {
  const inner = results[Symbol.asyncIterator]();
  const fields: Record<string, unknown[]> = {};
  const errors: NonNullable<ExecutionResult['errors']>[number][] = [];
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const step = await inner.next();
      if (step.done) return step;
      for (const [name, value] of Object.entries(step.value.data ?? {})) (fields[name] ??= []).push(value);
      errors.push(...(step.value.errors ?? []));
      return { done: false, value: { data: { ...fields }, ...(errors.length ? { errors: [...errors] } : {}) } };
    },
    // GraphiQL's stop button: ends the operation at once (graphql-ws sends `complete`), not at the next event.
    async return() {
      await inner.return?.();
      return { done: true, value: undefined };
    },
  };
}

const EXAMPLE = `# Copilot Gateway's offline explorer: every operation can be run from here, with no network.
# Pick an operation with the run button. The schema is in the Docs panel (the book icon).

query Hello {
  hello
  availableAgents { agents { name id description } }
}

# The run as typed events over graphql-ws.
subscription Run {
  copilotRun(data: {
    metadata: { requestType: Chat }
    frontend: { actions: [] }
    messages: [{ id: "1", createdAt: "2026-01-01T00:00:00Z", textMessage: { role: user, content: "What time is it?" } }]
  }) {
    __typename
    ... on RunEvent { sequence }
    ... on TextMessageContentEvent { content }
    ... on ActionExecutionStartEvent { actionName }
    ... on ActionExecutionResultEvent { actionName result }
    ... on RunFinishedEvent { status { __typename ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } }
  }
}
`;

createRoot(root).render(<GraphiQL fetcher={fetcher} defaultQuery={EXAMPLE} />);
