// Prints vitest's totals as one plain closing line ("N passed, N failed, N skipped") for CI to read.
//
//   node test/summary.mjs
//     after `vitest run` (npm test): the totals of test-results/vitest.json.
//   node test/summary.mjs --run <label> <vitest.json> <exit status> [--run …]
//     after several runs of `npm test` (.ci/run: one per Node version): one line per run, then the totals of all
//     of them as the closing line; exits 1 when any run exited non-zero. A run that wrote no report, or exited
//     non-zero with no failed test (a test worker that died, an error outside the tests), counts as one failure
//     and its line says why, so the closing line never reads "0 failed" when a run did not pass. Each failed test
//     is named under its run's line (file, name, the first lines of its failure): CI keeps only the log's tail.
import { existsSync, readFileSync } from 'node:fs';

const line = (t) => `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;

// The failed tests of a report, each as a few lines: its file and name, then the head of its first failure message.
function failures(path) {
  const r = JSON.parse(readFileSync(path, 'utf8'));
  const out = [];
  for (const file of r.testResults ?? []) {
    const name = String(file.name ?? '').replace(`${process.cwd()}/`, '');
    for (const t of file.assertionResults ?? []) {
      if (t.status !== 'failed') continue;
      const message = String(t.failureMessages?.[0] ?? '')
        .split('\n')
        .slice(0, 6);
      out.push(`  FAILED ${name} > ${t.fullName}`, ...message.map((m) => `    ${m.slice(0, 300)}`));
    }
    if (file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed')) {
      out.push(
        `  FAILED ${name}: ${String(file.message ?? '')
          .split('\n')[0]
          .slice(0, 300)}`,
      );
    }
  }
  return out;
}

function totals(path) {
  const r = JSON.parse(readFileSync(path, 'utf8'));
  return { passed: r.numPassedTests, failed: r.numFailedTests, skipped: r.numPendingTests + r.numTodoTests };
}

const args = process.argv.slice(2);
if (args.length === 0) {
  console.log(line(totals(new URL('../test-results/vitest.json', import.meta.url))));
} else {
  const all = { passed: 0, failed: 0, skipped: 0 };
  const labels = [];
  for (let i = 0; i < args.length; i += 4) {
    const [flag, label, path, status] = args.slice(i, i + 4);
    if (flag !== '--run' || status === undefined) {
      console.error('usage: node test/summary.mjs [--run <label> <vitest.json> <exit status>]…');
      process.exit(2);
    }
    const exit = Number(status);
    let t;
    let why = '';
    if (!existsSync(path)) {
      t = { passed: 0, failed: 1, skipped: 0 };
      why = ` (npm test exited ${exit} before vitest wrote its report: counted as 1 failure)`;
    } else {
      t = totals(path);
      if (exit !== 0 && t.failed === 0) {
        t.failed = 1;
        why = ` (no test failed, but npm test exited ${exit}: an error outside the tests, see its log; counted as 1 failure)`;
      } else if (exit !== 0) {
        why = ` (npm test exited ${exit})`;
      }
    }
    console.log(`${label}: ${line(t)}${why}`);
    if (existsSync(path)) for (const f of failures(path)) console.log(f);
    all.passed += t.passed;
    all.failed += t.failed;
    all.skipped += t.skipped;
    labels.push(label);
    if (exit !== 0) process.exitCode = 1;
  }
  console.log(`${line(all)} (${labels.join(' + ')})`);
}
