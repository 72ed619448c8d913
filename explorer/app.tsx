// The gateway's offline explorer: GraphiQL, bundled from npm into dist/explorer/ by `npm run build`
// and served by the gateway at <endpoint>/graphiql, so every operation (the copilotRun
// subscription too, over graphql-ws) can be tried from a browser with no network beyond the gateway.
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import 'graphiql/graphiql.css';
import { createRoot } from 'react-dom/client';

const root = document.getElementById('graphiql')!;
// The page names its endpoint; the same address serves GraphQL over HTTP and over WebSocket.
const url = new URL(root.dataset.endpoint ?? '/api/copilotkit', window.location.href).href;
const fetcher = createGraphiQLFetcher({ url, subscriptionUrl: url.replace(/^http/, 'ws') });

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
