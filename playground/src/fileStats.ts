/**
 * A tensor's statistics and histogram, and its error against a reference tensor, computed a run of
 * elements at a time (two passes: the range first, then the bins), so memory is one run whatever
 * the tensor's size.
 */
import type { ModelFile } from "./modelFile.js";

/** Bars of a histogram. */
export const BINS = 64;
/** Elements read per run (a multiple of every GGML block size and of 8). */
export const RUN = 1 << 18;

export interface Histogram {
  /** The finite values' range; the bins split it evenly. */
  readonly lo: number;
  readonly hi: number;
  readonly counts: number[];
}

export interface TensorStats {
  readonly elements: number;
  /** Of the finite values; NaN when there is none. */
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly nan: number;
  readonly posInf: number;
  readonly negInf: number;
  readonly histogram: Histogram;
}

export interface ErrorStats {
  /** The reference file's name. */
  readonly reference: string;
  /** max |value - reference| over the elements where both are finite. */
  readonly maxAbs: number;
  /** max |value - reference| / |reference| over those with a reference other than 0. */
  readonly maxRel: number;
  /** Elements where one of the two is NaN or infinite and they differ. */
  readonly mismatched: number;
  /** Of value - reference. */
  readonly histogram: Histogram;
}

/**
 * The bin of `v` in [lo, hi] (the halves keep hi - lo finite for any two float64 values).
 * The browser tests bin Node's values with the same rule.
 */
export function binOf(v: number, lo: number, hi: number): number {
  if (hi === lo) return 0;
  return Math.min(BINS - 1, Math.floor(((v / 2 - lo / 2) / (hi / 2 - lo / 2)) * BINS));
}

/** Yields between runs: the page's slicer (a cancelled redraw stops there). */
type Yield = () => Promise<void>;

/** Runs of tensor `i` of `f` (and of its reference, read alongside). */
async function eachRun(f: ModelFile, i: number, ref: { file: ModelFile; index: number } | undefined, pause: Yield,
  body: (v: Float64Array | Float32Array, r: Float64Array | Float32Array | undefined) => void): Promise<void> {
  const n = f.tensors[i].elements;
  const align = Math.max(f.runAlign(i), ref ? ref.file.runAlign(ref.index) : 1);
  const run = Math.max(align, RUN - (RUN % align));
  for (let start = 0; start < n; start += run) {
    const count = Math.min(run, n - start);
    const v = await f.read(i, start, count);
    const r = ref ? await ref.file.read(ref.index, start, count) : undefined;
    body(v, r);
    await pause();
  }
}

/** The statistics of tensor `i` of `f`, and its error against `ref`'s tensor of the same name when given. */
export async function tensorStats(f: ModelFile, i: number, refFile: ModelFile | undefined, pause: Yield): Promise<{ stats: TensorStats; error?: ErrorStats; refNote?: string }> {
  const t = f.tensors[i];
  let ref: { file: ModelFile; index: number } | undefined;
  let refNote: string | undefined;
  if (refFile) {
    const index = refFile.tensors.findIndex((r) => r.name === t.name);
    if (index < 0) refNote = `${refFile.name} has no tensor named ${JSON.stringify(t.name)}.`;
    else if (refFile.tensors[index].elements !== t.elements) {
      refNote = `${refFile.name}'s ${JSON.stringify(t.name)} has ${refFile.tensors[index].elements.toLocaleString("en")} elements, this one ${t.elements.toLocaleString("en")}: no error is measured.`;
    } else ref = { file: refFile, index };
  }
  let min = Infinity, max = -Infinity, sum = 0, finite = 0, nan = 0, posInf = 0, negInf = 0;
  let maxAbs = 0, maxRel = 0, mismatched = 0, eLo = Infinity, eHi = -Infinity;
  await eachRun(f, i, ref, pause, (v, r) => {
    for (let k = 0; k < v.length; k++) {
      const x = v[k];
      if (x !== x) nan++;
      else if (x === Infinity) posInf++;
      else if (x === -Infinity) negInf++;
      else {
        finite++;
        sum += x;
        // As Math.min and Math.max order them: -0 below 0.
        if (x < min || (x === 0 && min === 0 && 1 / x < 0)) min = x;
        if (x > max || (x === 0 && max === 0 && 1 / x > 0)) max = x;
      }
      if (!r) continue;
      const y = r[k];
      if (Number.isFinite(x) && Number.isFinite(y)) {
        const e = x - y;
        const a = Math.abs(e);
        if (a > maxAbs) maxAbs = a;
        if (y !== 0 && a / Math.abs(y) > maxRel) maxRel = a / Math.abs(y);
        if (e < eLo) eLo = e;
        if (e > eHi) eHi = e;
      } else if (!Object.is(x, y) && !(x !== x && y !== y)) mismatched++;
    }
  });
  const counts = new Array<number>(BINS).fill(0);
  const errorCounts = new Array<number>(BINS).fill(0);
  if (finite > 0 || (ref && eLo <= eHi)) {
    await eachRun(f, i, ref, pause, (v, r) => {
      for (let k = 0; k < v.length; k++) {
        const x = v[k];
        if (Number.isFinite(x)) counts[binOf(x, min, max)]++;
        if (r && Number.isFinite(x) && Number.isFinite(r[k])) errorCounts[binOf(x - r[k], eLo, eHi)]++;
      }
    });
  }
  const stats: TensorStats = {
    elements: t.elements, min: finite ? min : NaN, max: finite ? max : NaN, mean: finite ? sum / finite : NaN, nan, posInf, negInf,
    histogram: { lo: finite ? min : NaN, hi: finite ? max : NaN, counts },
  };
  if (!ref) return { stats, refNote };
  const some = eLo <= eHi;
  return {
    stats, refNote,
    error: { reference: ref.file.name, maxAbs, maxRel, mismatched, histogram: { lo: some ? eLo : NaN, hi: some ? eHi : NaN, counts: errorCounts } },
  };
}
