// Jest's TypeScript transform. esbuild, already installed to bundle the explorer, strips the types file by file;
// `tsc --noEmit` does the type checking. The tests run as native ES modules (jest.config.js).
import { createHash } from 'node:crypto';
import { transformSync, version } from 'esbuild';

export default {
  process(source, path, options) {
    const { code, map } = transformSync(source, {
      loader: 'ts',
      format: options.supportsStaticESM ? 'esm' : 'cjs',
      target: 'es2022',
      sourcemap: 'external',
      sourcefile: path,
      // What tsconfig.json's ES2022 target means for class fields; esbuild reads no tsconfig here.
      tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
    });
    return { code, map };
  },
  // Jest caches the output under this key: a new esbuild, a changed file or another module format recompiles.
  getCacheKey(source, path, options) {
    return createHash('sha256')
      .update(`${version}\0${path}\0${options.supportsStaticESM}\0${options.configString}\0`)
      .update(source)
      .digest('hex');
  },
};
