#!/usr/bin/env node
// The installed entry point: runs the compiled CLI (no TypeScript at run time), on a Node svc supports.
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `svc: needs Node 22.12 or later, 24 or 26 (the LTS lines); this is Node ${process.versions.node}\n`,
  );
  process.exit(1);
}
// V8's compiled code of svc's modules, kept between runs in the person's cache folder: every `svc` (a hook runs one
// per prompt) starts about a fifth sooner (docs/cli.md). NODE_COMPILE_CACHE, when set, has already put it there. A
// folder it cannot write only leaves the cache off (Node says so in its return value, never by throwing); the catch
// is for a HOME that cannot be found.
if (!process.env.NODE_COMPILE_CACHE) {
  try {
    const xdg = process.env.XDG_CACHE_HOME;
    const cacheHome = xdg?.startsWith('/') ? xdg : join(homedir(), '.cache'); // XDG: a relative path is ignored
    module.enableCompileCache(join(cacheHome, 'svc', 'compile'));
  } catch {}
}
await import('../dist/cli/main.js');
