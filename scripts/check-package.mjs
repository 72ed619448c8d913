// Checks the package as a user gets it: `npm pack`, the tarball installed alone into an empty folder with the
// production dependencies only, then `npx copilot-gateway` started in demo mode and asked `{ hello }` and a
// streamed generateCopilotResponse over HTTP, the public API imported from an ES module, and a TypeScript file
// type-checked against the installed declarations (moduleResolution nodenext and bundler). CI runs it after the
// build; it cleans up after itself whatever happens.
//
// Usage: node scripts/check-package.mjs [--keep]     (--keep leaves the temporary folder for a look)
import { execFileSync, spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const keep = process.argv.includes('--keep');
// Every wait below is a bound on a step that normally takes a few seconds, so that a broken package fails
// the check instead of hanging CI; none is a measurement.
const STEP_BOUND_MS = 120_000;

const work = mkdtempSync(join(tmpdir(), 'copilot-gateway-package-'));
const app = join(work, 'app');
let gatewayProcess;

function run(command, args, options = {}) {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** Apparent size in bytes of everything under `path`, symbolic links not followed. */
function sizeOf(path) {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const name of readdirSync(path)) total += sizeOf(join(path, name));
  return total;
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

/** 1. The tarball: what `npm pack` (and so `npm publish`) makes, after its prepack build. */
function pack() {
  console.log('== npm pack (prepack builds dist/ afresh)');
  const output = run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // npm prints the lifecycle scripts' output before the JSON on stdout.
  const [manifest] = JSON.parse(output.slice(output.indexOf('\n[') + 1));
  const files = manifest.files.map((file) => file.path);
  const required = [
    'package.json',
    'scripts/start.mjs',
    'scripts/build-state.mjs',
    'dist/src/index.js',
    'dist/src/index.d.ts',
    'dist/src/main.js',
    'dist/generated/possible-types.js',
    'dist/generated/possible-types.d.ts',
    'dist/schema/copilot.graphql',
    'dist/explorer/app.js',
    'schema/copilot.graphql',
  ];
  for (const file of required) check(files.includes(file), `The tarball lacks ${file}.`);
  const unwanted = files.filter((file) => /^(test|bench|deploy|explorer|\.ci)\/|\.test\.|(^|\/)\.built$/.test(file));
  check(unwanted.length === 0, `The tarball holds files a user does not need: ${unwanted.join(', ')}`);
  console.log(
    `   ${manifest.filename}: ${mb(manifest.size)} packed, ${mb(manifest.unpackedSize)} unpacked, ${files.length} files`,
  );
  return join(work, manifest.filename);
}

/** 2. Installed alone, as a dependency of an empty project, with the production dependencies only. */
function install(tarball) {
  console.log('== npm install --omit=dev <tarball> into an empty folder');
  rmSync(app, { recursive: true, force: true });
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ private: true, type: 'module' }, null, 2)}\n`);
  // npm's warnings (EBADENGINE, install-scripts) go to stderr: keep both streams.
  const output = run(
    'sh',
    ['-c', 'npm install --omit=dev --prefer-offline --no-audit --no-fund --loglevel=warn "$0" 2>&1', tarball],
    { cwd: app },
  );
  // The package must bring no install script of its own for a user's npm to ask about (its lock-file upkeep
  // is `npm run lockfile`, not a lifecycle script).
  const ownScripts = [...output.matchAll(/^npm warn install-scripts +copilot-gateway@\S+ \((.*)\)$/gm)].map(
    (m) => m[1],
  );
  check(ownScripts.length === 0, `npm reports install scripts of the package: ${ownScripts.join('; ')}\n${output}`);
  for (const line of output.split('\n').filter((l) => /EBADENGINE +package|deprecated|install-scripts +\S+@/.test(l))) {
    console.log(`   npm: ${line.replace(/^npm warn /, '')}`);
  }
  const modules = join(app, 'node_modules');
  const sizes = readdirSync(modules)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) =>
      name.startsWith('@') ? readdirSync(join(modules, name)).map((scoped) => `${name}/${scoped}`) : [name],
    )
    .map((name) => ({ name, bytes: sizeOf(join(modules, name)) }))
    .sort((a, b) => b.bytes - a.bytes);
  const total = sizes.reduce((sum, { bytes }) => sum + bytes, 0);
  console.log(`   node_modules: ${mb(total)} in ${sizes.length} top-level packages; the largest:`);
  for (const { name, bytes } of sizes.slice(0, 8)) console.log(`     ${mb(bytes).padStart(9)}  ${name}`);
}

/** Reads `stream` line by line until `match` returns something, then resolves with it. */
function waitForLine(stream, match, describe) {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let seen = '';
    const timer = setTimeout(() => {
      reject(new Error(`No ${describe} within ${STEP_BOUND_MS / 1000} s. Output so far:\n${seen}`));
    }, STEP_BOUND_MS);
    stream.on('data', (chunk) => {
      buffer += chunk;
      seen += chunk;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const found = match(line);
        if (found !== undefined) {
          clearTimeout(timer);
          resolve(found);
        }
      }
    });
    stream.on('end', () => {
      clearTimeout(timer);
      reject(new Error(`The gateway's output ended before its ${describe}:\n${seen}`));
    });
  });
}

