/**
 * `svc schedule` (spec 4.5, 4.8): list the schedules with their next run and last result (`--json`),
 * `svc schedule add <agent> …` makes one for the current directory, `svc schedule rm <id>` removes one (a session it
 * started keeps running). The listener runs them (machines/scheduler.ts); the file is
 * `~/.local/state/svc/schedules` (actors/schedules/scheduleFile.ts).
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { runningListener } from '../../actors/daemon/controlSocket.js';
import { freshId } from '../../actors/schedules/runs.js';
import { changeSchedules, readSchedules } from '../../actors/schedules/scheduleFile.js';
import { findGitRoot } from '../../actors/sessions/wrapper.js';
import { onPath } from '../../actors/which.js';
import { AGENTS, agentForSubcommand } from '../../core/agents/registry.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { newEntry, scheduleLines, scheduleZone, viewSchedule } from '../../core/schedules/book.js';
import { luxon } from '../../core/schedules/luxon.js';
import { parseSchedule } from '../../core/schedules/schedule.js';
import { resolveProject } from '../../core/sessions/project.js';
import { fail } from '../output.js';

const json = { type: 'boolean', description: 'print JSON' } as const;
/** The zone schedules run in, or why it cannot be used (core/schedules/book.ts). */
const systemZone = () => scheduleZone(Intl.DateTimeFormat().resolvedOptions().timeZone, process.env.TZ);
const zone = () => {
  const z = systemZone();
  return z.ok ? z.zone : 'UTC';
};
const paths = () => svcPaths(homedir());

/** Said after a change when no listener runs: a schedule only runs while one does. */
async function listenerHint(): Promise<void> {
  if (await runningListener(paths().dir, 1500)) return;
  process.stderr.write(
    'svc: no listener is running, so nothing runs on schedule: start one with `svc up` or `svc listener`\n',
  );
}

const add = defineCommand({
  meta: { name: 'add', description: 'Schedule an agent to start in this directory: --at HH:MM [--days …] or --every' },
  args: {
    agent: {
      type: 'positional',
      description: `the agent: ${AGENTS.map((a) => a.subcommand).join(', ')}`,
      required: true,
    },
    at: { type: 'string', description: 'local time HH:MM' },
    days: { type: 'string', description: 'daily (default), weekdays, weekends, or mon,wed,fri' },
    every: { type: 'string', description: 'every <N>m or <N>h from now, at least 15m' },
    prompt: { type: 'string', description: 'typed once when the agent is ready (Claude Code, Codex, Gemini CLI, pi)' },
    'max-runtime': {
      type: 'string',
      description: 'ended with its own exit command after this long: 5m to 24h, default 2h',
    },
    json,
  },
  async run({ args }) {
    try {
      const agent = agentForSubcommand(args.agent);
      if (!agent) throw new Error(`unknown agent ${args.agent}: one of ${AGENTS.map((a) => a.subcommand).join(', ')}`);
      const inZone = systemZone();
      if (args.at !== undefined && !inZone.ok) throw new Error(inZone.message);
      const path = paths().schedules;
      const now = Date.now();
      const parsed = parseSchedule(
        {
          agent: agent.id,
          ...(args.at !== undefined ? { at: args.at } : {}),
          ...(args.days !== undefined ? { days: args.days } : {}),
          ...(args.every !== undefined ? { every: args.every } : {}),
          ...(args.prompt !== undefined ? { prompt: args.prompt } : {}),
          ...(args['max-runtime'] !== undefined ? { maxRuntime: args['max-runtime'] } : {}),
        },
        now,
        readSchedules(path).schedules.length,
      );
      if (!parsed.ok) throw new Error(`${parsed.problem.message} (${parsed.problem.code})`);
      // the program as found now: the listener (a login service, too) may have another PATH
      const command = onPath(agent.command);
      if (!command) throw new Error(`${agent.command} is not on PATH: install ${agent.name} first`);
      const cwd = process.cwd();
      const project = resolveProject({ env: process.env, gitRoot: findGitRoot(cwd), cwd });
      const id = freshId(readSchedules(path).schedules.map((e) => e.id));
      const entry = newEntry(parsed.spec, { command, cwd, project: project.name, slug: project.slug }, id, now);
      changeSchedules(path, { kind: 'add', entry });
      const view = viewSchedule(entry, now, zone());
      if (args.json) process.stdout.write(`${JSON.stringify(view)}\n`);
      else {
        const next = view.next === null ? '-' : luxon().DateTime.fromMillis(view.next).toFormat('ccc yyyy-LL-dd HH:mm');
        process.stdout.write(
          `scheduled ${id}: ${view.agentName} in ${cwd}, ${view.when}, next ${next} (svc schedule rm ${id} removes it)\n`,
        );
      }
      await listenerHint();
    } catch (err) {
      fail(err);
    }
  },
});

const rm = defineCommand({
  meta: { name: 'rm', description: 'Remove a schedule; a session it started keeps running' },
  args: { id: { type: 'positional', description: 'the schedule’s id (svc schedule lists them)', required: true } },
  run({ args }) {
    try {
      changeSchedules(paths().schedules, { kind: 'remove', id: args.id });
      process.stdout.write(`removed schedule ${args.id}\n`);
    } catch (err) {
      fail(err);
    }
  },
});

export default defineCommand({
  meta: {
    name: 'schedule',
    description: 'List scheduled agent sessions, their next run and last result; add and rm change them',
  },
  args: { json },
  subCommands: { add, rm },
  run({ args }) {
    // citty runs a parent's `run` after its subcommand's
    if (args._[0] === 'add' || args._[0] === 'rm') return;
    try {
      const file = readSchedules(paths().schedules);
      const now = Date.now();
      if (args.json) {
        const schedules = file.schedules.map((e) => viewSchedule(e, now, zone()));
        process.stdout.write(`${JSON.stringify({ schedules })}\n`);
      } else {
        for (const line of scheduleLines(file, now, zone())) process.stdout.write(`${line}\n`);
        const inZone = systemZone();
        process.stdout.write(inZone.ok ? `times in ${inZone.zone}\n` : `times in UTC: ${inZone.message}\n`);
      }
    } catch (err) {
      fail(err);
    }
  },
});
