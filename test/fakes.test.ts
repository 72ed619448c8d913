import { connect } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeAnthropic } from './support/fake-anthropic.js';
import { FakeCopilotKitEndpoint } from './support/fake-copilotkit-endpoint.js';
import { FakeGemini } from './support/fake-gemini.js';
import { FakeLangGraph } from './support/fake-langgraph.js';
import { FakeMcpServer } from './support/fake-mcp.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { FakeTranscription } from './support/fake-transcription.js';
import { FaultUpstream } from './support/fault-upstream.js';
import { failOnProcessErrors } from './support/process-errors.js';

// The fakes of outside services must outlive what the gateway does to them. Cancelling upstream work it no longer
// needs, the gateway may close a request whose body it is still sending (a long thread's history to a model); a fake
// that read that body unguarded rejected with "aborted", and Jest pinned the rejection on the hook that started the
// fake, failing every test of its file (seen in CI on slow-readers).

failOnProcessErrors();

interface Fake {
  start(): Promise<string | { modelBaseURL: string }>;
  stop(): Promise<void>;
}
const fakes: [string, () => Fake][] = [
  ['OpenAI', () => new FakeOpenAI()],
  ['Anthropic', () => new FakeAnthropic()],
  ['Gemini', () => new FakeGemini()],
  ['AG-UI agent', () => new FakeAgUiAgent()],
  ['LangGraph', () => new FakeLangGraph()],
  ['CopilotKit endpoint', () => new FakeCopilotKitEndpoint()],
  ['MCP server', () => new FakeMcpServer()],
  ['transcription', () => new FakeTranscription()],
  ['fault upstream', () => new FaultUpstream()],
];
const started: Fake[] = [];
afterAll(async () => {
  await Promise.all(started.map((fake) => fake.stop()));
});

/** Sends a POST to `url` that declares a 1 MB body, sends 1 KB of it and closes; resolves once the socket closed. */
function abandonedRequest(url: URL): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) }, () => {
      socket.write(
        `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
          `content-length: ${1024 * 1024}\r\n\r\n{"messages":[{"role":"user","content":"${'x'.repeat(1024)}`,
      );
      // Long enough for the fake to be reading the body when the connection goes.
      setTimeout(() => socket.destroy(), 50);
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve());
  });
}

describe('fakes of outside services', () => {
  it.each(fakes)('%s: a client that leaves mid-request ends nothing but that request', async (_name, make) => {
    const fake = make();
    started.push(fake);
    const address = await fake.start();
    const url = new URL(typeof address === 'string' ? address : address.modelBaseURL);
    for (let index = 0; index < 3; index++) await abandonedRequest(url);
    // Still serving: a plain request gets an HTTP answer, whatever its status.
    const response = await fetch(new URL('/no-such-route', url), { method: 'POST', body: '{}' });
    expect(response.status).toBeGreaterThanOrEqual(200);
    await response.arrayBuffer();
    // (failOnProcessErrors fails this test on any rejection the abandoned requests left.)
    await new Promise((resolve) => setTimeout(resolve, 100));
  });
});
