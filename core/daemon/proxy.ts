/**
 * Which proxy a connection to the relay goes through (spec 2.5: `httpsProxy`, `httpProxy`, `noProxy` in
 * `~/.svc/config.json`; else the usual `HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY` variables, as curl reads them).
 * Pure; actors/relay/proxy.ts builds the agents. Decisions where the spec is silent (docs/service.md "Proxies"):
 * `https:`/`wss:` use httpsProxy, `http:`/`ws:` httpProxy; `noProxy` is a comma list of host names (a name also
 * covers its subdomains; a leading `.` or `*.` is allowed), IP addresses, `host:port`, or `*` for everything.
 * Loopback is not special: list it in `noProxy` to go direct, as curl does.
 */

export interface ProxySettings {
  httpsProxy?: string | undefined;
  httpProxy?: string | undefined;
  noProxy?: string | undefined;
}

/** The settings from the config file, each falling back to its environment variable (either case). */
export function proxySettings(file: ProxySettings, env: Readonly<Record<string, string | undefined>>): ProxySettings {
  const pick = (name: string) => env[name] || env[name.toLowerCase()] || undefined;
  return {
    httpsProxy: file.httpsProxy || pick('HTTPS_PROXY'),
    httpProxy: file.httpProxy || pick('HTTP_PROXY'),
    noProxy: file.noProxy || pick('NO_PROXY'),
  };
}

/** Whether `noProxy` says to go to `url` directly. */
export function bypassesProxy(url: URL, noProxy: string | undefined): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' || url.protocol === 'wss:' ? '443' : '80');
  for (const raw of (noProxy ?? '').split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    const m = /^(?:\*)?\.?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry);
    if (!m) continue;
    const name = m[1]!.replace(/^\[|\]$/g, '');
    if (m[2] && m[2] !== port) continue;
    if (host === name || host.endsWith(`.${name}`)) return true;
  }
  return false;
}

/**
 * The proxy URL for a connection to `target`, or null to go direct. A proxy that is not an `http:`/`https:` URL is
 * an error the caller reports (the setting is wrong; going direct instead would be a surprise).
 */
export function proxyFor(target: string, settings: ProxySettings): string | null {
  const url = new URL(target);
  const secure = url.protocol === 'https:' || url.protocol === 'wss:';
  const proxy = secure ? settings.httpsProxy || settings.httpProxy : settings.httpProxy;
  if (!proxy || bypassesProxy(url, settings.noProxy)) return null;
  const parsed = new URL(proxy);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new Error(`proxy ${parsed.protocol}//${parsed.host} is not an http(s) proxy`);
  }
  return proxy;
}

/** A proxy URL for logs: without the user name and password it may carry. */
export function proxyLabel(proxy: string): string {
  const url = new URL(proxy);
  return `${url.protocol}//${url.host}`;
}
