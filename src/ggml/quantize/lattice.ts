/**
 * The search structures ggml_quantize_init builds for the IQ2 and IQ1 codebooks (iq2xs_init_impl):
 * each grid point as eight odd levels 2l + 1, a map from a point's packed 2-bit indices to its grid
 * index (-1 off the grid), and for every packed index off the grid its neighbours: the grid points
 * at the `nwant` smallest distinct squared distances from it, by distance and then by index (the
 * order ggml's qsort of (distance, index) pairs leaves). ggml builds every list up front; here each
 * is built the first time a search asks for it, which gives the same lists.
 *
 * Browser-safe: no Node built-ins.
 */
import { TensorcastError } from "../../errors.js";

const fr = Math.fround;
const FLT_MAX = 3.4028234663852886e38;

/** Packed indices of 8 two-bit levels: 4^8, of which ggml's map keeps the first 43692. */
const MAP_SIZE = 43692;

export class Lattice {
  /** 8 levels per point: 2l + 1 for l in 0..3. */
  readonly grid: Int8Array;
  /** Grid index of each packed index, or -1. */
  readonly map: Int32Array;
  private readonly near = new Map<number, Uint16Array>();

  constructor(kgrid: readonly number[], private readonly nwant: number) {
    this.grid = new Int8Array(kgrid.length * 8);
    this.map = new Int32Array(MAP_SIZE).fill(-1);
    for (let k = 0; k < kgrid.length; k++) {
      for (let i = 0; i < 8; i++) this.grid[8 * k + i] = 2 * ((kgrid[k] >> (2 * i)) & 3) + 1;
      this.map[kgrid[k]] = k;
    }
  }

  /** The neighbour list of packed index `u` (off the grid). */
  neighbours(u: number): Uint16Array {
    let list = this.near.get(u);
    if (list !== undefined) return list;
    const size = this.grid.length / 8;
    const d2 = new Int32Array(size);
    for (let j = 0; j < size; j++) {
      let s = 0;
      for (let k = 0; k < 8; k++) {
        const diff = this.grid[8 * j + k] - (2 * ((u >> (2 * k)) & 3) + 1);
        s += diff * diff;
      }
      d2[j] = s;
    }
    const distinct = Array.from(new Set(d2)).sort((a, b) => a - b).slice(0, this.nwant);
    const out: number[] = [];
    for (const dist of distinct) for (let j = 0; j < size; j++) if (d2[j] === dist) out.push(j);
    list = Uint16Array.from(out);
    this.near.set(u, list);
    return list;
  }

  /**
   * iq2_find_best_neighbour: the neighbour of `u` with the least weighted squared error
   * sum w * (scale * level - x)^2 (the first on a tie); its indices (level - 1) / 2 into L[lo..].
   */
  bestNeighbour(u: number, xval: Float32Array, xo: number, w: Float32Array, scale: number, L: Int8Array, lo: number): number {
    const list = this.neighbours(u);
    let best = FLT_MAX;
    let index = -1;
    for (let n = 0; n < list.length; n++) {
      const g = 8 * list[n];
      let d2 = 0;
      for (let i = 0; i < 8; i++) {
        const diff = fr(fr(scale * this.grid[g + i]) - xval[xo + i]);
        d2 = fr(d2 + fr(fr(w[xo + i] * diff) * diff));
      }
      if (d2 < best) { best = d2; index = list[n]; }
    }
    if (index < 0) throw aborts("no neighbour has a finite error (ggml asserts)");
    for (let i = 0; i < 8; i++) L[lo + i] = (this.grid[8 * index + i] - 1) >> 1;
    return index;
  }
}

/** Where ggml's own code stops the process (GGML_ASSERT / GGML_ABORT), tensorcast refuses the row. */
export function aborts(why: string): TensorcastError {
  return new TensorcastError("INVALID_DATA", `ggml aborts on this row: ${why}; rows with NaN, Inf or values near FLT_MAX cannot be quantized to this type`);
}
