/**
 * A stand-in for `cloudflared tunnel --no-autoupdate --url <relay>` that is a tunnel: it ends TLS for the public
 * name with a certificate the test made (STANDIN_CERT, STANDIN_KEY), forwards every connection's bytes to the
 * relay and back (HTTP and WebSocket alike, as cloudflared's edge does), writes what passed through to
 * STANDIN_TRAFFIC (for the test to grep), and logs on stderr exactly what cloudflared logs for a quick tunnel
 * (STANDIN_LOG: the lines with the public URL; test/helpers/tunnel.ts). Its port: in STANDIN_PORT_FILE.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createServer } from 'node:tls';

const url = new URL(process.argv[process.argv.indexOf('--url') + 1]);
writeFileSync(process.env.STANDIN_TRAFFIC, '');
const record = (direction) => (chunk) =>
  appendFileSync(process.env.STANDIN_TRAFFIC, Buffer.concat([Buffer.from(`\n${direction} `), chunk]));
const server = createServer(
  { cert: readFileSync(process.env.STANDIN_CERT), key: readFileSync(process.env.STANDIN_KEY) },
  (client) => {
    const relay = connect(Number(url.port), url.hostname);
    client.on('data', record('>'));
    relay.on('data', record('<'));
    client.pipe(relay).pipe(client);
    const end = () => {
      client.destroy();
      relay.destroy();
    };
    client.on('error', end).on('close', end);
    relay.on('error', end).on('close', end);
  },
);
server.listen(0, '127.0.0.1', () => {
  writeFileSync(process.env.STANDIN_PORT_FILE, String(server.address().port));
  process.stderr.write(process.env.STANDIN_LOG);
});
process.on('SIGTERM', () => process.exit(0));
