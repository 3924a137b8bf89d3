/**
 * How the `svc` command line behaves like the tools people know, as pure decisions (cli/run.ts does the IO):
 * colour only on a terminal (`NO_COLOR`, `FORCE_COLOR`), one line for an unknown command or flag with its own exit
 * code, flags accepted only when they do something, and usage text that names the whole command.
 */

/** Exit code of a command line that could not be understood (unknown command or flag, missing argument). */
export const USAGE_EXIT = 2;

/** https://no-color.org and the FORCE_COLOR convention: NO_COLOR wins, then FORCE_COLOR, then "is it a terminal". */
export function colorEnabled(isTTY: boolean, env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return !['0', 'false'].includes(force.trim().toLowerCase());
  return isTTY && env.TERM !== 'dumb';
}

/** The pairing QR code: with ANSI colours, as plain block characters (NO_COLOR on a terminal), or not at all. */
export function qrStyle(isTTY: boolean, env: Readonly<Record<string, string | undefined>>): 'ansi' | 'blocks' | 'none' {
  if (colorEnabled(isTTY, env)) return 'ansi';
  return isTTY ? 'blocks' : 'none';
}

/**
 * A progress line (cli/progress.ts) only on a terminal that redraws in place: never in a pipe or a file, under CI
 * (its logs keep every redraw) or with TERM=dumb.
 */
export function progressShown(isTTY: boolean, env: Readonly<Record<string, string | undefined>>): boolean {
  return isTTY && !env.CI && env.TERM !== 'dumb';
}

/** The part of a command's definition the command line checks (citty's `args`). */
export interface FlagSpec {
  type?: 'boolean' | 'string' | 'enum' | 'positional' | undefined;
  alias?: string | string[] | undefined;
  description?: string | undefined;
  default?: unknown;
  required?: boolean | undefined;
  valueHint?: string | undefined;
}

const camel = (s: string) => s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const aliases = (spec: FlagSpec) => (Array.isArray(spec.alias) ? spec.alias : spec.alias ? [spec.alias] : []);

/** The flag's definition, if the command has it; `negated` for `--no-<boolean>`. */
function lookup(name: string, specs: Readonly<Record<string, FlagSpec>>): { spec: FlagSpec; negated: boolean } | null {
  for (const [key, spec] of Object.entries(specs)) {
    if (spec.type === 'positional') continue;
    if (name === key || camel(name) === camel(key) || aliases(spec).includes(name)) return { spec, negated: false };
    if (spec.type === 'boolean' && name.startsWith('no-') && camel(name.slice(3)) === camel(key))
      return { spec, negated: true };
  }
  return null;
}

export type FlagCheck =
  | { ok: true; help: boolean; version: boolean }
  | { ok: false; kind: 'unknown'; flag: string }
  | { ok: false; kind: 'not-yet'; flag: string; message: string };

/**
 * Reads the flags of one command's arguments (up to `--`): `--help`/`-h` and `--version`/`-v` unless the command
 * defines them; a flag the command does not define is `unknown`; one in `notYet` (accepted by earlier versions,
 * with nothing behind it yet) is refused with its message. A string flag's value is skipped. For a command whose
 * words are a message (`freeText`, see FREE_TEXT), a word that is no flag of its own is part of the message.
 */
export function checkFlags(
  args: readonly string[],
  specs: Readonly<Record<string, FlagSpec>>,
  notYet: Readonly<Record<string, string>> = {},
  freeText = false,
): FlagCheck {
  let help = false;
  let version = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') break;
    if (!arg.startsWith('-') || arg === '-') continue;
    const flag = arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    if (notYet[flag] !== undefined) return { ok: false, kind: 'not-yet', flag, message: notYet[flag] };
    const name = flag.replace(/^--?/, '');
    const found = lookup(name, specs);
    if (found) {
      if (!arg.includes('=') && !found.negated && (found.spec.type === 'string' || found.spec.type === 'enum')) i++;
      continue;
    }
    if (flag === '--help' || flag === '-h') help = true;
    else if (flag === '--version' || flag === '-v') version = true;
    else if (!freeText) return { ok: false, kind: 'unknown', flag };
  }
  return { ok: true, help, version };
}

/** Index of the first argument that is not a flag (nor a string flag's value), or -1; stops at `--`. */
export function firstPositional(args: readonly string[], specs: Readonly<Record<string, FlagSpec>>): number {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return -1;
    if (!arg.startsWith('-') || arg === '-') return i;
    const found = arg.includes('=') ? null : lookup(arg.replace(/^--?/, ''), specs);
    if (found && !found.negated && (found.spec.type === 'string' || found.spec.type === 'enum')) i++;
  }
  return -1;
}

/**
 * Edit distance of two words: letters added, dropped or changed, and two neighbours swapped, one step each (the
 * optimal string alignment distance: `verfy` → `verify` 1, `shedule` → `schedule` 1, `detatch` → `detach` 1).
 */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  return d[a.length]![b.length]!;
}

