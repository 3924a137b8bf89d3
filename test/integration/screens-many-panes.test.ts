/**
 * The inventory and the fresh reading on a tmux server that has had many panes (ids %0 to %15 and beyond), with
 * windows and sessions made and killed in between, as a user's server is within minutes. Each agent pane runs a
 * stand-in that draws a screen captured from the real program (test/fixtures/screens/), under the agent's process
 * name; every session's state must read as its screen says, whatever its pane id.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readInventory } from '../../actors/sessions/inventoryReading.js';
import { applyScreens, describeInventory } from '../../core/sessions/view.js';
import { shellQuote } from '../../core/tmux/tmux.js';
import { startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

const HOST = 'test-host';
const FIXTURES = new URL('../fixtures/screens/', import.meta.url);

/** Session → agent id, fixture, and the state it must read as. */
const SESSIONS: [string, string, string, 'idle' | 'working' | 'awaiting_approval'][] = [
  ['cc-idle', 'A1', 'idle-1', 'idle'],
  ['cc-asks', 'A1', 'awaiting_approval-1', 'awaiting_approval'],
  ['cc-works', 'A1', 'working-1', 'working'],
  ['codex-asks', 'A2', 'awaiting_approval-1', 'awaiting_approval'],
  ['codex-works', 'A2', 'working-1', 'working'],
  ['gemini-asks', 'A3', 'awaiting_approval-1', 'awaiting_approval'],
  ['gemini-idle', 'A3', 'idle-2', 'idle'],
  ['gemini-works', 'A3', 'working-1', 'working'],
];

let tmux: TmuxServer;
let standIn: string;

beforeAll(async () => {
  tmux = await startTmuxServer();
  standIn = join(tmux.dir, 'stand-in.mjs');
  writeFileSync(
    standIn,
    `import { readFileSync } from 'node:fs';
const [file, name] = process.argv.slice(2);
process.title = name;
const text = readFileSync(file, 'utf8').replace(/\\n+$/, '');
process.stdout.write('\\x1b[2J\\x1b[H' + text.replace(/\\n/g, '\\r\\n'));
process.stdin.setRawMode(true);
process.stdin.resume();
`,
  );
});
afterAll(async () => {
  await tmux?.cleanup();
});

async function scratch(i: number): Promise<void> {
  // a window made and killed, and a session made and killed: pane ids move on
  await tmux.run(['new-window', '-d', '-t', '=keep:', 'cat']);
  await tmux.run(['kill-window', '-t', '=keep:1']);
  await tmux.newSession(`gone-${i}`, 'cat');
  await tmux.run(['kill-session', '-t', `=gone-${i}`]);
}

describe('reading screens on a server past pane %10', () => {
  it('reads every session’s state right, and names the ones showing a prompt', { timeout: 60_000 }, async () => {
    await tmux.newSession('keep', 'cat');
    const panes: Record<string, string> = {};
    for (const [i, [name, agent, fixture]] of SESSIONS.entries()) {
      await scratch(i);
      const file = new URL(`${agent}/${fixture}.txt`, FIXTURES).pathname;
      const process = { A1: 'claude', A2: 'codex', A3: 'gemini' }[agent]!;
      const command = ['exec', shellQuote(globalThis.process.execPath), standIn, shellQuote(file), process].join(' ');
      const made = await tmux.newSession(name, command, {
        options: { '@svc-kind': 'agent', '@svc-agent': agent, '@svc-project': 'proj' },
      });
      panes[name] = made.paneId;
    }
    const ids = Object.values(panes).map((id) => Number(id.slice(1)));
    // The first agent pane is past %3, where strftime starts padding; most are past %10.
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(3);
    expect(Math.max(...ids)).toBeGreaterThanOrEqual(15);
    expect(ids.filter((n) => n >= 10).length).toBeGreaterThanOrEqual(4);
    for (const name of Object.keys(panes))
      await waitFor(async () => (await tmux.capture(name)).trim().length > 0, { what: `${name} to draw` });

    // Two readings 2 s apart (as two inventory ticks): the debounce accepts each state, idle once quiet.
    const first = await readInventory(tmux.tmux, HOST, () => 1_000);
    const second = await readInventory(tmux.tmux, HOST, () => 3_000);
    expect(Object.keys(second.screens).sort()).toEqual(Object.values(panes).sort());
    const once = applyScreens(describeInventory(first.sessions, HOST), first.screens, {}, first.takenAt);
    const read = applyScreens(describeInventory(second.sessions, HOST), second.screens, once.debounce, second.takenAt);
    const states = Object.fromEntries(read.sessions.map((s) => [s.name, s.state]));
    expect(states).toEqual({
      keep: undefined,
      ...Object.fromEntries(SESSIONS.map(([name, , , state]) => [name, state])),
    });
    // The fresh reading (what refuses a push) sees each prompt at once, and reads every screen.
    const asking = SESSIONS.filter(([, , , s]) => s === 'awaiting_approval').map(([name]) => name);
    expect(once.approvalOnScreen.sort()).toEqual(asking.sort());
    expect(once.unreadable).toEqual([]);

    // A session killed since: the rest still read right.
    await tmux.run(['kill-session', '-t', '=cc-idle']);
    await scratch(99);
    const third = await readInventory(tmux.tmux, HOST);
    const after = applyScreens(describeInventory(third.sessions, HOST), third.screens, {}, third.takenAt);
    expect(after.sessions.map((s) => s.name)).not.toContain('cc-idle');
    expect(after.approvalOnScreen.sort()).toEqual(asking.sort());
    expect(after.unreadable).toEqual([]);
  });
});
