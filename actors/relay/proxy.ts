/**
 * The relay connections through a proxy (core/daemon/proxy.ts decides which): an HTTP CONNECT tunnel
 * (`https-proxy-agent`) for the WebSocket and for the HTTP requests (actors/relay/request.ts) alike. Direct when no
 * proxy applies. The library is loaded the first time a proxy applies, not before: most computers have none.
 */
import type { Agent } from 'node:http';
import { type ProxySettings, proxyFor, proxySettings } from '../../core/daemon/proxy.js';

/** The config file's settings once it was read (actors/daemon/configFile.ts), over the environment's. */
let fromFile: ProxySettings = {};

/** The config file was read: its proxy keys apply to every later connection of this process. */
export function useProxySettings(file: ProxySettings): void {
  fromFile = { httpsProxy: file.httpsProxy, httpProxy: file.httpProxy, noProxy: file.noProxy };
}

const settings = (): ProxySettings => proxySettings(fromFile, process.env);

/** The proxy a connection to `url` goes through (null: direct). Throws on a proxy setting that is not a URL. */
export const relayProxy = (url: string): string | null => proxyFor(url, settings());

/**
 * The agent a connection to `url` needs: none when it goes direct (at once, no library loaded), else a CONNECT
 * tunnel through its proxy (a promise: the library is loaded then). With a `signal`, its abort also closes the
 * connection to the proxy, which a proxy that never answers the CONNECT would otherwise hold open. Throws on a proxy
 * setting that is not a URL.
 */
export function tunnelAgent(url: string, signal?: AbortSignal): null | Promise<Agent> {
  const proxy = relayProxy(url);
  if (!proxy) return null;
  return import('https-proxy-agent').then(({ HttpsProxyAgent }) => new HttpsProxyAgent(proxy, { signal }));
}