/**
 * The candidate a mistyped `word` most likely meant: the nearest by edit distance, when near enough to be a typo
 * (1 for words of up to 4 letters, 2 up to 8, else 3) and nearer than any other; none for a word like no candidate.
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const allowed = word.length <= 4 ? 1 : word.length <= 8 ? 2 : 3;
  const scored = candidates
    .map((c) => ({ c, d: editDistance(word.toLowerCase(), c.toLowerCase()) }))
    .filter(({ d }) => d <= allowed)
    .sort((x, y) => x.d - y.d);
  if (scored.length === 0 || (scored.length > 1 && scored[1]!.d === scored[0]!.d)) return undefined;
  return scored[0]!.c;
}

export const unknownCommandLine = (word: string, command: string, commands: readonly string[] = []): string => {
  const meant = closest(word, commands);
  const hint = meant ? `; did you mean "${command} ${meant}"?` : '';
  return `svc: unknown command "${word}"${command === 'svc' ? '' : ` for ${command}`}${hint}; see ${command} --help`;
};

export const unknownFlagLine = (flag: string, command: string, flags: readonly string[] = []): string => {
  const meant = closest(flag, flags);
  return `svc: unknown flag "${flag}" for ${command}${meant ? `; did you mean "${meant}"?` : ''}; see ${command} --help`;
};

/** The flags a command takes, as typed (`--detach`, `-d`): what an unknown flag is compared with. */
export function flagNames(specs: Readonly<Record<string, FlagSpec>>): string[] {
  return Object.entries(specs)
    .filter(([, s]) => s.type !== 'positional')
    .flatMap(([name, s]) => [`--${name}`, ...aliases(s).map((a) => (a.length === 1 ? `-${a}` : `--${a}`))])
    .concat('--help', '--version');
}

/** What a usage page shows. */
export interface UsageModel {
  /** The whole command: `svc relay serve`. */
  command: string;
  description: string;
  flags: Readonly<Record<string, FlagSpec>>;
  /**
   * Subcommands with their one-line descriptions, in order; `section` puts one under a heading of its own (the
   * root's `Start here` first, `Advanced` after the others), else under `Commands`.
   */
  commands: readonly { name: string; description: string; section?: 'start' | 'advanced' }[];
  /** Lines after the options (examples, notes). */
  notes?: readonly string[];
}

/** The usage page; `bold` styles the headings (identity when colour is off). */
export function usageText(model: UsageModel, bold: (s: string) => string = (s) => s): string {
  const positionals = Object.entries(model.flags).filter(([, s]) => s.type === 'positional');
  const options = Object.entries(model.flags).filter(([, s]) => s.type !== 'positional');
  const shape = [
    model.command,
    ...(model.commands.length > 0 ? ['<command>'] : []),
    ...(options.length > 0 ? ['[options]'] : []),
    ...positionals.map(([name, s]) => (s.required ? `<${name}>` : `[${name}]`)),
  ].join(' ');
  const rows = (pairs: [string, string][]) => {
    const width = Math.max(0, ...pairs.map(([left]) => left.length)) + 2;
    return pairs.map(([left, right]) => `  ${left.padEnd(width)}${right}`.trimEnd());
  };
  const optionRows: [string, string][] = options.map(([name, s]) => {
    const short = aliases(s).filter((a) => a.length === 1);
    const value = s.type === 'string' || s.type === 'enum' ? ` <${s.valueHint ?? name}>` : '';
    const left = [...short.map((a) => `-${a}`), `--${name}${value}`].join(', ');
    const def = s.default !== undefined && s.type !== 'boolean' ? ` (default: ${String(s.default)})` : '';
    return [left, `${s.description ?? ''}${def}`];
  });
  optionRows.push(['-h, --help', 'this help'], ['-v, --version', "svc's version"]);
  const lines = [model.description, '', `${bold('Usage:')} ${shape}`, ''];
  if (positionals.length > 0) {
    lines.push(bold('Arguments:'), ...rows(positionals.map(([n, s]) => [n, s.description ?? ''])), '');
  }
  const sections = [
    ['Start here:', model.commands.filter((c) => c.section === 'start')],
    ['Commands:', model.commands.filter((c) => c.section === undefined)],
    ['Advanced:', model.commands.filter((c) => c.section === 'advanced')],
  ] as const;
  const all = model.commands.map((c): [string, string] => [c.name, c.description]);
  // one column width for every section, so they line up
  const aligned = rows(all);
  for (const [title, list] of sections)
    if (list.length > 0) lines.push(bold(title), ...list.map((c) => aligned[model.commands.indexOf(c)]!), '');
  lines.push(bold('Options:'), ...rows(optionRows), '');
  if (model.commands.length > 0) lines.push(`Run \`${model.command} <command> --help\` for a command's own flags.`, '');
  if (model.notes) lines.push(...model.notes, '');
  return lines.join('\n');
}

/**
 * Flags with nothing behind them yet, refused (exit 2) until their capabilities land, by command: a flag is never
 * accepted and ignored. Empty now: keeping the computer awake, the login service and turn history have landed.
 */
export const NOT_YET: Readonly<Record<string, Readonly<Record<string, string>>>> = {};

/** Commands whose words are a message: a word like a flag that the command does not define is part of the text. */
export const FREE_TEXT: ReadonlySet<string> = new Set(['svc agent send']);
