// The reference under benchmark: CopilotKit's own GraphQL runtime, @copilotkit/runtime 1.10.6, served the way
// its docs show (copilotRuntimeNodeHttpEndpoint on node:http), with its OpenAIAdapter pointed at the benchmark's
// fake model and the fake CopilotKit remote endpoint as its agent source.
// Env: PORT, UPSTREAM (the fake upstreams' origin). Prints {"port":N} when listening.
import { createServer } from 'node:http';
import OpenAI from 'openai';
import { CopilotRuntime, OpenAIAdapter, copilotRuntimeNodeHttpEndpoint } from '@copilotkit/runtime';

process.env.COPILOTKIT_TELEMETRY_DISABLED = 'true';
const upstream = process.env.UPSTREAM;
const openai = new OpenAI({ apiKey: 'bench', baseURL: `${upstream}/v1` });
const serviceAdapter = new OpenAIAdapter({ openai, model: 'gpt-4o-mini' });
const runtime = new CopilotRuntime({ remoteEndpoints: [{ url: `${upstream}/copilotkit` }] });
const handler = copilotRuntimeNodeHttpEndpoint({ endpoint: '/api/copilotkit', runtime, serviceAdapter });
const server = createServer(handler);
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.on('SIGTERM', () => process.exit(0));
