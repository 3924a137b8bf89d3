/**
 * Sealed messages end to end: the real relay on a loopback port with its real SQLite file, the real `svc listener`
 * process, real tmux on a private socket, `svc agent send` as a process, and test devices that seal as an app would.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_BODY_CHARS } from '../../core/protocol/index.js';
import { exportPublicKey, generateDeviceKeys } from '../../core/seal/keys.js';
import { openDatabase } from '../../relay-server/sqlite/db.js';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { api, finalPush, startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';
import type { TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let hookId: string;
let computer: { id: string; publicKey: string };
/** Each test has an account of its own on the shared relay: its computers and pushes are its own. */
let key: string;
let account: { url: string; apiKey: string };

const token = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;
const screen = (session = 'svc-proj') => tmux.capture(session);

async function startListener(): Promise<SpawnedSvc> {
  const proc = spawnSvc(['listener'], env);
  await proc.waitForLine(/connected to ws:/);
  return proc;
}

/** A push sealed by `device` for this computer, as an app sends it. */
async function sealedPush(device: TestDevice, text: string, seq: number, session = 'svc-proj') {
  return device.seal('agent.command', computer, { text, seq, sentAt: Date.now(), session });
}

async function post(sealed: unknown, session = 'svc-proj') {
  const res = await api(relay.url, 'POST', '/pushes/send', {
    key: key,
    body: { type: 'agent.command', agentSessionName: session, body: '', targetComputer: hookId, sealed },
  });
  expect(res.status).toBe(200);
  return res.json.id as number;
}

async function postPlain(body: string) {
  const res = await api(relay.url, 'POST', '/pushes/send', {
    key: key,
    body: { type: 'agent.command', agentSessionName: 'svc-proj', body },
  });
  expect(res.status).toBe(200);
  return res.json.id as number;
}

const typedCount = async (text: string) => (await screen()).split(`you said: ${text}`).length - 1;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  key = (await relay.createAccount()).apiKey;
  account = { url: relay.url, apiKey: key };
  ({ tmux, home, env, hookId } = await loggedInComputer({ ...account, name: token('box') }));
  computer = await computerDevice(account, hookId);
});

afterEach(async () => {
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  home.cleanup();
});

describe('svc login', () => {
  it('makes the computer’s key pair (0600, private key only here) and registers its public key', async () => {
    const file = join(home.home, '.svc', 'device-key.json');
    const { statSync } = await import('node:fs');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const keyFile = JSON.parse(readFileSync(file, 'utf8'));
    expect(keyFile.deviceId).toBe(computer.id);
    expect(keyFile.publicKey).toBe(computer.publicKey);
    // The relay has the public key and nothing of the private one.
    expect(databaseHolds(relay.dataDir, keyFile.privateKey.d)).toBe(false);
    // Logging in again keeps the same device.
    const again = await runSvc(['login', '--url', relay.url, '--key', key, '--json'], env);
    expect(again.stderr).toBe('');
    expect(JSON.parse(again.stdout).deviceId).toBe(computer.id);
  });
});

describe('files that decide trust', () => {
  it('refuses a devices.json or device key open to others: plaintext is refused, nothing is opened', async () => {
    const { chmodSync, writeFileSync } = await import('node:fs');
    const pins = join(home.home, '.svc', 'devices.json');
    writeFileSync(pins, JSON.stringify({ version: 1, devices: {} }), { mode: 0o666 });
    chmodSync(pins, 0o666);
    chmodSync(join(home.home, '.svc', 'device-key.json'), 0o644);
    listener = await startListener();
    await listener.waitForLine(/refusing .*devices\.json: open to others.*plaintext is refused/);
    await listener.waitForLine(/refusing .*device-key\.json: open to others/);
    await listener.waitForLine(/server persisted listener.sessions/);
    const plain = token('plain');
    expect(await finalPush(account, await postPlain(plain))).toMatchObject({ code: 'e2ee_required' });
    const app = await registerTestDevice(account, 'app', token('phone'));
    expect(await finalPush(account, await post(await sealedPush(app, token('sealed'), 1)))).toMatchObject({
      code: 'bad_seal',
    });
  });
});

