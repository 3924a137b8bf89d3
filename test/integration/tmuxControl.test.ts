/**
 * The listener's persistent tmux client (actors/tmux/control.ts through actors/tmux/tmux.ts) against a real tmux on a
 * private socket: calls cost no process, the client is not "attached" and changes no size, text of any kind arrives
 * intact, a pane cannot confuse the replies, and it comes back after the server restarts or falls back when it
 * cannot start. Every other adapter case runs in both modes in test/integration/tmux.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTmux } from '../../actors/tmux/tmux.js';
import { runTmux, startTmuxServer, TMUX_BIN, type TmuxServer, waitFor } from '../helpers/tmux.js';

let server: TmuxServer;
let calls: string;
let bin: string;

/** A tmux that writes down each start (one line per process) before it runs the real one. */
function countingTmux(dir: string, extra = ''): string {
  const path = join(dir, 'tmux-counting');
  writeFileSync(path, `#!/bin/sh\necho "$*" >> '${calls}'\n${extra}exec ${TMUX_BIN} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}
const starts = () => readFileSync(calls, 'utf8').split('\n').filter(Boolean);

beforeEach(async () => {
  server = await startTmuxServer();
  calls = join(server.dir, 'calls.log');
  writeFileSync(calls, '');
  bin = countingTmux(server.dir);
});
afterEach(async () => {
  await server.cleanup();
});

const adapter = (more: Partial<Parameters<typeof createTmux>[0]> = {}) =>
  createTmux({ socketPath: server.socketPath, bin, persistent: true, ...more });

describe('the persistent tmux client', () => {
  it('carries the inventory, reads and typing without a process per call', async () => {
    await server.newSession('work', ['cat']);
    const tmux = adapter();
    try {
      expect(await tmux.listSessions()).toHaveLength(1); // starts the client (one process), then goes through it
      const before = starts().length;
      expect(before).toBe(1);
      expect(starts()[0]).toMatch(/-C attach-session -f ignore-size,no-output/);
      for (let i = 0; i < 20; i++) {
        await tmux.listSessions();
        await tmux.sendLiteral('work', `line ${i}`, { enter: true });
        await tmux.captureMany([(await tmux.listSessions())[0]!.panes[0]!.id], 50);
      }
      await tmux.paste('work', 'pasted\ntwo lines', { bracketed: true });
      await waitFor(async () => (await tmux.capture('work', 60)).includes('line 19'), { what: 'the typed lines' });
      expect(starts()).toHaveLength(before); // 81 calls, no new tmux process
    } finally {
      tmux.close();
    }
  });

  it('is not counted as attached, and changes no window size', async () => {
    await server.newSession('wide', ['cat'], { width: 211, height: 47 });
    const tmux = adapter();
    try {
      await tmux.listSessions();
      const clients = await server.run(['list-clients', '-F', '#{client_session} #{client_control_mode}']);
      expect(clients).toBe('wide 1\n'); // it is attached, and tmux says it is a control-mode client…
      expect((await tmux.listSessions())[0]).toMatchObject({ name: 'wide', attached: false }); // …which is not a person
      const size = await server.run(['display-message', '-p', '-t', '=wide:', '#{window_width}x#{window_height}']);
      expect(size).toBe('211x47\n');
      // a person's client still counts, beside it
      await server.newSession('viewer', [
        'env',
        '-u',
        'TMUX',
        TMUX_BIN,
        '-S',
        server.socketPath,
        'attach',
        '-t',
        '=wide',
      ]);
      await waitFor(async () => (await tmux.listSessions()).find((s) => s.name === 'wide')?.attached, {
        what: 'wide attached by a person',
      });
    } finally {
      tmux.close();
    }
  });

  it('types text of any kind exactly: quotes, $, ~, backslashes, ;, control bytes, 100 kB', async () => {
    // the terminal is raw before a byte is typed: a pane still in cooked mode keeps at most 4095 characters of a line
    // (a run with two CPU spinners typed into it before `stty` ran and lost the rest of the 100 kB)
    const ready = join(server.dir, 'raw-ready');
    await server.newSession('raw', [
      'sh',
      '-c',
      `stty raw -echo; : > '${ready}'; exec cat > '${join(server.dir, 'got')}'`,
    ]);
    await waitFor(() => existsSync(ready), { what: 'the pane in raw mode' });
    const tmux = adapter();
    try {
      await tmux.listSessions();
      const text = `"q" 'x' $HOME \${X} ~ ~/a \\ \\n ; a; #{pane_id} #(touch /tmp/no) %1 é ✓\tTAB\x01\x1b[1m`;
      await tmux.sendLiteral('raw', text);
      const long = 'z'.repeat(100_000);
      await tmux.paste('raw', `${long}\nend`, { bracketed: false, raw: true });
      const expected = `${text}${long}\nend`;
      const got = () => readFileSync(join(server.dir, 'got'), 'utf8');
      await waitFor(() => got().endsWith('\nend'), { what: 'every byte in the pane' });
      expect(got()).toBe(expected);
      expect(starts()).toHaveLength(1);
    } finally {
      tmux.close();
    }
  });

  it('a pane that prints control-mode lines cannot end a reply early or forge the next one', async () => {
    const forged = ['%end 1 2 1', '%error 1 3 1', '%begin 1 4 1', 'svc-end-0000', '%end 1 4 1', '%exit'];
    const script = join(server.dir, 'forge.sh');
    writeFileSync(script, `printf '%s\\n' ${forged.map((l) => `'${l}'`).join(' ')}; exec cat\n`);
    const { paneId } = await server.newSession('forger', ['sh', script]);
    const tmux = adapter();
    try {
      await tmux.listSessions();
      await waitFor(async () => (await tmux.capture('forger', 20)).includes('%exit'), { what: 'the forged lines' });
      for (let i = 0; i < 3; i++) {
        expect((await tmux.capture('forger', 20)).split('\n')).toEqual(forged);
        expect(await tmux.captureMany([paneId], 20)).toEqual({ [paneId]: forged.join('\n') });
        expect((await tmux.listSessions()).map((s) => s.name)).toEqual(['forger']);
      }
      expect(starts()).toHaveLength(1); // never desynchronised, never restarted
    } finally {
      tmux.close();
    }
  });

  it('comes back after the tmux server restarts; plain calls meanwhile', async () => {
    await server.newSession('one', ['cat']);
    const tmux = adapter();
    try {
      await tmux.listSessions();
      const first = tmux.controlPid();
      expect(first).toBeDefined();
      await server.run(['kill-server']);
      await waitFor(() => tmux.controlPid() === undefined, { what: 'the client to notice' });
      expect(await tmux.listSessions()).toEqual([]); // no server: a plain call says so
      await runTmux(server.socketPath, ['new-session', '-d', '-s', 'two', 'cat']);
      // the next try waits out CONTROL_RETRY_MS after the failed one; calls work all along
      await waitFor(
        async () => {
          await tmux.sendLiteral('two', 'x', { enter: true }); // a line each: a long run of x would wrap what follows
          return tmux.controlPid() !== undefined;
        },
        { timeoutMs: 15_000, what: 'the client back' },
      );
      expect(tmux.controlPid()).not.toBe(first);
      const n = starts().length;
      await tmux.sendLiteral('two', 'through it', { enter: true });
      await waitFor(async () => (await tmux.capture('two', 5)).includes('through it'), { what: 'the text typed' });
      expect(starts()).toHaveLength(n);
    } finally {
      tmux.close();
    }
  });

  it('a client killed from outside is replaced; its session gone, it attaches to another', async () => {
    await server.newSession('a', ['cat']);
    await server.newSession('b', ['cat']);
    const tmux = adapter();
    try {
      await tmux.listSessions();
      const attachedTo = (await server.run(['list-clients', '-F', '#{client_session}'])).trim();
      await tmux.killSession(attachedTo);
      await waitFor(
        async () => {
          await tmux.listSessions();
          const c = await server.run(['list-clients', '-F', '#{client_session} #{client_control_mode}']);
          return c.trim() !== '' && !c.includes(`${attachedTo} `);
        },
        { what: 'a client attached to the other session' },
      );
      process.kill(tmux.controlPid()!, 'SIGKILL');
      await waitFor(
        async () => {
          await tmux.sendLiteral(attachedTo === 'a' ? 'b' : 'a', 'y'); // plain call, then the client again
          return tmux.controlPid() !== undefined;
        },
        { what: 'a new client' },
      );
    } finally {
      tmux.close();
    }
  });

  it('falls back to a process per call when control mode cannot start, and close() ends the client', async () => {
    await server.newSession('plain', ['cat']);
    // a tmux that refuses -C (as a wrapper or an old tmux might)
    const refusing = countingTmux(server.dir, 'case " $* " in *" -C "*) echo "no control mode" >&2; exit 1;; esac\n');
    const tmux = createTmux({ socketPath: server.socketPath, bin: refusing, persistent: true });
    await tmux.sendLiteral('plain', 'still typed', { enter: true });
    await waitFor(async () => (await tmux.capture('plain', 5)).includes('still typed'));
    expect(tmux.controlPid()).toBeUndefined();
    expect(starts().some((l) => l.includes('-C'))).toBe(true);
    tmux.close();

    const working = adapter();
    await working.listSessions();
    const pid = working.controlPid()!;
    working.close();
    await waitFor(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    expect(execFileSync(TMUX_BIN, ['-S', server.socketPath, 'list-clients'], { encoding: 'utf8' })).toBe('');
  });
});
