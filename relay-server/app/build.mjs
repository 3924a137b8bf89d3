#!/usr/bin/env node
/**
 * Build the phone app into dist/app/ (what the relay serves at `/`): esbuild bundles the TypeScript (the terminal
 * renderer in its own chunk, loaded by the Watch screen only), the stylesheet, the service worker with the list of
 * files it caches, index.html pointing at the hashed files, the manifest, and icons drawn here as SVG and PNG.
 *
 *   node relay-server/app/build.mjs            build
 *   node relay-server/app/build.mjs --sizes    build, then print each file's size and the gzipped first load
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const here = import.meta.dirname;
const root = resolve(here, '../..');
const target = join(root, 'dist', 'app');
// Built beside the target and swapped in at the end, so a relay serving dist/app never sees it half-written.
const out = join(root, 'dist', `.app-build-${process.pid}`);

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'icons'), { recursive: true });

const common = {
  bundle: true,
  minify: true,
  target: ['es2022', 'safari16', 'chrome110', 'firefox115'],
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
};

const app = await esbuild.build({
  ...common,
  entryPoints: { app: join(here, 'src/main.ts'), style: join(here, 'static/app.css') },
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  format: 'esm',
  splitting: true,
  loader: { '.css': 'css' },
  plugins: [
    // CSS imported from TypeScript (xterm's) arrives as text and is put in a <style> when the chunk loads.
    {
      name: 'css-as-text',
      setup(build) {
        build.onLoad({ filter: /\.css$/ }, (args) => {
          if (args.path.startsWith(join(here, 'static'))) return undefined;
          return { contents: readFileSync(args.path, 'utf8'), loader: 'text' };
        });
      },
    },
  ],
  metafile: true,
});

const urlOf = (file) => `/${relative(out, resolve(root, file)).split('\\').join('/')}`;
const outputs = Object.entries(app.metafile.outputs);
const entry = (name) => {
  const found = outputs.find(([, o]) => o.entryPoint?.endsWith(name));
  if (!found) throw new Error(`no output for ${name}`);
  return urlOf(found[0]);
};
const script = entry('src/main.ts');
const style = entry('static/app.css');

const html = readFileSync(join(here, 'static/index.html'), 'utf8')
  .replace('{{script}}', script)
  .replace('{{style}}', style);
writeFileSync(join(out, 'index.html'), html);
writeFileSync(join(out, 'manifest.webmanifest'), readFileSync(join(here, 'static/manifest.webmanifest')));

// ---------------------------------------------------------------------------
// Icons: a rounded square with `›_` (a prompt), as SVG and rasterised to PNG here (no image tools needed).

const INK = [255, 255, 255];
const BG = [17, 19, 24];
const ACCENT = [74, 222, 128];

/** Signed distance to the icon's shapes, in units of the icon's side (0…1). */
function shapes(x, y, inset) {
  const s = (v) => (v - 0.5) / (1 - 2 * inset) + 0.5;
  const px = s(x);
  const py = s(y);
  const segment = (ax, ay, bx, by, w) => {
    const dx = bx - ax;
    const dy = by - ay;
    const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)));
    return Math.hypot(px - ax - t * dx, py - ay - t * dy) - w / 2;
  };
  const chevron = Math.min(segment(0.27, 0.33, 0.47, 0.5, 0.1), segment(0.47, 0.5, 0.27, 0.67, 0.1));
  const bar = segment(0.55, 0.67, 0.75, 0.67, 0.1);
  return { chevron, bar };
}

function roundedSquare(x, y, r) {
  const qx = Math.abs(x - 0.5) - (0.5 - r);
  const qy = Math.abs(y - 0.5) - (0.5 - r);
  return Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - r;
}

function pixel(x, y, maskable) {
  const inset = maskable ? 0.1 : 0;
  const { chevron, bar } = shapes(x, y, inset);
  if (chevron <= 0) return [...INK, 255];
  if (bar <= 0) return [...ACCENT, 255];
  if (maskable || roundedSquare(x, y, 0.2) <= 0) return [...BG, 255];
  return [0, 0, 0, 0];
}

