// @ag-ui/client 0.0.59, the version CopilotKit 1.74's client pins (test/support/ag-ui-client.ts). Installed in
// this folder under an alias and imported through this file (see apollo.ts for why).
export { HttpAgent, runHttpRequest, transformHttpEventStream } from 'ag-ui-client-0059';
