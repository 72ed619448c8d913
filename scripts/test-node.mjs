// Runs core test suites on another Node release than the one running this script: Node 24 (the current LTS)
// or 22, installed into .node/<major>/ on first use (scripts/node-release.mjs).
//
// Usage: node scripts/test-node.mjs [22|24] [suite …]     (default: 24 and the suites below)
//
// Jest itself runs under that binary, and the binary's folder comes first on PATH, so that every process a
// test starts with `node` (or process.execPath) is that Node too.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RELEASES, nodeBinary } from './node-release.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

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
if (!RELEASES[major]) {
  console.error(`test-node: no Node ${major} here; one of ${Object.keys(RELEASES).join(', ')}.`);
  process.exit(2);
}

// nodeBinary has checked that the binary is this release.
const node = nodeBinary(major);
const version = `v${RELEASES[major]}`;

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
