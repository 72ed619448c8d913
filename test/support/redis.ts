import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisThreadStore, type RedisThreadStoreOptions } from '../../src/threads/redis/store.js';
import { silentLogger } from './harness.js';

/**
 * A real redis-server on a free loopback port, in a folder of its own, for one test file. `.ci/run`
 * installs redis-server; when it is missing the tests fail (they are never skipped).
 * With `persistent`, every write goes to an append-only file (fsync always), so a restart keeps the
 * data, as a production Redis with persistence does.
 */
export class RedisServer {
  private process: ChildProcess | undefined;
  private constructor(
    private currentPort: number,
    private readonly dir: string,
    private readonly persistent: boolean,
    private readonly extraArgs: readonly string[],
    readonly password?: string,
  ) {}

  /**
   * `args`: more redis-server arguments (such as `--replicaof 127.0.0.1 <port>`). `password`: the server asks for it
   * (`--requirepass`), and a replica gives it to its primary (`--masterauth`).
   */
  static async start(options: { persistent?: boolean; args?: string[]; password?: string } = {}): Promise<RedisServer> {
    if (spawnSync('redis-server', ['--version']).error) {
      throw new Error('redis-server is not installed: apt-get install -y redis-server (.ci/run does it).');
    }
    const server = new RedisServer(
      0,
      mkdtempSync(join(tmpdir(), 'cg-redis-')),
      options.persistent ?? false,
      options.args ?? [],
      options.password,
    );
    await onFreePort(async (port) => {
      server.currentPort = port;
      await server.launch();
    });
    return server;
  }

  /** Its port, kept across restarts. */
  get port(): number {
    return this.currentPort;
  }

  /** Freezes the server (SIGSTOP): it holds its connections and answers nothing until `resume`. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  resume(): void {
    this.process?.kill('SIGCONT');
  }

  /** Ends the server at once (SIGKILL), as a crashed machine would: nothing is saved, no client is told. */
  async kill(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  get url(): string {
    return `redis://${this.password ? `:${this.password}@` : ''}127.0.0.1:${this.port}`;
  }

  private async launch(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--daemonize',
      'no',
      '--protected-mode',
      'no',
      '--loglevel',
      'warning',
    ];
    if (this.persistent) args.push('--appendonly', 'yes', '--appendfsync', 'always');
    else args.push('--appendonly', 'no');
    if (this.password) args.push('--requirepass', this.password, '--masterauth', this.password);
    args.push(...this.extraArgs);
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.process = child;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${output}`)), 10_000);
      const probe = async () => {
        // Ready once it answers PING.
        for (let i = 0; i < 200 && child.exitCode === null; i++) {
          if (await ping(this.port, this.password)) {
            clearTimeout(timer);
            resolve();
            return;
          }
          await new Promise((r) => setTimeout(r, 25));
        }
      };
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited (${code}):\n${output}`));
      });
      void probe();
    });
  }

  /** Stops the server (SIGTERM) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }

  /** Stops it, then starts it again on the same port and folder (with its data when persistent). */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A TCP relay between a client and a Redis on loopback that a test can make stop passing the client's bytes on
 * (`hold`: they wait in the relay), drop every connection it relays (`drop`: what was held is lost, as when a network
 * path fails), and pass bytes on again (`pass`: what new connections held meanwhile goes first). Redis's answers are
 * always passed back.
 */
export class RedisRelay {
  private holding = false;
  private readonly links = new Set<{ client: Socket; server: Socket; held: Buffer[] }>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(redisPort: number): Promise<RedisRelay> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const relay = new RedisRelay(server, (server.address() as AddressInfo).port);
    server.on('connection', (client) => relay.link(client, connect(redisPort, '127.0.0.1')));
    return relay;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Bytes from clients waiting in the relay. */
  get heldBytes(): number {
    let bytes = 0;
    for (const link of this.links) for (const chunk of link.held) bytes += chunk.length;
    return bytes;
  }

  hold(): void {
    this.holding = true;
  }

  drop(): void {
    for (const { client, server } of this.links) {
      client.destroy();
      server.destroy();
    }
    this.links.clear();
  }

  pass(): void {
    this.holding = false;
    for (const link of this.links) for (const chunk of link.held.splice(0)) link.server.write(chunk);
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private link(client: Socket, server: Socket): void {
    const link = { client, server, held: [] as Buffer[] };
    this.links.add(link);
    const end = () => {
      client.destroy();
      server.destroy();
      this.links.delete(link);
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    server.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('data', (chunk: Buffer) => {
      if (this.holding || link.held.length > 0) link.held.push(chunk);
      else server.write(chunk);
    });
  }
}

/**
 * Runs `launch` on a free port, and again on another when the port was taken in the meantime: between freePort's
 * close and the server's bind, another test process (jest runs files in parallel) can bind the same port, and the
 * server then exits with "Address already in use". Any other failure is thrown.
 */
export async function onFreePort<T>(launch: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(await freePort());
    } catch (error) {
      if (attempt >= 5 || !(error as Error).message.includes('Address already in use')) throw error;
    }
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something on the port answers a RESP PING with +PONG (after AUTH, given its password). */
export function ping(port: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write(`${password ? `AUTH ${password}\r\n` : ''}PING\r\n`));
    socket.on('data', (data) => {
      answer += data.toString();
      if (answer.includes('+PONG')) done(true);
      else if (answer.split('\r\n').length > (password ? 2 : 1)) done(false);
    });
  });
}

/**
 * A started RedisThreadStore on `connection` with the tests' usual bounds (an hour's TTL, 20 runs a thread, a 10 s
 * lease), a key prefix of its own unless given, and no logs; `options` narrow what a test is about.
 */
export async function startRedisStore(
  connection: RedisThreadStoreOptions['connection'],
  options: Partial<RedisThreadStoreOptions> = {},
): Promise<RedisThreadStore> {
  const store = new RedisThreadStore({
    connection,
    keyPrefix: `t${Math.random().toString(36).slice(2, 8)}:`,
    ttlSeconds: 3600,
    maxRunsPerThread: 20,
    leaseMs: 10_000,
    claimTimeoutMs: 60_000,
    logger: silentLogger,
    ...options,
  });
  await store.start();
  return store;
}
