// Apollo Client 4, as the README's Apollo example and the production suite use it. Installed in this folder
// (package.json here), which a test file's own `import '@apollo/client'` would not reach: node_modules
// lookups walk up from test/, never down into test/clients/. Imported from here, the package resolves through
// test/clients/node_modules, and its own imports (graphql, graphql-ws, rxjs as a peer) through the root's.
export * from '@apollo/client';
export { Defer20220824Handler } from '@apollo/client/incremental';
export { GraphQLWsLink } from '@apollo/client/link/subscriptions';
export { getMainDefinition } from '@apollo/client/utilities';
