import { ConfigurationError } from '../core/errors.js';
import { isHttpUrl } from '../core/urls.js';
import type { AnthropicAdapterOptions } from '../adapters/anthropic.js';
import type { GoogleAdapterOptions } from '../adapters/google.js';
import type { OpenAIAdapterOptions } from '../adapters/openai.js';
import type { TranscriptionOptions } from '../adapters/transcription.js';
import { list, wholeNumber } from './env-values.js';

// What `npm start` talks to, read from the environment: the model provider and the agents.

/** A provider npm start can run, with its adapter's options. */
export type ProviderSettings =
  | { name: 'openai'; options: OpenAIAdapterOptions & { model: string } }
  | { name: 'anthropic'; options: AnthropicAdapterOptions & { model: string } }
  | { name: 'google'; options: GoogleAdapterOptions & { model: string } };

/** The providers, the variables that configure each, and their default models. */
const PROVIDERS = {
  openai: {
    key: 'OPENAI_API_KEY',
    baseURL: 'OPENAI_BASE_URL',
    model: 'OPENAI_MODEL',
    defaultModel: 'gpt-4o-mini',
    example: 'http://localhost:11434/v1',
  },
  anthropic: {
    key: 'ANTHROPIC_API_KEY',
    baseURL: 'ANTHROPIC_BASE_URL',
    model: 'ANTHROPIC_MODEL',
    defaultModel: 'claude-sonnet-5-5',
    example: 'http://localhost:8080/anthropic',
  },
  google: {
    key: 'GOOGLE_API_KEY',
    baseURL: 'GOOGLE_BASE_URL',
    model: 'GOOGLE_MODEL',
    defaultModel: 'gemini-flash-latest',
    example: 'http://localhost:8080/gemini',
  },
} as const;
type ProviderName = keyof typeof PROVIDERS;

/** The agents `npm start` serves. */
export interface AgentSettings {
  /** COPILOT_REMOTE_ENDPOINTS: CopilotKit remote endpoints. */
  remoteEndpoints: string[];
  /** AGUI_AGENTS: AG-UI agents by name. */
  agUiAgents: { name: string; url: string }[];
  /** LANGGRAPH_DEPLOYMENT_URL, LANGGRAPH_GRAPHS and LANGSMITH_API_KEY: graphs served as agents of their names. */
  langGraph?: { deploymentUrl: string; graphs: string[]; apiKey?: string };
}

const AGENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The provider: the one COPILOT_PROVIDER names, or the only one configured (a key or a base URL).
 * Naming one whose variables are unset while another's are set is a mistake, and so is configuring
 * several without saying which.
 */
export function readProvider(env: NodeJS.ProcessEnv): ProviderSettings | undefined {
  const names = Object.keys(PROVIDERS) as ProviderName[];
  const configured = names.filter((name) => env[PROVIDERS[name].key]?.trim() || env[PROVIDERS[name].baseURL]?.trim());
  const chosen = env.COPILOT_PROVIDER?.trim().toLowerCase();
  let name: ProviderName | undefined;
  if (chosen) {
    if (!names.includes(chosen as ProviderName)) {
      throw new ConfigurationError(
        `COPILOT_PROVIDER must be one of ${names.join(', ')} (got ${JSON.stringify(env.COPILOT_PROVIDER)}).`,
      );
    }
    name = chosen as ProviderName;
    if (!configured.includes(name)) {
      const variables = `${PROVIDERS[name].key} (or ${PROVIDERS[name].baseURL})`;
      const others = configured.map((other) => PROVIDERS[other].key);
      throw new ConfigurationError(
        others.length
          ? `COPILOT_PROVIDER is ${name} but ${variables} is not set; ${others.join(', ')} is. Set ` +
              `${PROVIDERS[name].key}, or COPILOT_PROVIDER=${configured[0]}.`
          : `COPILOT_PROVIDER is ${name} but ${variables} is not set.`,
      );
    }
  } else if (configured.length > 1) {
    throw new ConfigurationError(
      `Several providers are configured (${configured.map((other) => PROVIDERS[other].key).join(', ')}): set ` +
        `COPILOT_PROVIDER to the one to use (${configured.join(' or ')}).`,
    );
  } else {
    name = configured[0];
  }
  if (!name) return undefined;
  const variables = PROVIDERS[name];
  // Keys read from secret files often end with a line break, which no HTTP header may carry.
  const apiKey = env[variables.key]?.trim() || undefined;
  const baseURL = env[variables.baseURL]?.trim() || undefined;
  if (baseURL && !isHttpUrl(baseURL)) {
    throw new ConfigurationError(
      `${variables.baseURL} must be a URL such as "${variables.example}" (got ${JSON.stringify(baseURL)}).`,
    );
  }
  const options = {
    apiKey,
    baseURL,
    model: env[variables.model]?.trim() || variables.defaultModel,
    ...(name === 'openai' ? readOpenAIStyle(env) : {}),
  };
  return { name, options } as ProviderSettings;
}

