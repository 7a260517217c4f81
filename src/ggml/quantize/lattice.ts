/**
 * The search structures ggml_quantize_init builds for the IQ2 and IQ1 codebooks (iq2xs_init_impl:
 * points of eight 2-bit levels) and the IQ3 ones (iq3xs_init_impl: four 3-bit levels): each grid
 * point as odd levels 2l + 1, a map from a point's packed indices to its grid index (-1 off the
 * grid), and for every packed index off the grid its neighbours: the grid points
 * at the `nwant` smallest distinct squared distances from it, by distance and then by index (the
 * order ggml's qsort of (distance, index) pairs leaves). ggml builds every list up front; here each
 * is built the first time a search asks for it, which gives the same lists.
 *
 * Browser-safe: no Node built-ins.
 */
import { TensorcastError } from "../../errors.js";
import { neighbourKernel, NeighbourKernel } from "./lattice-simd.js";

const fr = Math.fround;
const FLT_MAX = 3.4028234663852886e38;

/** ggml's map sizes: packed 2-bit indices up to 0xAAAA (43692 entries), 3-bit ones 8^4. */
const MAP_SIZE = { 2: 43692, 3: 4096 } as const;

export class Lattice {
  /** `dim` levels per point: 2l + 1. */
  readonly grid: Int8Array;
  /** Grid index of each packed index, or -1. */
  readonly map: Int32Array;
  private readonly near = new Map<number, Uint16Array>();
  private readonly mask: number;
  private readonly kernel: { kernel?: NeighbourKernel | null } = {};

  constructor(kgrid: readonly number[], private readonly nwant: number, readonly dim: 8 | 4 = 8, private readonly bits: 2 | 3 = 2) {
    this.mask = (1 << bits) - 1;
    this.grid = new Int8Array(kgrid.length * dim);
    this.map = new Int32Array(MAP_SIZE[bits]).fill(-1);
    for (let k = 0; k < kgrid.length; k++) {
      for (let i = 0; i < dim; i++) this.grid[dim * k + i] = 2 * ((kgrid[k] >> (bits * i)) & this.mask) + 1;
      this.map[kgrid[k]] = k;
    }
  }

  /** The neighbour list of packed index `u` (off the grid). */
  neighbours(u: number): Uint16Array {
    let list = this.near.get(u);
    if (list !== undefined) return list;
    const dim = this.dim;
    const size = this.grid.length / dim;
    const d2 = new Int32Array(size);
    for (let j = 0; j < size; j++) {
      let s = 0;
      for (let k = 0; k < dim; k++) {
        const diff = this.grid[dim * j + k] - (2 * ((u >> (this.bits * k)) & this.mask) + 1);
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
   * iq2_find_best_neighbour (iq3_find_best_neighbour): the neighbour of `u` with the least weighted squared error
   * sum w * (scale * level - x)^2 (the first on a tie); its indices (level - 1) / 2 into L[lo..].
   */
  bestNeighbour(u: number, xval: Float32Array, xo: number, w: Float32Array, scale: number, L: Int8Array, lo: number): number {
    const dim = this.dim;
    const k = neighbourKernel(() => NeighbourKernel.create(Float32Array.from(this.grid), dim, false, this.map.length, (v) => this.neighbours(v)), this.kernel);
    const index = k !== null ? k.best(u, xval, xo, w, xo, scale, 0) : this.scan(u, xval, xo, w, scale);
    if (index < 0) throw aborts("no neighbour has a finite error (ggml asserts)");
    for (let i = 0; i < dim; i++) L[lo + i] = (this.grid[dim * index + i] - 1) >> 1;
    return index;
  }

  /** The reference search of bestNeighbour: the grid index, or -1. */
  private scan(u: number, xval: Float32Array, xo: number, w: Float32Array, scale: number): number {
    const list = this.neighbours(u);
    let best = FLT_MAX;
    let index = -1;
    const dim = this.dim;
    for (let n = 0; n < list.length; n++) {
      const g = dim * list[n];
      let d2 = 0;
      for (let i = 0; i < dim; i++) {
        const diff = fr(fr(scale * this.grid[g + i]) - xval[xo + i]);
        d2 = fr(d2 + fr(fr(w[xo + i] * diff) * diff));
      }
      if (d2 < best) { best = d2; index = list[n]; }
    }
    return index;
  }
}

/** Where ggml's own code stops the process (GGML_ASSERT / GGML_ABORT), tensorcast refuses the row. */
export function aborts(why: string): TensorcastError {
  return new TensorcastError("INVALID_DATA", `ggml aborts on this row: ${why}; rows with NaN, Inf or values near FLT_MAX cannot be quantized to this type`);
}
