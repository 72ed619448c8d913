import { agentStateTooLarge } from './errors.js';

/** The most state work of one agent call (see StateBudget): far above a useful agent's, far below the heap. */
const MAX_STATE_WORK_BYTES = 64 * 1024 * 1024;

/**
 * The state work of one agent call. An agent's state is passed on as the whole state each time (as CopilotKit
 * passes it on), so a small event can make a large one: an AG-UI step or delta, a LangGraph event from another node
 * after a large `values` chunk. Copying, patching or parsing a state is work of its size too. Each interpreter
 * charges what it sends and what it copies; past the limit the call fails `UPSTREAM_BAD_RESPONSE`, naming it.
 * Found from outside: 2,000 steps of a 1 MiB AG-UI state (1.1 MB from the agent) ended the process out of memory.
 */
export class StateBudget {
  private spent = 0;

  constructor(private readonly agentName: string) {}

  charge(bytes: number): void {
    this.spent += bytes;
    if (this.spent > MAX_STATE_WORK_BYTES) throw agentStateTooLarge(this.agentName, MAX_STATE_WORK_BYTES);
  }
}
