/**
 * One WebAssembly memory for a chunk's cast and its statistics (issue 16). castInto streams a
 * chunk through the cast kernels' memory (copy in, convert, copy out), and the SIMD tally then
 * copied the old values and the new codes into a memory of its own: four copies of every block,
 * a fifth of the main thread's time in a checkpoint conversion. Here the tally's module imports
 * the memory of a kernel instance of its own (kernelInstance), so that a block of float32 values
 * is copied in once, cast in place, tallied where it is, and its codes copied out once.
 *
 * The kernels are the ones castInto runs for these pairs (wasmCast, residentCast), so the bytes
 * are castInto's; the tally is the one measureConversion runs, on the same values, so the
 * statistics are its own (test/node/cast-tally.test.ts compares both, bit for bit).
 *
 * Browser-safe: no Node built-ins (it lives beside the converter, its only user).
 */
import { kernelInstance } from "../../kernels/wasm/index.js";
import { tallyOn, TALLY_RESERVED, type Settled } from "./tally-simd.js";

/**
 * Elements per block: a multiple of SUB_BLOCK and of the kernels' group of 8. 64 Ki keeps the
 * block's float32 values, codes and widened values (640 KiB) in L2.
 */
export const CAST_TALLY_BLOCK = 1 << 16;
const X_AT = TALLY_RESERVED;
const CODES_AT = X_AT + 4 * CAST_TALLY_BLOCK;
const Y_AT = CODES_AT + 2 * CAST_TALLY_BLOCK;
/** The blocks, then the page that holds the kernels' constants. */
const PAGES = (Y_AT + 4 * CAST_TALLY_BLOCK) / 65536 + 1;

/** The targets cast here: float32 to each has a kernel, and each decodes exactly to float32. */
export type CastTallyTarget = "bfloat16" | "float16";

/**
 * A block-at-a-time cast from float32 with its statistics, over one memory.
 * `x` is where a block of (at most CAST_TALLY_BLOCK) float32 values goes; `cast(n)` casts the
 * first n in place into `codes` (and, for float16, widens the codes back into `y`, float32, which
 * the tally reads); `settle(n, maxRel, scalar)` tallies them as SimdTally.block does.
 */
export interface CastTally {
  readonly x: Float32Array;
  readonly codes: Uint16Array;
  /** The new values as float32: for float16 (`cast` writes them), undefined for bfloat16 (the tally widens codes itself). */
  readonly y: Float32Array | undefined;
  begin(inner: number): void;
  cast(n: number): void;
  settle(n: number, maxRel: () => number, scalar: (from: number, to: number) => void): void;
  end(): Settled;
}

interface Instance {
  readonly kernels: NonNullable<ReturnType<typeof kernelInstance>>["kernels"];
  readonly buffer: ArrayBufferLike;
  readonly tally: NonNullable<ReturnType<typeof tallyOn>>;
}

let shared: Instance | null | undefined;

/** This thread's memory with both modules on it, or null without WebAssembly SIMD. */
function instance(): Instance | null {
  if (shared !== undefined) return shared;
  shared = null;
  const k = kernelInstance(PAGES);
  const tally = k ? tallyOn(k.memory, PAGES) : undefined;
  if (k && tally) shared = { kernels: k.kernels, buffer: k.memory.buffer, tally };
  return shared;
}

/**
 * The fused cast and tally from float32 to `to`, or undefined without WebAssembly SIMD (then
 * castInto and measureConversion do the work apart). One per thread: a caller must finish one
 * conversion (begin ... end) before it starts the next, which the synchronous convertChunk does.
 * @example
 * const f = castTally("bfloat16")!;
 * f.begin(3.3895e38);
 * f.x.set([1, 1.00390625, NaN]); f.cast(3);
 * f.codes.subarray(0, 3) // Uint16Array [0x3f80, 0x3f80, 0x7fc0]
 */
export function castTally(to: CastTallyTarget): CastTally | undefined {
  const w = instance();
  if (!w) return undefined;
  const { kernels, buffer, tally } = w;
  const bf16 = to === "bfloat16";
  const narrow = bf16 ? kernels.f32_bf16 : kernels.f32_f16;
  const widen = kernels.f16_f32;
  return {
    x: new Float32Array(buffer, X_AT, CAST_TALLY_BLOCK),
    codes: new Uint16Array(buffer, CODES_AT, CAST_TALLY_BLOCK),
    y: bf16 ? undefined : new Float32Array(buffer, Y_AT, CAST_TALLY_BLOCK),
    begin: tally.begin,
    cast(n) {
      // Whole groups of 8: a last partial group converts stale lanes of the memory's own blocks,
      // which nobody reads (codes are copied out and tallied up to n only).
      const groups = Math.ceil(n / 8);
      narrow(X_AT, CODES_AT, groups);
      if (!bf16) widen(CODES_AT, Y_AT, groups);
    },
    settle(n, maxRel, scalar) {
      tally.settle(X_AT, bf16 ? CODES_AT : Y_AT, bf16, n, maxRel, scalar);
    },
    end: tally.end,
  };
}
