// `npm start`: the gateway configured from the environment. Demo mode unless a provider is set.
import { pino, type DestinationStream } from 'pino';
import type { ModelAdapter } from './adapters/adapter.js';
import { AnthropicAdapter } from './adapters/anthropic.js';
import { GoogleAdapter } from './adapters/google.js';
import { OpenAIAdapter } from './adapters/openai.js';
import { forEnvironment, gatewayOptionsOf, readEnvironment, type EnvironmentSettings } from './env.js';
import type { ProviderSettings } from './gateway/env-upstreams.js';
import { ConfigurationError, UnreachableCaseError } from './core/errors.js';
import { jsonLines } from './core/logging.js';
import { createGateway } from './gateway.js';
import { anyOf, type Authenticate } from './auth/authenticate.js';
import { apiKeyAuthenticator } from './auth/api-keys.js';
import type { JwtOptions } from './auth/jwt.js';
import { offlineExplorerBuilt } from './transports/explorer.js';

/**
 * How close two deliveries of one signal must be to be one request to drain: npm forwards its copy of a
 * group's signal in its own handler, within milliseconds (a loaded machine may take a few hundred),
 * while a person who means "stop now" presses again after seeing "draining", which takes longer. A
 * second press within it is taken as the first: press again.
 */
const SAME_SIGNAL_MS = 1_000;

