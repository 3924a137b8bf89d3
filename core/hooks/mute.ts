/**
 * Muted projects (spec 3, 4.13.3): a prompt in a muted project is never flagged as typed by the phone. `svc mute`
 * records the project the person stands in (its git top level, else the directory), or every project; the hook
 * asks whether the agent's working directory is inside one.
 */
import { isAbsolute, relative, sep } from 'node:path';
import { z } from 'zod/v3';

export const MuteList = z.object({
  all: z.boolean(),
  projects: z.array(z.string().min(1).max(4096)).max(1000),
});
export type MuteList = z.infer<typeof MuteList>;

export const NO_MUTES: MuteList = { all: false, projects: [] };

/** Whether `dir` is `project` or inside it. */
function inside(dir: string, project: string): boolean {
  const rel = relative(project, dir);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

export function isMuted(list: MuteList, cwd: string): boolean {
  return list.all || list.projects.some((p) => inside(cwd, p));
}

export type MuteChange = { kind: 'mute' | 'unmute'; project: string } | { kind: 'mute-all' | 'unmute-all' };

/** The list after a change, and whether it changed. Unmuting all also forgets every project. */
export function applyMute(list: MuteList, change: MuteChange): { list: MuteList; changed: boolean } {
  let next: MuteList;
  switch (change.kind) {
    case 'mute-all':
      next = { ...list, all: true };
      break;
    case 'unmute-all':
      next = { all: false, projects: [] };
      break;
    case 'mute':
      next = list.projects.includes(change.project) ? list : { ...list, projects: [...list.projects, change.project] };
      break;
    case 'unmute':
      next = { ...list, projects: list.projects.filter((p) => p !== change.project) };
      break;
  }
  const changed = next.all !== list.all || next.projects.length !== list.projects.length;
  return { list: next, changed };
}

/** What `svc mute --list` prints. */
export function muteLines(list: MuteList): string[] {
  if (list.all) return ['every project is muted: no prompt is flagged as from the phone (svc unmute --all)'];
  if (list.projects.length === 0) return ['no project is muted'];
  return list.projects.map((p) => `muted: ${p}`);
}
