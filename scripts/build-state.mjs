// Whether dist/ is the build of the sources as they are: `npm start` (scripts/start.mjs) builds first when it is not,
// and `npm run bench` builds only then. Dependency-free: an installed package ships this file with start.mjs.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What the build reads. explorer/build, not explorer/: the bundle that the build copies, not the packages beside it. */
const SOURCES = [
  'src',
  'generated',
  'schema',
  'explorer/build',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
];

/** The newest modification time under `path` (a file or a folder). */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** True when `root`'s dist/ was built (its .built mark) after every source last changed. */
export function buildIsCurrent(root) {
  const built = join(root, 'dist', '.built');
  return existsSync(built) && statSync(built).mtimeMs >= Math.max(...SOURCES.map((name) => newest(join(root, name))));
}
