// A CopilotKit 1.74 app with a thread list, as a customer would write one (bundled for 1.74 only: `useThreads`
// comes from react-core's v2 entry, which 1.10.6 does not have, so it cannot live in app.tsx, which is bundled for
// both): the stock provider pointed at the gateway on another origin, the stock chat, and beside it the threads
// `useThreads` lists (name, archived) with rename, archive, unarchive and delete, and "open", which sets the chat's
// threadId so that the chat connects to the thread and restores its messages. With ?suggest=1, chat suggestions.
//
// What the test reads is in the DOM: #threads[data-loading] while the list loads, one li[data-thread-id] per
// thread in the hook's order, and #outcomes, one line per finished mutation ("rename <id>: ok" or the error).
import { CopilotKit } from '@copilotkit/react-core';
import { useThreads } from '@copilotkit/react-core/v2';
import { CopilotChat, useCopilotChatSuggestions } from '@copilotkit/react-ui';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';

declare global {
  interface Window {
    RUNTIME_URL: string;
    /** Set when the page asks for chat suggestions. */
    SUGGEST?: boolean;
  }
}

function Threads({ chosen, choose }: { chosen: string | undefined; choose: (threadId: string) => void }) {
  const [showArchived, setShowArchived] = useState(false);
  const [newName, setNewName] = useState('');
  const [outcomes, setOutcomes] = useState<string[]>([]);
  const { threads, isLoading, error, refetchThreads, renameThread, archiveThread, unarchiveThread, deleteThread } =
    useThreads({ agentId: 'default', includeArchived: showArchived });

  /** Runs a mutation and writes down how it ended, so that the test can wait for it. */
  const run = (what: string, mutation: Promise<void>) =>
    void mutation.then(
      () => setOutcomes((done) => [...done, `${what}: ok`]),
      (failure: Error) => setOutcomes((done) => [...done, `${what}: ${failure.message}`]),
    );

  return (
    <section id="threads" data-loading={String(isLoading)} data-error={error?.message ?? ''}>
      <label>
        <input
          id="show-archived"
          type="checkbox"
          checked={showArchived}
          onChange={(event) => setShowArchived(event.target.checked)}
        />
        Show archived
      </label>
      <button id="refresh" onClick={refetchThreads}>
        Refresh
      </button>
      <input id="new-name" value={newName} onChange={(event) => setNewName(event.target.value)} />
      <ul id="thread-list">
        {threads.map((thread) => (
          <li key={thread.id} data-thread-id={thread.id} data-chosen={String(thread.id === chosen)}>
            <span className="thread-name">{thread.name ?? ''}</span>
            <span className="thread-archived">{thread.archived ? 'archived' : 'active'}</span>
            <button className="open" onClick={() => choose(thread.id)}>
              Open
            </button>
            <button className="rename" onClick={() => run(`rename ${thread.id}`, renameThread(thread.id, newName))}>
              Rename
            </button>
            <button className="archive" onClick={() => run(`archive ${thread.id}`, archiveThread(thread.id))}>
              Archive
            </button>
            <button className="unarchive" onClick={() => run(`unarchive ${thread.id}`, unarchiveThread(thread.id))}>
              Unarchive
            </button>
            <button className="delete" onClick={() => run(`delete ${thread.id}`, deleteThread(thread.id))}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <ol id="outcomes">
        {outcomes.map((outcome, index) => (
          <li key={index}>{outcome}</li>
        ))}
      </ol>
    </section>
  );
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

function App() {
  // No thread chosen: the chat starts a new one (CopilotKit makes up its id); chosen: the chat is that thread.
  const [threadId, setThreadId] = useState<string | undefined>(undefined);
  return (
    <CopilotKit runtimeUrl={window.RUNTIME_URL} credentials="include" showDevConsole={false} threadId={threadId}>
      <Threads chosen={threadId} choose={setThreadId} />
      {window.SUGGEST ? <Suggestions /> : null}
      <CopilotChat />
    </CopilotKit>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
