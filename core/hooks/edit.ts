/**
 * Pure edits of an agent's own config file: put one entry at a key path, or take out exactly what was put, keeping
 * everything else byte for byte (the user's other entries, comments, indentation, line ends). Each format goes
 * through a real parser that keeps positions: `jsonc-parser` for JSON and JSON with comments (its `modify` edits
 * in place), `toml-eslint-parser` for TOML (its AST gives the byte range of a table; the edit is a splice there),
 * `yaml`'s Document API for YAML. Every edit is checked by parsing the result again: the entry reads back equal,
 * or the edit is refused.
 *
 * What `addEntry` created is returned as `created` (how many keys of the path did not exist before: 1 when only
 * the entry's own key was new, 2 when its parent object was new too, …); `removeEntry` takes that back, so a
 * container svc made goes with the entry and one the user had stays.
 */
import {
  createScanner,
  type FormattingOptions,
  findNodeAtLocation,
  getNodeValue,
  type Node,
  type ParseError,
  parseTree,
  type SyntaxKind,
} from 'jsonc-parser';
import { getStaticTOMLValue, parseTOML } from 'toml-eslint-parser';
import { isMap, parseDocument } from 'yaml';

/** `jsonc-parser`'s token kinds used here (its `SyntaxKind` is a const enum, which this build cannot import). */
const TOKEN = {
  comma: 5 as SyntaxKind,
  lineComment: 12 as SyntaxKind,
  blockComment: 13 as SyntaxKind,
  lineBreak: 14 as SyntaxKind,
  whitespace: 15 as SyntaxKind,
  eof: 17 as SyntaxKind,
};

export type ConfigFormat = 'json' | 'toml' | 'yaml' | 'markdown';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Where the entry goes and what it is. */
export interface EntrySpec {
  format: ConfigFormat;
  /** Key path from the file's root to the entry, e.g. `['mcpServers', 'svc']`. */
  path: readonly string[];
  value: JsonValue;
}

export type Reading = { ok: true; value: unknown } | { ok: false; reason: string };

export type AddResult =
  /** `created`: how many trailing keys of `path` the edit made (1 = just the entry). */
  | { kind: 'added'; text: string; created: number }
  /** Already there: `same` when equal to the value asked for (nothing to do), else the user's own entry. */
  | { kind: 'present'; same: boolean }
  | { kind: 'invalid'; reason: string };

export type RemoveResult =
  | { kind: 'removed'; text: string }
  /** Nothing at the path: nothing to do. */
  | { kind: 'absent' }
  /** The entry is no longer what was put there (the user changed it): left alone. */
  | { kind: 'changed' }
  | { kind: 'invalid'; reason: string };

/** Structural equality of parsed values (key order does not count). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => sameValue(x, b[i]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && sameValue((a as never)[k], (b as never)[k]));
  }
  return false;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'unreadable';
}

/** The whole file as a value; an empty (or blank) file reads as an empty table. */
export function readConfig(text: string, format: ConfigFormat): Reading {
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    if (format === 'json') {
      const errors: ParseError[] = [];
      const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
      if (errors.length > 0 || !root)
        return { ok: false, reason: `not valid JSON near byte ${errors[0]?.offset ?? 0}` };
      if (root.type !== 'object') return { ok: false, reason: 'the top level is not an object' };
      return { ok: true, value: getNodeValue(root) };
    }
    if (format === 'toml') return { ok: true, value: getStaticTOMLValue(parseTOML(text)) };
    if (format === 'markdown') return readMarkdown(text);
    const doc = parseDocument(text);
    if (doc.errors.length > 0) return { ok: false, reason: `not valid YAML: ${firstLine(doc.errors[0])}` };
    const value = doc.toJS() ?? {};
    if (typeof value !== 'object' || Array.isArray(value)) return { ok: false, reason: 'the top level is not a map' };
    return { ok: true, value };
  } catch (err) {
    return { ok: false, reason: `not valid ${format.toUpperCase()}: ${firstLine(err)}` };
  }
}

