/**
 * Which project a wrapper run belongs to (spec 2.2), and the slugs that go into tmux session names. Pure.
 *
 * Order: the first set of the three `*_PROJECT_DIR` variables, else the git repository root, else the current
 * directory; the project name is that directory's basename. Spec 2.2 names the variables only as "the
 * project-directory environment variable of A1, of A6's editor, or of a third editor"; our pick is Claude Code's,
 * Cursor's and Windsurf's, in that order (`PROJECT_DIR_VARS`, also in docs/cli.md).
 *
 * Worktree sessions (`--wt`) are named by core/worktrees/worktree.ts (`svc-<repo>-wt-<branch-slug>`), not here.
 */
import { posix } from 'node:path';

export const PROJECT_DIR_VARS = ['CLAUDE_PROJECT_DIR', 'CURSOR_PROJECT_DIR', 'WINDSURF_PROJECT_DIR'] as const;

export type ProjectSource = (typeof PROJECT_DIR_VARS)[number] | 'git' | 'cwd';

export interface Project {
  /** The directory's basename as it is (shown in the picker, stored as `@svc-project`). */
  name: string;
  /** `name` reduced to `[A-Za-z0-9_-]`, for session names. */
  slug: string;
  dir: string;
  source: ProjectSource;
}

/** Longest project slug, so `svc-<project>-<label>` stays well under the protocol's 128-character names. */
export const PROJECT_SLUG_MAX = 40;
/** `@svc-project` is read back clipped to this (core/protocol/frames.ts `SessionMeta`). */
export const PROJECT_NAME_MAX = 128;

/**
 * A string reduced to what a tmux session name keeps as is: `[A-Za-z0-9_-]`. tmux turns `.` and `:` into `_` in
 * session names, so `.` (allowed by the protocol's `[A-Za-z0-9._-]+`) is not used either. Accents are dropped
 * (`café` → `cafe`), every run of other characters becomes one `-`, and `-` is trimmed from both ends.
 * May return '' (nothing usable); callers pick a fallback.
 */
export function slug(text: string, maxLength = PROJECT_SLUG_MAX): string {
  const plain = text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  const s = plain
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
  return s.slice(0, maxLength).replace(/-+$/, '');
}

/** The project part of a session name; `project` when nothing of the name is usable (`/`, `…`, `日本`). */
export function projectSlug(name: string): string {
  return slug(name, PROJECT_SLUG_MAX) || 'project';
}

export interface ProjectFacts {
  env: Readonly<Record<string, string | undefined>>;
  /** The enclosing git working tree's root, or null outside git. */
  gitRoot: string | null;
  cwd: string;
}

export function resolveProject(facts: ProjectFacts): Project {
  for (const name of PROJECT_DIR_VARS) {
    const value = facts.env[name]?.trim();
    if (value) return project(posix.resolve(facts.cwd, value), name);
  }
  if (facts.gitRoot) return project(facts.gitRoot, 'git');
  return project(facts.cwd, 'cwd');
}

function project(dir: string, source: ProjectSource): Project {
  const name = (posix.basename(dir) || dir).slice(0, PROJECT_NAME_MAX);
  return { name, slug: projectSlug(name), dir, source };
}
