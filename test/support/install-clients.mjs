// Jest's globalSetup (jest.config.js): installs test/clients (the clients only the tests drive, kept out of the
// gateway's own npm install) before any test file is loaded, since test files and helpers import them
// statically. A no-op once the folder is installed from its current lock file (scripts/install-folder.mjs).
import { fileURLToPath } from 'node:url';
import { installFolder } from '../../scripts/install-folder.mjs';

export default async function installTestClients() {
  await installFolder(fileURLToPath(new URL('../clients', import.meta.url)), {
    label: 'the test clients',
    legacyPeerDeps: true,
  });
}
