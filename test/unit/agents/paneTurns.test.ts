/** One typing at a time per pane (actors/agents/paneTurns.ts), so a session actor rebuilt mid-typing waits. */
import { describe, expect, it } from 'vitest';
import { createPaneTurns } from '../../../actors/agents/paneTurns.js';

describe('pane turns', () => {
  it('runs typings into one pane one after another, into other panes at once, and goes on after a failure', async () => {
    const inTurn = createPaneTurns();
    const events: string[] = [];
    let release: () => void = () => {};
    const first = inTurn('%1', async () => {
      events.push('first starts');
      await new Promise<void>((r) => {
        release = r;
      });
      events.push('first ends');
      throw new Error('tmux said no');
    });
    const second = inTurn('%1', async () => {
      events.push('second');
      return 2;
    });
    const elsewhere = inTurn('%2', async () => {
      events.push('other pane');
      return 3;
    });
    expect(await elsewhere).toBe(3);
    expect(events).toEqual(['first starts', 'other pane']);
    release();
    await expect(first).rejects.toThrow('tmux said no');
    expect(await second).toBe(2);
    expect(events).toEqual(['first starts', 'other pane', 'first ends', 'second']);
  });
});
