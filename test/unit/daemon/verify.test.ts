/** core/daemon/verify.ts: the `svc verify` report (spec 4.5). */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../core/daemon/config.js';
import {
  buildVerifyReport,
  closingLine,
  formatPhoneLines,
  formatVerifyReport,
  type PhoneFact,
  type PhonesFact,
  stageMismatch,
  type VerifyFacts,
} from '../../../core/daemon/verify.js';
import { stageOf } from '../../../core/relay/reach.js';

const PATH = '/h/.svc/config.json';
const loggedIn = resolveConfig(
  {
    status: 'ok',
    data: { apiKey: 'k', hookId: 'h1', baseUrl: 'https://relay.example.com', wsUrl: 'wss://relay.example.com/ws' },
  },
  {},
  {},
  PATH,
);

function facts(over: Partial<VerifyFacts> = {}): VerifyFacts {
  return {
    cliVersion: '0.1.0',
    tmux: { path: '/usr/bin/tmux', version: 'tmux 3.3a' },
    socket: { path: '/tmp/tmux-1/default', source: 'default' },
    configPath: PATH,
    configReading: 'ok',
    config: loggedIn,
    listener: { pid: 42, via: 'pidfile', version: '0.1.0' },
    pidFile: '/h/.svc/listener.pid',
    versionFile: '/h/.svc/listener.version',
    service: 'not installed',
    ...over,
  };
}

describe('stageOf', () => {
  it.each([
    ['ws://127.0.0.1:8787/ws', 'local'],
    ['ws://127.3.4.5/ws', 'local'],
    ['ws://localhost:1/ws', 'local'],
    ['ws://[::1]:8787/ws', 'local'],
    ['wss://relay.example.com/ws', 'relay.example.com'],
    ['wss://staging.relay.example.com:444/ws', 'staging.relay.example.com'],
    ['not a url', null],
  ])('%s → %s', (url, stage) => {
    expect(stageOf(url)).toBe(stage);
  });
});

describe('stageMismatch (spec 2.5: baseUrl on the same stage as wsUrl)', () => {
  it.each([
    ['https://relay.example.com', 'wss://relay.example.com/ws', false],
    ['http://127.0.0.1:8787', 'ws://localhost:8787/ws', false],
    ['https://relay.example.com:8443', 'wss://relay.example.com/ws', false],
    ['http://127.0.0.1:8787', 'wss://relay.example.com/ws', true],
    ['https://staging.relay.example.com', 'wss://relay.example.com/ws', true],
    ['not a url', 'wss://relay.example.com/ws', false], // said on its own
  ])('%s + %s → mismatch %s', (baseUrl, wsUrl, differs) => {
    const line = stageMismatch(baseUrl, wsUrl);
    expect(line !== null).toBe(differs);
    if (line) expect(line).toMatch(/^baseUrl .* are not the same relay: run `svc login/);
  });

  it('fails `svc verify` on the base url line, saying what to do', () => {
    const split = resolveConfig(
      {
        status: 'ok',
        data: { apiKey: 'k', hookId: 'h1', baseUrl: 'http://127.0.0.1:8787', wsUrl: 'wss://relay.example.com/ws' },
      },
      {},
      {},
      PATH,
    );
    const r = buildVerifyReport(facts({ config: split }));
    expect(r.ok).toBe(false);
    const lines = formatVerifyReport(r);
    expect(lines.find((l) => l.includes('base url'))).toMatch(
      /^FAIL\s+base url\s+baseUrl http:\/\/127\.0\.0\.1:8787 \(stage local\)/,
    );
    expect(lines.at(-1)).toBe('1 problem(s): see the FAIL lines');
    expect(formatVerifyReport(buildVerifyReport(facts())).find((l) => l.includes('base url'))).toMatch(
      /^ok\s+base url/,
    );
  });
});

describe('buildVerifyReport', () => {
  it('all there: ok, each value with its origin', () => {
    const r = buildVerifyReport(facts());
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
    expect(r.tmux).toEqual({ ok: true, path: '/usr/bin/tmux', version: 'tmux 3.3a', from: { source: 'PATH' } });
    expect(r.listener).toMatchObject({ ok: true, running: true, pid: 42, version: '0.1.0', age: 'same' });
    expect(r.listener.from).toEqual({ source: 'pid file', where: '/h/.svc/listener.pid' });
    expect(r.wsUrl).toEqual({
      value: 'wss://relay.example.com/ws',
      stage: 'relay.example.com',
      from: { source: 'file', where: PATH },
    });
    expect(r.login).toMatchObject({ ok: true, hookId: 'h1', apiKey: 'set', from: { source: 'file' } });
    expect(r.service).toEqual({ state: 'not installed' });
    expect(formatVerifyReport(r).filter((l) => l.startsWith('FAIL'))).toEqual([]);
  });

  it('never shows the key', () => {
    expect(JSON.stringify(buildVerifyReport(facts()))).not.toContain('"k"');
  });

  it.each([
    ['no tmux', { tmux: { path: null, version: null } }, /^tmux is not on PATH: install it/],
    ['no listener', { listener: null }, /^the listener is not running: start it with `svc listener --restart`/],
    [
      'an older listener',
      { listener: { pid: 1, via: 'pidfile' as const, version: '0.0.9' } },
      /^listener 0\.0\.9 is older than this CLI \(0\.1\.0\): run `svc listener --restart`/,
    ],
    [
      'not logged in',
      { configReading: 'missing' as const, config: resolveConfig({ status: 'missing' }, {}, {}, PATH) },
      /^not logged in: run `svc login/,
    ],
    [
      'a world-writable config',
      {
        configReading: 'open_to_others' as const,
        config: resolveConfig({ status: 'open_to_others', mode: 0o666 }, {}, {}, PATH),
      },
      /^ignoring .*writable by anyone.*chmod 600/,
    ],
  ])('%s: not ok, with what to do', (_, over, problem) => {
    const r = buildVerifyReport(facts(over));
    expect(r.ok).toBe(false);
    expect(r.problems.some((p) => problem.test(p))).toBe(true);
    const text = r.problems.find((p) => problem.test(p))!;
    expect(formatVerifyReport(r).some((l) => l.startsWith('FAIL') && l.includes(text))).toBe(true);
  });

  it('a newer listener is fine (left alone)', () => {
    const r = buildVerifyReport(facts({ listener: { pid: 1, via: 'ps', version: '9.0.0' } }));
    expect(r.ok).toBe(true);
    expect(r.listener).toMatchObject({ age: 'newer', from: { source: 'process list' } });
    expect(formatVerifyReport(r).join('\n')).toMatch(/newer: left alone/);
  });

  it('the socket: from SVC_TMUX_SOCKET, $TMUX, or the default', () => {
    expect(buildVerifyReport(facts({ socket: { path: '/s', source: 'TMUX' } })).socket).toEqual({
      path: '/s',
      from: { source: 'env', where: 'TMUX' },
    });
    expect(buildVerifyReport(facts()).socket.from).toEqual({ source: 'default' });
  });

  it('sources: environment, default, derived', () => {
    const env = resolveConfig(
      { status: 'ok', data: { apiKey: 'k', hookId: 'h' } },
      { SVC_WS_URL: 'ws://127.0.0.1:9/ws' },
      {},
      PATH,
    );
    const r = buildVerifyReport(facts({ config: env }));
    expect(r.wsUrl).toEqual({
      value: 'ws://127.0.0.1:9/ws',
      stage: 'local',
      from: { source: 'env', where: 'SVC_WS_URL' },
    });
    expect(r.baseUrl.from).toEqual({ source: 'default' });
    const derived = resolveConfig({ status: 'ok', data: { baseUrl: 'http://127.0.0.1:5' } }, {}, {}, PATH);
    expect(buildVerifyReport(facts({ config: derived })).wsUrl.from).toEqual({
      source: 'derived',
      where: `baseUrl in ${PATH}`,
    });
  });
});

