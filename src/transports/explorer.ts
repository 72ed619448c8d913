import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** One built file of the explorer, held in memory once read (about 1.6 MB for both). */
interface Asset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

const ASSET_TYPES: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/**
 * Nothing but the gateway: scripts and styles from it, requests (HTTP and WebSocket) to it, fonts
 * and images inline. A page that tried to reach anything else would be refused by the browser.
 */
const PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join('; ');

/**
 * The offline explorer: GraphiQL bundled from npm by `npm run explorer` into explorer/build/ (committed),
 * which `npm run build` copies into dist/explorer/; served at `<path>/graphiql` with its two files.
 * Unlike Apollo Sandbox it loads nothing from the network, so it works on an air-gapped machine,
 * subscriptions included.
 */
export class OfflineExplorer {
  private readonly assets = new Map<string, Asset>();

  constructor(
    /** The GraphQL endpoint the page talks to (HTTP and graphql-ws). */
    private readonly endpoint: string,
    /** Where the built files are; by default dist/explorer/ of this package. */
    private readonly directory: string = defaultDirectory(),
  ) {}

  /** The page's own path. */
  get pagePath(): string {
    return `${this.endpoint.replace(/\/$/, '')}/graphiql`;
  }

  /**
   * Apollo Sandbox's page with a way out: where Sandbox cannot load (offline, or its CDN blocked),
   * its fallback text also points at the offline explorer.
   */
  withFallbackLink(sandboxPage: string): string {
    return sandboxPage.replace(
      /(<div class="fallback">[\s\S]*?<\/p>)/,
      `$1\n  <p>The gateway's own explorer works with no network: <a href="${escapeAttribute(this.pagePath)}">open ` +
        `the offline explorer</a>.</p>`,
    );
  }

  /** Whether `pathname` is the page or one of its files. */
  owns(pathname: string): boolean {
    return pathname === this.pagePath || pathname.startsWith(`${this.pagePath}/`);
  }

  /** Answers a GET or HEAD for the page or one of its files. */
  serve(req: IncomingMessage, res: ServerResponse, pathname: string): void {
    const name = pathname === this.pagePath ? '' : pathname.slice(this.pagePath.length + 1);
    if (name !== '' && !Object.hasOwn(ASSET_TYPES, name))
      return sendText(res, 404, `Not found. The explorer is at ${this.pagePath}.`);
    if (!offlineExplorerBuilt(this.directory)) {
      return sendText(res, 404, 'The offline explorer is not built: run `npm run build` (`npm start` builds it too).');
    }
    if (name === '') return sendPage(res, req.method === 'HEAD', this.page());
    const asset = this.asset(name);
    res.setHeader('etag', asset.etag);
    // The page names the files with their etag, so a new build is fetched at once; revalidate anyway.
    res.setHeader('cache-control', 'no-cache');
    res.setHeader('vary', 'Accept-Encoding');
    if (req.headers['if-none-match'] === asset.etag) {
      res.statusCode = 304;
      res.end();
      return;
    }
    const gzip = acceptsGzip(req.headers['accept-encoding']);
    const body = gzip ? asset.gzipped : asset.body;
    res.statusCode = 200;
    res.setHeader('content-type', asset.type);
    res.setHeader('content-length', body.length);
    if (gzip) res.setHeader('content-encoding', 'gzip');
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  private page(): string {
    const version = (name: string) => encodeURIComponent(this.asset(name).etag.replace(/"/g, ''));
    return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Copilot Gateway explorer</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${this.pagePath}/app.css?v=${version('app.css')}">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql" data-endpoint="${escapeAttribute(this.endpoint)}">Loading the explorer…</div>
<script src="${this.pagePath}/app.js?v=${version('app.js')}"></script>
</body>
</html>
`;
  }

  private asset(name: string): Asset {
    let asset = this.assets.get(name);
    if (!asset) {
      const body = readFileSync(join(this.directory, name));
      asset = {
        type: ASSET_TYPES[name],
        body,
        gzipped: gzipSync(body),
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      };
      this.assets.set(name, asset);
    }
    return asset;
  }
}

/** Whether the offline explorer is built (in dist/explorer/ of this package), so that it can be served. */
export function offlineExplorerBuilt(directory: string = defaultDirectory()): boolean {
  return existsSync(join(directory, 'app.js'));
}

/** dist/explorer/ of the package this file belongs to, whether it runs from src/ (tsx) or dist/src/. */
function defaultDirectory(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(directory, 'package.json'))) {
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  return join(directory, 'dist', 'explorer');
}

function sendPage(res: ServerResponse, head: boolean, html: string): void {
  res.statusCode = 200;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-security-policy', PAGE_POLICY);
  res.setHeader('x-content-type-options', 'nosniff');
  res.end(head ? undefined : html);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end(`${text}\n`);
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/**
 * Whether an Accept-Encoding header takes gzip: named (or as `x-gzip`), else through `*`, unless refused with a
 * weight of 0 (RFC 9110, 12.5.3). Weights above 0 are not compared: gzip or the file as it is are the only choices,
 * and identity is never refused here.
 */
function acceptsGzip(header: string | undefined): boolean {
  let any = false;
  for (const entry of (header ?? '').toLowerCase().split(',')) {
    const [coding, ...params] = entry.split(';').map((part) => part.trim());
    const refused = params.some((param) => /^q\s*=\s*0(\.0{0,3})?$/.test(param));
    if (coding === 'gzip' || coding === 'x-gzip') return !refused;
    if (coding === '*') any = !refused;
  }
  return any;
}
