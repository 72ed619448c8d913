import vm from 'node:vm';
import { afterAll, afterEach, beforeAll, expect } from '@jest/globals';

/**
 * Fails each test of the file during which the real process saw an uncaught exception or an
 * unhandled rejection (Jest gives a test file a copy of `process`, whose listeners never fire; without
 * a listener, Node ends the process on an unhandled rejection: that is the crash these tests look for).
 * Call once at the top of a test file.
 */
export function failOnProcessErrors(): void {
  const realProcess = vm.runInThisContext('process') as NodeJS.Process;
  const processErrors: unknown[] = [];
  const recordUncaught = (error: unknown) => void processErrors.push(error);
  beforeAll(() => {
    realProcess.on('uncaughtException', recordUncaught);
    realProcess.on('unhandledRejection', recordUncaught);
  });
  afterAll(() => {
    realProcess.off('uncaughtException', recordUncaught);
    realProcess.off('unhandledRejection', recordUncaught);
  });
  afterEach(() => {
    const errors = processErrors
      .splice(0)
      .map((error) => (error instanceof Error ? `${error.name}: ${error.message}\n${error.stack}` : String(error)));
    expect(errors).toEqual([]);
  });
}
