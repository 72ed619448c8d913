// The benchmark's Redis: a redis-server of its own on loopback (no persistence), and what it says it did.
// Commands and bytes are read from the server's INFO (commandstats, total_net_input_bytes and
// total_net_output_bytes) before and after a measured window, so that nothing in the gateway is instrumented.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Sends one command (RESP array) on a new connection and resolves with the reply's text (a bulk string or a
 * status line). Enough for INFO, FLUSHALL and CONFIG RESETSTAT: no client library in the load generator.
 */
export function command(port, ...args) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      const line = buffer.indexOf('\r\n');
      if (line < 0) return;
      const head = buffer.subarray(0, line).toString();
      if (head[0] === '$') {
        const length = Number(head.slice(1));
        if (buffer.length < line + 2 + length + 2) return;
        socket.end();
        resolve(buffer.subarray(line + 2, line + 2 + length).toString());
      } else {
        socket.end();
        if (head[0] === '-') reject(new Error(`redis: ${head.slice(1)}`));
        else resolve(head.slice(1));
      }
    });
  });
}

/**
 * What Redis has done so far: calls per command (as commandstats names them) and bytes each way. `port` may be a
 * list (a Redis Cluster's primaries): their sums.
 */
export async function stats(port) {
  if (Array.isArray(port)) {
    const all = await Promise.all(port.map((one) => stats(one)));
    const calls = {};
    for (const one of all)
      for (const [name, count] of Object.entries(one.calls)) calls[name] = (calls[name] ?? 0) + count;
    const sum = (key) => all.reduce((total, one) => total + one[key], 0);
    return { calls, inputBytes: sum('inputBytes'), outputBytes: sum('outputBytes'), cpuMs: sum('cpuMs') };
  }
  const text = await command(port, 'INFO', 'all');
  const calls = {};
  let inputBytes = 0;
  let outputBytes = 0;
  let cpuMs = 0;
  for (const line of text.split('\r\n')) {
    const stat = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (stat) calls[stat[1]] = Number(stat[2]);
    const input = /^total_net_input_bytes:(\d+)/.exec(line);
    if (input) inputBytes = Number(input[1]);
    const output = /^total_net_output_bytes:(\d+)/.exec(line);
    if (output) outputBytes = Number(output[1]);
    // Redis's own CPU (main thread and the others), in seconds with microseconds.
    const cpu = /^used_cpu_(?:sys|user):([\d.]+)/.exec(line);
    if (cpu) cpuMs += Number(cpu[1]) * 1000;
  }
  return { calls, inputBytes, outputBytes, cpuMs };
}

/**
 * What Redis did between two `stats`, less what reading the stats itself costs (the INFO command and its reply,
 * measured as the difference between two readings back to back: `overhead`).
 * - scripts: EVAL/EVALSHA calls, the store's round trips (every write is one script; a pipeline of several runs'
 *   events is one of them);
 * - commands: every command Redis ran, those the scripts ran included (XADD, HSET, PUBLISH, …);
 * - read: bytes Redis sent (replies, and messages to subscribers), the gateway's bytes read; written: bytes sent to it;
 * - cpuMs: Redis's own CPU time (its INFO's used_cpu_sys + used_cpu_user).
 */
export function difference(before, after, overhead) {
  let commands = 0;
  let scripts = 0;
  for (const [name, calls] of Object.entries(after.calls)) {
    const delta = calls - (before.calls[name] ?? 0) - (overhead?.calls[name] ?? 0);
    if (name === 'info' || name === 'config|resetstat' || name === 'flushall') continue;
    commands += delta;
    if (name === 'evalsha' || name === 'eval') scripts += delta;
  }
  return {
    commands,
    scripts,
    readBytes: after.outputBytes - before.outputBytes - (overhead?.outputBytes ?? 0),
    writtenBytes: after.inputBytes - before.inputBytes - (overhead?.inputBytes ?? 0),
    cpuMs: after.cpuMs - before.cpuMs - (overhead?.cpuMs ?? 0),
  };
}

/** What one `stats` reading costs in Redis's own counters (its INFO and reply), to subtract from a window's. */
export async function statsOverhead(port) {
  const a = await stats(port);
  const b = await stats(port);
  const calls = {};
  for (const [name, count] of Object.entries(b.calls)) calls[name] = count - (a.calls[name] ?? 0);
  return {
    calls,
    inputBytes: b.inputBytes - a.inputBytes,
    outputBytes: b.outputBytes - a.outputBytes,
    cpuMs: b.cpuMs - a.cpuMs,
  };
}

/** Starts redis-server on `port` (loopback, no persistence, and `args`); resolves once it answers PING. */
export async function startRedis(port, start, args = []) {
  const proc = start('redis-server', [
    '--port',
    String(port),
    // Its files (none are meant to be written) in a folder of its own, not the project's.
    '--dir',
    mkdtempSync(join(tmpdir(), 'bench-redis-')),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
    ...args,
  ]);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await command(port, 'PING')) === 'PONG') return proc;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis-server did not answer in 10 s:\n${proc.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A Redis Cluster of one primary per port (no replicas: the price of sharding, not of replication), made with
 * `redis-cli --cluster create`; resolves with the servers once every node says the cluster is ok.
 */
export async function startRedisCluster(ports, start) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
  const servers = [];
  for (const port of ports)
    servers.push(
      await startRedis(port, start, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--dir',
        dir,
      ]),
    );
  execFileSync(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 20_000;
  while (
    !(await Promise.all(ports.map((port) => command(port, 'CLUSTER', 'INFO')))).every((info) =>
      /cluster_state:ok/.test(info),
    )
  ) {
    if (Date.now() > deadline) throw new Error('the Redis Cluster did not come up in 20 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return servers;
}

/**
 * Empties Redis and zeroes its counters, so that a server under test starts from the same nothing as the last.
 * `port` may be a list (a cluster's nodes: each empties its own slots).
 */
export async function resetRedis(port) {
  for (const one of Array.isArray(port) ? port : [port]) {
    await command(one, 'FLUSHALL');
    await command(one, 'CONFIG', 'RESETSTAT');
  }
}
