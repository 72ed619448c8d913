import type { Transcriber } from '../adapters/transcription.js';
import type { RunLauncher } from '../engine/launcher.js';
import { DEFAULT_AGENT } from './input.js';

/** What `/info` is made from (the AG-UI transport's options). */
export interface RuntimeInfoSource {
  launcher: RunLauncher;
  version: string;
  transcriber?: Transcriber;
}

/**
 * `GET <path>/info` (and the `info` envelope method, `singleRoute`): every agent the gateway can run (the model as
 * `default`, then each configured or discovered agent) and what the runtime serves, in CopilotKit's RuntimeInfo shape.
 */
export async function runtimeInfo(source: RuntimeInfoSource, singleRoute: boolean): Promise<Record<string, unknown>> {
  const agents: Record<string, unknown> = {
    [DEFAULT_AGENT]: {
      name: DEFAULT_AGENT,
      description: "The gateway's model, with its server-side actions.",
      className: 'CopilotGateway',
    },
  };
  for (const agent of await source.launcher.listAgents()) {
    if (agent.name === DEFAULT_AGENT) continue;
    agents[agent.name] = { name: agent.name, description: agent.description ?? '', className: 'CopilotGatewayAgent' };
  }
  // AG-UI's capability names (AgentCapabilities.transport): every event of a run's stream carries an SSE
  // id, and a connect with Last-Event-ID resumes after it.
  for (const agent of Object.values(agents) as Record<string, unknown>[]) {
    agent.capabilities = { transport: { streaming: true, resumable: true } };
  }
  // The thread list is served once it has an owner to list by (authentication), or when THREAD_LIST_ANONYMOUS
  // says so; realtime metadata (CopilotKit Intelligence's Phoenix socket) never is.
  const listing = source.launcher.hasThreads && source.launcher.threadService.list.served;
  const threadEndpoints = { list: listing, inspect: listing, mutations: listing, realtimeMetadata: false };
  return {
    version: source.version,
    agents,
    audioFileTranscriptionEnabled: source.transcriber !== undefined,
    mode: 'sse',
    threadEndpoints,
    suggestions: true,
    a2uiEnabled: false,
    openGenerativeUIEnabled: false,
    telemetryDisabled: true,
    ...(singleRoute ? { singleRoute: { resourceOperations: listing, threadEndpoints } } : {}),
  };
}