function crc32(bytes) {
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function png(size, maskable) {
  const SS = 4;
  const raw = Buffer.alloc((size * 4 + 1) * size);
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0;
    for (let x = 0; x < size; x++) {
      const sum = [0, 0, 0, 0];
      for (let sy = 0; sy < SS; sy++) {
        for (let sx = 0; sx < SS; sx++) {
          const p = pixel((x + (sx + 0.5) / SS) / size, (y + (sy + 0.5) / SS) / size, maskable);
          for (let i = 0; i < 3; i++) sum[i] += p[i] * p[3];
          sum[3] += p[3];
        }
      }
      const o = y * (size * 4 + 1) + 1 + x * 4;
      const a = sum[3] / (SS * SS);
      for (let i = 0; i < 3; i++) raw[o + i] = sum[3] ? Math.round(sum[i] / sum[3]) : 0;
      raw[o + 3] = Math.round(a);
    }
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const rgb = (c) => `rgb(${c.join(',')})`;
const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">
<rect width="100" height="100" rx="20" fill="${rgb(BG)}"/>
<path d="M27 33 L47 50 L27 67" fill="none" stroke="${rgb(INK)}" stroke-width="10" stroke-linecap="round" stroke-linejoin="round"/>
<path d="M55 67 H75" stroke="${rgb(ACCENT)}" stroke-width="10" stroke-linecap="round"/>
</svg>
`;
writeFileSync(join(out, 'icons/icon.svg'), svg);
for (const size of [180, 192, 512]) writeFileSync(join(out, `icons/icon-${size}.png`), png(size, false));
writeFileSync(join(out, 'icons/icon-maskable-512.png'), png(512, true));

// ---------------------------------------------------------------------------
// The service worker, with the build's files as its shell (everything above: no API route is ever cached).

const files = ['/', ...outputs.map(([f]) => urlOf(f)).filter((u) => !u.endsWith('.map'))];
files.push(
  '/manifest.webmanifest',
  '/icons/icon.svg',
  '/icons/icon-180.png',
  '/icons/icon-192.png',
  '/icons/icon-512.png',
);
const buildId = gzipSync(Buffer.from(files.join('\n') + html))
  .toString('base64url')
  .slice(-12);
const sw = await esbuild.build({
  ...common,
  entryPoints: [join(here, 'src/sw.ts')],
  outfile: join(out, 'sw.js'),
  format: 'iife',
  metafile: true,
  define: { BUILD_ID: JSON.stringify(buildId), SHELL: JSON.stringify(files) },
});

// ---------------------------------------------------------------------------

const gz = (file) => gzipSync(readFileSync(file), { level: 9 }).length;
/** The entry and every chunk it imports statically: what a phone downloads before the first screen. */
function staticClosure(file, seen = new Set()) {
  if (seen.has(file)) return seen;
  seen.add(file);
  const meta = outputs.find(([f]) => resolve(root, f) === file)?.[1];
  for (const dep of meta?.imports ?? []) {
    if (dep.kind === 'import-statement') staticClosure(resolve(root, dep.path), seen);
  }
  return seen;
}
const firstLoad = [join(out, 'index.html'), ...staticClosure(join(out, script.slice(1))), join(out, style.slice(1))];
const chunkFiles = outputs.map(([f]) => resolve(root, f)).filter((f) => !firstLoad.includes(f));
/** What most of an output is made of (its largest input), so a chunk's hash name can be read. */
function biggestInput(file) {
  const meta = outputs.find(([f]) => resolve(root, f) === file)?.[1];
  if (!meta) return null;
  const [name] = Object.entries(meta.inputs).sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput)[0] ?? [];
  return name ? name.replace(/^.*node_modules\//, '').replace(/^relay-server\/app\//, '') : null;
}
const sizes = {
  firstLoadGzip: firstLoad.reduce((n, f) => n + gz(f), 0),
  files: Object.fromEntries(
    [...firstLoad, ...chunkFiles, join(out, 'sw.js')].map((f) => [
      relative(out, f),
      { bytes: readFileSync(f).length, gzip: gz(f), biggest: biggestInput(f) },
    ]),
  ),
};
// What the service worker is made of: it runs on every push, and a schema library has no business there.
sizes.swInputs = Object.keys(sw.metafile.inputs).sort();
// What the first load is made of: zod and the transcript readers arrive later, in chunks of their own.
sizes.firstLoadInputs = [
  ...new Set(firstLoad.flatMap((f) => Object.keys(outputs.find(([o]) => resolve(root, o) === f)?.[1].inputs ?? {}))),
].sort();
// Beside the app, not in it: the relay serves only what is in dist/app.
writeFileSync(join(root, 'dist', 'app-sizes.json'), `${JSON.stringify(sizes, null, 2)}\n`);
// Budgets (issue 30): above one the build fails, saying which. test/unit/app/sizes.test.ts checks the same file.
const BUDGETS = { 'first load': 50 * 1024, 'sw.js': 25 * 1024 };
for (const [file, most] of Object.entries(BUDGETS)) {
  const gzip = file === 'first load' ? sizes.firstLoadGzip : (sizes.files[file]?.gzip ?? 0);
  if (gzip > most) {
    console.error(`${file} is ${gzip} B gzip, over its budget of ${most} B (relay-server/app/build.mjs BUDGETS)`);
    process.exitCode = 1;
  }
}
const old = join(root, 'dist', `.app-old-${process.pid}`);
if (existsSync(target)) renameSync(target, old);
renameSync(out, target);
rmSync(old, { recursive: true, force: true });
if (process.argv.includes('--sizes')) {
  for (const [f, s] of Object.entries(sizes.files))
    console.log(
      `${f.padEnd(28)} ${String(s.bytes).padStart(8)} B ${String(s.gzip).padStart(7)} B gzip  ${s.biggest ?? ''}`,
    );
  console.log(`first load (index.html, the entry and the chunks it imports, style), gzip: ${sizes.firstLoadGzip} B`);
} else {
  console.log(
    `app built in ${relative(root, target)}/ (first load ${(sizes.firstLoadGzip / 1024).toFixed(1)} KiB gzip)`,
  );
}
