// `npm run build`: compiles the gateway to dist/ (tsc, tsconfig.build.json), copies the SDL it
// loads at run time next to it (dist/schema/) and copies the offline explorer's committed bundle (explorer/build/,
// written by `npm run explorer`) to dist/explorer/.
// `npm start` runs this when dist/ is missing or older than the sources. `--clean` (what `npm pack` and
// `npm publish` run, as prepack) empties dist/ first, so that the package holds no file whose source is gone.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { buildExplorer } from './build-explorer.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

export function build({ clean = false } = {}) {
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    throw new Error(
      'The gateway is not built and TypeScript is not installed: run `npm install` (with the dev dependencies), then `npm run build`.',
    );
  }
  if (clean) rmSync(`${root}dist`, { recursive: true, force: true });
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('The build failed (see the TypeScript errors above).');
  mkdirSync(`${root}dist/schema`, { recursive: true });
  for (const name of readdirSync(`${root}schema`)) {
    if (name.endsWith('.graphql')) copyFileSync(`${root}schema/${name}`, `${root}dist/schema/${name}`);
  }
  buildExplorer();
  writeFileSync(`${root}dist/.built`, `${new Date().toISOString()}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    build({ clean: process.argv.includes('--clean') });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
