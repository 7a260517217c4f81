/**
 * The converter's statistics as measureConversion computed them before issue 16's changes (commit
 * 235e0eb), one element at a time on float64 values: the oracle of convert-stats.test.ts and
 * convert-stats-simd.test.ts.
 */
import { cast, type Tensor } from "../../src/index.js";
import { overflowThreshold } from "../../src/dtype/minifloat.js";
import type { ConvertStats } from "../../src/node/convert/kernel.js";

/** The statistics of converting `source` into `result`. @example referenceStats(x, cast(x, "float16")).changed */
export function referenceStats(source: Tensor, result: Tensor): ConvertStats {
  const to = result.dtype;
  const x = cast(source, "float64").data as Float64Array;
  const y = cast(result, "float64").data as Float64Array;
  const hi = to.max === undefined ? Infinity : Number(to.max);
  const lo = to.min === undefined ? -Infinity : Number(to.min);
  const signedFloat = to.kind === "float" && to.name !== "float8e8m0" && to.format !== undefined;
  const past = signedFloat ? overflowThreshold(to.format!) : undefined;
  const upper = past ? past.at : hi;
  const lower = past ? -past.at : lo;
  const tieIsPast = past ? past.tieOverflows : false;
  const MAX = Number.MAX_VALUE;
  const s: ConvertStats = { count: source.size, maxAbsError: 0, maxRelError: 0, changed: 0, outOfRange: 0, saturated: 0, nonFinite: 0, becameNonFinite: 0 };
  for (let j = 0; j < x.length; j++) {
    const a = x[j];
    const b = y[j];
    const beyond = a > upper || a < lower || (tieIsPast && (a === upper || a === lower));
    if (Math.abs(a) <= MAX && Math.abs(b) <= MAX) {
      if (a !== b) {
        s.changed++;
        const err = Math.abs(b - a);
        if (err > s.maxAbsError) s.maxAbsError = err;
        const m = Math.abs(a);
        if (m !== 0 && err > s.maxRelError * m) s.maxRelError = err / m;
      }
      if (beyond) {
        s.outOfRange++;
        if (b === hi || b === lo) s.saturated++;
      }
      continue;
    }
    if (a !== b && (a === a || b === b)) s.changed++;
    if (!(Math.abs(b) <= MAX)) {
      s.nonFinite++;
      if (Math.abs(a) <= MAX) {
        s.becameNonFinite++;
        if (beyond) s.outOfRange++;
      }
    } else if (a === a) {
      s.outOfRange++;
      if (b === hi || b === lo) s.saturated++;
    }
  }
  return s;
}
