/**
 * DNS-rebinding protection for development: a page on a hostile domain that re-points its DNS name
 * at 127.0.0.1 makes same-origin requests that CORS cannot stop, but they carry its own name in
 * `Host`. So in development only loopback names, IP addresses and the configured hosts are served.
 * In production the gateway sits behind proxies and load balancers with their own names: no check.
 */
export class HostPolicy {
  private readonly allowed: Set<string>;

  constructor(
    private readonly restrict: boolean,
    allowedHosts: readonly string[],
  ) {
    this.allowed = new Set(allowedHosts.map((host) => host.toLowerCase()));
  }

  isAllowed(hostHeader: string | undefined): boolean {
    if (!this.restrict || hostHeader === undefined) return true;
    const host = hostHeader.toLowerCase();
    const named = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
    const hostname = named.endsWith('.') ? named.slice(0, -1) : named; // "localhost." is "localhost"
    return (
      hostname === 'localhost' ||
      hostname.endsWith('.localhost') ||
      hostname.startsWith('[') ||
      /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname) ||
      this.allowed.has(hostname)
    );
  }
}