/** The value at `path`, `undefined` when a key on the way is missing (or not a table). */
export function valueAt(root: unknown, path: readonly string[]): unknown {
  let at: unknown = root;
  for (const key of path) {
    if (!at || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** How many keys of `path`, from the end, do not exist in `root` (0: the entry itself exists). */
function missingKeys(root: unknown, path: readonly string[]): number {
  for (let i = path.length; i > 0; i--) if (valueAt(root, path.slice(0, i)) !== undefined) return path.length - i;
  return path.length;
}

export function addEntry(text: string, spec: EntrySpec): AddResult {
  const reading = readConfig(text, spec.format);
  if (!reading.ok) return { kind: 'invalid', reason: reading.reason };
  const existing = valueAt(reading.value, spec.path);
  if (existing !== undefined) return { kind: 'present', same: sameValue(existing, spec.value) };
  // a key on the way that is there but is not a table cannot take the entry
  for (let i = 1; i < spec.path.length; i++) {
    const v = valueAt(reading.value, spec.path.slice(0, i));
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v)))
      return { kind: 'invalid', reason: `${spec.path.slice(0, i).join('.')} is not a table` };
  }
  const created = missingKeys(reading.value, spec.path);
  let out: string;
  try {
    out =
      spec.format === 'json'
        ? addJson(text, spec)
        : spec.format === 'toml'
          ? addToml(text, spec)
          : spec.format === 'markdown'
            ? addMarkdown(text, spec)
            : addYaml(text, spec, created);
  } catch (err) {
    return { kind: 'invalid', reason: firstLine(err) };
  }
  const check = readConfig(out, spec.format);
  if (!check.ok || !sameValue(valueAt(check.value, spec.path), spec.value))
    return { kind: 'invalid', reason: `the entry could not be added to this file's layout (${spec.path.join('.')})` };
  return { kind: 'added', text: out, created };
}

/**
 * Take out the entry `addEntry` put at `spec.path`, and the `created - 1` containers above it that it made, each
 * only if nothing else is left in it. An entry that is no longer `spec.value` is the user's now: `changed`.
 */
export function removeEntry(text: string, spec: EntrySpec, created: number): RemoveResult {
  const reading = readConfig(text, spec.format);
  if (!reading.ok) return { kind: 'invalid', reason: reading.reason };
  const existing = valueAt(reading.value, spec.path);
  if (existing === undefined) return { kind: 'absent' };
  if (!sameValue(existing, spec.value)) return { kind: 'changed' };
  // the outermost container svc made that holds nothing but the way down to the entry
  let cut = spec.path.length;
  for (let n = spec.path.length - 1; n >= spec.path.length - created + 1 && n >= 1; n--) {
    const container = valueAt(reading.value, spec.path.slice(0, n));
    if (!container || typeof container !== 'object' || Object.keys(container).length !== 1) break;
    cut = n;
  }
  const path = spec.path.slice(0, cut);
  let out: string;
  try {
    out =
      spec.format === 'json'
        ? removeJson(text, path)
        : spec.format === 'toml'
          ? removeToml(text, spec.path, path)
          : spec.format === 'markdown'
            ? removeMarkdown(text, spec.path)
            : removeYaml(text, path);
  } catch (err) {
    return { kind: 'invalid', reason: firstLine(err) };
  }
  const check = readConfig(out, spec.format);
  if (!check.ok || valueAt(check.value, path) !== undefined)
    return { kind: 'invalid', reason: `the entry could not be taken out of this file's layout (${path.join('.')})` };
  return { kind: 'removed', text: out };
}

/**
 * Add `spec.value` as one element of the list at `spec.path` (hooks live in lists: Claude Code's
 * `hooks.UserPromptSubmit`, Gemini CLI's `hooks.BeforeAgent`), after the user's own elements. A missing list is made
 * holding just it (`created` counts the list's key and the tables made above it); an equal element already there is
 * `present`. JSON (with comments) only: the agents that keep hooks in lists keep them in JSON.
 */
export function addElement(text: string, spec: EntrySpec): AddResult {
  if (spec.format !== 'json')
    return { kind: 'invalid', reason: `list entries in ${spec.format} files are not supported` };
  const reading = readConfig(text, spec.format);
  if (!reading.ok) return { kind: 'invalid', reason: reading.reason };
  const list = valueAt(reading.value, spec.path);
  if (list === undefined) return addEntry(text, { ...spec, value: [spec.value] });
  if (!Array.isArray(list)) return { kind: 'invalid', reason: `${spec.path.join('.')} is not a list` };
  if (list.some((e) => sameValue(e, spec.value))) return { kind: 'present', same: true };
  let out: string;
  try {
    const root = parseTree(text, [], { allowTrailingComma: true });
    const node = root && findNodeAtLocation(root, [...spec.path]);
    if (node?.type !== 'array') throw new Error(`${spec.path.join('.')} is not a list`);
    out = spliceIn(text, node, () => '', spec.value);
  } catch (err) {
    return { kind: 'invalid', reason: firstLine(err) };
  }
  const check = readConfig(out, spec.format);
  const after = check.ok ? valueAt(check.value, spec.path) : undefined;
  if (!Array.isArray(after) || after.length !== list.length + 1 || !sameValue(after[after.length - 1], spec.value))
    return { kind: 'invalid', reason: `the entry could not be added to this file's list (${spec.path.join('.')})` };
  return { kind: 'added', text: out, created: 0 };
}

