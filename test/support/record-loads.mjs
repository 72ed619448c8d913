// `node --import ./test/support/record-loads.mjs …`: appends the URL of every module the process loads
// to the file named by RECORD_LOADS, one a line: through `import` (its own and its packages' ES modules,
// and the entry of each CommonJS package imported) and through `require` (every CommonJS file compiled,
// as a path). For tests of what a process loads when.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';

register('./record-loads-hooks.mjs', import.meta.url);

const compile = Module.prototype._compile;
Module.prototype._compile = function (content, filename) {
  if (process.env.RECORD_LOADS) appendFileSync(process.env.RECORD_LOADS, `${filename}\n`);
  return compile.call(this, content, filename);
};
