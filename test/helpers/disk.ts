/** What a folder holds on disk: for the package test and bench/install.ts. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The bytes of the files under `dir`, and the packages in it (folders with a package.json right under a
 * node_modules folder or a scope in one). */
export function footprint(dir: string): { bytes: number; packages: number } {
  let bytes = 0;
  let packages = 0;
  const walk = (d: string, inModules: boolean) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        const scope = inModules && e.name.startsWith('@');
        if (inModules && !scope && !e.name.startsWith('.')) packages++;
        walk(p, e.name === 'node_modules' || scope);
      } else if (e.isFile()) bytes += statSync(p).size;
    }
  };
  walk(dir, dir.endsWith('node_modules'));
  return { bytes, packages };
}

export const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