/**
 * Take out the element `addElement` put in the list at `spec.path`: the first element equal to it, wherever the
 * user has moved it since. When it is the only one left and `addElement` made the list, the list goes too (and the
 * tables made with it, as `removeEntry` does). No equal element: `absent` (the user took it out or changed it).
 */
export function removeElement(text: string, spec: EntrySpec, created: number): RemoveResult {
  if (spec.format !== 'json')
    return { kind: 'invalid', reason: `list entries in ${spec.format} files are not supported` };
  const reading = readConfig(text, spec.format);
  if (!reading.ok) return { kind: 'invalid', reason: reading.reason };
  const list = valueAt(reading.value, spec.path);
  if (!Array.isArray(list)) return { kind: 'absent' };
  const index = list.findIndex((e) => sameValue(e, spec.value));
  if (index < 0) return { kind: 'absent' };
  if (list.length === 1 && created > 0) return removeEntry(text, { ...spec, value: [spec.value] }, created);
  let out: string;
  try {
    const root = parseTree(text, [], { allowTrailingComma: true });
    const node = root && findNodeAtLocation(root, [...spec.path]);
    const element = node?.children?.[index];
    if (node?.type !== 'array' || !element) throw new Error(`${spec.path.join('.')} is not a list`);
    out = spliceOut(text, element, node);
  } catch (err) {
    return { kind: 'invalid', reason: firstLine(err) };
  }
  const check = readConfig(out, spec.format);
  const after = check.ok ? valueAt(check.value, spec.path) : undefined;
  const count = (l: unknown[]) => l.filter((e) => sameValue(e, spec.value)).length;
  if (!Array.isArray(after) || after.length !== list.length - 1 || count(after) !== count(list) - 1)
    return { kind: 'invalid', reason: `the entry could not be taken out of this file's list (${spec.path.join('.')})` };
  return { kind: 'removed', text: out };
}

/** True for a value that is a table with nothing in it (a file left holding only `{}`). */
export function isEmptyTable(v: unknown): boolean {
  return !!v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
}

// --- Markdown ---------------------------------------------------------------------------------------------------
//
// A file of standing instructions (CLAUDE.md, AGENTS.md, GEMINI.md) is the person's prose: svc's entry is a marked
// block, `<!-- <name>: begin … -->`, its lines, `<!-- <name>: end -->`, appended after a blank line. The file reads
// as its blocks by name, and the person's own text under `#text` (so a file holding anything of theirs is never an
// empty table, and is never deleted with svc's block). A begin without its end is refused, never guessed at.

const BLOCK_NAME = /^[a-z][a-z0-9-]*$/;
const blockBegin = (name: string) => `<!-- ${name}: begin. Written by svc install; svc uninstall removes it. -->`;
const blockEnd = (name: string) => `<!-- ${name}: end -->`;
/** Only svc's own begin line opens a block: a comment of the person's that merely says `begin` is their text. */
const BEGIN_LINE = /^<!-- ([a-z][a-z0-9-]*): begin\. Written by svc install\b.*-->$/;

/** The file's lines (without their ends) and where svc's blocks are: first and last line of each, by name. */
function markdownBlocks(text: string): { lines: string[]; blocks: Map<string, [number, number]> } | string {
  const lines = text.split('\n');
  const blocks = new Map<string, [number, number]>();
  for (let i = 0; i < lines.length; i++) {
    const name = BEGIN_LINE.exec(lines[i]!.trimEnd())?.[1];
    if (!name) continue;
    const end = lines.findIndex((l, j) => j > i && l.trimEnd() === blockEnd(name));
    if (end < 0) return `svc's block "${name}" begins on line ${i + 1} and never ends`;
    if (blocks.has(name)) return `svc's block "${name}" is in the file twice`;
    blocks.set(name, [i, end]);
    i = end;
  }
  return { lines, blocks };
}

