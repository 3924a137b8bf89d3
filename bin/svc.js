#!/usr/bin/env node
// The installed entry point: runs the compiled CLI (no TypeScript at run time), on a Node svc supports.
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  process.stderr.write(
    `svc: needs Node 22, 24 or 26 (the maintained LTS lines); this is Node ${process.versions.node}\n`,
  );
  process.exit(1);
}
await import('../dist/cli/main.js');
