import type { Socket } from 'node:net';
import type { ApolloServer } from '@apollo/server';
import type { Logger } from 'pino';
import type { AgUiTransport } from '../../ag-ui/serve.js';
import type { RunLauncher } from '../../engine/launcher.js';
import type { AnswerOutput } from '../slow-readers.js';
import type { GatewayContext } from '../../graphql/context.js';
import type { Executor } from '../../graphql/executor.js';
import type { AccessControl } from '../access.js';
import type { CorsPolicy } from '../cors.js';
import type { OfflineExplorer } from '../explorer.js';
import type { HostPolicy } from '../hosts.js';
import type { MetricsRoute } from './metrics.js';
import type { InputBudget } from '../../core/input-budget.js';

// What the HTTP transport is given (HttpTransportOptions) and what it knows of a request once past the
// door (AdmittedRequest), read by the handler and the routes alike.

export interface HttpTransportOptions {
  apollo: ApolloServer<GatewayContext>;
  launcher: RunLauncher;
  path: string;
  cors: CorsPolicy;
  hosts: HostPolicy;
  logger: Logger;
  maxBodyBytes: number;
  /** The input held at once (maxBufferedInputMb): bodies being read count in it too. */
  inputBudget?: InputBudget;
  /**
   * Milliseconds between keep-alive signals on a streamed response (SSE comments, multipart parts
   * holding `{}`), so idle proxies do not cut a long run.
   */
  keepAliveMs: number;
  /** At most one write of a streamed answer's later parts per this many milliseconds (PartWriter). */
  streamWriteIntervalMs: number;
  /**
   * Whether the explorers are served: Apollo Sandbox (GET with text/html) and the offline explorer
   * at `<path>/graphiql`. Off, a browser gets a page saying so.
   */
  sandbox: boolean;
  explorer: OfflineExplorer;
  /** The AG-UI runtime protocol (CopilotKit ≥1.50) under the same path. */
  agUi: AgUiTransport;
  /** Authentication and requests per minute, checked before a request is read. */
  access: AccessControl;
  /** GET /metrics: Prometheus's text, behind a bearer token when one is set (its keyMatcher). Absent: 404. */
  metrics?: MetricsRoute;
  /** Told when a streamed response starts and ends (metrics). */
  onStream?: (delta: 1 | -1) => void;
  /** What runs the operations: asked first what it does for a request itself (Executor `prepare`). */
  executor: Executor;
  /**
   * Where a request's runs are counted for its connection's output while its client does not read, until the answer
   * is over and the transport releases it (SlowReaderGuard.output); none: not counted.
   */
  holdOutput?: (socket: Socket | null) => AnswerOutput;
  /** Whether Apollo serves operations (started, not stopped): the executor answers a request itself only then. */
  apolloServing: () => boolean;
  /**
   * Whether the gateway is shutting down (leaving or draining): each answer closes its connection, so that a client
   * opens its next request elsewhere (where a load balancer that has taken this instance out of rotation sends it).
   */
  shuttingDown: () => boolean;
  /** What `/ready` answers: whether this instance should get traffic, and why. */
  readiness: () => { ready: boolean; checks: Record<string, unknown> };
}

/** What the handler knows of a request once it is past the door. */
export interface AdmittedRequest {
  pathname: string;
  search: string;
  agUiRoute: boolean;
  wantsPage: boolean;
  requestId: string;
  log: Logger;
  /** `log`'s own fields (see RunCaller.logParent). */
  logBindings: Record<string, unknown>;
}
