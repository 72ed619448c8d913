import { describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = join(process.cwd(), 'scripts', 'check-layers.mjs');

/** Runs the layer check over a folder laid out as src/ is, made of `files` (path → text). */
async function check(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const folder = await mkdtemp(join(tmpdir(), 'layers-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(folder, path)), { recursive: true });
      await writeFile(join(folder, path), text);
    }
    const { stdout } = await run(process.execPath, [script, folder]);
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

describe('scripts/check-layers.mjs', () => {
  test('passes src/ as it stands', async () => {
    const { stdout } = await run(process.execPath, [script]);
    expect(stdout).toMatch(/every import looks down, no cycle/);
  });

  test('accepts imports that look down, dynamic ones included', async () => {
    const result = await check({
      'core/ids.ts': 'export const id = 1;\n',
      'engine/run.ts': "import { id } from '../core/ids.js';\nexport const run = id;\n",
      'transports/http.ts': "export const load = () => import('../engine/run.js');\n",
    });
    expect(result).toEqual({ code: 0, output: expect.stringMatching(/3 files/) });
  });

  test('refuses an import of a layer above, naming both files and layers', async () => {
    const result = await check({
      'core/ids.ts': "import type { Run } from '../engine/run.js';\nexport type Id = Run;\n",
      'engine/run.ts': 'export type Run = string;\n',
    });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/core\/ids\.ts \(core\) imports .*engine\/run\.ts, a layer above \(engine\)/);
  });

  test('refuses a view that imports GraphQL, and a file below GraphQL that imports generated/', async () => {
    const views = await check({
      'views/run.ts': "import { plan } from '../graphql/plan.js';\nexport const run = plan;\n",
      'graphql/plan.ts': 'export const plan = 1;\n',
    });
    expect(views.code).toBe(1);
    expect(views.output).toMatch(/views\/run\.ts \(views\) imports .*graphql\/plan\.ts, a layer above \(GraphQL\)/);
    const generated = await check({
      'core/ids.ts': "import type { Resolvers } from '../../generated/graphql.js';\nexport type Id = Resolvers;\n",
      'graphql/resolvers.ts':
        "import type { Resolvers } from '../../generated/graphql.js';\nexport type R = Resolvers;\n",
    });
    expect(generated.code).toBe(1);
    expect(generated.output).toMatch(
      /core\/ids\.ts \(core\) imports .*generated\/graphql\.ts, a layer above \(GraphQL\)/,
    );
    expect(generated.output).not.toMatch(/graphql\/resolvers\.ts \(GraphQL\) imports/);
  });

  test('refuses an import cycle within one layer', async () => {
    const result = await check({
      'engine/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'engine/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/an import cycle: .*engine\/a\.ts, .*engine\/b\.ts/);
  });

  test('refuses a file in no layer', async () => {
    const result = await check({ 'elsewhere/x.ts': 'export const x = 1;\n' });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/elsewhere\/x\.ts is in no layer/);
  });
});
