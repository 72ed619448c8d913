import { readFileSync } from 'node:fs';

/**
 * The gateway's version, as AG-UI's /info and the traces report it: from the package.json above this file
 * (src/gateway/ when run from source, dist/src/gateway/ when built).
 */
export const GATEWAY_VERSION: string = (() => {
  for (const candidate of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'copilot-gateway' && manifest.version) return manifest.version;
    } catch {
      // not there: the next one
    }
  }
  return '0.0.0';
})();
