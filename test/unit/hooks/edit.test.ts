import { describe, expect, it } from 'vitest';
import { addEntry, type EntrySpec, readConfig, removeEntry, valueAt } from '../../../core/hooks/edit.js';
import { RULES_TEXT, wirings } from '../../../core/hooks/wiring.js';

const MCP = { node: '/opt/node/bin/node', svcBin: '/opt/svc/bin/svc.js' };
const byAgent = Object.fromEntries(
  wirings({ home: '/h' }, MCP)
    .filter((w) => w.kind === 'mcp' && !w.element)
    .map((w) => [w.agentId, w]),
);
const spec = (id: string): EntrySpec => {
  const w = byAgent[id];
  if (!w) throw new Error(id);
  return { format: w.format, path: w.path, value: w.value };
};

/** The user's own files, per agent: other entries, comments, odd indentation, no final line end. */
const FILES: { name: string; agent: string; text: string; edit: (t: string) => string }[] = [
  {
    name: 'Claude Code ~/.claude.json with other servers',
    agent: 'A1',
    text: '{\n  "numStartups": 3,\n  "mcpServers": {\n    "github": {\n      "command": "gh-mcp"\n    }\n  },\n  "theme": "dark"\n}\n',
    edit: (t) => t.replace('"theme": "dark"', '"theme": "light"'),
  },
  {
    name: 'Claude Code ~/.claude.json without mcpServers',
    agent: 'A1',
    text: '{\n  "numStartups": 3\n}\n',
    edit: (t) => t.replace('"numStartups": 3', '"numStartups": 4'),
  },
  {
    name: 'Codex config.toml with comments and another server',
    agent: 'A2',
    text: '# my codex\nmodel = "o4" # fast\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n# trailing note\n',
    edit: (t) => t.replace('model = "o4"', 'model = "o5"'),
  },
  {
    name: 'Codex config.toml without a final line end',
    agent: 'A2',
    text: 'model = "o4"',
    edit: (t) => t.replace('model = "o4"', 'model = "o5"'),
  },
  {
    name: 'Codex config.toml, CRLF, a table after',
    agent: 'A2',
    text: '[profiles.x]\r\nmodel = "o4"\r\n',
    edit: (t) => t.replace('"o4"', '"o3"'),
  },
  {
    name: 'Gemini settings.json with comments and tabs',
    agent: 'A3',
    text: '{\n\t// my theme\n\t"theme": "GitHub",\n\t"mcpServers": {\n\t\t"x": { "command": "x" } // keep\n\t}\n}',
    edit: (t) => t.replace('"GitHub"', '"Dracula"'),
  },
  {
    name: 'opencode.jsonc with a schema and comments',
    agent: 'A5',
    text: '{\n  "$schema": "https://opencode.ai/config.json",\n  /* models */\n  "model": "a/b",\n}\n',
    edit: (t) => t.replace('"a/b"', '"c/d"'),
  },
  {
    name: 'Gemini settings.json, a trailing comma and a closing brace on the last line',
    agent: 'A3',
    text: '{\n  "mcpServers": {\n    "a": { "command": "a" }, // mine\n  },\n  "b": 1 }\n',
    edit: (t) => t.replace('"b": 1', '"b": 2'),
  },
  {
    name: 'Claude Code ~/.claude.json with CRLF line ends',
    agent: 'A1',
    text: '{\r\n  "numStartups": 1\r\n}\r\n',
    edit: (t) => t.replace('"numStartups": 1', '"numStartups": 2'),
  },
  {
    name: 'Codex config.toml, the user appends a table after svc’s',
    agent: 'A2',
    text: 'model = "o4"\n',
    edit: (t) => `${t}\n[profiles.fast]\nmodel = "o3"\n`,
  },
  {
    name: 'Gemini settings.json, the user adds a server after svc’s',
    agent: 'A3',
    text: '{\n  "mcpServers": {\n    "a": {}\n  }\n}\n',
    edit: (t) => t.replace(/\n {2}\}\n\}\n$/, ',\n    "b": {}\n  }\n}\n'),
  },
  {
    name: 'Cursor mcp.json, four spaces',
    agent: 'A6',
    text: '{\n    "mcpServers": {}\n}\n',
    edit: (t) => `${t}\n`,
  },
  {
    name: 'Qwen settings.json',
    agent: 'A9',
    text: '{ "mcpServers": { "a": { "command": "a" } } }',
    edit: (t) => t.replace('"a" }', '"b" }'),
  },
];

