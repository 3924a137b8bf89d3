/**
 * The phone app in a real browser (Debian's headless Chromium) against a real relay, the real `svc listener`
 * process and real tmux on a private socket, as a person would use it: pair through the link `svc pair` prints,
 * see sessions appear, send, watch, read refusals, and live through a relay restart. Screenshots of each screen
 * at phone size go to test-results/screenshots/, or to docs/screenshots/ with SVC_SCREENSHOTS=docs (how the
 * README's pictures are made), so a test run leaves the repository as it was.
 *
 * The steps depend on each other (one paired phone), so they run in order in one file.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fromSessionMenu, pairingLink, screenshotPath, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, SVC_BIN, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { fakeAgentBin, fakeAgentCommand, startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

const INVENTORY_TICK_MS = 5_000;

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let proj: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let link: string;
let hookId: string;

function svcIn(cwd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [SVC_BIN, ...args], { cwd, env, timeout: 30_000 }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function shot(p: Page, name: string): Promise<void> {
  await p.screenshot({ path: screenshotPath(name) });
}

const screen = (session: string) => tmux.capture(session);

/** Whether the page's background and its text are light or dark (by the relative luminance of their colours). */
async function pageColours(p: Page): Promise<{ background: string; text: string }> {
  const [background, text] = await p.evaluate(() => {
    const style = getComputedStyle(document.documentElement);
    return [style.backgroundColor, style.color];
  });
  const tone = (css: string) => {
    const [r, g, b] = (css.match(/\d+(\.\d+)?/g) ?? []).map(Number) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 128 ? 'light' : 'dark';
  };
  return { background: tone(background), text: tone(text) };
}

beforeAll(async () => {
  relay = await startTestRelay();
  tmux = await startTmuxServer();
  home = tempHome();
  const bin = await fakeAgentBin(tmux.dir, ['claude']);
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath, PATH: `${bin}:${process.env.PATH}`, SHELL: '/bin/sh' });
  proj = join(home.home, 'proj');
  mkdirSync(proj);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: proj, env, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'first');
  const login = await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop', '--json'], env);
  expect(login.code).toBe(0);
  hookId = JSON.parse(login.stdout).hookId;
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  browser = await startBrowser();
}, 60_000);

// An uncaught error or a console error in a page fails the test it happened in (a test that expects some, such as
// refused connections while the relay is down, says which).
afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await relay?.close();
  home?.cleanup();
});

