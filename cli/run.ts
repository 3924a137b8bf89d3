/**
 * Runs a citty command tree the way people expect a command line to behave (core/cli/commandLine.ts decides):
 * `--help`/`-h` and `--version`/`-v` at every level, one line and exit 2 for an unknown command or flag (or a flag
 * that does nothing yet), usage that names the whole command, no colour unless the output is a terminal.
 * citty still parses the arguments and runs the command (`runCommand`); its own `runMain` printed the whole usage
 * before the error, coloured whatever the output, and took any flag.
 */
import type { ArgsDef, CommandDef } from 'citty';
import {
  checkFlags,
  colorEnabled,
  type FlagSpec,
  FREE_TEXT,
  firstPositional,
  flagNames,
  NOT_YET,
  USAGE_EXIT,
  unknownCommandLine,
  unknownFlagLine,
  usageText,
} from '../core/cli/commandLine.js';
import { VERSION } from '../core/daemon/version.js';
import { wipeProgress } from './progress.js';

type Lazy<T> = T | (() => T | Promise<T>);
// biome-ignore lint/suspicious/noExplicitAny: citty's commands are typed by their own args
type AnyCommand = CommandDef<any>;

const resolve = async <T>(v: Lazy<T> | undefined): Promise<T | undefined> =>
  typeof v === 'function' ? await (v as () => T | Promise<T>)() : v;

/** A group whose subcommands are listed without loading them (the root: `svc --help` loads nothing else). */
export interface CommandTable {
  description: string;
  commands: Record<string, { description: string; hidden?: boolean; load: () => Promise<AnyCommand> }>;
  /** `Start here` in --help, in this order; `advanced`: plumbing, listed last. */
  start?: readonly string[];
  advanced?: readonly string[];
}

interface Level {
  name: string;
  /** The loaded command, or the table (root). */
  command: AnyCommand | null;
  table?: CommandTable;
}

const out = (s: string) => process.stdout.write(s);
const err = (line: string) => {
  wipeProgress(); // a command that threw while it showed progress (cli/progress.ts)
  process.stderr.write(`${line}\n`);
};
const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

async function subcommandList(
  level: Level,
): Promise<{ name: string; description: string; section?: 'start' | 'advanced' }[]> {
  if (level.table) {
    const { start = [], advanced = [] } = level.table;
    const listed = Object.entries(level.table.commands)
      .filter(([, c]) => !c.hidden)
      .map(([name, c]) => ({
        name,
        description: c.description,
        ...(start.includes(name)
          ? { section: 'start' as const }
          : advanced.includes(name)
            ? { section: 'advanced' as const }
            : {}),
      }));
    const rank = (name: string) => (start.includes(name) ? start.indexOf(name) : start.length);
    return listed.sort((a, b) => rank(a.name) - rank(b.name));
  }
  const subs = (await resolve(level.command?.subCommands)) ?? {};
  const list: { name: string; description: string }[] = [];
  for (const [name, sub] of Object.entries(subs)) {
    const meta = await resolve((await resolve(sub as Lazy<AnyCommand>))?.meta);
    if (!meta?.hidden) list.push({ name, description: meta?.description ?? '' });
  }
  return list;
}

async function printUsage(path: string, level: Level): Promise<void> {
  const meta = await resolve(level.command?.meta);
  const flags = ((await resolve(level.command?.args)) ?? {}) as Record<string, FlagSpec>;
  const bold = colorEnabled(Boolean(process.stdout.isTTY), process.env)
    ? (s: string) => `\x1b[1m${s}\x1b[22m`
    : (s: string) => s;
  out(
    usageText(
      {
        command: path,
        description: level.table?.description ?? meta?.description ?? '',
        flags,
        commands: await subcommandList(level),
      },
      bold,
    ),
  );
}

/** Runs `svc <argv>`; resolves with the exit code. */
export async function runCli(root: CommandTable, argv: readonly string[]): Promise<number> {
  let level: Level = { name: 'svc', command: null, table: root };
  let path = 'svc';
  let rest = [...argv];
  for (;;) {
    const specs = ((await resolve(level.command?.args)) ?? {}) as ArgsDef;
    const subs = level.table ? root.commands : await resolve(level.command?.subCommands);
    const hasSubs = subs !== undefined && Object.keys(subs).length > 0;
    const at = hasSubs ? firstPositional(rest, specs) : -1;
    const mine = at < 0 ? rest : rest.slice(0, at);
    const check = checkFlags(mine, specs, NOT_YET[path], FREE_TEXT.has(path));
    if (!check.ok) {
      err(check.kind === 'unknown' ? unknownFlagLine(check.flag, path, flagNames(specs)) : check.message);
      return USAGE_EXIT;
    }
    if (check.help) {
      await printUsage(path, level);
      return 0;
    }
    if (check.version) {
      out(`${VERSION}\n`);
      return 0;
    }
    if (at < 0) break;
    const word = rest[at]!;
    const next = level.table ? root.commands[word]?.load : (subs as Record<string, Lazy<AnyCommand>>)[word];
    if (!next) {
      // a command with its own `run` and positional arguments takes the word itself
      if (level.command?.run && Object.values(specs).some((s) => s.type === 'positional')) break;
      // every command that runs may be meant, hidden ones too (`svc claude`, `svc setup`): hidden is for --help only
      const names = Object.keys(level.table ? root.commands : (subs as Record<string, unknown>));
      err(unknownCommandLine(word, path, names));
      return USAGE_EXIT;
    }
    const command = (await resolve(next as Lazy<AnyCommand>))!;
    level = { name: word, command };
    path = `${path} ${word}`;
    rest = rest.slice(at + 1);
  }
  if (!level.command?.run) {
    // a group named without a command: its usage
    await printUsage(path, level);
    return 0;
  }
  try {
    // citty parses the arguments and runs it; loaded only now, so `svc --help` does without it
    const { runCommand } = await import('citty');
    await runCommand(level.command, { rawArgs: rest });
  } catch (e) {
    const error = e as Error;
    if (error.name === 'CLIError') {
      err(`svc: ${stripAnsi(error.message).replace(/\.$/, '')}; see ${path} --help`);
      return USAGE_EXIT;
    }
    err(`svc: ${error.message}`);
    if (process.env.SVC_DEBUG && error.stack) err(error.stack);
    return 1;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}
