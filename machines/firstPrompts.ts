/**
 * The first prompt of a session a phone started (actors/sessions/newSession.ts): kept by the root until a tmux
 * reading shows its own session idle with its agent in front, then typed as a message from the phone (marker, submit
 * strategy); given up when the session ends or `firstPromptWait` passes; tried again only after a refusal given
 * before anything was typed (core/sessions/firstPrompt.ts decides). Its ids are negative: never a relay push.
 */
import type { SessionRecord } from '../core/protocol/index.js';
import { decideFirstPrompt, type FirstPrompt, RETRIED_REFUSALS } from '../core/sessions/firstPrompt.js';
import type { ListenerContext, RootEnqueue, Step } from './listenerTypes.js';
import { logLine } from './log.js';

/** A first prompt to keep (LAUNCH.PROMPT), and when it expires. */
export const launchPrompt: Step<'LAUNCH.PROMPT'> = ({ context, event, enqueue }) => {
  const id = -(context.launched + 1);
  const prompt: FirstPrompt = {
    id,
    agent: event.agent,
    text: event.text,
    startedAt: event.startedAt,
    seen: null,
    typing: false,
  };
  enqueue.assign({
    launched: context.launched + 1,
    firstPrompts: { ...context.firstPrompts, [event.session]: prompt },
  });
  enqueue.raise({ type: 'FIRST_PROMPT.EXPIRE', session: event.session, id }, { delay: 'firstPromptWait' });
};

/** Its wait is over (FIRST_PROMPT.EXPIRE): dropped, unless it is being typed now. */
export const expirePrompt: Step<'FIRST_PROMPT.EXPIRE'> = ({ context, event, enqueue }) => {
  const prompt = context.firstPrompts[event.session];
  if (prompt?.id !== event.id) return;
  const { [event.session]: _gone, ...rest } = context.firstPrompts;
  // being typed now: its result says how it ended, and a refusal then is not tried again
  if (prompt.typing) {
    enqueue.assign({ firstPrompts: { ...rest, [event.session]: { ...prompt, late: true } } });
    return;
  }
  enqueue.assign({ firstPrompts: rest });
  enqueue(logLine('warn', `${event.session}: first prompt not typed: its agent did not read idle in time`));
};

/** At a reading (`next`, taken at `takenAt`): first prompts whose session ended are dropped, those due are held. */
export function promptsDue(
  context: ListenerContext,
  next: Record<string, SessionRecord>,
  takenAt: number,
  enqueue: RootEnqueue,
): void {
  const prompts = { ...context.firstPrompts };
  for (const [session, prompt] of Object.entries(context.firstPrompts)) {
    const d = decideFirstPrompt(prompt, next[session]);
    if (d === 'gone') {
      delete prompts[session];
      enqueue(logLine('warn', `${session}: first prompt not typed: the session ended before it read idle`));
    } else if (d === 'type') {
      prompts[session] = { ...prompt, seen: next[session]!.createdAt, typing: true };
      const push = { id: prompt.id, body: prompt.text, addressedToThisComputer: true, receivedAt: takenAt };
      enqueue.raise({
        type: 'HOLD',
        held: { kind: 'push', session, id: prompt.id, event: { type: 'PUSH', push } },
      });
    } else if (next[session] && prompt.seen === null) prompts[session] = { ...prompt, seen: next[session].createdAt };
  }
  if (Object.keys(context.firstPrompts).length > 0) enqueue.assign({ firstPrompts: prompts });
}

/** A first prompt's result (a SESSION.RESULT with a negative id): done, or kept for the next idle reading. */
export const promptTyped: Step<'SESSION.RESULT'> = ({ context, event, enqueue }) => {
  const prompt = context.firstPrompts[event.session];
  if (prompt?.id !== event.id) return;
  const { [event.session]: _done, ...rest } = context.firstPrompts;
  if (event.state === 'refused' && event.code && RETRIED_REFUSALS.has(event.code) && !prompt.late) {
    // refused before anything was typed (a rate limit, a prompt that came up): again when it reads idle
    enqueue.assign({ firstPrompts: { ...rest, [event.session]: { ...prompt, typing: false } } });
    enqueue(logLine('warn', `${event.session}: first prompt refused ${event.code}; again when it reads idle`));
    return;
  }
  enqueue.assign({ firstPrompts: rest });
  enqueue(
    event.state === 'injected'
      ? logLine('info', `${event.session}: first prompt typed`)
      : logLine('warn', `${event.session}: first prompt not typed (${event.code}); not tried again`),
  );
  return;
};
