import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A gateway process started as `npm start` starts it. */
export interface GatewayProcess {
  /** Its GraphQL URL. */
  url: string;
  wsUrl: string;
  child: ChildProcess;
}

/**
 * Starts a gateway process as `npm start` does (scripts/start.mjs) with `env` over this process's environment, on a
 * free port; resolves once it says it is ready. The child is added to `children`, for the test to kill afterwards.
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  children: ChildProcess[],
): Promise<GatewayProcess> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      const match = output.match(/Copilot Gateway ready at (\S+)/);
      if (match) resolve(match[1]);
    });
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}):\n${output}`)));
  });
  return { url, wsUrl: url.replace(/^http/, 'ws'), child };
}
