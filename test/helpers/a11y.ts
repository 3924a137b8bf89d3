/**
 * What an accessibility review of one screen of the phone app finds, in real Chromium: axe-core's serious and
 * critical violations (WCAG 2.2 A and AA rules and axe's best practices), and touch targets smaller than 44 by 44
 * CSS pixels (Apple's and WCAG 2.5.5's size; a link inside running text is exempt, as WCAG exempts it).
 * Each finding is one line naming the rule and the element, so a failing test says what to fix.
 */
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axeSource: string = createRequire(import.meta.url)('axe-core').source;

export const MIN_TARGET_PX = 44;

interface AxeResult {
  violations: {
    id: string;
    impact: string | null;
    help: string;
    nodes: { target: unknown[]; failureSummary?: string }[];
  }[];
}

/** Serious and critical axe violations and small touch targets on the screen `page` shows now. */
export async function accessibilityFindings(page: Page): Promise<string[]> {
  // evaluated through DevTools, so the app's Content-Security-Policy does not stand in the way
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const result = (await page.evaluate(() =>
    (window as unknown as { axe: { run(c: unknown, o: unknown): Promise<unknown> } }).axe.run(document, {
      resultTypes: ['violations'],
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
    }),
  )) as AxeResult;
  const findings = result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) =>
      v.nodes.map((n) => `${v.impact} ${v.id} (${v.help}): ${n.target.join(' ')} — ${n.failureSummary ?? ''}`),
    );
  const small = await page.evaluate((min) => {
    const out: string[] = [];
    const selector =
      'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], [role=link], [tabindex]:not([tabindex="-1"])';
    for (const el of document.querySelectorAll<HTMLElement>(selector)) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || el.closest('[hidden], [inert], [aria-hidden="true"]')) continue;
      // not a target at all: a disabled control, or one kept out of reach on purpose (xterm's unused input)
      if (el.matches(':disabled') || el.tabIndex < 0) continue;
      // a region focusable only so a keyboard can scroll it (a code block, the pane): scrolled, never tapped
      const control = 'a, button, input, select, textarea, summary, [role=button], [role=link]';
      if (!el.matches(control) && (el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight)) continue;
      if (getComputedStyle(el).visibility === 'hidden') continue;
      // a link in running text: WCAG exempts it (its size is the line's)
      if (el.tagName === 'A' && getComputedStyle(el).display === 'inline' && el.parentElement?.closest('p')) continue;
      // an input inside its label: the label is the target
      const label = el.closest('label');
      const target = label && el.tagName === 'INPUT' ? label.getBoundingClientRect() : box;
      if (target.width + 0.5 < min || target.height + 0.5 < min) {
        const name = el.getAttribute('aria-label') ?? el.textContent?.trim().slice(0, 40) ?? '';
        out.push(
          `small target ${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(' ').join('.')}` : ''} "${name}": ${Math.round(target.width)}x${Math.round(target.height)} px`,
        );
      }
    }
    return out;
  }, MIN_TARGET_PX);
  return [...findings, ...small];
}
