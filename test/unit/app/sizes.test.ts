/**
 * The phone app's weight (issue 30 item 8), from the sizes the build writes (dist/app-sizes.json; the test setup
 * builds the app first): the service worker, which runs on every push, stays small and carries no schema library.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const sizes = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../dist/app-sizes.json'), 'utf8')) as {
  files: Record<string, { gzip: number }>;
  swInputs: string[];
};

describe('the app’s size', () => {
  it('sw.js is at most 25 KiB gzip', () => expect(sizes.files['sw.js']?.gzip).toBeLessThanOrEqual(25 * 1024));
  it('sw.js carries no zod', () => expect(sizes.swInputs.filter((f) => f.includes('node_modules/zod'))).toEqual([]));
});
