import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The CopilotKit React apps the browser tests run (test/browser: its own package.json and lock file, so that the
 * gateway's `npm install` fetches none of them), installed there with `npm ci` on first use, and again whenever
 * the lock file changed since (the stamp written after a complete install records which lock file it was).
 * Returns the folder, whose app.tsx is the app's source.
 */
export async function installBrowserApps(): Promise<string> {
  const dir = fileURLToPath(new URL('../browser', import.meta.url));
  const stamp = `${dir}/node_modules/.installed-from-lock`;
  const lock = createHash('sha256')
    .update(readFileSync(`${dir}/package-lock.json`))
    .digest('hex');
  const installed = () => existsSync(stamp) && readFileSync(stamp, 'utf8') === lock;
  if (installed()) return dir;
  // Suites run in parallel workers, and two may want the apps at once: one installs, the others wait for it.
  const release = await installLock(dir);
  try {
    if (!installed()) await npmCi(dir, stamp, lock);
  } finally {
    release();
  }
  return dir;
}

/**
 * Waits until this process holds the install lock (a folder made atomically). A lock older than ten minutes is
 * a dead installer's, and taken over.
 */
async function installLock(dir: string): Promise<() => void> {
  const lockDir = `${dir}/.install-lock`;
  for (;;) {
    try {
      mkdirSync(lockDir);
      return () => rmSync(lockDir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = Date.now() - (statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 600_000) rmSync(lockDir, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function npmCi(dir: string, stamp: string, lock: string): Promise<void> {
  process.stderr.write('Installing the CopilotKit React apps in test/browser (npm ci, first use only)\n');
  // No install scripts: the apps need none (the one they carry, @scarf/scarf's, only reports the download).
  const args = ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts'];
  const output: Buffer[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const npm = spawn('npm', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    npm.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    npm.on('error', reject);
    npm.on('close', resolve);
  });
  if (code !== 0) {
    throw new Error(`npm ci in ${dir} failed (exit ${code}):\n${Buffer.concat(output).toString().slice(-4000)}`);
  }
  writeFileSync(stamp, lock);
}