function readMarkdown(text: string): Reading {
  const found = markdownBlocks(text);
  if (typeof found === 'string') return { ok: false, reason: found };
  const value: Record<string, string> = {};
  const inBlock = new Set<number>();
  for (const [name, [first, last]] of found.blocks) {
    // a file that has been given CRLF line ends still holds svc's block
    value[name] = found.lines
      .slice(first + 1, last)
      .map((l) => l.replace(/\r$/, ''))
      .join('\n');
    for (let i = first; i <= last; i++) inBlock.add(i);
  }
  const theirs = found.lines.filter((_, i) => !inBlock.has(i)).join('\n');
  if (theirs.trim() !== '') value['#text'] = theirs;
  return { ok: true, value };
}

function markdownBlockSpec(spec: Pick<EntrySpec, 'path' | 'value'>): { name: string; body: string } {
  const [name, ...rest] = spec.path;
  if (!name || rest.length > 0 || !BLOCK_NAME.test(name) || typeof spec.value !== 'string')
    throw new Error('a Markdown entry is one block: a name of lower-case letters, digits and -, and its text');
  return { name, body: spec.value };
}

/** The block appended after a blank line (after a line end first, when the file lacks its last one). */
function addMarkdown(text: string, spec: EntrySpec): string {
  const { name, body } = markdownBlockSpec(spec);
  const block = `${blockBegin(name)}\n${body}\n${blockEnd(name)}\n`;
  if (text === '') return block;
  return `${text}${text.endsWith('\n') ? '' : '\n'}\n${block}`;
}

/** The block out, with the blank line before it that `addMarkdown` put there. */
function removeMarkdown(text: string, path: readonly string[]): string {
  const found = markdownBlocks(text);
  if (typeof found === 'string') throw new Error(found);
  const at = found.blocks.get(path[0] ?? '');
  if (!at) throw new Error(`svc's block "${path[0]}" is not in the file`);
  const [first, last] = at;
  const from = first > 0 && found.lines[first - 1] === '' ? first - 1 : first;
  const lines = [...found.lines.slice(0, from), ...found.lines.slice(last + 1)];
  // the file was svc's block alone (and its line end): nothing of it is left
  return lines.length === 1 && lines[0] === '' ? '' : lines.join('\n');
}

// --- JSON -------------------------------------------------------------------------------------------------------

/** The file's own indentation and line end, read from its first indented line (2 spaces when it has none). */
export function formattingOf(text: string): FormattingOptions {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  for (const line of lines) {
    let n = 0;
    while (n < line.length && (line[n] === ' ' || line[n] === '\t')) n++;
    if (n > 0 && n < line.length) {
      const tabs = line[0] === '\t';
      return { insertSpaces: !tabs, tabSize: tabs ? 1 : n, eol };
    }
  }
  return { insertSpaces: true, tabSize: 2, eol };
}

/** The whitespace that starts the line holding `offset`. */
function lineIndent(text: string, offset: number): string {
  const start = text.lastIndexOf('\n', offset - 1) + 1;
  let end = start;
  while (text[end] === ' ' || text[end] === '\t') end++;
  return text.slice(start, end);
}

/** The next token after `offset` that is not whitespace, a line break or a comment. */
function tokenAfter(text: string, offset: number): { kind: SyntaxKind; end: number } | null {
  const scanner = createScanner(text, true);
  scanner.setPosition(offset);
  const kind = scanner.scan();
  return kind === TOKEN.eof ? null : { kind, end: scanner.getTokenOffset() + scanner.getTokenLength() };
}

/** Where the line ends after `offset` when only whitespace and comments come before that; null otherwise. */
function lineBreakAfter(text: string, offset: number): number | null {
  const scanner = createScanner(text, false);
  scanner.setPosition(offset);
  for (;;) {
    const kind = scanner.scan();
    if (kind === TOKEN.whitespace || kind === TOKEN.lineComment || kind === TOKEN.blockComment) continue;
    if (kind === TOKEN.lineBreak) return scanner.getTokenOffset();
    return null;
  }
}

function sameLine(text: string, a: number, b: number): boolean {
  return !text.slice(a, b).includes('\n');
}

