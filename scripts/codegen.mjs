// `npm run codegen`: writes generated/ from schema/*.graphql with graphql-codegen (codegen/codegen.yml).
// graphql-codegen, its plugins and the graphql they use are installed in codegen/ (its own package.json and lock
// file) on first use, so the gateway's own install needs none of them. It runs in codegen/: graphql-codegen loads
// its plugins from the folder it runs in, and from the root they would come with a second graphql (or not at all).
// Arguments are passed on (`npm run codegen -- --watch`).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { installFolder } from './install-folder.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

try {
  const dir = await installFolder(`${root}codegen`, { label: 'graphql-codegen and its plugins' });
  const cli = `${dir}/node_modules/@graphql-codegen/cli`;
  const { bin } = JSON.parse(readFileSync(`${cli}/package.json`, 'utf8'));
  const args = [`${cli}/${bin['graphql-codegen']}`, '--config', 'codegen.yml', ...process.argv.slice(2)];
  const result = spawnSync(process.execPath, args, { cwd: dir, stdio: 'inherit' });
  process.exit(result.status ?? 1);
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
