/**
 * The web app's own terminal drawing (relay-server/app/src/terminal.ts) in a real browser: the module is bundled as
 * the app's build bundles it and fed `pane.frame` bodies made by the listener's own code (core/panes/frames.ts
 * frameRows), and what the person sees — the rows xterm.js puts on the page, and the text the screen reader gets —
 * is compared with the pane. A screen that was cleared, a pane that shrinks, a pane resized wider or narrower.
 */
import { resolve } from 'node:path';
import * as esbuild from 'esbuild';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { frameRows, type PaneScreen } from '../../core/panes/frames.js';
import type { FrameBody } from '../../core/protocol/bodies.js';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';

const ROOT = resolve(import.meta.dirname, '../..');
let browser: TestBrowser;
let page: Page;
let script: string;

beforeAll(async () => {
  const built = await esbuild.build({
    stdin: {
      contents: `import { createTerminal } from './relay-server/app/src/terminal.ts';
        window.svcTerminal = createTerminal(document.getElementById('term'), 'fit');`,
      resolveDir: ROOT,
      loader: 'ts',
    },
    bundle: true,
    write: false,
    format: 'iife',
    logLevel: 'warning',
    // as relay-server/app/build.mjs does: xterm's stylesheet arrives as text
    loader: { '.css': 'text' },
  });
  script = built.outputFiles[0]!.text;
  browser = await startBrowser();
}, 60_000);

afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await browser?.close();
});

type Step = { screen: PaneScreen; full?: boolean };

/** A fresh page with the app's terminal in a phone-wide box. */
async function openTerminal(): Promise<Page> {
  const p = await browser.newPage();
  await p.setContent('<div class="terminal-wrap" style="width:360px"><div id="term"></div></div>');
  await p.addScriptTag({ content: script });
  return p;
}

let seq = 0;
let previous: PaneScreen | null = null;

/** The listener's frame for the pane's next screen, drawn by the app. */
async function show(step: Step): Promise<void> {
  const rows = frameRows(previous, step.screen, step.full ?? false);
  previous = step.screen;
  if (!rows) return;
  await draw({ session: 's', frameSeq: seq++, ...rows });
}

async function draw(body: FrameBody): Promise<void> {
  await page.evaluate(
    (b) => (window as unknown as { svcTerminal: { draw(b: unknown): boolean } }).svcTerminal.draw(b),
    body,
  );
}

/** The rows xterm.js shows on the page, trailing blanks dropped. */
const visibleRows = () =>
  page
    .locator('.xterm-rows > div')
    .evaluateAll((divs) => divs.map((d) => (d.textContent ?? '').replace(/[\s\u00a0]+$/, '')));
/** What the app gives a screen reader (and the Watch screen's mirror). */
const mirrorText = () =>
  page.evaluate(() => (window as unknown as { svcTerminal: { text(): string } }).svcTerminal.text());

/** The page shows the pane's rows (xterm draws trailing blanks as nothing), and the mirror has them as they are. */
async function expectScreen(lines: string[]): Promise<void> {
  await expect.poll(visibleRows, { timeout: 10_000 }).toEqual(lines.map((l) => l.trimEnd()));
  expect(await mirrorText()).toBe(lines.join('\n'));
}

const pane = (lines: string[], width = 40): PaneScreen => ({ lines, width });

describe("the web app's terminal", () => {
  beforeAll(async () => {
    page = await openTerminal();
  });

  it('draws the first frame whole, then the rows that changed', async () => {
    await show({ screen: pane(['$ make', 'building…', 'done', '']) });
    await expectScreen(['$ make', 'building…', 'done', '']);
    await show({ screen: pane(['$ make', 'building…', 'done', '$ ']) });
    await expectScreen(['$ make', 'building…', 'done', '$ ']);
  });

  it('a cleared screen is blank: no line of the old one stays', async () => {
    await show({ screen: pane(['$ clear', '', '', '']) });
    await expectScreen(['$ clear', '', '', '']);
    await show({ screen: pane(['', '', '', '']) });
    await expectScreen(['', '', '', '']);
  });

  it('a pane that shrinks shows only its own rows, the bottom ones included', async () => {
    await show({ screen: pane(['one', 'two', 'three', 'four', 'five', 'six']) });
    await expectScreen(['one', 'two', 'three', 'four', 'five', 'six']);
    await show({ screen: pane(['five', 'six', '']) });
    await expectScreen(['five', 'six', '']);
    expect(await page.locator('#term').getAttribute('data-rows')).toBe('3');
    // and grows again: the new rows are blank, not what was there before it shrank
    await show({ screen: pane(['five', 'six', '', '', '']) });
    await expectScreen(['five', 'six', '', '', '']);
  });

  it('a pane resized wider or narrower is redrawn at its new width', async () => {
    await show({ screen: pane([`wide-${'x'.repeat(70)}-end`, 'b'], 80) });
    await expectScreen([`wide-${'x'.repeat(70)}-end`, 'b']);
    expect(await page.locator('#term').getAttribute('data-cols')).toBe('80');
    await show({ screen: pane(['narrow', ''], 20) });
    await expectScreen(['narrow', '']);
    expect(await page.locator('#term').getAttribute('data-cols')).toBe('20');
  });

  it('a whole frame is the whole screen: rows it leaves out are blank, rows past its height are not drawn', async () => {
    await show({ screen: pane(['a', 'b', 'c', 'd']) });
    await expectScreen(['a', 'b', 'c', 'd']);
    previous = null;
    await draw({ session: 's', frameSeq: seq++, full: true, height: 4, width: 40, rows: { 1: 'only b' } });
    await expectScreen(['', 'only b', '', '']);
    await draw({ session: 's', frameSeq: seq++, full: true, height: 2, width: 40, rows: { 0: 'x', 1: 'y', 2: 'z' } });
    await expectScreen(['x', 'y']);
  });
});
