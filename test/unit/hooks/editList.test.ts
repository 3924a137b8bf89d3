import { describe, expect, it } from 'vitest';
import { addElement, type EntrySpec, readConfig, removeElement, valueAt } from '../../../core/hooks/edit.js';

const hook = (command: string) => ({ hooks: [{ type: 'command', command }] });
const ours: EntrySpec = {
  format: 'json',
  path: ['hooks', 'UserPromptSubmit'],
  value: hook('/n /svc remote-hook claude'),
};

const withUserHook = `{
  // my settings
  "model": "opus", // the big one
  "hooks": {
    "UserPromptSubmit": [
      { "hooks": [{ "type": "command", "command": "mine.sh" }] } // mine
    ],
    "Stop": []
  }
}
`;

function roundTrip(text: string, spec: EntrySpec = ours) {
  const added = addElement(text, spec);
  if (added.kind !== 'added') throw new Error(`not added: ${JSON.stringify(added)}`);
  const again = addElement(added.text, spec);
  const removed = removeElement(added.text, spec, added.created);
  if (removed.kind !== 'removed') throw new Error(`not removed: ${JSON.stringify(removed)}`);
  return { added, again, removed };
}

describe('addElement / removeElement', () => {
  it.each([
    ['a list with the user’s hook and comments', withUserHook],
    ['an empty list', '{\n  "hooks": {\n    "UserPromptSubmit": []\n  }\n}\n'],
    ['no hooks at all', '{\n  "theme": "dark"\n}\n'],
    ['a one-line list', '{ "hooks": { "UserPromptSubmit": [{ "hooks": [] }] } }\n'],
    ['tabs and CRLF', '{\r\n\t"hooks": {\r\n\t\t"UserPromptSubmit": [\r\n\t\t\t{ "x": 1 }\r\n\t\t]\r\n\t}\r\n}\r\n'],
    [
      'a trailing comma after the last element',
      '{\n  "hooks": {\n    "UserPromptSubmit": [\n      { "x": 1 },\n    ]\n  }\n}\n',
    ],
  ])('%s: added after the user’s elements, once, and taken out byte for byte', (_n, text) => {
    const { added, again, removed } = roundTrip(text);
    const list = valueAt((readConfig(added.text, 'json') as { value: unknown }).value, ours.path) as unknown[];
    expect(list[list.length - 1]).toEqual(ours.value);
    expect(again).toEqual({ kind: 'present', same: true });
    expect(removed.kind === 'removed' && removed.text).toBe(text);
  });

  it('an empty file gets the list, and is left `{}` (uninstall gives the file back empty: configFiles.ts)', () => {
    const { removed } = roundTrip('');
    expect(removed.kind === 'removed' && removed.text).toBe('{}\n');
  });

  it('keeps the user’s comments and their elements where they were', () => {
    const { added } = roundTrip(withUserHook);
    expect(added.text).toContain('// my settings');
    expect(added.text).toContain('"model": "opus", // the big one');
    expect(added.text).toContain('{ "hooks": [{ "type": "command", "command": "mine.sh" }] }, // mine');
  });

  it('takes out only svc’s element after the user added one of their own behind it', () => {
    const { added } = roundTrip(withUserHook);
    const withTheirs = addElement(added.text, { ...ours, value: hook('later.sh') });
    if (withTheirs.kind !== 'added') throw new Error('not added');
    const removed = removeElement(withTheirs.text, ours, added.created);
    if (removed.kind !== 'removed') throw new Error('not removed');
    const list = valueAt((readConfig(removed.text, 'json') as { value: unknown }).value, ours.path);
    expect(list).toEqual([hook('mine.sh'), hook('later.sh')]);
    expect(removed.text).toContain('// mine');
  });

  it('a list svc made goes with its element; one the user had stays', () => {
    const made = addElement('{\n  "theme": "dark"\n}\n', ours);
    expect(made.kind === 'added' && made.created).toBe(2); // hooks and hooks.UserPromptSubmit
    const theirs = addElement('{\n  "hooks": {\n    "UserPromptSubmit": []\n  }\n}\n', ours);
    expect(theirs.kind === 'added' && theirs.created).toBe(0);
  });

  it.each([
    ['broken JSON', '{ "hooks": ', 'invalid'],
    ['the list is not a list', '{ "hooks": { "UserPromptSubmit": "x" } }', 'invalid'],
    ['hooks is not a table', '{ "hooks": [] }', 'invalid'],
  ])('refuses %s and writes nothing', (_n, text, kind) => {
    expect(addElement(text, ours).kind).toBe(kind);
  });

  it('refuses TOML and YAML: the agents keep hook lists in JSON', () => {
    expect(addElement('', { ...ours, format: 'toml' }).kind).toBe('invalid');
  });

  it('finds nothing to take out when the user removed or changed svc’s element', () => {
    expect(removeElement(withUserHook, ours, 0)).toEqual({ kind: 'absent' });
    expect(removeElement('{}', ours, 2)).toEqual({ kind: 'absent' });
  });
});
