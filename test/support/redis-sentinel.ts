import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisServer, onFreePort, ping } from './redis.js';

/**
 * Redis with failover on loopback, as production runs it with Sentinel: a primary, a replica of it, and three
 * Sentinels (quorum 2) watching the primary, quick to act (down after 1 s). Real redis-server processes;
 * `killPrimary` ends the primary as a crash would, and `failedOver` waits until the Sentinels have promoted the
 * replica.
 *
 * The servers and the Sentinels ask for passwords of their own (`password`, `sentinelPassword`), and the primary's
 * name is the set's own. Besides testing the gateway's passwords, that keeps Sentinels of other sets on the machine
 * out: a Sentinel left running by a killed test run, or another run's, watches a port it saw die; when a server of
 * this set starts on that port, such a Sentinel takes it for its old primary come back and makes it a replica of a
 * dead one (seen: the thread list answering STORE_UNAVAILABLE for the whole of a test). Without the password it
 * cannot.
 */
export class RedisSentinels {
  private constructor(
    /** The primary's name in the Sentinels' configuration. */
    readonly name: string,
    /** The primary's and the replica's password. */
    readonly password: string,
    /** The Sentinels' own password. */
    readonly sentinelPassword: string,
    readonly primary: RedisServer,
    readonly replica: RedisServer,
    /** Another application's primary and replica, watched by the same Sentinels as `<name>-other`. */
    private readonly other: { primary: RedisServer; replica: RedisServer },
    private readonly sentinels: { port: number; process: ChildProcess }[],
    private readonly dir: string,
  ) {}

  static async start(): Promise<RedisSentinels> {
    const name = `primary-${randomBytes(4).toString('hex')}`;
    const [password, sentinelPassword] = [randomBytes(12).toString('hex'), randomBytes(12).toString('hex')];
    const primary = await RedisServer.start({ password });
    const replica = await RedisServer.start({ password, args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    const otherPrimary = await RedisServer.start({ password });
    const other = {
      primary: otherPrimary,
      replica: await RedisServer.start({ password, args: ['--replicaof', '127.0.0.1', String(otherPrimary.port)] }),
    };
    const dir = mkdtempSync(join(tmpdir(), 'cg-sentinel-'));
    const sentinels: { port: number; process: ChildProcess }[] = [];
    for (let i = 0; i < 3; i++) {
      const config = join(dir, `sentinel-${i}.conf`);
      sentinels.push(
        await onFreePort(async (port) => {
          writeFileSync(
            config,
            [
              `port ${port}`,
              'bind 127.0.0.1',
              'protected-mode no',
              `dir ${dir}`,
              // Asked of clients and of the other Sentinels, which give it too.
              `requirepass ${sentinelPassword}`,
              `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
              `sentinel auth-pass ${name} ${password}`,
              `sentinel down-after-milliseconds ${name} 1000`,
              `sentinel failover-timeout ${name} 5000`,
              `sentinel parallel-syncs ${name} 1`,
              `sentinel monitor ${name}-other 127.0.0.1 ${other.primary.port} 2`,
              `sentinel auth-pass ${name}-other ${password}`,
              `sentinel down-after-milliseconds ${name}-other 1000`,
              `sentinel failover-timeout ${name}-other 5000`,
              '',
            ].join('\n'),
          );
          const process = spawn('redis-server', [config, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
          let output = '';
          let started = false;
          const keep = (chunk: Buffer) => {
            if (!started) output += chunk;
          };
          process.stdout!.on('data', keep);
          process.stderr!.on('data', keep);
          for (let i = 0; i < 200 && process.exitCode === null && !(await ping(port, sentinelPassword)); i++)
            await new Promise((r) => setTimeout(r, 25));
          if (process.exitCode !== null) throw new Error(`redis-server --sentinel exited:\n${output}`);
          started = true;
          return { port, process };
        }),
      );
    }
    const set = new RedisSentinels(name, password, sentinelPassword, primary, replica, other, sentinels, dir);
    // Replicating before anything is written (the replica's first sync done).
    await set.untilReplicated();
    await set.untilReplicated(other.primary);
    return set;
  }

  /** The Sentinels and the passwords, as the store's connection (RedisConnection) takes them. */
  get connection(): {
    sentinels: { host: string; port: number }[];
    name: string;
    password: string;
    sentinelPassword: string;
  } {
    return {
      sentinels: this.sentinels.map(({ port }) => ({ host: '127.0.0.1', port })),
      name: this.name,
      password: this.password,
      sentinelPassword: this.sentinelPassword,
    };
  }

  /** The Sentinels' addresses, as REDIS_SENTINELS takes them. */
  get addresses(): string[] {
    return this.sentinels.map(({ port }) => `127.0.0.1:${port}`);
  }

  /** The port a Sentinel (the first, unless said) names as the primary `name` now. */
  async primaryPort(name = this.name, sentinelIndex = 0): Promise<number> {
    const sentinel = new Redis({
      port: this.sentinels[sentinelIndex].port,
      host: '127.0.0.1',
      password: this.sentinelPassword,
      lazyConnect: true,
    });
    try {
      await sentinel.connect();
      const [, port] = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', name)) as [string, string];
      return Number(port);
    } finally {
      sentinel.disconnect();
    }
  }

  /**
   * Fails the other application's primary over to its replica (`SENTINEL FAILOVER`, the old primary left running)
   * and waits until every Sentinel names the replica.
   */
  async failOverOther(): Promise<void> {
    const name = `${this.name}-other`;
    const sentinel = new Redis({ port: this.sentinels[0].port, host: '127.0.0.1', password: this.sentinelPassword });
    const deadline = Date.now() + 30_000;
    try {
      // Refused (NOGOODSLAVE) until the Sentinel has found the replica (it asks the primary every few seconds).
      for (;;) {
        const refused = await sentinel.call('SENTINEL', 'FAILOVER', name).then(
          () => undefined,
          (error: Error) => error,
        );
        if (!refused) break;
        if (Date.now() > deadline) throw refused;
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      sentinel.disconnect();
    }
    for (let i = 0; i < this.sentinels.length; i++) {
      while ((await this.primaryPort(name, i).catch(() => 0)) !== this.other.replica.port) {
        if (Date.now() > deadline) throw new Error(`the Sentinels did not fail ${name} over`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** Waits until the replica of `primary` (this set's, unless said) has everything it has (its offset caught up). */
  async untilReplicated(primary = this.primary): Promise<void> {
    const client = new Redis({ port: primary.port, host: '127.0.0.1', password: this.password });
    try {
      for (let i = 0; i < 400; i++) {
        // WAIT 1 replica: answers 1 once the replica has acknowledged every write so far.
        if ((await client.wait(1, 100)) >= 1) return;
      }
      throw new Error('the replica did not catch up');
    } finally {
      client.disconnect();
    }
  }

  /** Ends the primary at once (SIGKILL). */
  killPrimary(): Promise<void> {
    return this.primary.kill();
  }

  /** Waits until the Sentinels name the replica as the primary. */
  async failedOver(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await this.primaryPort().catch(() => 0)) === this.replica.port) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the Sentinels did not fail over');
  }

  async close(): Promise<void> {
    await Promise.all(
      this.sentinels.map(
        ({ process }) =>
          new Promise<void>((resolve) => {
            if (process.exitCode !== null || process.signalCode !== null) return resolve();
            process.once('exit', () => resolve());
            process.kill('SIGKILL');
          }),
      ),
    );
    await Promise.all([this.primary, this.replica, this.other.primary, this.other.replica].map((s) => s.close()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