describe('svc agent send', () => {
  it('types a sealed message into the session; the relay’s database holds no trace of its text', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    const text = token('sealed message');
    const sent = await runSvc(['agent', 'send', text], env);
    expect(sent.stderr).toBe('');
    expect(sent.stdout).toBe('typed into svc-proj\n');
    expect(sent.code).toBe(0);
    await waitFor(async () => (await typedCount(text)) === 1, { what: 'the message in the pane' });
    expect(listener.output()).toMatch(/device d_[0-9a-f]+ pinned/);
    // Byte for byte, main file and WAL, UTF-8 and UTF-16: the text is not there, and neither is the session's
    // screen. The relay's log has none of it either.
    expect(databaseHolds(relay.dataDir, text)).toBe(false);
    expect(databaseHolds(relay.dataDir, `you said: ${text}`)).toBe(false);
    expect(relay.logs.join('\n')).not.toContain(text);
    // Its own key, stamp and pin of the computer are kept here, 0600.
    const { statSync } = await import('node:fs');
    for (const f of ['cli-device-key.json', 'cli-pins.json', 'devices.json']) {
      expect(statSync(join(home.home, '.svc', f)).mode & 0o777).toBe(0o600);
    }
    const second = await runSvc(['agent', 'send', '--session', 'svc-proj', token('second')], env);
    expect(second.stdout).toBe('typed into svc-proj\n');
    expect(JSON.parse(readFileSync(join(home.home, '.svc', 'cli-device-key.json'), 'utf8')).seq).toBe(2);
  });

  it('skips shell sessions: picks an agent session, and refuses a shell session by name', async () => {
    await tmux.newSession('svc-proj-sh', 'bash --norc --noprofile', {
      options: { '@svc-kind': 'shell', '@svc-project': 'proj' },
    });
    listener = await startListener();
    await waitFor(
      async () => {
        const c = await api(relay.url, 'GET', '/computers', { key: key });
        const me = c.json.computers.find((x: { hookId: string }) => x.hookId === hookId);
        return me?.sessions.some((s: { name: string; shell?: boolean }) => s.name === 'svc-proj-sh' && s.shell);
      },
      { timeoutMs: 15_000, what: 'the shell session in the inventory' },
    );
    // Make the shell the most recently active session: it is still skipped.
    await tmux.run(['send-keys', '-t', '=svc-proj-sh:', 'true', 'Enter']);
    const refused = await runSvc(['agent', 'send', '--session', 'svc-proj-sh', 'ls'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('svc: svc-proj-sh is a shell session: svc agent send skips shell sessions\n');
    const picked = await runSvc(['agent', 'send', token('to the agent')], env);
    expect(picked.stdout).toBe('typed into svc-proj\n');
  });

  it('sends a message that starts with a dash, with or without --', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    const dashed = `-${token('x')} --not-an-option -5`;
    const sent = await runSvc(['agent', 'send', ...dashed.split(' ')], env);
    expect(sent.stderr).toBe('');
    expect(sent.stdout).toBe('typed into svc-proj\n');
    const after = `--${token('after')}`;
    const literal = await runSvc(['agent', 'send', '--session', 'svc-proj', '--', after, '--json'], env);
    expect(literal.stdout).toBe('typed into svc-proj\n');
    await waitFor(async () => (await typedCount(dashed)) === 1 && (await typedCount(`${after} --json`)) === 1, {
      what: 'both messages in the pane',
    });
  });

  it('refuses a message over 65,536 characters where it is sealed, with too_large; the listener says too_large too', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    const long = 'y'.repeat(MAX_BODY_CHARS + 1);
    const refused = await runSvc(['agent', 'send', long], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/NOT SENT \(too_large\): the message is 65537 characters; at most 65536/);
    // Nothing reached the relay, and no stamp was spent.
    expect((await api(relay.url, 'GET', '/pushes/1', { key })).status).toBe(404);
    // Exactly at the limit it is sealed and sent.
    const atLimit = await runSvc(['agent', 'send', '--json', `z${'y'.repeat(MAX_BODY_CHARS - 1)}`], env);
    expect(atLimit.stderr).not.toMatch(/too_large/);
    expect(JSON.parse(atLimit.stdout)).toMatchObject({ id: 1 });
    // A sender that seals a longer text anyway: the listener says what is wrong, not bad_seal (tampering).
    const app = await registerTestDevice(account, 'app', token('phone'));
    const id = await post(await sealedPush(app, long, 1));
    expect(await finalPush(account, id)).toMatchObject({ state: 'refused', code: 'too_large' });
  });

  it('says what became of a refused message, with exit code 1', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    const res = await runSvc(['agent', 'send', '--session', 'svc-nowhere', 'hello'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/not typed into svc-nowhere: session_not_found \(that computer has no session/);
  });
});

