/**
 * A WebAssembly SIMD form of the IQ1 / IQ2 / IQ3 neighbour searches (iq2_find_best_neighbour,
 * iq3_find_best_neighbour, iq1_find_best_neighbour2 in lattice.ts and iq1.ts), giving exactly the
 * reference's grid index.
 *
 * Each neighbour list lives in the kernel's memory as float32 levels, four candidates to a block
 * and transposed (value i of the block's candidate j in lane j of vector i), so that the four lanes
 * run four candidates' sums side by side, each in C's order with C's float operations (no fused
 * multiply-add): diff = scale * g - x, d2 = d2 + (w * diff) * diff over the values in turn. Each
 * lane keeps its own first strictly lower error and its position; the caller then takes the least
 * over the lanes and, on a tie, the earlier position, which is the candidate the reference's
 * sequential scan keeps (a NaN error never wins, as in `d2 < best`; a block's unused lanes hold NaN
 * levels). IQ1's levels are -1, 0, 1 plus the group's shift (+-0.125, an exact float addition
 * in the kernel), IQ2's and IQ3's the odd levels 2l + 1.
 *
 * Lists are laid out the first time a search asks for one (as Lattice.neighbours builds them), in a
 * pool of fixed size that starts over when full.
 *
 * Browser-safe; built from source at run time like search-simd.ts (no generated file).
 */
import {
  f32x4Add, f32x4Eq, f32x4Lt, f32x4Mul, f32x4Pmin, f32x4Sub, get, i32, i32Add, i32Eqz, i32Sub, i32x4Add, i32x4ExtractLane, i32x4MinS, load,
  load32Splat, moduleBytes, select, set, shuffle, storeI32, whileNot, type Code,
} from "../../kernels/wasm/encoder.js";
import { ownInstance } from "../../kernels/wasm/own-instance.js";
import { V128Locals } from "../../kernels/wasm/v128-locals.js";

const FLT_MAX = 3.4028234663852886e38;

// Memory: the inputs (a group's values x and weights w, up to 32 each; scale, shift), the four
// lanes' positions 0..3, the answer (a position), then the pool of lists.
const X = 0;
const W = 128;
const SCALE = 256;
const SHIFT = 260;
const IOTA = 272;
const OUT = 288;
const POOL = 320;
/** Values a group may hold (IQ2_XXS's and IQ3's groups of 32). */
export const GROUP_MAX = 32;

// Parameters: the first block's address, the number of blocks, the byte offset of the point's
// values in X (and weights in W), zero.
const AT = 0;
const BLOCKS = 1;
const XO = 2;
const ZERO = 3;

/** The search function of a kernel for `dim` values a point, with IQ1's added shift or without. */
function searchModule(dim: number, shifted: boolean, pages: number): Uint8Array {
  const k = new V128Locals(4, ZERO);
  const scale = k.v();
  const xs = Array.from({ length: dim }, () => k.v());
  const ws = Array.from({ length: dim }, () => k.v());
  const shift = k.v();
  const best = k.v();
  const bestAt = k.v();
  const pos = k.v();
  const acc = k.v();
  const diff = k.v();
  const lower = k.v();
  const body: Code[] = [
    set(scale, load32Splat(i32(0), SCALE)),
    set(shift, load32Splat(i32(0), SHIFT)),
    ...xs.map((v, i) => set(v, load32Splat(get(XO), X + 4 * i))),
    ...ws.map((v, i) => set(v, load32Splat(get(XO), W + 4 * i))),
    set(best, k.f(FLT_MAX)),
    set(bestAt, k.c(-1)),
    set(pos, load(i32(0), IOTA)),
  ];
  const step: Code[] = [set(acc, k.c(0))];
  for (let i = 0; i < dim; i++) {
    const g = shifted ? f32x4Add(load(get(AT), 16 * i), get(shift)) : load(get(AT), 16 * i);
    step.push(
      set(diff, f32x4Sub(f32x4Mul(get(scale), g), get(xs[i]))),
      set(acc, f32x4Add(get(acc), f32x4Mul(f32x4Mul(get(ws[i]), get(diff)), get(diff)))),
    );
  }
  step.push(
    set(lower, f32x4Lt(get(acc), get(best))),
    set(best, select(get(acc), get(best), get(lower))),
    set(bestAt, select(get(pos), get(bestAt), get(lower))),
    set(pos, i32x4Add(get(pos), k.c(4))),
    set(AT, i32Add(get(AT), i32(16 * dim))),
    set(BLOCKS, i32Sub(get(BLOCKS), i32(1))),
  );
  // The least error over the lanes (no lane holds a NaN), then the least position among the lanes
  // holding it: the reference's first strictly lower candidate. Where no candidate's error was
  // below FLT_MAX every lane still holds position -1.
  const lanes = (v: Code, l: readonly number[]): Code => shuffle(v, v, l.flatMap((x) => [4 * x, 4 * x + 1, 4 * x + 2, 4 * x + 3]));
  const least = acc;
  const at = diff;
  body.push(
    whileNot(i32Eqz(get(BLOCKS)), step.flat()),
    set(least, f32x4Pmin(get(best), lanes(get(best), [1, 0, 3, 2]))),
    set(least, f32x4Pmin(get(least), lanes(get(least), [2, 3, 0, 1]))),
    set(at, select(get(bestAt), k.c(0x7fffffff), f32x4Eq(get(best), get(least)))),
    set(at, i32x4MinS(get(at), lanes(get(at), [1, 0, 3, 2]))),
    set(at, i32x4MinS(get(at), lanes(get(at), [2, 3, 0, 1]))),
    storeI32(i32(0), i32x4ExtractLane(get(at), 0), OUT),
  );
  const func = { name: "search", params: 4, i32Locals: 0, v128Locals: k.count, body: [...k.prologue().flat(), ...body.flat()] };
  return moduleBytes([func], pages);
}