/** 3. `npx copilot-gateway` in that folder: demo mode (no provider key), any free port. */
async function startGateway() {
  console.log('== npx copilot-gateway (demo mode, PORT=0)');
  // Only what npx needs: no provider key or gateway setting from the caller's environment leaks in.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME ?? work, PORT: '0', HOST: '127.0.0.1' };
  if (process.env.npm_config_cache) env.npm_config_cache = process.env.npm_config_cache;
  // Its own process group, so that the cleanup reaches npx and the gateway it runs, and nothing else.
  gatewayProcess = spawn('npx', ['--no-install', 'copilot-gateway'], {
    cwd: app,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  gatewayProcess.stdout.setEncoding('utf8');
  gatewayProcess.stderr.setEncoding('utf8');
  gatewayProcess.output = '';
  gatewayProcess.stdout.on('data', (chunk) => (gatewayProcess.output += chunk));
  let stderr = '';
  gatewayProcess.stderr.on('data', (chunk) => (stderr += chunk));
  try {
    // The ready line: pino's JSON (or a pretty line on a terminal) "Copilot Gateway ready at <url> (<mode>)".
    const ready = await waitForLine(
      gatewayProcess.stdout,
      (line) => {
        const found = /Copilot Gateway ready at (http:\/\/\S+) \((demo mode)?/.exec(line);
        return found ? { url: found[1], demo: Boolean(found[2]) } : undefined;
      },
      'ready line',
    );
    check(ready.demo, 'The gateway did not start in demo mode.');
    console.log(`   ready at ${ready.url}`);
    return ready.url;
  } catch (error) {
    throw new Error(`${error.message}\nstderr:\n${stderr}`, { cause: error });
  }
}

async function postGraphql(url, body, accept = 'application/json') {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(STEP_BOUND_MS),
  });
  if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${await response.text()}`);
  return response;
}

/** 4. Real requests: a query, and the chat mutation streamed as server-sent events (README's curl). */
async function talkTo(url) {
  console.log('== { hello } and a streamed generateCopilotResponse');
  const hello = await (await postGraphql(url, { query: '{ hello }' })).json();
  check(
    typeof hello.data?.hello === 'string' && hello.data.hello.length > 0,
    `{ hello } answered ${JSON.stringify(hello)}`,
  );

  const query =
    'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId ' +
    'messages @stream { id ... on TextMessageOutput { content @stream } } ' +
    '... @defer { status { ... on BaseResponseStatus { code } ... on FailedResponseStatus { reason details } } } } }';
  const data = {
    metadata: { requestType: 'Chat' },
    frontend: { actions: [] },
    messages: [{ id: '1', createdAt: '2026-01-01T00:00:00Z', textMessage: { role: 'user', content: 'Hello!' } }],
  };
  const response = await postGraphql(url, { query, variables: { data } }, 'text/event-stream');
  check(
    response.headers.get('content-type')?.startsWith('text/event-stream'),
    `The stream came as ${response.headers.get('content-type')}`,
  );
  const events = (await response.text())
    .split('\n\n')
    .map((block) => ({
      event: /^event: (.*)$/m.exec(block)?.[1],
      data: /^data: (.*)$/m.exec(block)?.[1],
    }))
    .filter((event) => event.event);
  const payloads = events.filter((event) => event.event === 'next').map((event) => JSON.parse(event.data));
  const chunks = [];
  let status;
  for (const payload of payloads) {
    for (const increment of payload.incremental ?? []) {
      const path = increment.path.join('.');
      if (/^generateCopilotResponse\.messages\.0\.content\.\d+$/.test(path)) chunks.push(...increment.items);
      if (increment.data?.status) status = increment.data.status;
    }
  }
  check(
    events.at(-1)?.event === 'complete',
    `The stream did not end with a complete event: ${JSON.stringify(events.at(-1))}`,
  );
  check(payloads.at(-1)?.hasNext === false, 'The last payload still had hasNext.');
  check(chunks.length > 1, `The reply was not streamed in chunks: ${JSON.stringify(chunks)}`);
  const text = chunks.join('');
  check(text.startsWith('[demo mode]'), `The reply is not the demo model's: ${text}`);
  check(status?.code === 'Success', `The run's status is ${JSON.stringify(status)}`);
  console.log(`   ${chunks.length} chunks, status ${status.code}: ${JSON.stringify(text.slice(0, 60))}…`);
}

async function stopGateway() {
  if (!gatewayProcess || gatewayProcess.exitCode !== null || gatewayProcess.signalCode !== null) return;
  const closed = new Promise((resolve) => gatewayProcess.once('close', resolve));
  // The group: npx, the shell it runs the bin with, and the gateway. npx's own exit status is the shell's
  // (killed by the signal), not the gateway's: the gateway's log says how it ended.
  process.kill(-gatewayProcess.pid, 'SIGTERM');
  const bound = setTimeout(() => process.kill(-gatewayProcess.pid, 'SIGKILL'), STEP_BOUND_MS);
  await closed; // stdout closed: every process of the group that held it has exited
  clearTimeout(bound);
  return /"msg":"shut down"|shut down/.test(gatewayProcess.output);
}

/** 5. The public API from an ES module, as the README shows it: a gateway created, listening, answering. */
function importFromEsm() {
  console.log("== import { createGateway } from 'copilot-gateway' (ESM)");
  writeFileSync(
    join(app, 'check.mjs'),
    `import { createGateway, possibleTypes, ERROR_CODES } from 'copilot-gateway';
import possibleTypesResult from 'copilot-gateway/possible-types';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (possibleTypesResult.possibleTypes.BaseMessageOutput?.includes('TextMessageOutput') !== true) throw new Error('possible-types');
if (possibleTypes !== possibleTypesResult.possibleTypes) throw new Error('possibleTypes export');
if (typeof ERROR_CODES !== 'object') throw new Error('ERROR_CODES');
const sdl = readFileSync(fileURLToPath(import.meta.resolve('copilot-gateway/schema/copilot.graphql')), 'utf8');
if (!sdl.includes('generateCopilotResponse')) throw new Error('schema');
const gateway = createGateway({});
const url = await gateway.listen(0, '127.0.0.1');
const answer = await (await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ query: '{ hello }' }),
})).json();
await gateway.shutdown();
if (typeof answer.data?.hello !== 'string') throw new Error('hello: ' + JSON.stringify(answer));
console.log('   createGateway answered { hello } on ' + url);
`,
  );
  const output = run(process.execPath, ['check.mjs'], { cwd: app, timeout: STEP_BOUND_MS });
  // The gateway's own log lines (JSON) are left out; the script's line says what it proved.
  console.log(
    output
      .split('\n')
      .filter((line) => line.startsWith('   '))
      .join('\n'),
  );
}

/** 6. TypeScript against the installed declarations, under both module resolutions a user is likely to pick. */
function typeCheck() {
  const repoRequire = createRequire(join(root, 'package.json'));
  const tsc = repoRequire.resolve('typescript/bin/tsc');
  const nodeTypes = join(repoRequire.resolve('@types/node/package.json'), '..', '..');
  writeFileSync(
    join(app, 'check.mts'),
    `import { createGateway, DemoAdapter, GatewayError, type Gateway, type GatewayOptions } from 'copilot-gateway';
import possibleTypesResult from 'copilot-gateway/possible-types';

const options: GatewayOptions = { adapter: new DemoAdapter(), path: '/api/copilotkit' };
const gateway: Gateway = createGateway(options);
const url: Promise<string> = gateway.listen(0);
const members: string[] = possibleTypesResult.possibleTypes.BaseMessageOutput;
export { url, members, GatewayError };
// @ts-expect-error: an option the gateway does not have must not type-check.
createGateway({ notAnOption: true });
`,
  );
  for (const [module, moduleResolution] of [
    ['nodenext', 'nodenext'],
    ['node16', 'node16'],
    ['esnext', 'bundler'],
  ]) {
    console.log(`== tsc: module ${module}, moduleResolution ${moduleResolution}`);
    const config = {
      compilerOptions: {
        target: 'ES2022',
        module,
        moduleResolution,
        strict: true,
        noEmit: true,
        // The package's own declarations are checked too: they must hold without its dev dependencies.
        skipLibCheck: false,
        typeRoots: [nodeTypes],
        types: ['node'],
      },
      files: ['check.mts'],
    };
    writeFileSync(join(app, 'tsconfig.json'), `${JSON.stringify(config, null, 2)}\n`);
    try {
      run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app, timeout: STEP_BOUND_MS });
    } catch (error) {
      throw new Error(`tsc (${moduleResolution}) failed:\n${error.stdout}${error.stderr}`, { cause: error });
    }
  }
}

let failed = false;
const started = performance.now();
try {
  const tarball = pack();
  install(tarball);
  const url = await startGateway();
  await talkTo(url);
  check(await stopGateway(), `The gateway did not drain and shut down on SIGTERM:\n${gatewayProcess.output}`);
  console.log('   SIGTERM: drained and shut down');
  importFromEsm();
  typeCheck();
  const seconds = Math.round((performance.now() - started) / 1000);
  console.log(
    `== the package installs alone, starts with npx and answers; its API imports and type-checks (${seconds} s)`,
  );
} catch (error) {
  failed = true;
  console.error(`check-package: ${error.message}`);
} finally {
  await stopGateway().catch(() => {});
  if (keep) console.log(`(kept ${work})`);
  else rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
