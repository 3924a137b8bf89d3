/**
 * The relay connections through a proxy (core/daemon/proxy.ts decides which): an HTTP CONNECT tunnel for the
 * WebSocket (`https-proxy-agent`), and undici's ProxyAgent for `fetch`. Direct when no proxy applies.
 */
import { HttpsProxyAgent } from 'https-proxy-agent';
import { ProxyAgent, fetch as undiciFetch } from 'undici';
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

/** The agent a WebSocket to `url` needs, if it goes through a proxy. */
export function wsAgent(url: string): HttpsProxyAgent<string> | undefined {
  const proxy = relayProxy(url);
  return proxy ? new HttpsProxyAgent(proxy) : undefined;
}

/** `fetch`, through the proxy for the URL when one applies. */
export const proxiedFetch: typeof fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const proxy = relayProxy(url);
  if (!proxy) return fetch(input, init);
  return undiciFetch(url, { ...(init as object), dispatcher: new ProxyAgent(proxy) } as never) as never;
};
