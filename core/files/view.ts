/**
 * File view from the phone (spec 4.11.3, 4.5; docs/files.md "File view"): which paths may be read, which files are
 * secret (listed, never shown), how secret-looking strings found in a text are masked, the switch that turns file
 * view off for a project or everywhere, and the read log. Pure: actors/files/view.ts reads the project with git and
 * the file system and runs the secret detector (secretlint's recommended rules).
 */
import { posix } from 'node:path';
import { z } from 'zod/v3';

/** Spec 8: `svc file-view log` prints the last 50 reads. */
export const FILE_VIEW_LOG_KEPT = 50;
/** At most this many paths in a listing (the rest are counted). */
export const MAX_LISTED = 5_000;
/** A file or diff larger than this is shown up to it, marked cut; a file is never read whole beyond it. */
export const MAX_SHOWN_BYTES = 256 * 1024;

/**
 * Files whose contents are never shown, by name (the last part of the path), case-insensitive: listed with
 * `secret: true`. One list, here: `.env*`, keys and certificates, SSH keys, credential stores.
 */
export const SECRET_FILES: readonly RegExp[] = [
  /^\.env(\..*)?$/i,
  /\.(pem|key|p12|pfx|jks|keystore|ppk|asc|gpg|kdbx)$/i,
  /^id_(rsa|dsa|ecdsa|ed25519)(\.pub)?$/i,
  /^\.(npmrc|pypirc|netrc|pgpass|git-credentials|htpasswd)$/i,
  /^credentials(\.json)?$/i,
  /^(secrets?|service[-_]account)\.(json|ya?ml|toml)$/i,
  /\.tfvars$/i,
  /^terraform\.tfstate(\.backup)?$/i,
];

export const isSecretFile = (path: string): boolean => {
  const name = posix.basename(path);
  return SECRET_FILES.some((re) => re.test(name));
};

/**
 * Folders under the home directory whose files are never shown, whatever the project: svc's own (the computer's
 * private key, the API key), SSH, GnuPG, the cloud tools' credentials, password stores.
 */
export const PRIVATE_DIRS: readonly string[] = [
  '.svc',
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.config/gcloud',
  '.kube',
  '.docker',
  '.config/gh',
  '.password-store',
];

/** The agents' own credential files under the home directory (their logins and API keys). */
export const AGENT_CREDENTIALS: readonly string[] = [
  '.claude/.credentials.json',
  '.claude.json',
  '.codex/auth.json',
  '.gemini/oauth_creds.json',
  '.gemini/google_accounts.json',
  '.pi/agent/auth.json',
  '.local/share/opencode/auth.json',
  '.cursor/cli-config.json',
  '.hermes/.env',
];

/**
 * Whether a file, by its real (resolved) absolute path, is never shown: its own name is a secret's, or it is inside
 * one of `PRIVATE_DIRS` or is one of `AGENT_CREDENTIALS` under `home`. Judged on the resolved path, so a link named
 * `notes.txt` that leads to `.env` is the secret it leads to.
 */
export function isPrivatePath(real: string, home: string): boolean {
  if (isSecretFile(real)) return true;
  const base = posix.normalize(home).replace(/\/+$/, '');
  if (!real.startsWith(`${base}/`)) return false;
  const rel = real.slice(base.length + 1);
  return (
    PRIVATE_DIRS.some((dir) => rel === dir || rel.startsWith(`${dir}/`)) || AGENT_CREDENTIALS.some((f) => rel === f)
  );
}

/**
 * A project root too broad to browse by default: the home directory or `/`. A session started there would put the
 * person's whole home (or disk) on the phone; file view needs `svc file-view on` run in that very folder.
 */
export const isBroadRoot = (root: string, home: string): boolean =>
  root === '/' || posix.normalize(root).replace(/\/+$/, '') === posix.normalize(home).replace(/\/+$/, '');

export type PathProblem = 'bad_path';

