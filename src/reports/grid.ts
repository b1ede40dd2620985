// Percentiles from counts (DESIGN 18: reports read per-day rollups). A duration is counted on a fixed
// grid, the same in SQL (report_grid(), migration 2026-11-30T10-00-00) and here: whole seconds rounded
// up below 1,000 s, above it rounded up to three significant digits (under 1% high). Rounding up keeps
// "at most N seconds" exact for the first-response buckets (60, 300, 900, 3600, 86400 all lie on it).
// Medians and p90s are those of the durations on the grid, whichever path (rollups or facts) counted them.

/** The grid value of a duration in seconds (>= 0). */
export function gridOf(seconds: number): number {
  const c = Math.ceil(seconds);
  if (c < 1000) return c;
  const d = 10 ** (String(c).length - 3);
  return Math.floor((c + d - 1) / d) * d;
}

/**
 * percentile_cont over a multiset given as (value, count) pairs: the value at position p·(n−1) of the
 * sorted values, interpolated linearly between its neighbours, as PostgreSQL computes it.
 */
export function percentileOf(counts: { grid: number; n: number }[], p: number): number | null {
  const sorted = counts.filter((c) => c.n > 0).sort((a, b) => a.grid - b.grid);
  const total = sorted.reduce((s, c) => s + c.n, 0);
  if (total === 0) return null;
  const pos = p * (total - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const at = (rank: number) => {
    let seen = 0;
    for (const c of sorted) {
      seen += c.n;
      if (rank < seen) return c.grid;
    }
    return sorted.at(-1)!.grid;
  };
  return interpolated(at(lo), at(hi), total, p);
}

/** percentileOf's last step, given the values at the two ranks it interpolates between (a SQL ranking's). */
export function interpolated(a: number, b: number, total: number, p: number): number {
  const pos = p * (total - 1);
  const lo = Math.floor(pos);
  return lo === Math.ceil(pos) ? a : a + (b - a) * (pos - lo);
}
