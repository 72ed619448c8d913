// A minimal CopilotKit app (bundled for 1.10.6 and for 1.74), as a customer would write it: the provider pointed at the
// gateway on another origin, the stock chat UI, one frontend action, and (with ?agent=name) an
// agent whose state the page shows, and (with ?suggest=1) chat suggestions.
import { CopilotKit, useCoAgent, useCopilotAction } from '@copilotkit/react-core';
import { CopilotChat, useCopilotChatSuggestions } from '@copilotkit/react-ui';
import { createRoot } from 'react-dom/client';

declare global {
  interface Window {
    RUNTIME_URL: string;
    /** Set when the page talks to an agent rather than the model. */
    AGENT?: string;
    /** Set when the page asks for chat suggestions. */
    SUGGEST?: boolean;
    alerts: string[];
  }
}
window.alerts = [];

function Actions() {
  useCopilotAction({
    name: 'showAlert',
    description: 'Shows an alert in the page.',
    parameters: [{ name: 'message', type: 'string', description: 'The text to show.', required: true }],
    handler: async ({ message }: { message: string }) => {
      window.alerts.push(message);
      return `shown: ${message}`;
    },
  });
  return null;
}

/** The agent's shared state, as a page shows it with CopilotKit's coagent hook. */
function AgentState({ name }: { name: string }) {
  const { state } = useCoAgent<Record<string, unknown>>({ name });
  return <pre id="agent-state">{JSON.stringify(state ?? {})}</pre>;
}

/** Suggestions as an app asks for them: shown before the first message (1.74 generates them through /suggest). */
function Suggestions() {
  useCopilotChatSuggestions({
    instructions: 'Suggest a greeting.',
    minSuggestions: 1,
    maxSuggestions: 1,
    available: 'always',
  } as Parameters<typeof useCopilotChatSuggestions>[0]);
  return null;
}

createRoot(document.getElementById('root')!).render(
  <CopilotKit runtimeUrl={window.RUNTIME_URL} credentials="include" showDevConsole={false} agent={window.AGENT}>
    <Actions />
    {window.AGENT ? <AgentState name={window.AGENT} /> : null}
    {window.SUGGEST ? <Suggestions /> : null}
    <CopilotChat />
  </CopilotKit>,
);
