/**
 * A relay (or something posing as one) whose answers are not what the protocol says: the CLI checks each answer
 * against its schema (core/relay/client.ts, through actors/relay/http.ts relayJson) and stops with a clear one-line error and code
 * `malformed_answer`, never acting on what it got. A small HTTP server plays the hostile relay.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc, svcEnv, tempHome } from '../helpers/cli.js';

/** What the hostile relay answers, by `METHOD path`; anything else is a 404 in the protocol's error shape. */
const answers: Record<string, unknown> = {};
/** Every request the hostile relay got, as `METHOD path`. */
const seen: string[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = `${req.method} ${req.url}`;
      seen.push(key);
      const known = key in answers;
      res.writeHead(known ? 200 : 404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(known ? answers[key] : { error: { code: 'not_found', message: key } }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((done) => server.close(done));
});

function loggedInHome() {
  const home = tempHome();
  mkdirSync(join(home.home, '.svc'), { mode: 0o700 });
  writeFileSync(
    join(home.home, '.svc', 'config.json'),
    JSON.stringify({
      apiKey: 'svc_key_test',
      hookId: 'c_test',
      baseUrl: url,
      wsUrl: `${url.replace('http', 'ws')}/ws`,
    }),
    { mode: 0o600 },
  );
  return home;
}

describe('answers from a relay that does not keep to the protocol', () => {
  it('svc pair: a pairing code that is not one is refused, and no link is printed', async () => {
    const home = loggedInHome();
    try {
      answers['POST /pairings'] = { code: 'javascript:alert(1)//', expiresAt: 'soon' };
      const run = await runSvc(['pair', '--json'], svcEnv(home.home));
      expect(run.code).not.toBe(0);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/answer to POST \/pairings is malformed \(code: .*\[malformed_answer\]$/m);
    } finally {
      home.cleanup();
    }
  });

  it('svc login: a device registration answer without a device id is refused', async () => {
    const home = tempHome();
    try {
      answers['POST /devices'] = { name: 'box', kind: 'computer', publicKey: 'k', createdAt: 1 };
      const run = await runSvc(['login', '--url', url, '--key', 'svc_key_test', '--name', 'box'], svcEnv(home.home));
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/answer to POST \/devices is malformed \(deviceId: .*\[malformed_answer\]$/m);
    } finally {
      home.cleanup();
    }
  });

  it('svc login: a registration answer without a hookId is refused, and no config is written from it', async () => {
    const home = tempHome();
    try {
      answers['POST /devices'] = {
        deviceId: 'd_0123456789abcdef',
        name: 'box',
        kind: 'computer',
        publicKey: 'k',
        createdAt: 1,
      };
      answers['POST /computers'] = { name: 'box', hookId: 42 };
      const run = await runSvc(
        ['login', '--url', url, '--key', 'svc_key_test', '--name', 'box', '--json'],
        svcEnv(home.home),
      );
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/answer to POST \/computers is malformed \(hookId: .*\[malformed_answer\]$/m);
      expect((await runSvc(['pair', '--json'], svcEnv(home.home))).stderr).toMatch(/not logged in/);
    } finally {
      home.cleanup();
    }
  });

  it('svc agent send: a device list that is not one is refused, and nothing is sealed or sent', async () => {
    const home = loggedInHome();
    try {
      const computerDevice = 'd_fedcba9876543210';
      answers['POST /devices'] = {
        deviceId: 'd_0123456789abcdef',
        name: 'svc agent send',
        kind: 'cli',
        publicKey: 'k',
        createdAt: 1,
      };
      answers['GET /computers'] = {
        computers: [
          {
            hookId: 'c_test',
            name: 'box',
            platform: 'linux',
            online: true,
            lastSeenAt: 1,
            sessions: [{ name: 'svc-proj', attached: false, createdAt: 1, activityAt: 2, panes: [] }],
            sessionsAt: 1,
            deviceId: computerDevice,
          },
        ],
      };
      // The computer's key is not a string: whatever the CLI would seal for, it must not be this.
      answers['GET /devices'] = {
        devices: [{ deviceId: computerDevice, name: 'box', kind: 'computer', publicKey: 42, createdAt: 1 }],
      };
      seen.length = 0;
      const run = await runSvc(['agent', 'send', 'hello'], svcEnv(home.home));
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(
        /answer to GET \/devices is malformed \(devices\.0\.publicKey: .*\[malformed_answer\]$/m,
      );
      expect(seen).toContain('GET /devices');
      expect(seen.filter((k) => k.startsWith('POST /pushes'))).toEqual([]);
      expect(run.stdout).toBe('');
    } finally {
      home.cleanup();
    }
  });
});
