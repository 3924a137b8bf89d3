/**
 * The relay's log (relay-server/log.ts), in a child process as the relay runs it: the lines of one turn go out in
 * one write, and lines still held when the process exits are not lost.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const LOG_MODULE = resolve(import.meta.dirname, '../../../dist/relay-server/log.js');

/** Run `body` (with `log` made by defaultLog) in a fresh node; its stderr and how many writes reached fd 2. */
function run(body: string): { stderr: string; writes: number } {
  const script = `
    import { defaultLog } from ${JSON.stringify(LOG_MODULE)};
    let writes = 0;
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (...args) => { writes++; return write(...args); };
    process.on('exit', () => process.stdout.write(String(writes)));
    const log = defaultLog();
    ${body}`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return { stderr: child.stderr, writes: Number(child.stdout) };
}

describe('the relay log', () => {
  it('writes the lines of one turn of the event loop at once, each a line with its time and level', () => {
    const { stderr, writes } = run(`log.info('one'); log.warn('two'); log.error('three');`);
    expect(stderr.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z info {2}one$/),
      expect.stringMatching(/ warn {2}two$/),
      expect.stringMatching(/ error three$/),
    ]);
    expect(writes).toBe(1);
  });

  it('still writes what it holds when the process exits in the same turn', () => {
    const { stderr } = run(`log.info('before exit'); log.error('fatal: the last words'); process.exit(3);`);
    expect(stderr).toMatch(/info {2}before exit\n.* error fatal: the last words\n$/);
  });
});
