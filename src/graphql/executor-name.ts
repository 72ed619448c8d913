// The executors' names (GatewayOptions.executor, GATEWAY_EXECUTOR), in one place: the seam is executor.ts.

/** Which executor runs the operations: the gateway's own fast paths, or the libraries' as shipped. */
export type ExecutorName = 'fast' | 'stock';

/** Every executor's name, the default first. */
export const EXECUTOR_NAMES: readonly ExecutorName[] = ['fast', 'stock'];

export function isExecutorName(value: unknown): value is ExecutorName {
  return (EXECUTOR_NAMES as readonly unknown[]).includes(value);
}
