import { fileURLToPath } from 'node:url';
import { installFolder } from '../../scripts/install-folder.mjs';

/**
 * The CopilotKit React apps the browser tests run (test/browser: its own package.json and lock file, so that the
 * gateway's `npm install` fetches none of them), installed there with `npm ci` on first use, and again whenever
 * the lock file changed since (scripts/install-folder.mjs). Returns the folder, whose app.tsx is the app's source.
 */
export async function installBrowserApps(): Promise<string> {
  const dir = fileURLToPath(new URL('../browser', import.meta.url));
  return installFolder(dir, { label: 'the CopilotKit React apps' });
}
