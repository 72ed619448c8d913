import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { McpServers } from '../src/actions/mcp.js';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { FakeMcpServer } from './support/fake-mcp.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { eventually, gatewaysPerTest, runInput, silentLogger, userMessage } from './support/harness.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// MCP servers' tools as server-side actions: a fake MCP server built with the MCP SDK's own server
// classes (Streamable HTTP, and the older HTTP+SSE transport), a fake model that calls the tools.

const model = new FakeOpenAI();
const streamable = new FakeMcpServer('streamable');
const sse = new FakeMcpServer('sse');
let baseURL: string;
let streamableUrl: string;
let sseUrl: string;
beforeAll(async () => {
  [baseURL, streamableUrl, sseUrl] = await Promise.all([model.start(), streamable.start(), sse.start()]);
});
afterAll(async () => {
  await Promise.all([model.stop(), streamable.stop(), sse.stop()]);
});
const { start } = gatewaysPerTest();
const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });

/** A pino logger whose lines the test can read. */
function capturingLogger() {
  const lines: any[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) }),
  );
  return { logger, lines };
}

describe('MCP tools', () => {
  for (const [kind, url] of [
    ['Streamable HTTP', () => streamableUrl],
    ['HTTP+SSE (fallback)', () => sseUrl],
  ] as const) {
    it(`are offered to the model with their schemas and instructions, and executed on the server (${kind})`, async () => {
      const gateway = await start({ adapter: adapter(), mcpServers: [url()] });
      const before = model.requests.length;
      const outcome = await TRANSPORTS[2].run(gateway, runInput([userMessage('[tool=add] [toolargs={"a":2,"b":3}]')]));
      expect(outcome.status.code).toBe('Success');
      expect(outcome.messages).toContainEqual(
        expect.objectContaining({ type: 'result', actionName: 'add', result: '5' }),
      );
      expect(textOf(outcome)).toBe('Tool result received: 5');
      const first = model.requests[before];
      const add = first.tools.find((tool: any) => tool.function.name === 'add');
      expect(add.function).toMatchObject({
        description: 'Adds two numbers.',
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
        },
      });
      const instructions = first.messages.find(
        (m: any) => m.role === 'system' && m.content.includes('Model Context Protocol'),
      );
      expect(instructions.content).toContain('- add: Adds two numbers. Parameters: a (required), b (required).');
    });
  }

  it('turn a tool error into the error result, and the run goes on', async () => {
    const gateway = await start({ adapter: adapter(), mcpServers: [streamableUrl] });
    const outcome = await TRANSPORTS[0].run(gateway, runInput([userMessage('[tool=fail]')]));
    expect(outcome.status.code).toBe('Success');
    const result = outcome.messages.find((m) => m.type === 'result') as { result: string };
    expect(JSON.parse(result.result)).toEqual({
      error: { code: 'ACTION_FAILED', message: 'The MCP tool "fail" failed: the tool broke' },
      result: '',
    });
  });

  it('from a server that cannot be reached are left out with a log line, and unrelated requests work', async () => {
    const { logger, lines } = capturingLogger();
    const gateway = await start({
      adapter: adapter(),
      mcpServers: ['http://127.0.0.1:9/mcp', streamableUrl],
      logger,
      discoveryWaitMs: 2_000,
    });
    const before = model.requests.length;
    const outcome = await TRANSPORTS[1].run(gateway, runInput([userMessage('hi [tokens=2]')]));
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('tok0 tok1 ');
    // files.read is left out: model providers refuse a name with a dot.
    expect(model.requests[before].tools.map((tool: any) => tool.function.name).sort()).toEqual([
      'add',
      'fail',
      'wait',
      'whoami',
    ]);
    expect(lines.some((line) => line.msg.startsWith('MCP tool not offered') && line.tool === 'files.read')).toBe(true);
    await eventually(() => lines.some((line) => line.msg.startsWith('MCP server unreachable')), 'the log line');
    const line = lines.find((l) => l.msg.startsWith('MCP server unreachable'));
    expect(line).toMatchObject({ level: 40, mcpServer: '127.0.0.1:9' });
    expect(JSON.stringify(line)).not.toContain('/mcp');
  });

  it('from a server whose list never ends are read up to 1,000, with a log line (it ended the process)', async () => {
    // Found from outside: a server that always names a next page grew the gateway by 50 MB a second, out of memory in
    // 37 s, and a client could name it (MCP_ALLOW_CLIENT_SERVERS).
    const endless = new FakeMcpServer('streamable', true);
    const url = await endless.start();
    try {
      const { logger, lines } = capturingLogger();
      const gateway = await start({ adapter: adapter(), mcpServers: [url], logger, discoveryWaitMs: 10_000 });
      const before = model.requests.length;
      const outcome = await TRANSPORTS[1].run(gateway, runInput([userMessage('hi [tokens=2]')]));
      expect(outcome.status.code).toBe('Success');
      const offered: string[] = model.requests[before].tools.map((tool: any) => tool.function.name);
      expect(offered).toHaveLength(1_000);
      expect(offered.slice(0, 2)).toEqual(['t0_0', 't0_1']);
      expect(endless.listedPages).toBe(10);
      expect(lines.find((line) => line.msg.startsWith('MCP server lists more tools than are read'))).toMatchObject({
        level: 40,
        tools: 1_000,
        pages: 10,
      });
    } finally {
      await endless.stop();
    }
  }, 30_000);

  it('that requests name are kept up to 50, and at most 50 more pushed out wait to be closed', async () => {
    // Found from outside: each server a request named stayed connected and pinged for ten minutes after it was pushed
    // out of the 50 kept, with no bound on their number: 2,500 runs naming new ones held 866 MB and sent 250 pings a
    // second to the named host.
    const servers = new McpServers([], true, 0, silentLogger);
    try {
      for (let request = 0; request < 15; request++) {
        const named = Array.from({ length: 10 }, (_, i) => ({ endpoint: `http://127.0.0.1:9/mcp?u=${request}-${i}` }));
        await servers.forRequest({ mcpServers: named });
      }
      // (Nothing listens on port 9: every one is down.)
      expect(servers.census()).toEqual({
        configured: { connected: 0, down: 0 },
        requested: { connected: 0, down: 50 },
        retired: { connected: 0, down: 50 },
      });
    } finally {
      await servers.close();
    }
  });

  it('are counted in /metrics by source and state (copilot_gateway_mcp_servers)', async () => {
    const gateway = await start({ adapter: adapter(), mcpServers: [streamableUrl, 'http://127.0.0.1:9/mcp'] });
    await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
    const gauge = async (source: string, state: string) => {
      const text = await (await fetch(new URL('/metrics', gateway.url))).text();
      const line = new RegExp(`^copilot_gateway_mcp_servers\\{source="${source}",state="${state}"\\} (\\d+)$`, 'm');
      return Number(line.exec(text)?.[1] ?? NaN);
    };
    expect(await gauge('configured', 'connected')).toBe(1);
    expect(await gauge('configured', 'down')).toBe(1);
    expect(await gauge('requested', 'connected')).toBe(0);
    expect(await gauge('retired', 'down')).toBe(0);
  });

  it('are withdrawn when their server goes away, and offered again, without a wait, when it is back', async () => {
    const server = new FakeMcpServer('streamable');
    const url = await server.start();
    const port = Number(new URL(url).port);
    // A request that waited for the server would wait a minute: the test would time out.
    const gateway = await start({ adapter: adapter(), mcpServers: [url], discoveryWaitMs: 60_000 });
    await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
    await server.stop();
    const failed = await TRANSPORTS[2].run(gateway, runInput([userMessage('[tool=add] [toolargs={"a":1,"b":1}]')]));
    expect(failed.status.code).toBe('Success');
    const result = failed.messages.find((m) => m.type === 'result') as { result: string };
    expect(JSON.parse(result.result).error.code).toBe('UPSTREAM_UNREACHABLE');
    // Withdrawn; and a request does not wait for a server that is down.
    const before = model.requests.length;
    await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
    expect(model.requests[before].tools ?? []).toEqual([]);

    // Back on the same address: after the reconnect backoff its tools are offered again.
    const again = new FakeMcpServer('streamable');
    (again as any).server.listen(port, '127.0.0.1');
    try {
      // Each request asks for the actions, which reconnects the server once its backoff is over.
      let offered = false;
      for (let i = 0; i < 40 && !offered; i++) {
        const after = model.requests.length;
        await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
        offered = (model.requests[after].tools ?? []).some((tool: any) => tool.function.name === 'add');
        if (!offered) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(offered).toBe(true);
    } finally {
      await again.stop();
    }
  });

  for (const kind of ['stateful', 'sse'] as const) {
    it(`added by a server while connected are offered once it says its tools changed (tools/list_changed, ${kind})`, async () => {
      const server = new FakeMcpServer(kind);
      const url = await server.start();
      try {
        const gateway = await start({ adapter: adapter(), mcpServers: [url] });
        const offered = async () => {
          const before = model.requests.length;
          await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
          return (model.requests[before].tools ?? []).map((tool: any) => tool.function.name) as string[];
        };
        expect(await offered()).toEqual(expect.arrayContaining(['add', 'fail']));
        expect(await offered()).not.toContain('multiply');
        server.addTool('multiply');
        let names: string[] = [];
        for (let i = 0; i < 50 && !names.includes('multiply'); i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          names = await offered();
        }
        expect(names).toContain('multiply');
        const called = await TRANSPORTS[2].run(gateway, runInput([userMessage('[tool=multiply] [toolargs={}]')]));
        expect(called.messages).toContainEqual(expect.objectContaining({ type: 'result', result: 'multiply done' }));
      } finally {
        await server.stop();
      }
    });
  }

  it('added while the gateway connects are offered: the change said during the first listing is not missed', async () => {
    const server = new FakeMcpServer('sse');
    server.addOnFirstList = 'multiply';
    const url = await server.start();
    try {
      const gateway = await start({ adapter: adapter(), mcpServers: [url] });
      let names: string[] = [];
      for (let i = 0; i < 50 && !names.includes('multiply'); i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        const before = model.requests.length;
        await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
        names = (model.requests[before].tools ?? []).map((tool: any) => tool.function.name);
      }
      expect(names).toEqual(expect.arrayContaining(['add', 'multiply']));
    } finally {
      await server.stop();
    }
  });

  it('are withdrawn when their server stops answering pings, before any call finds out', async () => {
    const { logger, lines } = capturingLogger();
    const server = new FakeMcpServer('stateful');
    const url = await server.start();
    const gateway = await start({ adapter: adapter(), logger, mcpServers: [{ url, pingIntervalMs: 50 }] });
    const before = model.requests.length;
    await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
    expect(model.requests[before].tools.map((tool: any) => tool.function.name)).toContain('add');
    await server.stop();
    await eventually(
      () => lines.some((line) => line.msg.startsWith('MCP server unreachable') && /ping/.test(line.reason)),
      'the ping to fail',
    );
    const after = model.requests.length;
    await TRANSPORTS[2].run(gateway, runInput([userMessage('hi [tokens=1]')]));
    expect(model.requests[after].tools ?? []).toEqual([]);
  });

  it('survive a restart of a server with sessions: the call is made again on a new session', async () => {
    const server = new FakeMcpServer('stateful');
    const url = await server.start();
    const port = Number(new URL(url).port);
    const gateway = await start({ adapter: adapter(), mcpServers: [url] });
    const first = await TRANSPORTS[2].run(gateway, runInput([userMessage('[tool=add] [toolargs={"a":1,"b":2}]')]));
    expect(first.messages).toContainEqual(expect.objectContaining({ type: 'result', result: '3' }));
    await server.stop();
    const restarted = new FakeMcpServer('stateful');
    (restarted as any).server.listen(port, '127.0.0.1');
    try {
      const second = await TRANSPORTS[2].run(gateway, runInput([userMessage('[tool=add] [toolargs={"a":2,"b":2}]')]));
      expect(second.messages).toContainEqual(expect.objectContaining({ type: 'result', result: '4' }));
    } finally {
      await restarted.stop();
    }
  });

  it('that a request names are used only when allowed, with its key as a bearer token', async () => {
    const properties = { mcpServers: [{ endpoint: streamableUrl, apiKey: 'client-key' }] };
    const closed = await start({ adapter: adapter() });
    const before = model.requests.length;
    await TRANSPORTS[0].run(closed, runInput([userMessage('hi [tokens=1]')]), { properties });
    expect(model.requests[before].tools ?? []).toEqual([]);

    const open = await start({ adapter: adapter(), allowClientMcpServers: true });
    const outcome = await TRANSPORTS[0].run(open, runInput([userMessage('[tool=whoami]')]), { properties });
    expect(outcome.messages).toContainEqual(
      expect.objectContaining({ type: 'result', actionName: 'whoami', result: 'Bearer client-key' }),
    );

    const bad = await TRANSPORTS[2].run(open, runInput([userMessage('hi')]), {
      properties: { mcpServers: [{ endpoint: 'file:///etc/passwd' }] },
    });
    expect(bad.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      details: { field: 'properties.mcpServers[0]' },
    });
    const listed = await start({ adapter: adapter(), allowClientMcpServers: [new URL(streamableUrl).host] });
    const allowed = await TRANSPORTS[0].run(listed, runInput([userMessage('[tool=whoami]')]), { properties });
    expect(allowed.messages).toContainEqual(
      expect.objectContaining({ type: 'result', actionName: 'whoami', result: 'Bearer client-key' }),
    );
    const elsewhere = await TRANSPORTS[0].run(listed, runInput([userMessage('hi')]), {
      properties: { mcpServers: [{ endpoint: 'http://169.254.169.254/latest' }] },
    });
    expect(elsewhere.errors?.[0]).toMatchObject({
      message: 'properties.mcpServers[0]: the host 169.254.169.254 is not one this gateway may connect to.',
      extensions: { code: 'BAD_USER_INPUT' },
    });

    const many = Array.from({ length: 11 }, () => ({ endpoint: streamableUrl }));
    const tooMany = await TRANSPORTS[2].run(open, runInput([userMessage('hi')]), { properties: { mcpServers: many } });
    expect(tooMany.errors?.[0]).toMatchObject({
      message: 'properties.mcpServers may name at most 10 servers (got 11).',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});
