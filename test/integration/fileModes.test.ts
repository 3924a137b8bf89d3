/**
 * Owner-only files under ~/.svc, on the real file system: a config.json anyone else may read or write is ignored
 * with a warning (it holds the API key, like device-key.json, which is refused at 0644 too), and a listener.log
 * deleted while the listener runs comes back 0600.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readConfigFile } from '../../actors/daemon/configFile.js';
import { createLogger } from '../../actors/daemon/logger.js';
import { ensurePrivateDir } from '../../actors/files.js';
import { runSvc, svcEnv, tempHome } from '../helpers/cli.js';

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

describe('~/.svc/config.json', () => {
  it.each([
    ['644', 0o644],
    ['620', 0o620],
    ['640', 0o640],
    ['666', 0o666],
  ])('at mode %s is ignored with a warning, and the listener does not start', async (_, mode) => {
    const home = tempHome();
    cleanup.push(() => home.cleanup());
    const dir = join(home.home, '.svc');
    ensurePrivateDir(dir);
    const path = join(dir, 'config.json');
    const config = {
      apiKey: `svc_${'k'.repeat(43)}`,
      hookId: 'c_x',
      baseUrl: 'http://127.0.0.1:9',
      wsUrl: 'ws://127.0.0.1:9/ws',
    };
    writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
    expect(readConfigFile(path).status).toBe('ok');
    chmodSync(path, mode);
    expect(readConfigFile(path)).toEqual({ status: 'open_to_others', mode });
    const res = await runSvc(['listener'], svcEnv(home.home));
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`ignoring ${path}: `);
    expect(res.stderr).toContain(`(mode ${mode.toString(8)}); chmod 600 it`);
    expect(res.stderr).toMatch(/not logged in/);
  });
});

describe('the listener log', () => {
  it('deleted while running, comes back 0600', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'listener.log');
    const log = createLogger({ file, stderr: false });
    log.info('first');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    unlinkSync(file);
    const umask = process.umask(0o022); // the usual umask, which made it 0644
    try {
      log.info('after the file was deleted');
    } finally {
      process.umask(umask);
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