async function main(): Promise<void> {
  const env = readEnvironment(process.env);
  const logger = pino({ level: env.logLevel }, await logDestination(env));
  const authenticate = await authenticator(env.auth);
  const gateway = createGateway(gatewayOptionsOf(env, { logger, adapter: modelAdapter(env.provider), authenticate }));
  const url = await gateway.listen(env.port, env.host);
  // The first signal drains (readiness false, runs finish within the grace period, then close);
  // a later, separate one exits at once. Listened for before the gateway says it is ready: until
  // then a signal would end the process at once (whoever waits for "ready" may signal right after it).
  // A signal sent to the whole process group (Ctrl-C in a terminal; a supervisor that signals the
  // group, as systemd's KillMode=control-group does) reaches both npm and the gateway, and npm
  // forwards its copy: the same signal again within SAME_SIGNAL_MS of the first is that copy, and
  // asks for nothing more.
  let stopping: { signal: string; at: number } | undefined;
  const shutdown = (signal: string) => {
    const now = performance.now();
    if (stopping) {
      if (signal === stopping.signal && now - stopping.at < SAME_SIGNAL_MS) {
        logger.info(
          `${signal} received again within ${SAME_SIGNAL_MS / 1000} s of the first: the same request (a signal to ` +
            `the process group, and npm's copy of it); still shutting down`,
        );
        return;
      }
      logger.warn(`${signal} received again: exiting without waiting`);
      process.exit(1);
    }
    stopping = { signal, at: now };
    logger.info(`${signal} received, shutting down`);
    gateway.shutdown().then(
      () => {
        logger.info('shut down');
        logger.flush();
        process.exit(0);
      },
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  const mode = providerMode(env.provider);
  const agentSources = [
    ...(env.remoteEndpoints.length ? [`${env.remoteEndpoints.length} CopilotKit remote endpoint(s)`] : []),
    ...(env.agUiAgents.length ? [`AG-UI agents ${env.agUiAgents.map((a) => a.name).join(', ')}`] : []),
    ...(env.langGraph ? [`LangGraph graphs ${env.langGraph.graphs.join(', ')}`] : []),
  ];
  const withAgents = agentSources.length ? `; agents from ${agentSources.join(', ')}` : '';
  logger.info(
    {
      url,
      mode: gateway.mode,
      environment: env.environment,
      executor: gateway.executor,
      ...(gateway.apolloUsageReporting ? { apolloUsageReporting: true } : {}),
    },
    `Copilot Gateway ready at ${url} (${mode}${withAgents})`,
  );
  if (env.environment === 'development') {
    // The offline explorer is advertised only when it is built (`npm run dev` runs the sources, unbuilt).
    if (offlineExplorerBuilt()) {
      logger.info(
        { sandbox: url, offlineExplorer: `${url}/graphiql` },
        `Explorers: Apollo Sandbox at ${url} (online), GraphiQL at ${url}/graphiql (offline)`,
      );
    } else {
      logger.info(
        { sandbox: url },
        `Explorer: Apollo Sandbox at ${url} (online); \`npm run build\` adds GraphiQL at ${url}/graphiql (offline)`,
      );
    }
  }
  // Open to anyone who can reach it, in production: said at every start unless chosen (ALLOW_UNAUTHENTICATED).
  if (env.environment === 'production' && !authenticate && env.allowUnauthenticated !== true) {
    logger.warn(
      'No authentication: anyone who can reach this gateway can run its models and agents. Set GATEWAY_API_KEYS ' +
        '(keys of 16 characters or more, comma-separated) or JWT_JWKS_URL or JWT_SECRET; or ' +
        'ALLOW_UNAUTHENTICATED=true if that is the choice (a proxy in front authenticates, say).',
    );
  }
}

/**
 * Where log lines go. JSON to stdout, unless LOG_FORMAT=pretty or, unset, stdout is a terminal outside
 * production: then one readable line each, made by pino-pretty (loaded only then) in this thread.
 */
async function logDestination(env: EnvironmentSettings): Promise<DestinationStream> {
  const format = env.logFormat ?? (process.stdout.isTTY && env.environment !== 'production' ? 'pretty' : 'json');
  if (format === 'pretty') {
    const { prettyFactory } = (await import('pino-pretty')).default;
    const prettify = prettyFactory({
      colorize: Boolean(process.stdout.isTTY),
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    });
    // Written at once: a person reads these, a few a second, and none is lost when the process exits.
    return { write: (line: string) => void process.stdout.write(prettify(line)) };
  }
  return jsonLines(1);
}

/**
 * The authentication the environment asks for: API keys, a JWT, either, or none. The JWT verifier (jose)
 * is imported only when a JWT is asked for.
 */
async function authenticator(auth: { apiKeys: string[]; jwt?: JwtOptions }): Promise<Authenticate | undefined> {
  const methods: Authenticate[] = [];
  if (auth.apiKeys.length) methods.push(apiKeyAuthenticator(auth.apiKeys));
  if (auth.jwt) methods.push((await import('./auth/jwt.js')).jwtAuthenticator(auth.jwt));
  if (methods.length === 0) return undefined;
  return methods.length === 1 ? methods[0] : anyOf(...methods);
}

function modelAdapter(provider: ProviderSettings | undefined): ModelAdapter | undefined {
  if (provider === undefined) return undefined;
  switch (provider.name) {
    case 'openai':
      return new OpenAIAdapter(provider.options);
    case 'anthropic':
      return new AnthropicAdapter(provider.options);
    case 'google':
      return new GoogleAdapter(provider.options);
    default:
      throw new UnreachableCaseError(provider);
  }
}

function providerMode(provider: ProviderSettings | undefined): string {
  if (provider === undefined)
    return 'demo mode: scripted replies, set OPENAI_API_KEY, ANTHROPIC_API_KEY or GOOGLE_API_KEY for a real model';
  switch (provider.name) {
    case 'openai':
      return (
        `provider mode: OpenAI-compatible model "${provider.options.model}" at ` +
        `${provider.options.baseURL ?? 'https://api.openai.com/v1'}`
      );
    case 'anthropic':
      return (
        `provider mode: Anthropic model "${provider.options.model}" at ` +
        `${provider.options.baseURL ?? 'https://api.anthropic.com'}`
      );
    case 'google':
      return (
        `provider mode: Google Gemini model "${provider.options.model}" at ` +
        `${provider.options.baseURL ?? 'https://generativelanguage.googleapis.com'}`
      );
    default:
      throw new UnreachableCaseError(provider);
  }
}

// Every start-up failure is one line saying what to fix, and exit code 1; no stack trace.
main().catch((error) => {
  if (error instanceof ConfigurationError) console.error(`Configuration error: ${forEnvironment(error.message)}`);
  else console.error(`Copilot Gateway could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
