/** `svc login` against the real relay, and against servers that misbehave. */

import { readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

describe('svc login', () => {
  it('registers the computer and writes ~/.svc/config.json owner-only', async () => {
    const home = tempHome();
    try {
      const res = await runSvc(
        ['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop'],
        svcEnv(home.home),
      );
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/logged in as "laptop" \(c_[0-9a-f]+\)/);
      const dir = join(home.home, '.svc');
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      const file = join(dir, 'config.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const config = JSON.parse(readFileSync(file, 'utf8'));
      expect(config).toMatchObject({ apiKey: relay.apiKey, baseUrl: relay.url, wsUrl: relay.wsUrl });
      expect(config.hookId).toMatch(/^c_/);
      // Logging in again with the same name keeps the same computer.
      const again = await runSvc(
        ['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop', '--json'],
        svcEnv(home.home),
      );
      expect(JSON.parse(again.stdout).hookId).toBe(config.hookId);
    } finally {
      home.cleanup();
    }
  });

  it('refuses a wrong key with the relay’s answer and writes nothing', async () => {
    const home = tempHome();
    try {
      const res = await runSvc(['login', '--url', relay.url, '--key', 'svc_wrong'], svcEnv(home.home));
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/relay answered 401/);
      expect(() => statSync(join(home.home, '.svc', 'config.json'))).toThrow();
    } finally {
      home.cleanup();
    }
  });

  it('never follows a redirect with the key', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const target = createServer((req, res) => {
      seen.push(req.headers);
      res.end('{}');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    const redirector = createServer((_req, res) => {
      res.writeHead(307, { Location: `${targetUrl}/computers` });
      res.end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    const home = tempHome();
    try {
      const url = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
      const res = await runSvc(['login', '--url', url, '--key', 'svc_secret'], svcEnv(home.home));
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/redirect \(307\).*never follows redirects/);
      expect(seen).toEqual([]);
    } finally {
      home.cleanup();
      target.close();
      redirector.close();
    }
  });

  it('says so when the relay cannot be reached', async () => {
    const home = tempHome();
    try {
      const res = await runSvc(['login', '--url', 'http://127.0.0.1:1', '--key', 'k'], svcEnv(home.home));
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/cannot reach the relay at http:\/\/127.0.0.1:1/);
    } finally {
      home.cleanup();
    }
  });
});