describe('addEntry / removeEntry over the users’ own files', () => {
  for (const f of FILES) {
    it(f.name, () => {
      const s = spec(f.agent);
      const added = addEntry(f.text, s);
      expect(added.kind).toBe('added');
      if (added.kind !== 'added') return;
      // the entry reads back, and the user's own keys are all still there
      const before = readConfig(f.text, s.format);
      const after = readConfig(added.text, s.format);
      if (!before.ok || !after.ok) throw new Error('unreadable');
      expect(valueAt(after.value, s.path)).toEqual(s.value);
      for (const k of Object.keys(before.value as object))
        if (k !== s.path[0]) expect(valueAt(after.value, [k])).toEqual(valueAt(before.value, [k]));
      // every comment of the user's stays on its line
      for (const line of f.text.split(/\r?\n/).filter((l) => /\/\/|\/\*|#/.test(l)))
        expect(added.text).toContain(line.replace(/\}(\s*\/\/)/, '},$1'));
      // the second run changes nothing
      expect(addEntry(added.text, s)).toEqual({ kind: 'present', same: true });
      // removal gives the file back byte for byte
      const removed = removeEntry(added.text, s, added.created);
      expect(removed).toEqual({ kind: 'removed', text: f.text });
      // …also after the user edited elsewhere in the file in between
      const edited = f.edit(added.text);
      expect(edited).not.toBe(added.text);
      expect(removeEntry(edited, s, added.created)).toEqual({ kind: 'removed', text: f.edit(f.text) });
    });
  }

  it('an empty or missing file gets just the entry, and removal leaves the empty table', () => {
    for (const id of ['A1', 'A2']) {
      const s = spec(id);
      const added = addEntry('', s);
      if (added.kind !== 'added') throw new Error(added.kind);
      expect(added.created).toBe(2);
      const removed = removeEntry(added.text, s, added.created);
      if (removed.kind !== 'removed') throw new Error(removed.kind);
      expect(readConfig(removed.text, s.format)).toEqual({ ok: true, value: {} });
    }
  });

  it.each([
    ['json', '{ "mcpServers": { "a": 1 ', 'A1'],
    ['json array', '[1, 2]', 'A1'],
    ['toml', 'model = = "x"\n', 'A2'],
    ['toml inline table', 'mcp_servers = { docs = { command = "d" } }\n', 'A2'],
    ['json, mcpServers not a table', '{ "mcpServers": "none" }', 'A3'],
  ])('a file it cannot take (%s) is refused with a reason', (_n, text, id) => {
    const r = addEntry(text, spec(id));
    expect(r.kind).toBe('invalid');
    if (r.kind === 'invalid') expect(r.reason).not.toContain('\n');
  });

  it('an entry the user wrote first is theirs: present, not equal, and never removed', () => {
    const s = spec('A3');
    const own = '{ "mcpServers": { "svc": { "command": "svc", "args": ["mcp"] } } }';
    expect(addEntry(own, s)).toEqual({ kind: 'present', same: false });
    expect(removeEntry(own, s, 1)).toEqual({ kind: 'changed' });
  });

  it('an entry the user changed after install is left alone', () => {
    const s = spec('A2');
    const added = addEntry('model = "o4"\n', s);
    if (added.kind !== 'added') throw new Error(added.kind);
    const changed = added.text.replace('args = [', 'args = ["--debug", ');
    expect(removeEntry(changed, s, added.created)).toEqual({ kind: 'changed' });
    expect(removeEntry('model = "o4"\n', s, 1)).toEqual({ kind: 'absent' });
  });

  it('a container the user had stays; one svc made goes', () => {
    const s = spec('A1');
    const withOther = addEntry('{\n  "a": 1\n}\n', s);
    if (withOther.kind !== 'added') throw new Error(withOther.kind);
    expect(withOther.created).toBe(2);
    // the user added a server of their own beside svc's in the object svc made: it stays
    const userAdded = withOther.text.replace('"mcpServers": {', '"mcpServers": {\n    "mine": {},');
    const r = removeEntry(userAdded, s, withOther.created);
    if (r.kind !== 'removed') throw new Error(r.kind);
    expect(readConfig(r.text, 'json')).toEqual({ ok: true, value: { a: 1, mcpServers: { mine: {} } } });
  });

  it('YAML: adds and removes keeping comments', () => {
    const s: EntrySpec = { format: 'yaml', path: ['mcp_servers', 'svc'], value: { command: 'svc', args: ['mcp'] } };
    const text = '# hermes\nmodel: x # mine\nmcp_servers:\n  other:\n    command: o\n';
    const added = addEntry(text, s);
    if (added.kind !== 'added') throw new Error(added.kind);
    expect(added.text).toContain('# hermes\nmodel: x # mine\n');
    expect(addEntry(added.text, s)).toEqual({ kind: 'present', same: true });
    expect(removeEntry(added.text, s, added.created)).toEqual({ kind: 'removed', text });
  });
});

describe('the standing instruction: a marked block in a Markdown file (CLAUDE.md, AGENTS.md, GEMINI.md)', () => {
  const rules = wirings({ home: '/h' }, MCP).filter((w) => w.kind === 'rules');
  const s: EntrySpec = { format: 'markdown', path: ['svc'], value: RULES_TEXT };

  it('is written for each agent that can call svc_ask, where it reads standing instructions', () => {
    expect(rules.map((w) => [w.agentId, w.file])).toEqual([
      ['A1', '/h/.claude/CLAUDE.md'],
      ['A2', '/h/.codex/AGENTS.md'],
      ['A3', '/h/.gemini/GEMINI.md'],
      ['A5', '/h/.config/opencode/AGENTS.md'],
      ['A9', '/h/.qwen/QWEN.md'],
    ]);
  });

  it.each([
    ["a file of the person's own", '# My rules\n\n- Use pnpm.\n- Keep it short.\n'],
    ['no final line end', '# My rules\n\n- Use pnpm.'],
    ['an empty file', ''],
    ['their own HTML comments', '<!-- mine -->\nText\n<!-- mine: end -->\n'],
  ])('%s: appended after a blank line, read back, taken out again leaving their text', (_n, text) => {
    const added = addEntry(text, s);
    if (added.kind !== 'added') throw new Error(added.kind);
    expect(added.text.startsWith(text)).toBe(true);
    expect(added.text).toContain(`\n${RULES_TEXT}\n`);
    expect(addEntry(added.text, s)).toEqual({ kind: 'present', same: true });
    const removed = removeEntry(added.text, s, added.created);
    if (removed.kind !== 'removed') throw new Error(removed.kind);
    // byte for byte, except that a file without a final line end gets one
    expect(removed.text).toBe(text === '' || text.endsWith('\n') ? text : `${text}\n`);
  });

  it('text the person wrote after the block stays, and a file they added to is never an empty table', () => {
    const added = addEntry('', s);
    if (added.kind !== 'added') throw new Error(added.kind);
    const theirs = `${added.text}\n# Added later\n`;
    const removed = removeEntry(theirs, s, added.created);
    expect(removed).toEqual({ kind: 'removed', text: '\n# Added later\n' });
    const left = readConfig('\n# Added later\n', 'markdown');
    expect(left.ok && Object.keys(left.value as object)).toEqual(['#text']);
  });

  it('a block the person edited is theirs: present, not equal, never removed', () => {
    const added = addEntry('# Mine\n', s);
    if (added.kind !== 'added') throw new Error(added.kind);
    const edited = added.text.replace('work as usual.', 'work as usual. Also: be brief.');
    expect(addEntry(edited, s)).toEqual({ kind: 'present', same: false });
    expect(removeEntry(edited, s, 1)).toEqual({ kind: 'changed' });
    expect(removeEntry('# Mine\n', s, 1)).toEqual({ kind: 'absent' });
  });

  it('a comment of the person’s that says begin is their text, not a block; a CRLF file still holds svc’s', () => {
    const theirs = '<!-- note: begin here -->\nMy notes\n';
    const added = addEntry(theirs, s);
    if (added.kind !== 'added') throw new Error(added.kind);
    expect(removeEntry(added.text, s, 1)).toEqual({ kind: 'removed', text: theirs });
    expect(addEntry(added.text.replace(/\n/g, '\r\n'), s)).toEqual({ kind: 'present', same: true });
  });

  it.each([
    ['a begin without its end', '<!-- svc: begin. Written by svc install -->\nhalf\n'],
    ['the block twice', `${'<!-- svc: begin. Written by svc install -->\nx\n<!-- svc: end -->\n'.repeat(2)}`],
  ])('%s is refused with a reason, never guessed at', (_n, text) => {
    const r = addEntry(text, s);
    expect(r.kind).toBe('invalid');
    expect(removeEntry(text, s, 1).kind).toBe('invalid');
  });
});
