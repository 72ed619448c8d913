// Bundles the offline explorer (explorer/app.tsx: GraphiQL from npm, graphql-ws for subscriptions)
// into dist/explorer/app.js and app.css with esbuild. Everything the page needs, fonts included, is
// in those two files: it makes no request beyond the gateway.
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const EXPLORER_FILES = ['app.js', 'app.css'];

export function buildExplorer() {
  let esbuild;
  try {
    esbuild = createRequire(import.meta.url)('esbuild');
  } catch {
    throw new Error(
      'The explorer is not built and esbuild is not installed: run `npm install` (with the dev dependencies), then `npm run build`.',
    );
  }
  const outdir = `${root}dist/explorer`;
  mkdirSync(outdir, { recursive: true });
  // Built aside, then each file renamed into place: a gateway serving the old files (or a second
  // build running at the same time) never reads half a file.
  const staging = mkdtempSync(`${outdir}/.staging-`);
  try {
    const result = esbuild.buildSync({
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
    if (result.errors.length > 0) throw new Error('The explorer build failed (see the errors above).');
    for (const name of EXPLORER_FILES) renameSync(`${staging}/${name}`, `${outdir}/${name}`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  writeFileSync(`${outdir}/.built`, `${new Date().toISOString()}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    buildExplorer();
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
