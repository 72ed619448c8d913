// npm run lint (and CI): the layers of src/ only look down, and no import cycle joins two files.
//
// Each file of src/ belongs to one layer (LAYERS, first match wins); a file may import files of its own
// layer or of layers below it, never above. Within that, the import graph has no cycle (type-only imports
// count too: a cycle of types is still two files that cannot be read apart). Exits 1 and names every
// import that breaks a rule. Uses TypeScript's own scanner (ts.preProcessFile) to find imports, dynamic
// ones included.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// `node scripts/check-layers.mjs [folder]`: src/ by default; another folder laid out the same way for its test.
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = resolve(process.argv[2] ?? join(root, 'src'));

/** From the ground floor up. A pattern is a path under src/: a folder (ending in /) or a file. */
const LAYERS = [
  { name: 'core', paths: ['core/'] },
  { name: 'upstream clients', paths: ['upstream/'] },
  {
    name: 'adapters, agents, actions, the store',
    paths: [
      'adapters/',
      'agents/',
      'actions/',
      'threads/',
      'auth/',
      'limits/',
      'ag-ui/agent.ts',
      'ag-ui/agent-events.ts',
      'ag-ui/messages.ts',
    ],
  },
  { name: 'engine', paths: ['engine/', 'observability/', 'ag-ui/input.ts'] },
  { name: 'views', paths: ['views/', 'ag-ui/events.ts'] },
  // generated/ (beside src/: the resolvers' types codegen writes from the schema) imports views and GraphQL types.
  { name: 'GraphQL', paths: ['graphql/', '../generated/'] },
  { name: 'transports', paths: ['transports/', 'ag-ui/'] },
  { name: 'gateway', paths: ['gateway/', 'gateway.ts', 'env.ts', 'main.ts', 'index.ts', 'public-types.ts'] },
];

function layerOf(file) {
  const path = relative(src, file).split('\\').join('/');
  const index = LAYERS.findIndex((layer) =>
    layer.paths.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p)),
  );
  return index;
}

function walk(dir, out = []) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const files = walk(src);
const imports = new Map();
const problems = [];
for (const file of files) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const targets = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const target = resolve(dirname(file), fileName.replace(/\.js$/, '.ts'));
    // Outside src/: only generated/ has a layer (GraphQL's); anything else is not the gateway's code.
    if (!target.startsWith(src) && layerOf(target) < 0) continue;
    targets.push(target);
  }
  imports.set(file, targets);
  const from = layerOf(file);
  if (from < 0) problems.push(`${relative(root, file)} is in no layer: add it to LAYERS in scripts/check-layers.mjs`);
  for (const target of targets) {
    const to = layerOf(target);
    if (from >= 0 && to > from) {
      problems.push(
        `${relative(root, file)} (${LAYERS[from].name}) imports ${relative(root, target)}, a layer above (${LAYERS[to].name})`,
      );
    }
  }
}

// Cycles: Tarjan's strongly connected components; every component of more than one file is a cycle.
let index = 0;
const indices = new Map();
const lows = new Map();
const stack = [];
const onStack = new Set();
function connect(file) {
  indices.set(file, index);
  lows.set(file, index);
  index++;
  stack.push(file);
  onStack.add(file);
  for (const target of imports.get(file) ?? []) {
    if (!imports.has(target)) continue;
    if (!indices.has(target)) {
      connect(target);
      lows.set(file, Math.min(lows.get(file), lows.get(target)));
    } else if (onStack.has(target)) {
      lows.set(file, Math.min(lows.get(file), indices.get(target)));
    }
  }
  if (lows.get(file) === indices.get(file)) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) {
      problems.push(
        `an import cycle: ${component
          .map((f) => relative(root, f))
          .sort()
          .join(', ')}`,
      );
    }
  }
}
for (const file of files) if (!indices.has(file)) connect(file);

if (problems.length) {
  console.error(`check-layers: ${problems.length} problem(s)\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log(`check-layers: ${files.length} files in ${LAYERS.length} layers, every import looks down, no cycle`);
