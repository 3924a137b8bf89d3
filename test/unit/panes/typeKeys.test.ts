/**
 * Key input from the live pane (actors/seal/e2ee.ts `typeKeysLogic`) against the fake tmux: text and keys go in one tmux
 * call, so a key pressed on the phone costs one tmux process, not two.
 */

import { describe, expect, it } from 'vitest';
import { createActor, toPromise } from 'xstate';
import { typeKeysLogic } from '../../../actors/seal/e2ee.js';
import type { TypeKeysInput } from '../../../machines/session.js';
import { FakeTmux } from '../../fakes/fakeTmux.js';

function setup() {
  const fake = new FakeTmux();
  fake.addSession('svc-proj', { panes: [{ command: 'codex', prompt: '› ' }] });
  const paneId = fake.pane('svc-proj')!.id;
  const type = (input: Omit<TypeKeysInput, 'session' | 'paneId'>) =>
    toPromise(createActor(typeKeysLogic(fake), { input: { session: 'svc-proj', paneId, ...input } }).start());
  return { fake, paneId, type, pane: () => fake.pane('svc-proj')! };
}

describe('typeKeysLogic', () => {
  it('types text then keys in one call, and the Enter submits the text', async () => {
    const { fake, paneId, type, pane } = setup();
    await type({ text: 'run it', keys: ['Enter'] });
    expect(fake.calls).toEqual([
      { op: 'sendLiteral', target: { pane: paneId }, text: 'run it', enter: false, keys: ['Enter'] },
    ]);
    expect(pane().submitted).toEqual(['run it']);
  });

  it('keys alone are one send-keys; text alone is one literal call', async () => {
    const { fake, paneId, type, pane } = setup();
    await type({ text: '', keys: ['C-u'] });
    await type({ text: 'draft', keys: [] });
    expect(fake.calls).toEqual([
      { op: 'sendKeys', target: { pane: paneId }, keys: ['C-u'] },
      { op: 'sendLiteral', target: { pane: paneId }, text: 'draft', enter: false },
    ]);
    expect(pane().input).toBe('draft');
  });

  it('a pane in a mode is taken out of it by that one call', async () => {
    const { fake, type, pane } = setup();
    pane().inMode = true;
    await type({ text: 'go', keys: ['Enter'], inMode: true });
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toMatchObject({ op: 'sendLiteral', leaveMode: true, keys: ['Enter'] });
    expect(pane().submitted).toEqual(['go']);
  });
});
