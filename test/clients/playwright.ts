// Playwright's driver for the system's Chromium (the browser and explorer suites). Installed in this folder and
// imported through this file (see apollo.ts for why).
export { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
