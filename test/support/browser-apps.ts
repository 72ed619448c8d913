import { fileURLToPath } from 'node:url';
import { installFolder } from '../../scripts/install-folder.mjs';
import type { Page } from '../clients/playwright.js';

/**
 * The CopilotKit React apps the browser tests run (test/browser: its own package.json and lock file, so that the
 * gateway's `npm install` fetches none of them), installed there with `npm ci` on first use, and again whenever
 * the lock file changed since (scripts/install-folder.mjs). Returns the folder, whose app.tsx is the app's source.
 */
export async function installBrowserApps(): Promise<string> {
  const dir = fileURLToPath(new URL('../browser', import.meta.url));
  return installFolder(dir, { label: 'the CopilotKit React apps' });
}

/**
 * Resolves once a CopilotKit 1.74 page can take a message: its /info and its agent's first POST …/connect have
 * answered. Before both, 1.74 drops a message sent: the Enter clears the input, no run follows, the chat stays empty
 * (seen in CI under load; every time with either answer held back three seconds). Call before the page loads.
 */
export function copilotKitReady(page: Page): Promise<unknown> {
  const path = (response: { url(): string }) => new URL(response.url()).pathname;
  return Promise.all([
    page.waitForResponse((response) => path(response).endsWith('/info')),
    page.waitForResponse((response) => path(response).endsWith('/connect') && response.request().method() === 'POST'),
  ]);
}
