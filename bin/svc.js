#!/usr/bin/env node
// The installed entry point: runs the compiled CLI (no TypeScript at run time), on a Node svc supports.
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  process.stderr.write(
    `svc: needs Node 22, 24 or 26 (the maintained LTS lines); this is Node ${process.versions.node}\n`,
  );
  process.exit(1);
}
// V8's compiled code of svc's modules, kept between runs in the person's cache folder: every `svc` (a hook runs one
// per prompt) starts about a fifth sooner (docs/cli.md). NODE_COMPILE_CACHE, when set, has already put it there.
if (!process.env.NODE_COMPILE_CACHE) {
  try {
    module.enableCompileCache(join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'svc', 'compile'));
  } catch {
    // no cache folder (a read-only home): svc runs as it would without one
  }
}
await import('../dist/cli/main.js');
