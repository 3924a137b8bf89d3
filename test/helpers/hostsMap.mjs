/**
 * `node --import <this file> …` with SVC_TEST_HOSTS="name=address,…": those names resolve to those addresses in
 * this process and its children (a hosts file for one test; /etc/hosts is the machine's). Everything that connects
 * by name in Node (http, https, tls, net, fetch, ws) asks `dns.lookup`, replaced here for the named hosts only.
 */
import dns from 'node:dns';

const hosts = new Map(
  (process.env.SVC_TEST_HOSTS ?? '')
    .split(',')
    .filter(Boolean)
    .map((entry) => entry.split('=')),
);
const lookup = dns.lookup;
dns.lookup = function mapped(...args) {
  const [host, options, callback] = args;
  const address = hosts.get(String(host).toLowerCase());
  if (address === undefined) return lookup.apply(this, args);
  const [opts, done] =
    typeof options === 'function'
      ? [{}, options]
      : [typeof options === 'number' ? { family: options } : (options ?? {}), callback];
  const family = address.includes(':') ? 6 : 4;
  process.nextTick(() => (opts.all ? done(null, [{ address, family }]) : done(null, address, family)));
};
