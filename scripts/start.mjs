// `npm start`: runs the built gateway (dist/) in this very process, so signals sent to npm start
// reach it. Builds first when dist/ is missing or older than the sources.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from './build.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The newest modification time under `path` (a file or a folder). */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(`${path}/${name}`)));
}

const built = `${root}dist/.built`;
const sources = Math.max(
  ...['src', 'generated', 'schema', 'explorer', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((name) =>
    newest(`${root}${name}`),
  ),
);
if (!existsSync(built) || statSync(built).mtimeMs < sources) {
  console.error('Building the gateway (npm run build)…');
  try {
    build();
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
await import('../dist/src/main.js');