/**
 * Insert the entry as a new member of the deepest object on its path that exists, as a splice right after that
 * object's last member (or inside an empty object), indented like the file; `jsonc-parser` locates the nodes. Its
 * own `modify` is not used: it reformats the whole line it edits, which moves a user's trailing comment and
 * unfolds a one-line sibling.
 */
function addJson(text: string, spec: EntrySpec): string {
  const base = text.trim() === '' ? '{}\n' : text;
  const root = parseTree(base, [], { allowTrailingComma: true });
  if (!root) throw new Error('no JSON value');
  let obj: Node = root;
  let depth = 0;
  while (depth < spec.path.length) {
    const next = findNodeAtLocation(obj, [spec.path[depth] as string]);
    if (!next) break;
    obj = next;
    depth++;
  }
  if (obj.type !== 'object') throw new Error(`${spec.path.slice(0, depth).join('.')} is not an object`);
  let value: JsonValue = spec.value;
  for (let i = spec.path.length - 1; i > depth; i--) value = { [spec.path[i] as string]: value };
  const key = JSON.stringify(spec.path[depth]);
  return spliceIn(
    base,
    obj,
    (oneLine) => `${key}: ${oneLine ? JSON.stringify(value, null, 1).replace(/\n\s*/g, ' ') : ''}`,
    value,
  );
}

/**
 * Put one more member into an object or element into an array (`container`), right after its last one (or inside
 * it when empty), indented like the file: `head(true)` is the whole member for a one-line container, `head(false)`
 * what comes before the value (`"key": `, or nothing in an array).
 */
function spliceIn(base: string, container: Node, head: (oneLine: boolean) => string, value: JsonValue): string {
  const fmt = formattingOf(base);
  const unit = fmt.insertSpaces ? ' '.repeat(fmt.tabSize ?? 2) : '\t';
  const eol = fmt.eol ?? '\n';
  const members = container.children ?? [];
  const last = members[members.length - 1];
  const end = container.offset + container.length - 1; // the closing brace or bracket
  const oneLineValue = JSON.stringify(value, null, 1).replace(/\n\s*/g, ' ');
  if (last && sameLine(base, container.offset, last.offset + last.length) && sameLine(base, last.offset, end)) {
    // a one-line container stays on one line
    const at = last.offset + last.length;
    const member = container.type === 'array' ? oneLineValue : head(true);
    return `${base.slice(0, at)}, ${member}${base.slice(at)}`;
  }
  if (last) {
    // after the last member, its trailing comma if it has one, and any comment on its line: one new line
    const indent = lineIndent(base, last.offset);
    const body = JSON.stringify(value, null, unit)
      .split('\n')
      .join(eol + indent);
    const at = last.offset + last.length;
    const comma = tokenAfter(base, at);
    const trailing = comma?.kind === TOKEN.comma;
    const lineEnd = lineBreakAfter(base, trailing ? (comma?.end ?? at) : at);
    const member = `${eol}${indent}${head(false)}${body}${trailing ? ',' : ''}`;
    if (lineEnd === null) return `${base.slice(0, at)},${member}${base.slice(at)}`;
    if (trailing) return base.slice(0, lineEnd) + member + base.slice(lineEnd);
    return `${base.slice(0, at)},${base.slice(at, lineEnd)}${member}${base.slice(lineEnd)}`;
  }
  const outer = lineIndent(base, container.offset);
  const indent = outer + unit;
  const body = JSON.stringify(value, null, unit)
    .split('\n')
    .join(eol + indent);
  return `${base.slice(0, container.offset + 1)}${eol}${indent}${head(false)}${body}${eol}${outer}${base.slice(end)}`;
}

/**
 * Take out the member at `path` the way `addJson` put it: from the end of the member before it (its comma and
 * line end go too); a sole member leaves `{}`.
 */
function removeJson(text: string, path: readonly string[]): string {
  const root = parseTree(text, [], { allowTrailingComma: true });
  const value = root && findNodeAtLocation(root, [...path]);
  const member = value?.parent;
  const obj = member?.parent;
  if (!member || !obj || obj.type !== 'object') throw new Error(`${path.join('.')} is not there`);
  return spliceOut(text, member, obj);
}