interface Instance {
  readonly f32: Float32Array;
  readonly i32: Int32Array;
  readonly search: (at: number, blocks: number, xo: number, zero: number) => void;
}

function instantiate(dim: number, shifted: boolean, pages: number): Instance | null {
  const e = ownInstance(() => searchModule(dim, shifted, pages));
  if (!e) return null;
  const buffer = (e.memory as { buffer: ArrayBuffer }).buffer;
  const i32v = new Int32Array(buffer);
  i32v.set([0, 1, 2, 3], IOTA / 4);
  return { f32: new Float32Array(buffer), i32: i32v, search: e.search as Instance["search"] };
}

/**
 * The neighbour lists of one lattice in a kernel's memory. `levels[dim * k + i]` is value i of
 * grid point k as the kernel multiplies it by the scale (before IQ1's shift).
 */
export class NeighbourKernel {
  /** Per packed index: the list's first block's float offset in the memory (0: not laid out yet). */
  private readonly start: Int32Array;
  private readonly blocks: Int32Array;
  /** Grid index of each candidate position of the pool (from POOL, four a block). */
  private ids: Uint16Array;
  private next = POOL / 4;
  private readonly end: number;

  private constructor(private readonly inst: Instance, private readonly levels: Float32Array, private readonly dim: number, mapSize: number,
    private readonly neighbours: (u: number) => Uint16Array) {
    this.start = new Int32Array(mapSize);
    this.blocks = new Int32Array(mapSize);
    this.end = inst.f32.length;
    this.ids = new Uint16Array(((this.end - POOL / 4) / dim) | 0);
  }

  /**
   * The kernel for a lattice of `dim` values a point (levels as above, `shifted` for IQ1), or null
   * where WebAssembly SIMD is not there. `neighbours(u)` gives the reference's list of u. By default
   * the pool holds every list of the larger codebooks of 8 (IQ1's, 10.7 MB) and of 4 (0.5 MB).
   */
  static create(levels: Float32Array, dim: 8 | 4, shifted: boolean, mapSize: number, neighbours: (u: number) => Uint16Array,
    pages = dim === 8 ? 176 : 10): NeighbourKernel | null {
    const inst = instantiate(dim, shifted, pages);
    return inst ? new NeighbourKernel(inst, levels, dim, mapSize, neighbours) : null;
  }

  /** The float offset of u's list, laying it out first if needed (starting the pool over when full). */
  private listAt(u: number): number {
    let at = this.start[u];
    if (at !== 0) return at;
    const list = this.neighbours(u);
    const nb = (list.length + 3) >> 2;
    const dim = this.dim;
    if (this.next + nb * 4 * dim > this.end) {
      this.start.fill(0);
      this.next = POOL / 4;
    }
    at = this.next;
    const f32 = this.inst.f32;
    const first = (at - POOL / 4) / dim;
    for (let b = 0; b < nb; b++) {
      for (let j = 0; j < 4; j++) {
        const n = 4 * b + j;
        const g = n < list.length ? dim * list[n] : -1;
        for (let i = 0; i < dim; i++) f32[at + 4 * (dim * b + i) + j] = g < 0 ? NaN : this.levels[g + i];
        this.ids[first + n] = n < list.length ? list[n] : 0;
      }
    }
    this.next = at + nb * 4 * dim;
    this.start[u] = at;
    this.blocks[u] = nb;
    return at;
  }

  /** A group's `n` values x[xo..] and weights w[wo..] (n at most GROUP_MAX), for the searches that follow. */
  values(x: Float32Array, xo: number, w: Float32Array, wo: number, n: number): void {
    const f32 = this.inst.f32;
    for (let i = 0; i < n; i++) {
      f32[X / 4 + i] = x[xo + i];
      f32[W / 4 + i] = w[wo + i];
    }
  }

  /**
   * The grid index of u's neighbour of least sum w[at + i] * (scale * (level + shift) - x[at + i])^2
   * over the group's values from `at` (the first on a tie), or -1 where no neighbour's error is
   * below FLT_MAX.
   */
  best(u: number, at: number, scale: number, shift: number): number {
    const list = this.listAt(u);
    const { f32, i32: i32v } = this.inst;
    f32[SCALE / 4] = scale;
    f32[SHIFT / 4] = shift;
    this.inst.search(4 * list, this.blocks[u], 4 * at, 0);
    const p = i32v[OUT / 4];
    return p < 0 ? -1 : this.ids[(list - POOL / 4) / this.dim + p];
  }
}

