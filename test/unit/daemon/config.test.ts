import { describe, expect, it } from 'vitest';
import { DEFAULT_BASE_URL, type FileReading, resolveConfig, wsUrlFor } from '../../../core/daemon/config.js';

const file = (data: Record<string, unknown>): FileReading => ({ status: 'ok', data });
const PATH = '/home/u/.svc/config.json';

describe('config precedence (spec 2.5, 2.7)', () => {
  it.each([
    // [case, file, env, flag, expected wsUrl, source]
    [
      'file wins over SVC_WS_URL',
      file({ wsUrl: 'wss://file/ws' }),
      { SVC_WS_URL: 'wss://env/ws' },
      undefined,
      'wss://file/ws',
      'file',
    ],
    [
      'SVC_WS_URL only when the file has none',
      file({}),
      { SVC_WS_URL: 'wss://env/ws' },
      undefined,
      'wss://env/ws',
      'env',
    ],
    [
      '--ws-url overrides the file for one run',
      file({ wsUrl: 'wss://file/ws' }),
      {},
      'ws://flag/ws',
      'ws://flag/ws',
      'flag',
    ],
    [
      '--ws-url overrides the env too',
      file({}),
      { SVC_WS_URL: 'wss://env/ws' },
      'ws://flag/ws',
      'ws://flag/ws',
      'flag',
    ],
    [
      'derived from baseUrl when nothing sets it',
      file({ baseUrl: 'https://r.example' }),
      {},
      undefined,
      'wss://r.example/ws',
      'derived',
    ],
    [
      'default without a file',
      { status: 'missing' } as FileReading,
      {},
      undefined,
      'ws://127.0.0.1:8787/ws',
      'default',
    ],
    [
      'a foreign-owned file is ignored: env is read',
      { status: 'foreign_owner', owner: 0 } as FileReading,
      { SVC_WS_URL: 'wss://env/ws' },
      undefined,
      'wss://env/ws',
      'env',
    ],
  ])('%s', (_name, reading, env, flag, wsUrl, source) => {
    const config = resolveConfig(reading, env, { wsUrl: flag }, PATH);
    expect(config.wsUrl).toEqual({ value: wsUrl, source });
  });

  it('warns, and uses nothing from, a file owned by someone else or writable by anyone', () => {
    const foreign = resolveConfig({ status: 'foreign_owner', owner: 1234 }, {}, {}, PATH);
    expect(foreign.apiKey.value).toBeNull();
    expect(foreign.warnings[0]).toMatch(/ignoring .*owned by uid 1234/);
    const open = resolveConfig({ status: 'open_to_others', mode: 0o666 }, {}, {}, PATH);
    expect(open.warnings[0]).toMatch(/writable by anyone \(mode 666\)/);
    // It holds the API key: readable by the group or others is refused too, as device-key.json is.
    for (const mode of [0o644, 0o620, 0o640, 0o604]) {
      const loose = resolveConfig({ status: 'open_to_others', mode }, {}, {}, PATH);
      expect(loose.apiKey.value).toBeNull();
      expect(loose.warnings[0]).toBe(`ignoring ${PATH}: open to others (mode ${mode.toString(8)}); chmod 600 it`);
    }
  });

  it('marks SVC_WS_URL as deprecated when it is used', () => {
    const config = resolveConfig(file({}), { SVC_WS_URL: 'ws://x/ws' }, {}, PATH);
    expect(config.warnings.join()).toMatch(/deprecated/);
  });

  it('keeps the key, hook id and base URL from the file, and says so', () => {
    const config = resolveConfig(file({ apiKey: 'k', hookId: 'c_1', baseUrl: 'http://h:1' }), {}, {}, PATH);
    expect(config.apiKey).toEqual({ value: 'k', source: 'file' });
    expect(config.hookId).toEqual({ value: 'c_1', source: 'file' });
    expect(config.baseUrl).toEqual({ value: 'http://h:1', source: 'file' });
    expect(resolveConfig(file({}), {}, {}, PATH).baseUrl).toEqual({ value: DEFAULT_BASE_URL, source: 'default' });
  });

  it.each([
    [false, undefined, false, 'flag'],
    [undefined, false, false, 'file'],
    [undefined, undefined, true, 'default'],
  ])('keepAwake flag=%s file=%s → %s (%s)', (flag, fileValue, value, source) => {
    const config = resolveConfig(
      file(fileValue === undefined ? {} : { keepAwake: fileValue }),
      {},
      { keepAwake: flag },
      PATH,
    );
    expect(config.keepAwake).toEqual({ value, source });
  });

  it.each([
    ['http://127.0.0.1:8787', 'ws://127.0.0.1:8787/ws'],
    ['https://relay.example.com/', 'wss://relay.example.com/ws'],
    ['https://relay.example.com/base?x=1', 'wss://relay.example.com/ws'],
  ])('wsUrlFor(%s) = %s', (base, ws) => {
    expect(wsUrlFor(base)).toBe(ws);
  });
});