/** Take one member out of an object, or one element out of an array, with the comma and line it brought. */
function spliceOut(text: string, member: Node, obj: Node): string {
  const members = obj.children ?? [];
  const i = members.indexOf(member);
  const prev = members[i - 1];
  const next = members[i + 1];
  const end = member.offset + member.length;
  if (!prev && !next) return text.slice(0, obj.offset + 1) + text.slice(obj.offset + obj.length - 1);
  if (!prev && next) return text.slice(0, member.offset) + text.slice(next.offset);
  if (!prev) throw new Error('unreachable');
  const prevEnd = prev.offset + prev.length;
  const lineStart = text.lastIndexOf('\n', member.offset - 1) + 1;
  const ownLine = lineStart > prevEnd && text.slice(lineStart, member.offset).trim() === '';
  if (!ownLine) return text.slice(0, prevEnd) + text.slice(end);
  const eolStart = text[lineStart - 2] === '\r' ? lineStart - 2 : lineStart - 1;
  const after = tokenAfter(text, end);
  if (after?.kind === TOKEN.comma && after.end === end + 1)
    // svc's member carried the trailing comma: the member before keeps its own
    return text.slice(0, eolStart) + text.slice(end + 1);
  // the comma svc put right after the member before goes too
  const comma = text[prevEnd] === ',' ? prevEnd : -1;
  if (comma < 0) return text.slice(0, prevEnd) + text.slice(end);
  return text.slice(0, comma) + text.slice(comma + 1, eolStart) + text.slice(end);
}

// --- TOML -------------------------------------------------------------------------------------------------------

/** A bare key when it can be one, else a quoted key. */
function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

function tomlValue(v: JsonValue): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (v === null) throw new Error('TOML has no null');
  return `{ ${Object.entries(v)
    .map(([k, x]) => `${tomlKey(k)} = ${tomlValue(x)}`)
    .join(', ')} }`;
}

/**
 * The entry as its own table at the end of the file: `[a.b]` and one `key = value` line per field, after one blank
 * line. `removeToml` takes exactly this back out.
 */
function addToml(text: string, spec: EntrySpec): string {
  const v = spec.value;
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('a TOML entry must be a table');
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = [
    `[${spec.path.map(tomlKey).join('.')}]`,
    ...Object.entries(v).map(([k, x]) => `${tomlKey(k)} = ${tomlValue(x)}`),
  ];
  const block = lines.join(eol);
  if (text === '') return block + eol;
  if (text.endsWith('\n')) return `${text}${eol}${block}${eol}`;
  return `${text}${eol}${eol}${block}`;
}

/**
 * Remove `[entryPath]` the way `addToml` put it: its header to its last line, the line end after it, and the blank
 * line before it. Only a standard table at exactly that path is taken out; anything else (an inline table, dotted
 * keys) was not made by svc and is refused.
 */
function removeToml(text: string, entryPath: readonly string[], cutPath: readonly string[]): string {
  // a parent svc made (cutPath shorter) never had a header of its own: the entry's table is all there is of it
  void cutPath;
  const ast = parseTOML(text);
  const top = ast.body[0];
  const table = top?.body.find(
    (n) =>
      n.type === 'TOMLTable' &&
      n.kind === 'standard' &&
      n.resolvedKey.length === entryPath.length &&
      n.resolvedKey.every((k, i) => String(k) === entryPath[i]),
  );
  if (!table) throw new Error(`[${entryPath.join('.')}] is not a table svc wrote`);
  let [a, b] = table.range;
  if (text.startsWith('\r\n', b)) b += 2;
  else if (text[b] === '\n') b += 1;
  else {
    // the last thing in a file that did not end with a line end: the two line ends before it were svc's
    if (text.slice(a - 4, a) === '\r\n\r\n') a -= 4;
    else if (text.slice(a - 2, a) === '\n\n') a -= 2;
    return text.slice(0, a) + text.slice(b);
  }
  if (text.slice(a - 4, a) === '\r\n\r\n') a -= 2;
  else if (text.slice(a - 2, a) === '\n\n') a -= 1;
  return text.slice(0, a) + text.slice(b);
}

// --- YAML -------------------------------------------------------------------------------------------------------

function addYaml(text: string, spec: EntrySpec, _created: number): string {
  const doc = parseDocument(text);
  if (!isMap(doc.contents) && doc.contents !== null) throw new Error('the top level is not a map');
  doc.setIn([...spec.path], doc.createNode(spec.value));
  return doc.toString();
}

function removeYaml(text: string, path: readonly string[]): string {
  const doc = parseDocument(text);
  doc.deleteIn([...path]);
  return doc.toString();
}
