// @ag-ui/core 0.0.59's event schemas: what CopilotKit 1.74's pinned client (@ag-ui/client 0.0.59) checks every
// event against. It comes with ag-ui-client-0059 (its dependency, pinned by this folder's lock) and resolves from
// here, not from the root, whose @ag-ui/core is 1.0.
export { EventSchemas } from '@ag-ui/core';
