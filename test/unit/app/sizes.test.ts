/**
 * The phone app's weight (issue 30 item 8), from the sizes the build writes (dist/app-sizes.json; the test setup
 * builds the app first): what a phone downloads before the first screen stays within 50 KiB gzip, with zod and the
 * transcript readers in later chunks (relay-server/app/src/schemas.ts, loaded by api.ts); the service worker, which
 * runs on every push, stays small and carries no schema library.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const sizes = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../dist/app-sizes.json'), 'utf8')) as {
  firstLoadGzip: number;
  firstLoadInputs: string[];
  files: Record<string, { gzip: number }>;
  swInputs: string[];
};

describe('the app’s size', () => {
  it('the first load is at most 50 KiB gzip', () => expect(sizes.firstLoadGzip).toBeLessThanOrEqual(50 * 1024));
  it('the first load carries no zod and no transcript reader', () =>
    expect(
      sizes.firstLoadInputs.filter((f) => f.includes('node_modules/zod') || f.endsWith('core/transcripts/readers.ts')),
    ).toEqual([]));
  it('sw.js is at most 25 KiB gzip', () => expect(sizes.files['sw.js']?.gzip).toBeLessThanOrEqual(25 * 1024));
  it('sw.js carries no zod', () => expect(sizes.swInputs.filter((f) => f.includes('node_modules/zod'))).toEqual([]));
});
