// Puts the offline explorer into dist/explorer/ (app.js and app.css), for `npm run build`: a copy of the bundle
// committed in explorer/build/, so that building the gateway needs neither GraphiQL nor React installed.
// `npm run explorer` (scripts/explorer.mjs) is what rebundles explorer/app.tsx into explorer/build/.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const EXPLORER_FILES = ['app.js', 'app.css'];
export const BUNDLE_DIR = `${root}explorer/build`;

export function buildExplorer() {
  const missing = EXPLORER_FILES.filter((name) => !existsSync(`${BUNDLE_DIR}/${name}`));
  if (missing.length > 0) {
    throw new Error(
      `The explorer's bundle is missing (explorer/build/${missing.join(', ')}): run \`npm run explorer\`.`,
    );
  }
  const outdir = `${root}dist/explorer`;
  mkdirSync(outdir, { recursive: true });
  // Copied aside, then each file renamed into place: a gateway serving the old files (or a second
  // build running at the same time) never reads half a file.
  const staging = mkdtempSync(`${outdir}/.staging-`);
  try {
    for (const name of EXPLORER_FILES) copyFileSync(`${BUNDLE_DIR}/${name}`, `${staging}/${name}`);
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
