/** Where a program is on PATH (as a shell would find it), without running anything. */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export function onPath(program: string, pathVar: string | undefined = process.env.PATH): string | null {
  const candidates = program.includes('/')
    ? [program]
    : (pathVar ?? '').split(delimiter).map((d) => join(d || '.', program));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
