// `npm run explorer`: rebundles the offline explorer (explorer/app.tsx: GraphiQL from npm, graphql-ws for
// subscriptions) into explorer/build/app.js and app.css, which are committed, then copies them into dist/explorer/.
// GraphiQL and React are installed in explorer/ (its own package.json and lock file) on first use, so the
// gateway's own install and build never need them; esbuild and tsc are the root's. Everything the page needs,
// fonts included, is in those two files: it makes no request beyond the gateway. The output depends only on the
// sources and the locked versions (no time stamp, no absolute path), so CI rebuilds it and fails on a difference.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { BUNDLE_DIR, EXPLORER_FILES, buildExplorer } from './build-explorer.mjs';
import { installFolder } from './install-folder.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

async function bundleExplorer() {
  await installFolder(`${root}explorer`, { label: "the explorer's packages (GraphiQL, React)" });

  // Type-checked first (explorer/tsconfig.json, against the packages just installed): esbuild only strips types.
  const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'explorer/tsconfig.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error('The explorer does not type-check (see the errors above).');

  mkdirSync(BUNDLE_DIR, { recursive: true });
  // Bundled aside, then each file renamed into place, as dist/explorer/ is.
  const staging = mkdtempSync(`${BUNDLE_DIR}/.staging-`);
  try {
    const result = require('esbuild').buildSync({
      absWorkingDir: root,
      entryPoints: { app: 'explorer/app.tsx' },
      outdir: staging,
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: ['chrome109', 'firefox115', 'safari15.6'],
      jsx: 'automatic',
      minify: true,
      legalComments: 'eof',
      define: { 'process.env.NODE_ENV': '"production"' },
      // Fonts and images stay inside app.css: nothing is fetched from anywhere else.
      loader: { '.woff': 'dataurl', '.woff2': 'dataurl', '.ttf': 'dataurl', '.svg': 'dataurl', '.png': 'dataurl' },
      logLevel: 'warning',
    });
    if (result.errors.length > 0) throw new Error('The explorer bundle failed (see the errors above).');
    for (const name of EXPLORER_FILES) renameSync(`${staging}/${name}`, `${BUNDLE_DIR}/${name}`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  buildExplorer();
}

try {
  await bundleExplorer();
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
