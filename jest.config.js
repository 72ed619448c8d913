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
};