describe('sealed pushes', () => {
  let app: TestDevice;
  beforeEach(async () => {
    app = await registerTestDevice(account, 'app', token('phone'));
  });

  it('pins the first device, then refuses plaintext with e2ee_required (typed nothing)', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    const plainBefore = token('plain before');
    expect((await finalPush(account, await postPlain(plainBefore))).state).toBe('injected');
    const first = token('first sealed');
    expect((await finalPush(account, await post(await sealedPush(app, first, 1)))).state).toBe('injected');
    const pins = JSON.parse(readFileSync(join(home.home, '.svc', 'devices.json'), 'utf8'));
    expect(pins.devices[app.deviceId]).toMatchObject({ publicKey: app.publicKey, verified: false });
    const plainAfter = token('plain after');
    expect(await finalPush(account, await postPlain(plainAfter))).toMatchObject({
      state: 'refused',
      code: 'e2ee_required',
    });
    expect(await typedCount(plainAfter)).toBe(0);
    // After a restart the pin is read back from the file: still refused.
    await listener.stop();
    listener = await startListener();
    expect(await finalPush(account, await postPlain(token('after restart')))).toMatchObject({ code: 'e2ee_required' });
  });

  it('refuses a replayed and a reordered stamp (replayed), typing each message once', async () => {
    listener = await startListener();
    const text = token('once');
    const envelope = await sealedPush(app, text, 5);
    expect((await finalPush(account, await post(envelope))).state).toBe('injected');
    // The relay (or anyone with the API key) sends the same envelope again.
    expect(await finalPush(account, await post(envelope))).toMatchObject({ state: 'refused', code: 'replayed' });
    // An older stamp arriving after a newer one.
    const older = token('older');
    expect(await finalPush(account, await post(await sealedPush(app, older, 4)))).toMatchObject({ code: 'replayed' });
    await waitFor(async () => (await typedCount(text)) === 1);
    expect(await typedCount(older)).toBe(0);
    expect(await typedCount(text)).toBe(1);
    // The stamp survives a restart.
    await listener.stop();
    listener = await startListener();
    expect(await finalPush(account, await post(envelope))).toMatchObject({ code: 'replayed' });
    expect((await finalPush(account, await post(await sealedPush(app, token('next'), 6)))).state).toBe('injected');
  });

  it('refuses tampered, misaddressed, misdirected and truncated envelopes (bad_seal), typing nothing', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    const text = token('tampered');
    const flip = (b64: string, at: number) => b64.slice(0, at) + (b64[at] === 'A' ? 'B' : 'A') + b64.slice(at + 1);
    const good = await sealedPush(app, text, 1);
    // A flipped bit in the ciphertext.
    const flipped = { ...good, ct: flip(good.ct, 10) };
    expect(await finalPush(account, await post(flipped))).toMatchObject({ state: 'refused', code: 'bad_seal' });
    // Sealed for another device (this computer is not a recipient).
    const other = await registerTestDevice(account, 'computer', token('other'));
    const wrong = await app.seal(
      'agent.command',
      { id: other.deviceId, publicKey: other.publicKey },
      {
        text,
        seq: 2,
        sentAt: Date.now(),
        session: 'svc-proj',
      },
    );
    expect(await finalPush(account, await post(wrong))).toMatchObject({ code: 'bad_seal' });
    // Truncated ciphertext.
    const truncated = { ...good, ct: good.ct.slice(0, good.ct.length - 8) };
    expect(await finalPush(account, await post(truncated))).toMatchObject({ code: 'bad_seal' });
    // Another purpose's envelope.
    const keys = await app.seal('pane.keys', computer, { session: 'svc-proj', seq: 4, text });
    expect(await finalPush(account, await post(keys))).toMatchObject({ code: 'bad_seal' });
    expect(await typedCount(text)).toBe(0);
    expect(listener.output()).not.toContain(text);
    // The good one still works: none of these spent its stamp.
    expect((await finalPush(account, await post(good))).state).toBe('injected');
    // An authentic message sealed for another session, pointed at this one by the relay: its stamp is spent, and
    // it is not typed anywhere.
    const elsewhere = token('elsewhere');
    const redirected = await sealedPush(app, elsewhere, 3, 'svc-other');
    expect(await finalPush(account, await post(redirected, 'svc-proj'))).toMatchObject({ code: 'bad_seal' });
    expect(await typedCount(elsewhere)).toBe(0);
  });

  it('catches a relay that swaps a device’s key: subscriber_unverified, loudly, until verified', async () => {
    listener = await startListener();
    expect((await finalPush(account, await post(await sealedPush(app, token('pin me'), 1)))).state).toBe('injected');

    // The relay swaps the phone's key for one it holds, and seals as the phone.
    const evil = await generateDeviceKeys(false);
    const evilKey = await exportPublicKey(evil.publicKey);
    const db = openDatabase(join(relay.dataDir, 'relay.db'));
    db.prepare('UPDATE devices SET public_key = ? WHERE id = ?').run(evilKey, app.deviceId);
    db.close();
    const { seal } = await import('../../core/seal/seal.js');
    const { importPublicKey } = await import('../../core/seal/keys.js');
    const forged = token('forged');
    const forgedEnvelope = await seal({
      purpose: 'agent.command',
      from: { id: app.deviceId, privateKey: evil.privateKey },
      to: [{ id: computer.id, publicKey: await importPublicKey(computer.publicKey) }],
      plaintext: JSON.stringify({ text: forged, seq: 99, sentAt: Date.now(), session: 'svc-proj' }),
    });
    expect(await finalPush(account, await post(forgedEnvelope))).toMatchObject({
      state: 'refused',
      code: 'subscriber_unverified',
    });
    await listener.waitForLine(new RegExp(`device ${app.deviceId} changed its key: pinned .* the relay now lists`));
    // The real phone is refused too until a person looks: the list is what changed.
    const real = token('real');
    expect(await finalPush(account, await post(await sealedPush(app, real, 2)))).toMatchObject({
      code: 'subscriber_unverified',
    });
    expect(await typedCount(forged)).toBe(0);
    expect(await typedCount(real)).toBe(0);

    // svc devices shows it loudly, and the safety codes differ from the real key's.
    const list = await runSvc(['devices'], env);
    expect(list.stdout).toMatch(new RegExp(`${app.deviceId}.*KEY CHANGED`));
    expect(list.stderr).toMatch(/a device key changed on the relay/);
    const json = JSON.parse((await runSvc(['devices', '--json'], env)).stdout);
    const row = json.devices.find((d: { deviceId: string }) => d.deviceId === app.deviceId);
    const { safetyCode } = await import('../../core/seal/keys.js');
    expect(row.safetyCode).toBe(await safetyCode(computer.publicKey, evilKey));
    expect(row.safetyCode).not.toBe(await safetyCode(computer.publicKey, app.publicKey));
  });

  it('refuses a computer the relay repoints at another device, with a safety code, until verified', async () => {
    listener = await startListener();
    await listener.waitForLine(/server persisted listener.sessions/);
    expect((await runSvc(['agent', 'send', token('first')], env)).stdout).toBe('typed into svc-proj\n');
    // The computer's own key (the one thing the relay still lets do it) names a new device for it: a reinstall, or
    // a stolen key, or the relay's operator. The new device's key is ours, so we could read what is sealed for it.
    const decoy = await generateDeviceKeys(false);
    const decoyKey = await exportPublicKey(decoy.publicKey);
    const device = await api(relay.url, 'POST', '/devices', {
      key,
      body: { name: 'decoy', kind: 'computer', publicKey: decoyKey },
    });
    const name = (await api(relay.url, 'GET', '/computers', { key })).json.computers[0].name;
    const moved = await api(relay.url, 'POST', '/computers', { key, body: { name, deviceId: device.json.deviceId } });
    expect(moved.json.deviceId).toBe(device.json.deviceId);

    const refused = await runSvc(['agent', 'send', token('redirected')], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `NOT SENT: the relay now says ${name} (${hookId}) is device ${device.json.deviceId}`,
    );
    expect(refused.stderr).toContain(`it was ${computer.id}`);
    const { safetyCode } = await import('../../core/seal/keys.js');
    expect(refused.stderr).toContain(`safety code ${await safetyCode(computer.publicKey, decoyKey)}`);
    expect((await api(relay.url, 'GET', '/pushes/2', { key })).status).toBe(404);
    const rows = JSON.parse((await runSvc(['devices', '--json'], env)).stdout).devices;
    expect(rows.find((d: { deviceId: string }) => d.deviceId === device.json.deviceId).state).toContain(
      `COMPUTER MOVED (${name} was ${computer.id})`,
    );
    // Still refused on the next try: the pin, not a one-off check.
    expect((await runSvc(['agent', 'send', token('again')], env)).stderr).toContain('NOT SENT');

    // The person compared the code and accepts the new device: now it is sealed for that one (and, since that is
    // not really this computer's key, the listener here cannot open it).
    expect((await runSvc(['devices', 'verify', device.json.deviceId, '--yes'], env)).code).toBe(0);
    const after = await runSvc(['agent', 'send', token('after')], env);
    expect(after.stderr).not.toContain('NOT SENT');
    expect((await api(relay.url, 'GET', '/pushes/2', { key })).status).toBe(200);
  });

  it('svc devices verify accepts a device’s new key; forget drops it here and on the relay', async () => {
    listener = await startListener();
    expect((await finalPush(account, await post(await sealedPush(app, token('first'), 1)))).state).toBe('injected');
    // The phone was reinstalled: a new key under the same device id (as the relay would show it).
    const fresh = await generateDeviceKeys(false);
    const freshKey = await exportPublicKey(fresh.publicKey);
    const db = openDatabase(join(relay.dataDir, 'relay.db'));
    db.prepare('UPDATE devices SET public_key = ? WHERE id = ?').run(freshKey, app.deviceId);
    db.close();
    const { seal } = await import('../../core/seal/seal.js');
    const { importPublicKey, safetyCode } = await import('../../core/seal/keys.js');
    const sealFresh = async (text: string, seq: number) =>
      seal({
        purpose: 'agent.command',
        from: { id: app.deviceId, privateKey: fresh.privateKey },
        to: [{ id: computer.id, publicKey: await importPublicKey(computer.publicKey) }],
        plaintext: JSON.stringify({ text, seq, sentAt: Date.now(), session: 'svc-proj' }),
      });
    expect(await finalPush(account, await post(await sealFresh(token('x'), 1)))).toMatchObject({
      code: 'subscriber_unverified',
    });
    const noTty = await runSvc(['devices', 'verify', app.deviceId], env);
    expect(noTty.code).toBe(1);
    expect(noTty.stdout).toContain(`safety code  ${await safetyCode(computer.publicKey, freshKey)}`);
    expect(noTty.stdout).toContain('a NEW key');
    const verified = await runSvc(['devices', 'verify', app.deviceId, '--yes'], env);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(`device ${app.deviceId} verified`);
    // A new key starts its stamps afresh.
    const after = token('after verify');
    expect((await finalPush(account, await post(await sealFresh(after, 1)))).state).toBe('injected');
    const listed = JSON.parse((await runSvc(['devices', '--json'], env)).stdout).devices;
    expect(listed.find((d: { deviceId: string }) => d.deviceId === app.deviceId).state).toBe('pinned, verified');
    expect(listed.find((d: { deviceId: string }) => d.deviceId === computer.id).state).toBe('this computer');

    const forgot = await runSvc(['devices', 'forget', app.deviceId], env);
    expect(forgot.stdout).toBe(`device ${app.deviceId} forgotten here and on the relay\n`);
    const devices = await api(relay.url, 'GET', '/devices', { key: key });
    expect(devices.json.devices.some((d: { deviceId: string }) => d.deviceId === app.deviceId)).toBe(false);
    expect(await finalPush(account, await post(await sealFresh(token('gone'), 2)))).toMatchObject({
      code: 'subscriber_unverified',
    });
  });
});
