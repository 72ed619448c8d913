// `node --import ./test/support/record-loads.mjs …`: appends the URL of every module the process loads
// through `import` (its own and its packages' ES modules, and the entry of each CommonJS package
// imported) to the file named by RECORD_LOADS, one a line. For tests of what a process loads when.
import { register } from 'node:module';

register('./record-loads-hooks.mjs', import.meta.url);
