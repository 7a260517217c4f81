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
import { NeighbourKernel } from "./lattice-simd.js";
import { ggmlQuantizeSimdOn } from "./search-simd.js";

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
  /** The WebAssembly form of bestNeighbour, made on first use (null where there is none). */
  private kernel: NeighbourKernel | null | undefined;
  /** Whether values() passed the group on to the kernel (cleared where the switch is off). */
  private fast = false;
  private readonly d2: Int32Array;

  constructor(kgrid: readonly number[], private readonly nwant: number, readonly dim: 8 | 4 = 8, private readonly bits: 2 | 3 = 2) {
    this.mask = (1 << bits) - 1;
    this.grid = new Int8Array(kgrid.length * dim);
    this.map = new Int32Array(MAP_SIZE[bits]).fill(-1);
    this.d2 = new Int32Array(kgrid.length);
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
    const d2 = this.d2;
    // The nwant smallest distinct distances, ascending, then the points at each in index order.
    const kept: number[] = [];
    for (let j = 0; j < size; j++) {
      let s = 0;
      for (let k = 0; k < dim; k++) {
        const diff = this.grid[dim * j + k] - (2 * ((u >> (this.bits * k)) & this.mask) + 1);
        s += diff * diff;
      }
      d2[j] = s;
      if (kept.length === this.nwant && s >= kept[kept.length - 1]) continue;
      let at = kept.length;
      while (at > 0 && kept[at - 1] > s) at--;
      if (at > 0 && kept[at - 1] === s) continue;
      kept.splice(at, 0, s);
      if (kept.length > this.nwant) kept.pop();
    }
    let count = 0;
    for (let j = 0; j < size; j++) if (d2[j] <= kept[kept.length - 1]) count++;
    list = new Uint16Array(count);
    let n = 0;
    for (const dist of kept) for (let j = 0; j < size; j++) if (d2[j] === dist) list[n++] = j;
    this.near.set(u, list);
    return list;
  }

  /** The kernel, where it is there and switched on. */
  private simd(): NeighbourKernel | null {
    if (!ggmlQuantizeSimdOn()) return null;
    if (this.kernel === undefined) this.kernel = NeighbourKernel.create(Float32Array.from(this.grid), this.dim, false, this.map.length, (v) => this.neighbours(v));
    return this.kernel;
  }

  /**
   * The `n` values and weights (n at most 32) of the group whose points the following
   * bestNeighbour calls search, from offset 0 of the arrays they pass (the kernel keeps a copy).
   */
  values(xval: Float32Array, w: Float32Array, n: number): void {
    const k = this.simd();
    this.fast = k !== null;
    if (k !== null) k.values(xval, 0, w, 0, n);
  }

  /**
   * iq2_find_best_neighbour (iq3_find_best_neighbour): the neighbour of `u` with the least weighted squared error
   * sum w * (scale * level - x)^2 (the first on a tie); its indices (level - 1) / 2 into L[lo..].
   * xval and w must be the arrays last given to values(), unchanged since.
   */
  bestNeighbour(u: number, xval: Float32Array, xo: number, w: Float32Array, scale: number, L: Int8Array, lo: number): number {
    const dim = this.dim;
    const index = this.fast && this.kernel ? this.kernel.best(u, xo, scale, 0) : this.scan(u, xval, xo, w, scale);
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
