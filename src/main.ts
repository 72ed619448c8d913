// `npm start`: the gateway configured from the environment. Demo mode unless a provider is set.
import { pino } from 'pino';
import { OpenAIAdapter } from './adapters/openai.js';
import { readEnvironment } from './env.js';
import { ConfigurationError } from './core/errors.js';
import { createGateway } from './gateway.js';

async function main(): Promise<void> {
  let env;
  try {
    env = readEnvironment(process.env);
  } catch (error) {
    if (error instanceof ConfigurationError) {
      console.error(`Configuration error: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const logger = pino({ level: env.logLevel });
  const adapter = env.openai ? new OpenAIAdapter(env.openai) : undefined;
  const gateway = createGateway({
    adapter,
    path: env.path,
    logger,
    environment: env.environment,
    corsOrigins: env.corsOrigins,
    allowedHosts: env.allowedHosts,
    ...(env.modelIdleTimeoutMs !== undefined ? { modelIdleTimeoutMs: env.modelIdleTimeoutMs } : {}),
  });
  const url = await gateway.listen(env.port, env.host);
  const mode = env.openai
    ? `provider mode: OpenAI-compatible model "${env.openai.model}" at ${env.openai.baseURL ?? 'https://api.openai.com/v1'}`
    : 'demo mode: scripted replies, set OPENAI_API_KEY for a real model';
  logger.info({ url, mode: gateway.mode, environment: env.environment }, `Copilot Gateway ready at ${url} (${mode})`);

  const shutdown = (signal: string) => {
    logger.info(`${signal} received, shutting down`);
    gateway.close().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
