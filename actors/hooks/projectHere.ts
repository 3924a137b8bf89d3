/**
 * The project the person stands in, as `svc mute` records it: the git top level of the directory (the wrapper's
 * own lookup), else the directory, symlinks resolved. Its own file so the hook, which reads the mute list, does
 * not load the wrapper.
 */
import { realpathSync } from 'node:fs';
import { findGitRoot } from '../sessions/wrapper.js';

export function projectHere(cwd = process.cwd()): string {
  return realpathSync(findGitRoot(cwd) ?? cwd);
}
