/**
 * Remote-origin markers (spec 2.3): one file per project directory, holding the epoch and sha256 of the text the
 * listener is about to type, for an agent-side prompt hook to compare the submitted prompt with (no hook reads it yet).
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { writeFileInPlace } from '../files.js';

export interface Marker {
  epoch: number; // seconds
  sha256: string; // of the injected text, hex
  projectDir: string;
  session: string;
}

export function markerPath(markersDir: string, projectDir: string): string {
  const key = createHash('sha256').update(projectDir).digest('hex').slice(0, 32);
  return join(markersDir, `${key}.json`);
}

export function writeMarker(
  markersDir: string,
  session: string,
  projectDir: string,
  text: string,
  now = Date.now(),
): string {
  const marker: Marker = {
    epoch: Math.floor(now / 1000),
    sha256: createHash('sha256').update(text).digest('hex'),
    projectDir,
    session,
  };
  const path = markerPath(markersDir, projectDir);
  // Advisory, and complete before the text is typed: a marker torn by a crash only means one prompt is not flagged
  // as remote, so neither an fsync nor a rename on the hot path.
  writeFileInPlace(path, `${JSON.stringify(marker)}\n`);
  return path;
}
