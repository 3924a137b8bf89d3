import { describe, expect, it } from 'vitest';
import { type CodexHookListing, codexHooksToTrust, codexTrustWiring } from '../../../core/hooks/wiring.js';

const FILE = '/h/.codex/hooks.json';
const OURS = "'/n' '/svc' remote-hook codex";
const hash = `sha256:${'a'.repeat(64)}`;
const listing = (over: Partial<CodexHookListing>): CodexHookListing => ({
  key: `${FILE}:user_prompt_submit:0:0`,
  command: OURS,
  sourcePath: FILE,
  source: 'user',
  currentHash: hash,
  trustStatus: 'untrusted',
  ...over,
});

describe('codexHooksToTrust', () => {
  it.each([
    ['svc’s own untrusted hook', listing({}), true],
    ['one Codex says was modified', listing({ trustStatus: 'modified' }), true],
    ['already trusted', listing({ trustStatus: 'trusted' }), false],
    ['the person’s own hook in the same file', listing({ command: 'my-hook.sh' }), false],
    [
      'svc’s command in a project’s hooks.json',
      listing({ sourcePath: '/p/.codex/hooks.json', source: 'project' }),
      false,
    ],
    ['a plugin’s hook', listing({ source: 'plugin' }), false],
    ['a hash that is not a sha256', listing({ currentHash: 'md5:x' }), false],
    ['no command (an MCP hook)', listing({ command: null }), false],
  ])('%s', (_n, hook, trusted) => {
    expect(codexHooksToTrust([hook], { file: FILE, commands: [OURS] }).length).toBe(trusted ? 1 : 0);
  });

  it('writes trust as Codex keeps it: [hooks.state."<key>"] trusted_hash in config.toml', () => {
    const w = codexTrustWiring({ home: '/h' }, { key: `${FILE}:stop:0:0`, currentHash: hash });
    expect(w).toMatchObject({
      file: '/h/.codex/config.toml',
      format: 'toml',
      path: ['hooks', 'state', `${FILE}:stop:0:0`],
      value: { trusted_hash: hash },
    });
  });
});
