#!/usr/bin/env node
// `npm start`, and the package's `copilot-gateway` bin (`npx copilot-gateway`): runs the built gateway
// (dist/) in this very process, so signals sent to npm start reach it.
//
// In a source checkout (tsconfig.build.json beside package.json) it builds first when dist/ is missing or
// older than the sources. An installed package never builds: it ships dist/ as it was packed, and neither
// the TypeScript sources' build configuration nor TypeScript itself (a dev dependency); file times in
// node_modules say nothing about staleness there.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildIsCurrent } from './build-state.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

if (existsSync(`${root}tsconfig.build.json`)) {
  if (!buildIsCurrent(root)) {
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
