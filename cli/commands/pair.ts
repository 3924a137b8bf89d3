import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import QRCode from 'qrcode';
import { readConfigFile } from '../../actors/daemon/configFile.js';
import { newPairingSecret } from '../../actors/devices/pairings.js';
import { relayJson } from '../../actors/relay/http.js';
import { qrStyle } from '../../core/cli/commandLine.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { PairingCreateResponse } from '../../core/protocol/index.js';
import { pairingShow } from '../../core/relay/reach.js';
import { fail } from '../output.js';

export interface PairingLink {
  /**
   * `<app url>/#pair=<code>.<secret>`: both in the fragment, which browsers never send to a server; the secret is
   * kept by this computer, which then trusts the phone that pairs with it (core/devices/pairingProof.ts).
   */
  url: string;
  code: string;
  expiresAt: number;
}

/** Ask the relay for a one-time pairing code and build the link the phone opens, with this computer's secret. */
export async function createPairingLink(opts: { baseUrl: string; apiKey: string; appUrl?: string; home?: string }) {
  const answer = await relayJson(PairingCreateResponse, opts.baseUrl, opts.apiKey, 'POST', '/pairings', {});
  const secret = newPairingSecret(svcPaths(opts.home ?? homedir()).pairings);
  const app = (opts.appUrl ?? opts.baseUrl).replace(/\/+$/, '');
  const url = `${app}/#pair=${answer.code}.${secret}`;
  return { url, code: answer.code, expiresAt: answer.expiresAt } satisfies PairingLink;
}

/**
 * The lines `svc pair` and `svc up` print: the link, a QR code of it (on a terminal only: coloured, or in plain
 * block characters under NO_COLOR; core/cli/commandLine.ts `qrStyle`), and when it stops working. A link a phone
 * cannot open (the relay on loopback) gets no QR code but the ways in (core/relay/reach.ts); `named`: the person
 * gave this address (`--url`, `--lan-host`), so it is drawn whatever it is.
 */
export async function pairingText(
  link: PairingLink,
  style: 'ansi' | 'blocks' | 'none' = qrStyle(Boolean(process.stdout.isTTY), process.env),
  now = Date.now(),
  named = false,
): Promise<string> {
  const show = pairingShow(link.url, named);
  const drawn = style !== 'none' && show.qr;
  const minutes = Math.max(1, Math.round((link.expiresAt - now) / 60_000));
  const lines = [
    ...show.notes,
    `Pair ${show.qr ? 'a phone' : 'a browser on this computer'}: open this link${show.qr ? ' on it' : ''}${drawn ? ' (or scan the code)' : ''}. It works once, for the next ${minutes} minutes.`,
    `  ${link.url}`,
  ];
  if (drawn) {
    const qr = await QRCode.toString(link.url, {
      type: style === 'ansi' ? 'terminal' : 'utf8',
      small: true,
      errorCorrectionLevel: 'L',
    });
    lines.push(qr.trimEnd());
  }
  return [...lines, ''].join('\n');
}

export default defineCommand({
  meta: { name: 'pair', description: 'Print a one-time link (and QR code) that pairs a phone with this account' },
  args: {
    url: { type: 'string', description: 'The address the phone reaches the relay at, when not the login URL' },
    json: { type: 'boolean', description: 'Print {url, code, expiresAt} as JSON' },
  },
  async run({ args }) {
    const paths = svcPaths(homedir());
    const file = readConfigFile(paths.config);
    if (file.status !== 'ok' || !file.data.apiKey || !file.data.baseUrl) {
      return fail(new Error(`not logged in (${paths.config}): run \`svc up\` or \`svc login\` first`));
    }
    try {
      const link = await createPairingLink({ baseUrl: file.data.baseUrl, apiKey: file.data.apiKey, appUrl: args.url });
      const named = args.url !== undefined;
      process.stdout.write(
        args.json ? `${JSON.stringify(link)}\n` : await pairingText(link, undefined, undefined, named),
      );
    } catch (err) {
      fail(err);
    }
  },
});
