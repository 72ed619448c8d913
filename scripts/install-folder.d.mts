/** Types for scripts/install-folder.mjs, which the TypeScript test helpers import. */
export function installFolder(dir: string, options?: { label?: string; legacyPeerDeps?: boolean }): Promise<string>;
