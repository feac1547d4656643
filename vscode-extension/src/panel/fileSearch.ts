/** @-mention completion's ranking (pure, for the unit tests). */

/**
 * The files best matching what was typed after `@`: the name containing the query first (at its start
 * best), then the path containing it, then the letters in order; shorter paths first among equals.
 */
export function rankFiles(paths: string[], query: string, limit: number): string[] {
  const q = query.toLowerCase();
  const scored: [number, string][] = [];
  for (const p of paths) {
    const lower = p.toLowerCase();
    const name = lower.slice(lower.lastIndexOf("/") + 1);
    let score: number;
    if (!q) score = 0;
    else if (name.startsWith(q)) score = 0;
    else if (name.includes(q)) score = 1;
    else if (lower.includes(q)) score = 2;
    else if (isSubsequence(q, lower)) score = 3;
    else continue;
    scored.push([score * 10_000 + p.length, p]);
  }
  return scored.sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1])).slice(0, limit).map(([, p]) => p);
}

function isSubsequence(q: string, s: string): boolean {
  let i = 0;
  for (const ch of s) if (ch === q[i] && ++i === q.length) return true;
  return q.length === 0;
}
