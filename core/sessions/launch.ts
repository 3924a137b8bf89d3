/**
 * What `svc <agent>` and `svc sh` do (spec 2.2, 3, 4.4, 4.6), decided in one pure function from the facts the
 * command gathers: `decideLaunch`. The command (actors/sessions/wrapper.ts) only gathers facts and carries out the plan.
 *
 * Plans:
 * - `run-here`: inside tmux without `--detach`, the agent runs in the current pane (spec 4.4 rule 1), with a note
 *   that the listener cannot reach it.
 * - `attach`: reattach to an existing detached session (spec 3): the lowest-numbered detached session of the
 *   same project running the same agent; or the session a `--label`/`--wt`/`sh` name points at.
 * - `prepare-worktree`: `--wt` was given; find or make the worktree, then decide again with what that gave.
 * - `create`: a new session, named `svc-<project>`, `svc-<project>-2`, … (first free), `svc-<project>-<label>`,
 *   `svc-<repo>-wt-<branch>` or `svc-<project>-sh`, with its svc metadata (tmux user options `@svc-*`).
 * - `refuse`: one line, non-zero exit.
 *
 * A detached session is never killed, and `--detach` never reattaches. Decisions where the spec is silent are
 * listed in docs/cli.md.
 */

import { closest } from '../cli/commandLine.js';
import { defaultSocketPath, explicitSocket } from '../tmux/socket.js';
import { shellQuote } from '../tmux/tmux.js';
import { PROJECT_NAME_MAX } from './project.js';

/** The svc metadata of a session, as the wrapper stores it in tmux user options (`@svc-kind`, …). */
export interface SvcMeta {
  kind?: 'agent' | 'shell';
  /** Registry id (`A1`). */
  agent?: string;
  project?: string;
  label?: string;
  /** Path of the `--wt` worktree. */
  worktree?: string;
  /** The agent's own session and its transcript (a resume knows them: core/transcripts/pins.ts). */
  agentSession?: string;
  transcript?: string;
}

/** The tmux user options for `meta` (`@svc-kind agent`, …), in a fixed order; unset fields are left out. */
export function metaOptions(meta: SvcMeta): Record<string, string> {
  const out: Record<string, string> = {};
  if (meta.kind) out['@svc-kind'] = meta.kind;
  if (meta.agent) out['@svc-agent'] = meta.agent;
  if (meta.project) out['@svc-project'] = meta.project;
  if (meta.label) out['@svc-label'] = meta.label;
  if (meta.worktree) out['@svc-worktree'] = meta.worktree;
  if (meta.transcript) out['@svc-transcript'] = meta.transcript;
  if (meta.agentSession) out['@svc-agent-session'] = meta.agentSession;
  return out;
}

/** A session as the inventory shows it. */
export interface ExistingSession {
  name: string;
  attached: boolean;
  meta?: SvcMeta | undefined;
}

export interface LaunchAgent {
  /** Registry id (`A1`). */
  id: string;
  /** Display name (`Claude Code`). */
  name: string;
  /** The program (`claude`). */
  command: string;
}

export type LaunchTarget =
  | { kind: 'agent'; agent: LaunchAgent; args: readonly string[] }
  | { kind: 'shell' /** The login shell's path (`$SHELL`, default `/bin/sh`). */; shell: string };

export interface LaunchFlags {
  detach: boolean;
  label?: string | undefined;
}

/**
 * `--wt <branch>` as far as it got: `pending` (not looked at yet: the plan asks for it, so cheap refusals come
 * before any git work), `ready` (actors/worktrees/git.ts `ensureWorktree` found or made it), `refused` (its one line).
 */
export type WorktreeFact =
  | { status: 'pending'; branch: string }
  | { status: 'ready'; branch: string; path: string; sessionName: string; repoName: string }
  | { status: 'refused'; message: string };

