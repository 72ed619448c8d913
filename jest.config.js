/** Jest runs TypeScript as native ESM, types stripped by esbuild (test/support/esbuild-transform.mjs); `tsc --noEmit` checks them. */
export default {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': '<rootDir>/test/support/esbuild-transform.mjs' },
  testTimeout: 20000,
};
