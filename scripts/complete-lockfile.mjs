// Keeps package-lock.json usable by `npm ci` on this project's machines.
//
// The npm registry mirror these machines reach serves native packages only for their own platform
// (e.g. @swc/core-linux-x64-gnu, not @swc/core-darwin-arm64). `npm install` then leaves the other
// platforms' optional packages out of the lock file, and `npm ci` rejects that lock file as out of
// sync ("Missing: @swc/core-darwin-arm64@ from lock file"). This adds the missing entries back as
// optional packages; `npm ci` skips those it cannot fetch. It changes nothing when none are missing.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
// Installed as a dependency of another project, the package has no lock file of its own.
if (!existsSync(file)) process.exit(0);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages ?? {};
const added = [];
for (const [path, meta] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ''}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (packages[nested] || packages[hoisted]) continue;
    packages[hoisted] = {
      version,
      optional: true,
      ...(meta.dev ? { dev: true } : {}),
      ...(meta.devOptional ? { devOptional: true } : {}),
    };
    added.push(`${name}@${version}`);
  }
}
if (added.length) {
  lock.packages = Object.fromEntries(
    Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
  );
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`complete-lockfile: added ${added.length} optional platform package(s) to package-lock.json`);
}