/** OPENAI_API_STYLE, OPENAI_MAX_TOKENS_PARAMETER and OPENAI_STREAM_USAGE, when set. */
function readOpenAIStyle(
  env: NodeJS.ProcessEnv,
): Pick<OpenAIAdapterOptions, 'apiStyle' | 'maxTokensParameter' | 'streamUsage'> {
  const style = env.OPENAI_API_STYLE?.trim();
  if (style && style !== 'chat' && style !== 'responses') {
    throw new ConfigurationError(`OPENAI_API_STYLE must be chat or responses (got ${JSON.stringify(style)}).`);
  }
  const parameter = env.OPENAI_MAX_TOKENS_PARAMETER?.trim();
  if (parameter && parameter !== 'max_tokens' && parameter !== 'max_completion_tokens') {
    throw new ConfigurationError(
      `OPENAI_MAX_TOKENS_PARAMETER must be max_tokens or max_completion_tokens (got ${JSON.stringify(parameter)}).`,
    );
  }
  const usage = env.OPENAI_STREAM_USAGE?.trim();
  if (usage && usage !== 'true' && usage !== 'false') {
    throw new ConfigurationError(`OPENAI_STREAM_USAGE must be true or false (got ${JSON.stringify(usage)}).`);
  }
  return {
    ...(style ? { apiStyle: style as 'chat' | 'responses' } : {}),
    ...(parameter ? { maxTokensParameter: parameter as 'max_tokens' | 'max_completion_tokens' } : {}),
    ...(usage ? { streamUsage: usage === 'true' } : {}),
  };
}