export interface LaunchFacts {
  target: LaunchTarget;
  flags: LaunchFlags;
  /** Only with `--wt`. */
  worktree?: WorktreeFact | undefined;
  /** Resolved by core/sessions/project.ts. */
  project: { name: string; slug: string };
  cwd: string;
  /** `$TMUX` is set. */
  insideTmux: boolean;
  platform: string;
  /** stdin is a terminal (needed to attach). */
  tty: boolean;
  /** tmux is on PATH. */
  tmuxFound: boolean;
  /** The agent's program is on PATH (always true for a shell). */
  commandFound: boolean;
  /** Every session on the wrapper's tmux server (none when tmux is missing). */
  sessions: readonly ExistingSession[];
}

/** What to do once the session exists. */
export type Then = 'attach' | 'print-name' | 'switch-hint';

export type LaunchPlan =
  | { action: 'refuse'; message: string }
  /** Find or make the worktree (`ensureWorktree`), then decide again with its result. */
  | { action: 'prepare-worktree'; branch: string }
  | { action: 'run-here'; cwd: string; command: string; args: string[]; note: string }
  | {
      action: 'attach';
      name: string;
      then: Exclude<Then, 'print-name'>;
      startListener: true;
      /** The agent's arguments of this command: the session runs already, so they are not passed to it. */
      unused?: string[];
    }
  | {
      action: 'create';
      name: string;
      cwd: string;
      command: string;
      args: string[];
      meta: SvcMeta;
      then: Then;
      startListener: true;
    };

export const LABEL_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;

export const WINDOWS_REFUSAL =
  'svc needs WSL on Windows (tmux has no Windows build): install WSL and run svc inside it';
export const NO_TMUX_REFUSAL =
  'tmux is not on PATH: install it (apt-get install tmux, brew install tmux) and run again';
export const NO_TTY_REFUSAL = 'no terminal to attach to: add --detach to start the session in the background';

/** `svc-<slug>` is 1, `svc-<slug>-<n>` (n >= 2) is n; anything else null. */
export function familyIndex(name: string, projectSlug: string): number | null {
  const base = `svc-${projectSlug}`;
  if (name === base) return 1;
  if (!name.startsWith(`${base}-`)) return null;
  const rest = name.slice(base.length + 1);
  if (!/^[1-9][0-9]{0,5}$/.test(rest)) return null;
  const n = Number(rest);
  return n >= 2 ? n : null;
}

