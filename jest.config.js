import { availableParallelism } from 'node:os';

/** Jest runs TypeScript as native ESM, types stripped by esbuild (test/support/esbuild-transform.mjs); `tsc --noEmit` checks them. */
export default {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': '<rootDir>/test/support/esbuild-transform.mjs' },
  // The clients only the tests drive live in test/clients, installed on first use (test/clients/package.json).
  globalSetup: '<rootDir>/test/support/install-clients.mjs',
  testTimeout: 20000,
  // Jest's default is one worker fewer than the cores: one on a two-core machine (CI's), where the suite then runs
  // file after file although most of its time is spent waiting (on servers, browsers, Redis). Two workers there
  // take the whole suite from about ten minutes to about five; more cores keep Jest's default.
  maxWorkers: Math.max(2, availableParallelism() - 1),
};
