#!/usr/bin/env node
// `npm start`, and the package's `copilot-gateway` bin (`npx copilot-gateway`): runs the built gateway
// (dist/) in this very process, so signals sent to npm start reach it.
//
// In a source checkout (tsconfig.build.json beside package.json) it builds first when dist/ is missing or
// older than the sources. An installed package never builds: it ships dist/ as it was packed, and neither
// the TypeScript sources' build configuration nor TypeScript itself (a dev dependency); file times in
// node_modules say nothing about staleness there.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The newest modification time under `path` (a file or a folder). */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(`${path}/${name}`)));
}

if (existsSync(`${root}tsconfig.build.json`)) {
  const built = `${root}dist/.built`;
  // explorer/build, not explorer/: the bundle that the build copies, not the packages installed beside it.
  const sources = Math.max(
    ...['src', 'generated', 'schema', 'explorer/build', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map(
      (name) => newest(`${root}${name}`),
    ),
  );
  if (!existsSync(built) || statSync(built).mtimeMs < sources) {
    console.error('Building the gateway (npm run build)…');
    try {
      // Imported here, not above: the build needs the dev dependencies, which an installed package lacks.
      const { build } = await import('./build.mjs');
      build();
    } catch (error) {
      console.error(error.message);
      process.exit(1);
    }
  }
} else if (!existsSync(`${root}dist/src/main.js`)) {
  console.error(
    `Copilot Gateway is not built: ${root}dist/src/main.js is missing (a package packed without a build?).`,
  );
  process.exit(1);
}
await import('../dist/src/main.js');
