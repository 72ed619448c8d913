// Keeps a package-lock.json usable by `npm ci` on this project's machines, and on every other platform.
//
// The npm registry mirror these machines reach may lack other platforms' native packages (e.g.
// @swc/core-darwin-arm64 beside @swc/core-linux-x64-gnu). `npm install` then leaves those optional packages
// out of the lock file, and `npm ci` rejects that lock file as out of sync ("Missing: ... from lock file").
// This adds the missing entries back as optional packages, each with the `os`, `cpu` and `libc` its
// package declares: without them npm cannot tell that a package is another platform's, and installs a
// darwin or win32 binary wherever it can fetch one. Entries an older run added without them are completed
// too. It changes nothing when nothing is missing.
//
// `npm run lockfile` after any `npm install` that changed a lock file (here or in test/browser);
// `node scripts/complete-lockfile.mjs [--check] [path/to/package-lock.json]` (default: the one in the current
// folder). With --check it changes nothing and fails if anything is missing (CI). Not an npm lifecycle script:
// a package's own install scripts are what npm 11 asks its users to approve.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const check = process.argv.includes('--check');
const file = resolve(process.argv.slice(2).find((arg) => arg !== '--check') ?? 'package-lock.json');
// Installed as a dependency of another project, the package has no lock file of its own.
if (!existsSync(file)) process.exit(0);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages ?? {};
const changed = [];

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
    Object.assign(packages[hoisted], platformOf(name, version));
    changed.push(`${name}@${version}`);
  }
}
// An entry npm wrote itself has its integrity; one without it, optional and with no platform, is ours.
for (const [path, meta] of Object.entries(packages)) {
  if (!meta.optional || meta.integrity || meta.os || meta.cpu) continue;
  const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  // Only a name that says a platform is asked about, so that a run with nothing to do asks nothing.
  const named = platformFromName(name);
  if (!named.os && !named.cpu) continue;
  Object.assign(meta, platformOf(name, meta.version));
  changed.push(`${name}@${meta.version}`);
}

if (changed.length && check) {
  console.error(
    `complete-lockfile: ${file} lacks ${changed.length} other platforms' optional package(s) or their os/cpu ` +
      `(${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ', …' : ''}): run npm run lockfile and commit.`,
  );
  process.exit(1);
}
if (changed.length) {
  lock.packages = Object.fromEntries(
    Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
  );
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`complete-lockfile: ${changed.length} optional platform package(s) added or completed in ${file}`);
}

/** The package's own `os`, `cpu` and `libc`, from the registry; from its name when the registry cannot say. */
function platformOf(name, version) {
  try {
    const out = execFileSync('npm', ['view', `${name}@${version}`, 'os', 'cpu', 'libc', '--json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 30_000,
    });
    const published = out.trim() ? JSON.parse(out) : {};
    const platform = {};
    for (const key of ['os', 'cpu', 'libc']) if (Array.isArray(published[key])) platform[key] = published[key];
    if (platform.os || platform.cpu) return platform;
  } catch {
    // No registry (offline, or it does not know the package): the name says it, by the usual convention.
  }
  return platformFromName(name);
}

/** `@swc/core-linux-arm64-musl` → linux, arm64, musl: the suffixes native packages are published under. */
function platformFromName(name) {
  const parts = name.slice(name.lastIndexOf('/') + 1).split('-');
  const os = parts.find((p) =>
    ['darwin', 'linux', 'win32', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix', 'android', 'openharmony'].includes(p),
  );
  const cpu = parts.find((p) =>
    ['x64', 'arm64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32'].includes(p),
  );
  const libc = parts.some((p) => p.startsWith('musl'))
    ? 'musl'
    : parts.some((p) => p === 'gnu' || p.startsWith('gnueabi') || p === 'glibc')
      ? 'glibc'
      : undefined;
  return {
    ...(os ? { os: [os] } : {}),
    ...(cpu ? { cpu: [cpu] } : {}),
    ...(os === 'linux' && libc ? { libc: [libc] } : {}),
  };
}
