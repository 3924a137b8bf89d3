/**
 * Carries out a submit plan (`core/agents/submit.ts`) against the `Tmux` adapter.
 * `sleep` is injected so unit tests do not wait; the listener passes a real timer.
 * tmux errors (no session, no server, …) are thrown as `TmuxError` for the caller to map to a refusal code.
 */
import type { SubmitStrategy } from '../../core/agents/registry.js';
import {
  CHECK_LINES,
  enterWouldAnswer,
  inputCleared,
  LOOK_MS,
  type PaneFacts,
  pasteLanded,
  planSubmit,
  type SubmitPlan,
  type SubmitResult,
} from '../../core/agents/submit.js';
import type { PaneTarget, Tmux } from '../tmux/tmux.js';

export interface InjectResult {
  /** `true`: the input line emptied; `false`: it still held the text after the retry; `'unverified'`: no rule
   *  for this agent, or a look found no input line holding the text (an approval prompt, a dialog, only the
   *  transcript): then no further key is sent. */
  submitted: SubmitResult;
  /** Enter keys sent. */
  enters: number;
  /** The plan that was carried out (its `text` is what was typed). */
  plan: SubmitPlan;
  /** The pane was in a tmux mode and was taken out of it before the text was typed. */
  leftMode: boolean;
  /** `'approval'`: an approval prompt came up between the paste and its Enter; the Enter was not sent (it would
   *  have answered the prompt) and `submitted` is `false`. */
  heldFor?: 'approval';
}

export interface InjectOptions {
  tmux: Pick<Tmux, 'sendLiteral' | 'sendKeys' | 'paste' | 'capture'>;
  target: PaneTarget;
  text: string;
  strategy: SubmitStrategy;
  /** What the fresh tmux reading says about the pane (in a mode: leave it first). */
  pane?: PaneFacts;
  sleep: (ms: number) => Promise<void>;
}

export const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function injectText({ tmux, target, text, strategy, pane, sleep }: InjectOptions): Promise<InjectResult> {
  const plan = planSubmit(text, strategy, pane);
  let enters = 0;
  let before: string | undefined;
  const leftMode = plan.steps.some((s) => (s.op === 'type' || s.op === 'paste') && s.leaveMode === true);
  const done = (submitted: SubmitResult): InjectResult => ({ submitted, enters, plan, leftMode });
  if (plan.steps.length === 0) return done(false);

  for (const step of plan.steps) {
    switch (step.op) {
      case 'type':
        await tmux.sendLiteral(target, step.text, { enter: step.enter, leaveMode: step.leaveMode === true });
        if (step.enter) enters += 1;
        break;
      case 'paste':
        await tmux.paste(target, step.text, { bracketed: true, leaveMode: step.leaveMode === true });
        break;
      case 'wait':
        await sleep(step.ms);
        break;
      case 'enter':
        if (enterWouldAnswer({ screen: plan.screen, before })) return { ...done(false), heldFor: 'approval' };
        await tmux.sendKeys(target, ['Enter']);
        enters += 1;
        break;
      case 'snapshot':
        before = await tmux.capture(target, CHECK_LINES);
        break;
      case 'landed': {
        const from = before ?? '';
        const landed = async () =>
          pasteLanded({ ...plan, before: from, after: await tmux.capture(target, CHECK_LINES) });
        if ((await landed()) !== false) break;
        for (let waited = 0; waited < step.withinMs; waited += LOOK_MS) {
          await sleep(LOOK_MS);
          if (await landed()) break;
        }
        break;
      }
      case 'check': {
        const look = async () =>
          inputCleared({ ...plan, after: await tmux.capture(target, CHECK_LINES), before, text: plan.text });
        let cleared = step.withinMs > 0 ? false : await look();
        for (let waited = 0; cleared === false && waited < step.withinMs; waited += LOOK_MS) {
          await sleep(LOOK_MS);
          cleared = await look();
        }
        if (cleared === true) return done(true);
        if (cleared === 'unknown') return done('unverified');
        if (step.final) return done(false);
        break;
      }
    }
  }
  return done('unverified');
}

/** How long an exit command stands drawn before its Enter: the agents' own completion menus settle first. */
export const EXIT_SETTLE_MS = 400;

/**
 * End (core/sessions/control.ts): the agent's exit command, typed, then Enter once it is drawn and a moment has
 * passed, as a person types it. Sent together in one tmux call, Codex 0.169 and Gemini CLI 0.61 take that Enter as a
 * newline (their paste guards) and stay; Gemini also stayed when it came as a message's paste and Enter
 * (test/integration/exit.realAgents.test.ts). The agent may be gone before anything is looked at again: a pane that no
 * longer exists is the exit command having worked.
 */
export async function typeExitCommand(
  tmux: Pick<Tmux, 'sendLiteral' | 'sendKeys' | 'capture' | 'panePid'>,
  input: { paneId: string; text: string; inMode?: boolean },
  sleep: (ms: number) => Promise<void> = realSleep,
): Promise<void> {
  const target = { pane: input.paneId };
  try {
    await tmux.sendLiteral(target, input.text, { leaveMode: input.inMode === true });
    // until it is drawn (at most 2 s: a busy agent may draw it late, or redraw it in a menu, so the Enter goes anyway)
    for (let waited = 0; waited < 2_000; waited += LOOK_MS) {
      if ((await tmux.capture(target, CHECK_LINES)).includes(input.text)) break;
      await sleep(LOOK_MS);
    }
    await sleep(EXIT_SETTLE_MS);
    await tmux.sendKeys(target, ['Enter']);
  } catch (err) {
    if ((await tmux.panePid(input.paneId).catch(() => null)) === null) return;
    throw err;
  }
}