/** The agent settings: remote endpoints, AG-UI agents and LangGraph graphs, with one namespace of agent names. */
export function readAgents(env: NodeJS.ProcessEnv): AgentSettings {
  const remoteEndpoints = list(env.COPILOT_REMOTE_ENDPOINTS);
  for (const url of remoteEndpoints) {
    if (!isHttpUrl(url)) {
      throw new ConfigurationError(
        `COPILOT_REMOTE_ENDPOINTS must list http(s) URLs, comma-separated, such as ` +
          `"http://localhost:8000/copilotkit" (got ${JSON.stringify(url)}).`,
      );
    }
  }
  const names = new Set<string>();
  const claim = (name: string, variable: string) => {
    if (!AGENT_NAME.test(name))
      throw new ConfigurationError(
        `${variable}: the agent name ${JSON.stringify(name)} must be 1 to 64 letters, digits, "_" or "-".`,
      );
    if (names.has(name))
      throw new ConfigurationError(
        `${variable}: the agent name "${name}" is used twice (AGUI_AGENTS and LANGGRAPH_GRAPHS share one set of ` +
          `names).`,
      );
    names.add(name);
  };
  const agUiAgents = list(env.AGUI_AGENTS).map((entry) => {
    const at = entry.indexOf('=');
    const name = at === -1 ? '' : entry.slice(0, at).trim();
    const url = at === -1 ? '' : entry.slice(at + 1).trim();
    if (!name || !isHttpUrl(url)) {
      throw new ConfigurationError(
        `AGUI_AGENTS must be name=url pairs, comma-separated, such as "researcher=http://localhost:8000/agent" (got ` +
          `${JSON.stringify(entry)}).`,
      );
    }
    claim(name, 'AGUI_AGENTS');
    return { name, url };
  });
  const deploymentUrl = env.LANGGRAPH_DEPLOYMENT_URL || undefined;
  const graphs = list(env.LANGGRAPH_GRAPHS);
  if (deploymentUrl && !isHttpUrl(deploymentUrl)) {
    throw new ConfigurationError(
      `LANGGRAPH_DEPLOYMENT_URL must be a URL such as "http://localhost:2024" (got ${JSON.stringify(deploymentUrl)}).`,
    );
  }
  if (deploymentUrl && graphs.length === 0) {
    throw new ConfigurationError(
      'LANGGRAPH_DEPLOYMENT_URL is set but LANGGRAPH_GRAPHS is not: list the graph ids to serve, comma-separated, ' +
        'such as "agent".',
    );
  }
  if (!deploymentUrl && graphs.length > 0) {
    throw new ConfigurationError(
      'LANGGRAPH_GRAPHS is set but LANGGRAPH_DEPLOYMENT_URL is not: set the URL of the LangGraph deployment.',
    );
  }
  for (const graph of graphs) claim(graph, 'LANGGRAPH_GRAPHS');
  return {
    remoteEndpoints,
    agUiAgents,
    ...(deploymentUrl
      ? { langGraph: { deploymentUrl, graphs, ...(env.LANGSMITH_API_KEY ? { apiKey: env.LANGSMITH_API_KEY } : {}) } }
      : {}),
  };
}

/**
 * TRANSCRIPTION_BASE_URL (which turns voice input on), TRANSCRIPTION_MODEL, TRANSCRIPTION_API_KEY (default
 * OPENAI_API_KEY: the same account usually serves both) and TRANSCRIPTION_MAX_MB.
 */
export function readTranscription(env: NodeJS.ProcessEnv): { transcription?: TranscriptionOptions } {
  const baseURL = env.TRANSCRIPTION_BASE_URL?.trim();
  const maxMegabytes = wholeNumber(env, 'TRANSCRIPTION_MAX_MB', 'megabytes');
  if (!baseURL) return {};
  if (!isHttpUrl(baseURL)) {
    throw new ConfigurationError(
      `TRANSCRIPTION_BASE_URL must be a URL such as "https://api.openai.com/v1" (got ${JSON.stringify(baseURL)}).`,
    );
  }
  if (maxMegabytes !== undefined && maxMegabytes > 1024) {
    throw new ConfigurationError(`TRANSCRIPTION_MAX_MB must be at most 1024 (got ${maxMegabytes}).`);
  }
  // Keys read from secret files often end with a line break, which no HTTP header may carry. The OpenAI key is
  // lent only to the service it belongs to (OPENAI_BASE_URL's origin, or OpenAI's own): never to another host.
  const openAiOrigin = originOf(env.OPENAI_BASE_URL?.trim() || 'https://api.openai.com/v1');
  const lent = originOf(baseURL) === openAiOrigin ? env.OPENAI_API_KEY?.trim() : undefined;
  const apiKey = env.TRANSCRIPTION_API_KEY?.trim() || lent || undefined;
  const model = env.TRANSCRIPTION_MODEL?.trim() || undefined;
  return {
    transcription: {
      baseURL,
      ...(apiKey ? { apiKey } : {}),
      ...(model ? { model } : {}),
      ...(maxMegabytes !== undefined ? { maxBytes: maxMegabytes * 1024 * 1024 } : {}),
    },
  };
}

/** A URL's origin (scheme, host and port), or undefined when it is not a URL. */
function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