/**
 * A path the phone named, relative to the project: plain parts only. Refused: absolute paths, `..` or `.` parts,
 * empty parts, backslashes, control characters, over 4 KiB. Symlinks leading out are the reader's check (it resolves
 * them); this only decides what the text may be.
 */
export function checkViewPath(path: string): { ok: true; path: string } | { ok: false; code: PathProblem } {
  if (path.length === 0 || path.length > 4096 || path.startsWith('/') || path.includes('\\')) {
    return { ok: false, code: 'bad_path' };
  }
  if (/[\u0000-\u001f\u007f]/.test(path)) return { ok: false, code: 'bad_path' };
  const parts = path.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return { ok: false, code: 'bad_path' };
  return { ok: true, path };
}

/** `text` with each range [start, end) replaced by a mask of its length (at most 40 characters shown as such). */
export function maskRanges(text: string, ranges: readonly (readonly [number, number])[]): string {
  const sorted = [...ranges].filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let out = '';
  let at = 0;
  for (const [start, end] of sorted) {
    if (end <= at) continue;
    const from = Math.max(start, at);
    out += text.slice(at, from);
    // keep line breaks (a masked private key keeps its lines)
    out += text
      .slice(from, end)
      .replace(/[^\n]/g, '•')
      .replace(/•{41,}/g, '•'.repeat(40));
    at = end;
  }
  return out + text.slice(at);
}

export const FileViewSettings = z.object({
  version: z.literal(1),
  /** Off everywhere (`svc file-view off --global`). */
  global: z.boolean(),
  /** Projects (absolute paths of their roots) where it is off. */
  off: z.array(z.string()).max(1000),
  /** Broad roots (the home directory, `/`) where the person turned it on (`svc file-view on` there). */
  on: z.array(z.string()).max(100).optional(),
});
export type FileViewSettings = z.infer<typeof FileViewSettings>;
export const FILE_VIEW_ON: FileViewSettings = { version: 1, global: false, off: [] };

/**
 * Why file view is off for `project`, or null when it is on: off everywhere or for this project
 * (`file_view_off`), or a broad root (home, `/`) the person has not turned it on for (`file_view_broad_root`).
 */
export function fileViewRefusal(
  s: FileViewSettings,
  project: string,
  home: string,
): 'file_view_off' | 'file_view_broad_root' | null {
  if (s.global || s.off.includes(project)) return 'file_view_off';
  if (isBroadRoot(project, home) && !(s.on ?? []).includes(project)) return 'file_view_broad_root';
  return null;
}

/** `broad`: `project` is a broad root (`isBroadRoot`); turning it on there is remembered by name. */
export type FileViewChange = { kind: 'off' | 'on'; global: boolean; project: string; broad?: boolean };

export function changeFileView(s: FileViewSettings, c: FileViewChange): FileViewSettings {
  if (c.global) return { ...s, global: c.kind === 'off', ...(c.kind === 'on' ? { off: [] } : {}) };
  const off = s.off.filter((p) => p !== c.project);
  const next: FileViewSettings = { ...s, off: c.kind === 'off' ? [...off, c.project] : off };
  if (!c.broad) return next;
  const on = (s.on ?? []).filter((p) => p !== c.project);
  return { ...next, on: c.kind === 'on' ? [...on, c.project] : on };
}

/** One read, as `svc file-view log` prints it: when, which device, which session, what. */
export const FileViewRead = z.object({
  at: z.number().finite(),
  device: z.string(),
  session: z.string(),
  op: z.enum(['list', 'read', 'diff']),
  path: z.string().optional(),
  outcome: z.string(),
});
export type FileViewRead = z.infer<typeof FileViewRead>;

export function readLine(r: FileViewRead): string {
  const when = new Date(r.at).toISOString().replace('T', ' ').slice(0, 19);
  return `${when}  ${r.device}  ${r.session}  ${r.op}${r.path ? ` ${r.path}` : ''}  ${r.outcome}`;
}
