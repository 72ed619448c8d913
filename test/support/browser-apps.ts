import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
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
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === lock) return dir;
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
  return dir;
}
