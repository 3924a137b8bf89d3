/** What a test file of real agents runs them against (vitest hooks: test files only, never bench/). */
import { afterAll, beforeAll } from 'vitest';
import { type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { startTmuxServer, type TmuxServer } from './tmux.js';

/**
 * The fake model and a private tmux server a file's real agents run against: started before its tests, ended after
 * them. Read them inside the tests (`files.model()`), once they are started.
 */
export function modelAndTmux(): { model: () => FakeModel; server: () => TmuxServer } {
  let model: FakeModel | undefined;
  let server: TmuxServer | undefined;
  beforeAll(async () => {
    model = await startFakeModel();
    server = await startTmuxServer();
  });
  afterAll(async () => {
    await server?.cleanup();
    await model?.close();
  });
  return { model: () => model!, server: () => server! };
}