/** The first free name of the family: `svc-<slug>`, then `-2`, `-3`, … */
export function firstFreeName(projectSlug: string, taken: ReadonlySet<string>): string {
  const base = `svc-${projectSlug}`;
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

const describeSession = (s: ExistingSession, agentName: (id: string) => string): string =>
  s.meta?.kind === 'shell' ? 'a shell' : s.meta?.agent ? agentName(s.meta.agent) : 'another program';

/** Everything `svc <agent>` / `svc sh` does, from the facts. `agentName` turns a registry id into a display name. */
export function decideLaunch(facts: LaunchFacts, agentName: (id: string) => string = (id) => id): LaunchPlan {
  const { target, flags, project, worktree } = facts;
  const refuse = (message: string): LaunchPlan => ({ action: 'refuse', message });
  const isShell = target.kind === 'shell';

  // Spec 4.4 rule 5.
  if (facts.platform === 'win32') return refuse(WINDOWS_REFUSAL);

  if (flags.label !== undefined && !LABEL_PATTERN.test(flags.label))
    return refuse(`--label ${JSON.stringify(flags.label)}: use 1-40 letters, digits, '_' or '-'`);
  if (worktree && isShell) return refuse('svc sh takes no --wt');
  if (worktree && flags.label !== undefined)
    return refuse('--label and --wt do not go together: a --wt session is named by its branch');

  let command: string;
  let args: string[];
  if (target.kind === 'agent') {
    if (!facts.commandFound)
      return refuse(`${target.agent.command} (${target.agent.name}) is not on PATH: install it, then run again`);
    command = target.agent.command;
    args = [...target.args];
  } else {
    command = target.shell;
    args = ['-l'];
  }

  // Spec 4.4 rule 1: inside tmux an agent runs in the current pane, unless --detach asks for a reachable session.
  const runHere = facts.insideTmux && !flags.detach && !isShell;
  // Inside tmux, `svc sh` never attaches: it prints the switch-client line (spec 4.6).
  const then: Then = flags.detach ? 'print-name' : facts.insideTmux ? 'switch-hint' : 'attach';
  if (!runHere) {
    if (!facts.tmuxFound) return refuse(NO_TMUX_REFUSAL);
    if (then === 'attach' && !facts.tty) return refuse(NO_TTY_REFUSAL);
  }

  // Spec 4.4 rules 2-3: the worktree is looked at only once nothing cheaper refused.
  if (worktree?.status === 'pending') return { action: 'prepare-worktree', branch: worktree.branch };
  if (worktree?.status === 'refused') return refuse(worktree.message);
  const ready = worktree?.status === 'ready' ? worktree : null;
  const cwd = ready ? ready.path : facts.cwd;

  if (runHere) {
    return {
      action: 'run-here',
      cwd,
      command,
      args,
      note: `svc: running ${command} in this pane; the listener cannot reach it here (use --detach for a session the phone can reach)`,
    };
  }

  const meta: SvcMeta = {
    kind: isShell ? 'shell' : 'agent',
    project: (ready ? ready.repoName : project.name).slice(0, PROJECT_NAME_MAX),
  };
  if (target.kind === 'agent') meta.agent = target.agent.id;
  if (flags.label !== undefined) meta.label = flags.label;
  if (ready) meta.worktree = ready.path;
  const create = (name: string): LaunchPlan => ({
    action: 'create',
    name,
    cwd,
    command,
    args,
    meta,
    then,
    startListener: true,
  });
  // never with `print-name` (--detach never reattaches)
  const attach = (name: string): LaunchPlan =>
    ({ action: 'attach', name, then, startListener: true, ...(args.length > 0 ? { unused: args } : {}) }) as LaunchPlan;
  const sameKind = (s: ExistingSession): boolean =>
    isShell ? s.meta?.kind === 'shell' : s.meta?.kind === 'agent' && s.meta.agent === meta.agent;

  // A name the person chose (worktree branch, label, the shell session): that session or none.
  let fixedName: string | null = null;
  if (ready) fixedName = ready.sessionName;
  else if (flags.label !== undefined) fixedName = `svc-${project.slug}-${flags.label}`;
  else if (isShell) fixedName = `svc-${project.slug}-sh`;

  if (fixedName !== null) {
    const existing = facts.sessions.find((s) => s.name === fixedName);
    if (!existing) return create(fixedName);
    const hint = ready ? 'end that session first' : isShell ? 'pick a --label' : 'pick another --label';
    if (!existing.meta?.kind)
      return refuse(`a tmux session named ${fixedName} exists and was not started by svc: ${hint}`);
    if (!sameKind(existing))
      return refuse(
        `${fixedName} runs ${describeSession(existing, agentName)}, not ${isShell ? 'a shell' : agentName(meta.agent!)}: ${hint}`,
      );
    if (then === 'print-name')
      return refuse(
        `${fixedName} already exists: attach with \`tmux attach -t ${fixedName}\` (--detach never reattaches)`,
      );
    if (then === 'switch-hint') return attach(fixedName);
    if (existing.attached)
      return refuse(
        `${fixedName} is attached in another terminal: \`tmux attach -t ${fixedName}\` shares it, or ${hint}`,
      );
    return attach(fixedName);
  }

  // The -2/-3 family: reattach to the lowest-numbered detached session of this project running this agent.
  if (then === 'attach') {
    const candidates = facts.sessions
      .filter(
        (s) =>
          !s.attached &&
          sameKind(s) &&
          s.meta?.project === meta.project &&
          s.meta?.label === undefined &&
          s.meta?.worktree === undefined,
      )
      .map((s) => ({ s, n: familyIndex(s.name, project.slug) }))
      .filter((c): c is { s: ExistingSession; n: number } => c.n !== null)
      .sort((a, b) => a.n - b.n);
    const lowest = candidates[0];
    if (lowest) return attach(lowest.s.name);
  }
  return create(firstFreeName(project.slug, new Set(facts.sessions.map((s) => s.name))));
}

/** Which tmux server the wrapper uses: `SVC_TMUX_SOCKET`, else the one `$TMUX` names, else tmux's default. */
export function wrapperSocket(
  env: Readonly<Record<string, string | undefined>>,
  uid: number,
): { path: string; source: 'SVC_TMUX_SOCKET' | 'TMUX' | 'default' } {
  const explicit = explicitSocket(env, uid);
  if (explicit) return { path: explicit, source: 'SVC_TMUX_SOCKET' };
  const fromTmux = env.TMUX?.split(',')[0];
  if (fromTmux) return { path: fromTmux, source: 'TMUX' };
  return { path: defaultSocketPath(env, uid), source: 'default' };
}

// ---------------------------------------------------------------------------
// Arguments of `svc <agent>`

export interface WrapperArgs {
  flags: LaunchFlags;
  /** `--wt <branch>`. */
  wt?: string;
  help: boolean;
  /** Everything after the wrapper flags (and after a `--`), verbatim. */
  agentArgs: string[];
}

/**
 * Wrapper flags are read from the front only (spec 4.4): `--detach`, `--label <x>` / `--label=x`,
 * `--wt <branch>` / `--wt=branch`, `--help` / `-h`. The first other argument, or a `--` (dropped), ends them;
 * the rest goes to the agent as is (`svc cc --model x` passes `--model x`; `svc cc -- --help` asks the agent).
 */
export function parseWrapperArgs(raw: readonly string[]): WrapperArgs | { error: string } {
  const flags: LaunchFlags = { detach: false };
  let wt: string | undefined;
  let help = false;
  let i = 0;
  const seen = new Set<string>();
  for (; i < raw.length; i++) {
    const arg = raw[i]!;
    if (arg === '--') {
      i++;
      break;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!['--detach', '--label', '--wt', '--help', '-h'].includes(name)) break;
    if (seen.has(name)) return { error: `${name} given twice` };
    seen.add(name);
    if (name === '--help' || name === '-h') help = true;
    else if (name === '--detach') {
      if (eq > 0) return { error: '--detach takes no value' };
      flags.detach = true;
    } else {
      let value: string | undefined;
      if (eq > 0) value = arg.slice(eq + 1);
      else {
        value = raw[i + 1];
        i++;
      }
      if (value === undefined || value === '') return { error: `${name} needs a value` };
      if (name === '--label') flags.label = value;
      else wt = value;
    }
  }
  return { flags, help, agentArgs: raw.slice(i), ...(wt !== undefined ? { wt } : {}) };
}

/**
 * The line `svc <agent> …` prints when it reattaches and the arguments it was given cannot apply (the agent runs
 * already): what was not used, how to start another session with them, and the wrapper flag a mistyped one most
 * likely meant (`--detatch`).
 */
export function unusedArgsLine(session: string, command: string, unused: readonly string[], worktree = false): string {
  const words = (list: readonly string[]) =>
    list.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : shellQuote(a))).join(' ');
  const flags = unused.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0]!);
  // a wrapper flag after the agent's arguments went to the agent; a near one was most likely mistyped
  const late = flags.find((f) => WRAPPER_FLAGS.includes(f));
  const typo = flags.map((f) => [f, closest(f, WRAPPER_FLAGS)] as const).find(([f, m]) => m !== undefined && m !== f);
  const fixed = unused.map((a) => (typo && a === typo[0] ? typo[1]! : a));
  return [
    `svc: reattached to ${session}, which runs already: not passed to it: ${words(unused)}`,
    late ? ` (${late} is svc's only before the agent's arguments)` : '',
    typo ? ` (did you mean ${typo[1]} for ${typo[0]}?)` : '',
    // a worktree session has one name: another one there is not a --label away
    worktree ? '' : `; \`svc ${command} --label <name> ${words(fixed)}\` starts another session with them`,
  ].join('');
}

const WRAPPER_FLAGS = ['--detach', '--label', '--wt', '--help'];
