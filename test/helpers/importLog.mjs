/**
 * `node --import <this file> …` records every file module the process loads, one URL a line, in the file named by
 * SVC_IMPORT_LOG: what `svc --help` loads, for test/integration/commandLine.test.ts.
 */
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (process.env.SVC_IMPORT_LOG && url.startsWith('file:')) appendFileSync(process.env.SVC_IMPORT_LOG, url + '\\n');
  return next(url, context);
}`)}`,
  import.meta.url,
);
