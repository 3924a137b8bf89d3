/** Semantic-version comparison (semver 2.0 precedence), for the stale-daemon rule of spec 3 and 9.2. Pure. */

export interface SemVer {
  major: number;
  minor: number;
  patch: number;
  /** Pre-release identifiers (`1.0.0-rc.1` → `['rc', '1']`); empty for a release. */
  pre: string[];
}

const SEMVER =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$/;

/** `1.2.3`, `v1.2.3`, `1.2.3-rc.1+build`; null for anything else. */
export function parseSemver(text: string): SemVer | null {
  const m = SEMVER.exec(text.trim());
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), pre: m[4] ? m[4].split('.') : [] };
}

const sign = (n: number): -1 | 0 | 1 => (n < 0 ? -1 : n > 0 ? 1 : 0);

function comparePre(a: readonly string[], b: readonly string[]): -1 | 0 | 1 {
  // A release is higher than any of its pre-releases.
  if (a.length === 0 || b.length === 0) return sign(b.length - a.length);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const xn = /^\d+$/.test(x);
    const yn = /^\d+$/.test(y);
    if (xn && yn) {
      const d = sign(Number(x) - Number(y));
      if (d !== 0) return d;
    } else if (xn !== yn)
      return xn ? -1 : 1; // numeric identifiers sort first
    else if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** -1 when a < b, 0 when equal in precedence (build metadata ignored), 1 when a > b; null if either is not semver. */
export function compareSemver(a: string, b: string): -1 | 0 | 1 | null {
  const x = parseSemver(a);
  const y = parseSemver(b);
  if (!x || !y) return null;
  return sign(x.major - y.major) || sign(x.minor - y.minor) || sign(x.patch - y.patch) || comparePre(x.pre, y.pre);
}
