// A minimal CopilotKit 1.10.6 app, as a customer would write it: the provider pointed at the
// gateway on another origin, the stock chat UI, and one frontend action.
import { CopilotKit, useCopilotAction } from '@copilotkit/react-core';
import { CopilotChat } from '@copilotkit/react-ui';
import { createRoot } from 'react-dom/client';

declare global {
  interface Window {
    RUNTIME_URL: string;
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

createRoot(document.getElementById('root')!).render(
  <CopilotKit runtimeUrl={window.RUNTIME_URL} credentials="include" showDevConsole={false}>
    <Actions />
    <CopilotChat />
  </CopilotKit>,
);
