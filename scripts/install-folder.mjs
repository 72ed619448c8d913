// Installs a folder of the repository that keeps its own package.json and lock file (the CopilotKit React apps
// in test/browser, the reference runtime in bench/reference, …) with `npm ci`, on first use and again whenever
// its lock file changed since: the stamp written after a complete install records which lock file it was.
// These folders exist so that the gateway's own `npm install` fetches only what the gateway needs.
//
//   node scripts/install-folder.mjs <folder> [--legacy-peer-deps]
//   import { installFolder } from './install-folder.mjs'
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Installs `dir` (absolute, or relative to the working directory) if its node_modules is missing or was installed
 * from another lock file. Concurrent callers (parallel test workers) wait for one installer. `label` names what is
 * installed in the one line printed when an install happens. `legacyPeerDeps` leaves peer dependencies out, so
 * that packages in the folder resolve them (graphql, @langchain/core, …) from the repository's own node_modules
 * instead of a second copy. Install scripts are never run. Returns the absolute folder.
 */
export async function installFolder(dir, { label = dir, legacyPeerDeps = false } = {}) {
  dir = resolve(dir);
  const stamp = `${dir}/node_modules/.installed-from-lock`;
  const lock = createHash('sha256')
    .update(readFileSync(`${dir}/package-lock.json`))
    .digest('hex');
  const installed = () => existsSync(stamp) && readFileSync(stamp, 'utf8') === lock;
  if (installed()) return dir;
  const release = await takeInstallLock(dir);
  try {
    if (!installed()) await npmCi(dir, stamp, lock, label, legacyPeerDeps);
  } finally {
    release();
  }
  return dir;
}

/** Waits until this process holds the folder's install lock (a folder made atomically); one older than ten minutes is a dead installer's. */
async function takeInstallLock(dir) {
  const lockDir = `${dir}/.install-lock`;
  for (;;) {
    try {
      mkdirSync(lockDir);
      return () => rmSync(lockDir, { recursive: true, force: true });
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      const age = Date.now() - (statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 600_000) rmSync(lockDir, { recursive: true, force: true });
      else await new Promise((done) => setTimeout(done, 500));
    }
  }
}

async function npmCi(dir, stamp, lock, label, legacyPeerDeps) {
  process.stderr.write(`Installing ${label} (npm ci in ${dir}, first use only)\n`);
  const args = ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts'];
  if (legacyPeerDeps) args.push('--legacy-peer-deps');
  const output = [];
  const code = await new Promise((done, fail) => {
    const npm = spawn('npm', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout.on('data', (chunk) => output.push(chunk));
    npm.stderr.on('data', (chunk) => output.push(chunk));
    npm.on('error', fail);
    npm.on('close', done);
  });
  if (code !== 0) {
    throw new Error(`npm ci in ${dir} failed (exit ${code}):\n${Buffer.concat(output).toString().slice(-4000)}`);
  }
  writeFileSync(stamp, lock);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [folder, ...flags] = process.argv.slice(2);
  if (!folder) {
    console.error('usage: node scripts/install-folder.mjs <folder> [--legacy-peer-deps]');
    process.exit(2);
  }
  try {
    await installFolder(folder, { legacyPeerDeps: flags.includes('--legacy-peer-deps') });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
