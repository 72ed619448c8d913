// Fails when an installed package declares a Node engine the running Node does not satisfy.
//
// npm only warns (EBADENGINE) and installs anyway, so a dependency bump that needs a newer Node than the one we
// declare in package.json's "engines" would go unnoticed until it breaks on a user's machine. CI runs this after
// `npm ci` on the oldest Node we support. The "overrides" in package.json pin the few transitive packages whose
// newest releases dropped Node 20 (see the commit that added them); this check keeps them honest.
//
// Usage: node scripts/check-engines.mjs            (checks ./node_modules against process.version)
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const root = process.cwd();
const node = process.version;

/** Every package directory under a node_modules folder, scoped ones and nested node_modules included. */
function* packageDirs(modules) {
  if (!existsSync(modules)) return;
  for (const entry of readdirSync(modules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dir = join(modules, entry.name);
    if (entry.name.startsWith('@')) {
      for (const scoped of readdirSync(dir, { withFileTypes: true })) {
        if (scoped.isDirectory()) yield* withNested(join(dir, scoped.name));
      }
    } else {
      yield* withNested(dir);
    }
  }
}

function* withNested(dir) {
  yield dir;
  yield* packageDirs(join(dir, 'node_modules'));
}

const offenders = [];
let checked = 0;
for (const dir of packageDirs(join(root, 'node_modules'))) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  } catch {
    continue; // not a package (a bin folder, a partial download)
  }
  checked += 1;
  const range = manifest.engines?.node;
  if (typeof range !== 'string' || range.trim() === '') continue;
  if (!semver.validRange(range)) continue; // npm ignores ranges it cannot parse; so do we
  if (!semver.satisfies(node, range, { includePrerelease: true })) {
    offenders.push(`${manifest.name}@${manifest.version} needs node ${range} (${dir.slice(root.length + 1)})`);
  }
}

if (offenders.length > 0) {
  console.error(`${offenders.length} installed package(s) do not support node ${node}:`);
  for (const line of offenders) console.error(`  ${line}`);
  console.error('Pin a version that supports our "engines" (package.json "overrides"), or raise "engines".');
  process.exit(1);
}
console.log(`engines: all ${checked} installed packages support node ${node}`);
