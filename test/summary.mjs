// Prints vitest's totals as one plain closing line ("N passed, N failed, N skipped") for CI to read.
import { readFileSync } from 'node:fs';

const r = JSON.parse(readFileSync(new URL('../test-results/vitest.json', import.meta.url), 'utf8'));
console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
