/**
 * The phone app's files (built by `relay-server/app/build.mjs` into `dist/app/`), served at `/`. Only files inside
 * the app directory, by an exact path: no directory listing, no `..`, no dot-files, no symlinks out.
 */
import { existsSync, realpathSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, join, resolve, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** A path segment we serve: no leading dot (so no `.`, `..` or dot-files), no backslash, no NUL. */
const SEGMENT_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** Files whose names carry a content hash (`assets/app-3F2A9C1B.js`) never change: cache them for a year. */
const HASHED_RE = /^assets\/.+-[A-Z0-9]{8}\.(js|css)$/;

export const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>svc</title></head>
<body><h1>svc relay</h1><p>The phone app is not built. Run <code>npm run build</code> in the svc checkout, then reload.</p></body>
</html>
`;

/** The package root: the nearest directory up from this file with a package.json (source and dist/ alike). */
function packageRoot(from: string): string | null {
  let dir = from;
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Where the built app is: `SVC_APP_DIR`, else `<package root>/dist/app`; null when it has not been built. */
export function findAppDir(): string | null {
  const configured = process.env.SVC_APP_DIR;
  const root = packageRoot(import.meta.dirname);
  const dir = configured ? resolve(configured) : root ? join(root, 'dist', 'app') : null;
  if (!dir || !existsSync(join(dir, 'index.html'))) return null;
  return realpathSync(dir);
}

/** The file a URL path names inside `appDir`, or null when the path is not one we would ever serve. */
export function appFilePath(appDir: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded === '/' || decoded === '') decoded = '/index.html';
  if (!decoded.startsWith('/')) return null;
  const segments = decoded.slice(1).split('/');
  if (segments.length > 4 || !segments.every((s) => SEGMENT_RE.test(s))) return null;
  if (!(extname(decoded) in TYPES)) return null;
  const file = resolve(appDir, ...segments);
  return file.startsWith(appDir + sep) ? file : null;
}

function cacheControl(relative: string): string {
  if (HASHED_RE.test(relative)) return 'public, max-age=31536000, immutable';
  if (relative.startsWith('icons/')) return 'public, max-age=86400';
  // index.html, sw.js, the manifest: always revalidate, so a new build reaches phones on the next load.
  return 'no-cache';
}

function securityHeaders(req: IncomingMessage, type: string): Record<string, string> {
  const headers: Record<string, string> = {
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
  if (type.startsWith('text/html')) {
    // The WebSocket is on this host; 'self' does not cover ws:/wss: in every browser, so name them.
    const host = /^[A-Za-z0-9.:[\]-]{1,300}$/.test(req.headers.host ?? '') ? req.headers.host : null;
    const ws = host ? ` ws://${host} wss://${host}` : '';
    headers['Content-Security-Policy'] = [
      "default-src 'self'",
      "script-src 'self'",
      // xterm.js sizes its rows with a <style> element it writes at run time.
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      `connect-src 'self'${ws}`,
      "worker-src 'self'",
      "manifest-src 'self'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; ');
    headers['X-Frame-Options'] = 'DENY';
  }
  return headers;
}

/**
 * Serve `urlPath` from the app directory. Returns false (nothing sent) when there is no such file, so the caller
 * answers 404 in the relay's usual error shape.
 */
export async function serveAppFile(
  req: IncomingMessage,
  res: ServerResponse,
  appDir: string,
  urlPath: string,
): Promise<boolean> {
  const file = appFilePath(appDir, urlPath);
  if (!file) return false;
  let real: string;
  try {
    real = realpathSync(file);
    if (!real.startsWith(appDir + sep) || !(await stat(real)).isFile()) return false;
  } catch {
    return false;
  }
  const body = await readFile(real);
  const relative = real
    .slice(appDir.length + 1)
    .split(sep)
    .join('/');
  const type = TYPES[extname(real)] ?? 'application/octet-stream';
  res.writeHead(200, {
    'Content-Type': type,
    'Content-Length': body.length,
    'Cache-Control': cacheControl(relative),
    ...securityHeaders(req, type),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