describe('the phones line (formatPhoneLines, closingLine)', () => {
  const NOW = 1_800_000_000_000;
  const phone = (over: Partial<PhoneFact> = {}): PhoneFact => ({
    name: 'Pixel',
    lastSeenAt: NOW - 3 * 60_000,
    notifications: true,
    origin: 'https://relay.example.com',
    ...over,
  });
  const report = buildVerifyReport(facts());

  it.each<[string, PhonesFact, string[]]>([
    ['not logged in: not asked', null, []],
    ['the relay did not answer', { error: 'no answer' }, ['--    phones    the relay did not list them: no answer']],
    ['none paired', { phones: [] }, ['--    phones    none paired: run `svc pair` and open its link on the phone']],
    [
      'one, at https, notifying',
      { phones: [phone()] },
      [
        'ok    phones    1 paired',
        '                Pixel: seen 3 min ago; notifications on; at https://relay.example.com',
      ],
    ],
    [
      'never seen since pairing, notifications off, at plain http: said, with what it cannot do',
      { phones: [phone({ lastSeenAt: null, notifications: false, origin: 'http://192.168.1.5:8787' })] },
      [
        'ok    phones    1 paired',
        '                Pixel: not seen since it paired; notifications off; at http://192.168.1.5:8787 (not https: no installed app, no notifications)',
        '--    phones    no phone has notifications on: turn them on in the app (Settings, Notifications)',
      ],
    ],
    [
      'an older relay: when last seen and notifications unknown, no address',
      {
        phones: [
          { name: 'Pixel', notifications: null, origin: null },
          phone({ name: 'iPad', origin: 'http://127.0.0.1:8787' }),
        ],
      },
      [
        'ok    phones    2 paired',
        '                Pixel: last seen unknown; notifications unknown',
        '                iPad: seen 3 min ago; notifications on; at http://127.0.0.1:8787 (this computer only)',
      ],
    ],
    [
      'a name with control characters stays on its line',
      { phones: [phone({ name: 'evil\n\u001b[2Jphone' })] },
      [
        'ok    phones    1 paired',
        '                evil??[2Jphone: seen 3 min ago; notifications on; at https://relay.example.com',
      ],
    ],
  ])('%s', (_, phones, lines) => {
    expect(formatPhoneLines(phones, NOW)).toEqual(lines);
  });

  it('says when no phone is paired on the last line, and stays ok (svc works without a phone)', () => {
    expect(report.ok).toBe(true);
    expect(closingLine(report, { phones: [] })).toBe(
      'everything svc needs on this computer is here; no phone is paired yet (svc pair)',
    );
    expect(closingLine(report, { phones: [phone()] })).toBe('everything svc needs is here');
    expect(closingLine(report, null)).toBe('everything svc needs is here');
    expect(formatVerifyReport(report, { phones: [] }, NOW).at(-1)).toMatch(/no phone is paired yet/);
  });
});