describe('the phone app', () => {
  it('pairs through the link `svc pair` prints, once', async () => {
    const unpaired = await browser.newPage();
    await unpaired.goto(`${relay.url}/`);
    await unpaired.getByText('This phone is not paired with a computer yet.').waitFor();
    await shot(unpaired, '1-pair');

    const pair = await runSvc(['pair'], env);
    expect(pair.code).toBe(0);
    link = pairingLink(pair.stdout);
    expect(pair.stdout).not.toContain('▀'); // through a pipe the link alone: the QR code is for a terminal
    page = await browser.newPage();
    await page.goto(link);
    await page.getByRole('region', { name: 'computer laptop' }).waitFor({ timeout: 10_000 });
    // The code left the address bar; the token is not in any URL.
    expect(page.url()).not.toContain('pair=');
    await page.getByText('Online', { exact: true }).waitFor();
    // right after pairing the app offers notifications (test/e2e/notifyOffer.app.test.ts): not now
    await page
      .getByRole('region', { name: 'Notifications on this phone' })
      .getByRole('button', { name: 'Not now' })
      .click();

    const again = await browser.newPage();
    // The used code is answered 410, which Chromium prints as a console error.
    browser.allowConsoleErrors(/status of 410 \(Gone\)/);
    await again.goto(link);
    await again.getByText('This pairing link was already used.').waitFor();
    await shot(again, '1-pair-used');
  }, 60_000);

  it('shows a session started with `svc cc --detach`, grouped and sorted', async () => {
    const run = await svcIn(proj, ['cc', '--detach']);
    expect(run).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    // It appears after the listener's next inventory tick; how soon is measured in bench/, not asserted here.
    await page
      .getByRole('link', { name: /^proj · Claude Code, svc-proj,/ })
      .waitFor({ timeout: INVENTORY_TICK_MS + 25_000 });

    expect((await svcIn(proj, ['cc', '--detach'])).stdout).toBe('svc-proj-2\n');
    expect((await svcIn(proj, ['cc', '--detach', '--wt', 'feat/login'])).code).toBe(0);
    expect((await svcIn(proj, ['sh', '--detach'])).stdout).toBe('svc-proj-sh\n');
    await tmux.newSession('scratch', 'bash --norc --noprofile');
    await page.getByRole('link', { name: /proj · Claude Code #2/ }).waitFor({ timeout: 10_000 });
    await page.getByRole('link', { name: /wt-feat-login · Claude Code/ }).waitFor({ timeout: 10_000 });
    await page.getByRole('link', { name: /^proj · Shell, svc-proj-sh,/ }).waitFor({ timeout: 10_000 });
    await page.getByRole('link', { name: /^scratch,/ }).waitFor({ timeout: 10_000 });
    // The worktree's session is listed under its repository's worktrees group.
    await page
      .locator('li.group')
      .filter({ has: page.locator('.group-name', { hasText: /· worktrees$/ }) })
      .getByRole('link', { name: /wt-feat-login · Claude Code/ })
      .waitFor({ state: 'visible', timeout: 5_000 });
    await shot(page, '2-agents');
  }, 60_000);

  it('sends a message: typed in the pane, and "typed" on the phone', async () => {
    await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).click();
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.waitFor();
    // no prompt on screen: no approval card, not even an empty box (`hidden` lost to the card's display once);
    // Claude Code has its hook, so no offer to end answers with svc_ask
    expect(await page.locator('.approval').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Ask it to end answers with a question' }).count()).toBe(0);
    await box.fill('run the tests please');
    await page.getByRole('button', { name: 'Send' }).click();
    await waitFor(async () => (await screen('svc-proj')).includes('you said: run the tests please'), {
      timeoutMs: 15_000,
      what: 'the message in the pane',
    });
    await page.locator('.message[data-state="injected"]').getByText('typed').waitFor({ timeout: 10_000 });
    expect(await box.inputValue()).toBe('');
    await shot(page, '3-sent');
  }, 60_000);

  it('offers Cursor Agent (no prompt hook) the line that ends its answers with svc_ask', async () => {
    await tmux.newSession('svc-cursor', fakeAgentCommand('cursor-agent'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A6', '@svc-project': 'proj' },
    });
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/svc-cursor`);
    await page.getByRole('button', { name: 'Ask it to end answers with a question' }).click();
    expect(await page.getByRole('textbox', { name: 'Message' }).inputValue()).toMatch(
      /^From now on, end every response/,
    );
    await page.getByRole('textbox', { name: 'Message' }).fill('');
    await tmux.run(['kill-session', '-t', '=svc-cursor']);
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/svc-proj`);
  }, 60_000);

  it('watches the pane: a line printed in the session appears on the phone', async () => {
    await fromSessionMenu(page, 'Watch');
    await page.locator('.xterm-rows').waitFor({ timeout: 10_000 });
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', 'hello from the laptop']);
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
    await page.locator('.xterm-rows').getByText('you said: hello from the laptop').waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Escape' }).click();
    await page.getByText('Esc: typed').waitFor({ timeout: 10_000 });
    await shot(page, '4-watch');
  }, 60_000);

  it('draws the pane at its own size: readable by default with sideways scroll, or fitted to the width', async () => {
    const paneSize = async () => {
      const out = await tmux.run(['display-message', '-p', '-t', '=svc-proj:', '#{pane_width} #{pane_height}']);
      return out.trim().split(' ');
    };
    const term = page.getByRole('img', { name: 'Live screen of the session' });
    const [cols, rows] = await paneSize();
    await waitFor(async () => (await term.getAttribute('data-cols')) === cols, { what: 'the pane’s width' });
    expect(await term.getAttribute('data-rows')).toBe(rows);
    // A line wider than the 80 columns a terminal starts with is on one row, whole.
    const long = `wide-${'x'.repeat(120)}-end`;
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', long]);
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
    await page
      .locator('.xterm-rows > div')
      .filter({ hasText: `you said: ${long}` })
      .waitFor({ timeout: 10_000 });
    const wrap = page.locator('.terminal-wrap');
    const scrollsSideways = () => wrap.evaluate((el) => el.scrollWidth > el.clientWidth);
    // Readable by default: 12 px letters, and the 200 columns scroll sideways.
    expect(await term.getAttribute('data-zoom')).toBe('12');
    expect(Number(await term.getAttribute('data-font-size'))).toBe(12);
    expect(await page.getByTestId('zoom-size').textContent()).toBe('12 px');
    expect(await scrollsSideways()).toBe(true);
    // Fit width: 200 columns cannot fit 375 px in a readable font: the smallest one, still scrolling sideways.
    const fit = page.getByRole('button', { name: 'Fit width' });
    await fit.click();
    expect(await fit.getAttribute('aria-pressed')).toBe('true');
    expect(Number(await term.getAttribute('data-font-size'))).toBe(7);
    // A 60-column pane fits the phone's width: bigger letters, nothing to scroll.
    await tmux.run(['resize-window', '-t', '=svc-proj:', '-x', '60', '-y', '20']);
    await waitFor(async () => (await term.getAttribute('data-cols')) === '60', { what: 'the resized pane' });
    expect(await term.getAttribute('data-rows')).toBe('20');
    await waitFor(async () => Number(await term.getAttribute('data-font-size')) > 7, { what: 'a larger fitted font' });
    expect(await scrollsSideways()).toBe(false);
    await shot(page, '4-watch-narrow');
    await fit.click(); // back to readable
    expect(await term.getAttribute('data-zoom')).toBe('12');
    await tmux.run(['resize-window', '-t', '=svc-proj:', '-x', cols!, '-y', rows!]);
    await waitFor(async () => (await term.getAttribute('data-cols')) === cols, { what: 'the pane back at its size' });
  }, 60_000);

  it('an 80x24 pane on a 390 px phone: readable letters, a zoom control, remembered on this phone', async () => {
    const term = page.getByRole('img', { name: 'Live screen of the session' });
    const [cols, rows] = (await tmux.run(['display-message', '-p', '-t', '=svc-proj:', '#{pane_width} #{pane_height}']))
      .trim()
      .split(' ');
    await page.setViewportSize({ width: 390, height: 844 });
    await tmux.run(['resize-window', '-t', '=svc-proj:', '-x', '80', '-y', '24']);
    await waitFor(async () => (await term.getAttribute('data-cols')) === '80', { what: 'the 80-column pane' });
    const font = async () => Number(await term.getAttribute('data-font-size'));
    const rowHeight = () =>
      page
        .locator('.xterm-rows > div')
        .first()
        .evaluate((el) => el.getBoundingClientRect().height);
    const said = 'you said: readable on a phone, the rest of an 80-column line scrolls sideways';
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', said.slice('you said: '.length)]);
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
    await page.locator('.xterm-rows > div').filter({ hasText: said }).waitFor({ timeout: 10_000 });
    expect(await font()).toBe(12);
    expect(await rowHeight()).toBeGreaterThanOrEqual(12); // a line as tall as the font, not the fitted 7 px
    expect(await page.locator('.terminal-wrap').evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
    await shot(page, '4-watch-readable');

    // a shorter screen, so the pane at 14 px is taller than its box
    await page.setViewportSize({ width: 390, height: 600 });
    await page.getByRole('button', { name: 'Larger text' }).click();
    await page.getByRole('button', { name: 'Larger text' }).click();
    expect(await font()).toBe(14);
    expect(await page.getByTestId('zoom-size').textContent()).toBe('14 px');
    // a taller pane than its box: the bottom, where an agent's prompt is, stays in view
    await waitFor(
      () =>
        page
          .locator('.terminal-wrap')
          .evaluate((el) => el.scrollHeight > el.clientHeight && el.scrollTop + el.clientHeight >= el.scrollHeight - 2),
      { what: 'the pane’s bottom in view at 14 px' },
    );
    await page.setViewportSize({ width: 390, height: 844 });
    // Kept on this phone: the Watch screen opens at 14 px after a reload.
    await page.reload();
    await page.locator('.xterm-rows').waitFor({ timeout: 10_000 });
    await waitFor(async () => (await term.getAttribute('data-cols')) === '80', { what: 'the pane after a reload' });
    expect(await font()).toBe(14);

    await page.getByRole('button', { name: 'Smaller text' }).click();
    await page.getByRole('button', { name: 'Smaller text' }).click();
    expect(await font()).toBe(12);
    await page.setViewportSize({ width: 375, height: 812 });
    await tmux.run(['resize-window', '-t', '=svc-proj:', '-x', cols!, '-y', rows!]);
    await waitFor(async () => (await term.getAttribute('data-cols')) === cols, { what: 'the pane back at its size' });
  }, 60_000);

  it('says when the computer goes offline, keeps the last screen, refuses keys, and is live again by itself', async () => {
    const banner = page.getByTestId('computer-away');
    await listener.stop();
    await banner.getByText('laptop went offline — the screen below is the last one seen.').waitFor({ timeout: 10_000 });
    await page.locator('.xterm-rows').getByText('you said: hello from the laptop').waitFor();
    // Enter pressed now is refused at once, and never typed when the computer is back.
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', 'half typed']);
    await page.getByRole('button', { name: 'Enter' }).click();
    await page.getByText(/^Enter: not typed: the computer is offline/).waitFor({ timeout: 5_000 });
    await shot(page, '4-watch-offline');

    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    await banner.waitFor({ state: 'hidden', timeout: 20_000 });
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'C-u']);
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', 'back again']);
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
    await page.locator('.xterm-rows').getByText('you said: back again').waitFor({ timeout: 10_000 });
    expect(await screen('svc-proj')).not.toContain('you said: half typed');
  }, 60_000);

  it('says in words why a message was refused: a shell in front', async () => {
    await page.goto(`${relay.url}/#/s/${hookId}/scratch`);
    await page.getByRole('textbox', { name: 'Message' }).fill('ls');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText(/a shell is in front/).waitFor({ timeout: 15_000 });
    expect(await screen('scratch')).not.toContain('ls');
  }, 60_000);

  it('recovers by itself after the relay restarts, showing the last inventory while offline', async () => {
    await page.goto(`${relay.url}/#/`);
    await page.getByText('Online', { exact: true }).waitFor();
    // Reconnect is offered only when there is something to try
    expect(await page.getByRole('button', { name: 'Reconnect' }).isVisible()).toBe(false);
    // While the relay is down, the page's connections and fetches are refused, and Chromium prints each.
    browser.allowConsoleErrors(/net::ERR_CONNECTION_REFUSED/);
    const restarting = relay.restart({ downMs: 6_000 });
    await page.getByText(/^Offline/).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Reconnect' }).waitFor();
    await page.getByText(/agents as last seen/).waitFor();
    // The agents are still listed, from the last inventory.
    await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).waitFor();
    await shot(page, '5-offline');
    // A tap while the offline screen redraws every second: pressed before a redraw, released after it, it still
    // opens the session (the list under the finger is not swapped when nothing changed; CI missed the tap once).
    const link = page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ });
    const box0 = (await link.boundingBox())!;
    await page.mouse.move(box0.x + box0.width / 2, box0.y + box0.height / 2);
    const strip = await page.getByText(/^Offline/).textContent();
    await page.mouse.down();
    await page
      .getByText(/^Offline/)
      .filter({ hasNotText: strip! })
      .waitFor(); // a redraw came
    await page.mouse.up();
    await page.waitForURL(/#\/s\//, { timeout: 5_000 });
    // A message sent now waits in the outbox, and stays in the box, until the relay is back.
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('sent while offline');
    // Sealing this one message takes 2.5 s (a slow phone): the screen's once-a-second offline updates run while the
    // message is not in the outbox yet, and must not take that for "the relay took it" (the box then kept its text
    // for good, seen on a loaded CI machine).
    await page.evaluate(() => {
      const subtle = crypto.subtle;
      const encrypt = subtle.encrypt.bind(subtle);
      subtle.encrypt = async (...args: Parameters<SubtleCrypto['encrypt']>) => {
        subtle.encrypt = encrypt;
        await new Promise((r) => setTimeout(r, 2_500));
        return encrypt(...args);
      };
    });
    await page.getByRole('button', { name: 'Send' }).click();
    await page
      .getByText(/^Not sent yet/)
      .first()
      .waitFor({ timeout: 10_000 });
    expect(await box.inputValue()).toBe('sent while offline');
    await restarting;
    await page.getByText('Online', { exact: true }).waitFor({ timeout: 35_000 });
    // It goes by itself once the relay is back, and is typed exactly once.
    await waitFor(async () => (await screen('svc-proj')).includes('you said: sent while offline'), {
      timeoutMs: 20_000,
      what: 'the message sent while offline',
    });
    await page.locator('.message[data-state="injected"]').getByText('sent while offline').waitFor({ timeout: 10_000 });
    expect(await box.inputValue()).toBe('');
    // And a new one goes straight through the new relay.
    await box.fill('after the restart');
    await page.getByRole('button', { name: 'Send' }).click();
    await waitFor(async () => (await screen('svc-proj')).includes('you said: after the restart'), {
      timeoutMs: 20_000,
      what: 'the message after the restart',
    });
    const pane = await screen('svc-proj');
    expect(pane.split('you said: sent while offline').length - 1).toBe(1);
  }, 90_000);

  it('draws light text on a dark page in dark mode, and shows the safety codes', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${relay.url}/#/`);
    await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).waitFor();
    expect(await pageColours(page)).toEqual({ background: 'dark', text: 'light' });
    await shot(page, '6-dark');
    await page.getByRole('link', { name: 'Device and safety codes' }).click();
    await page.getByRole('heading', { name: 'This phone' }).waitFor();
    const code = page.getByLabel('safety code with laptop');
    await code.getByText(/^\d{4} \d{4} \d{4} \d{4}$/).waitFor({ timeout: 10_000 });
    // The same 16 digits `svc devices` prints on the computer for this phone: a person can compare them.
    const devices = await runSvc(['devices', '--json'], env);
    const phone = JSON.parse(devices.stdout).devices.find((d: { kind: string }) => d.kind === 'app');
    expect(await code.textContent()).toBe(phone.safetyCode);
    await shot(page, '7-device-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await pageColours(page)).toEqual({ background: 'light', text: 'dark' });
    // And on a desktop: the same app, centred, keyboard-driven (Tab to the computer's New session, Tab to the first
    // session, Enter opens it).
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${relay.url}/#/`);
    await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).waitFor();
    await shot(page, '8-desktop');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('New session');
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? '');
    expect(focused).toMatch(/^proj · Claude Code, svc-proj, state unknown, detached$/);
    await page.keyboard.press('Enter');
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
  }, 60_000);

  it('a dialog svc cannot read (a layout new to it): the card says so and opens Watch on that dialog', async () => {
    // Codex's dialog as a newer version might draw it: its question and hints, but choices svc does not know
    const dialog = [
      '  Would you like to run the following command?',
      '',
      '  $ touch svc-unread-probe',
      '',
      '  [ Allow ]   [ Deny ]',
      '',
      '  Press enter to confirm or esc to cancel',
    ].join('\\n');
    await tmux.newSession('svc-newdialog', ['sh', '-c', `printf '${dialog}\\n'; exec sleep 600`], {
      cwd: proj,
      options: { '@svc-kind': 'agent', '@svc-agent': 'A2', '@svc-project': 'proj' },
    });
    await page.goto(`${relay.url}/#/s/${hookId}/svc-newdialog`);
    const card = page.getByRole('region', { name: 'Approval' });
    await card.getByText(/svc could not read this dialog/).waitFor({ timeout: INVENTORY_TICK_MS + 25_000 });
    await card.getByRole('link', { name: 'Watch' }).click();
    await page.locator('.xterm-rows').getByText('[ Allow ]').waitFor({ timeout: 15_000 });
    await tmux.run(['kill-session', '-t', '=svc-newdialog']);
  }, 60_000);
});
