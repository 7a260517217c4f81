/**
 * One WebAssembly memory for a chunk's cast and its statistics. castInto streams a
 * chunk through the cast kernels' memory (copy in, convert, copy out), and the SIMD tally then
 * copied the old values and the new codes into a memory of its own: four copies of every block,
 * a fifth of the main thread's time in a checkpoint conversion. Here the tally's module imports
 * the memory of a kernel instance of its own (kernelInstance), so that a block of float32 values
 * is copied in once, cast in place, tallied where it is, and its codes copied out once; and when
 * the chunk was read into that memory and its output is written from it (ResidentChunks, the
 * converter's chunk buffers without worker threads), nothing is copied at all.
 * measureConversion's SIMD pass for every other pair (simdTally) uses this thread's same instance,
 * through its scratch blocks: one tally module and one memory per thread.
 *
 * The kernels are the ones castInto runs for these pairs (wasmCast, residentCast), so the bytes
 * are castInto's; the tally is the one measureConversion runs, on the same values, so the
 * statistics are its own (test/node/cast-tally.test.ts compares both, bit for bit).
 *
 * Memory layout: the tally's page (its parameters), the scratch blocks (float32 values, codes,
 * widened values), the chunk slots of a ResidentChunks, and the kernels' constants in the last
 * page. The memory never grows, so no view of it is ever detached.
 *
 * Browser-safe: no Node built-ins (it lives beside the converter, its only user).
 */
import type { DType } from "../../dtype/table.js";
import { kernelInstance, type Kernel } from "../../kernels/wasm/index.js";
import { tallyOn, TALLY_RESERVED, type Settled } from "./tally-simd.js";

/**
 * Elements per block: a multiple of SUB_BLOCK and of the kernels' group of 8. 64 Ki keeps the
 * block's float32 values, codes and widened values (640 KiB) in L2.
 * @example castTally()!.x.length === CAST_TALLY_BLOCK // true
 */
export const CAST_TALLY_BLOCK = 1 << 16;
const X_AT = TALLY_RESERVED;
const CODES_AT = X_AT + 4 * CAST_TALLY_BLOCK;
const Y_AT = CODES_AT + 2 * CAST_TALLY_BLOCK;
/** Where a ResidentChunks' slots start: after the scratch blocks. */
const SLOTS_AT = Y_AT + 4 * CAST_TALLY_BLOCK;
const PAGE = 65536;
/**
 * Bytes after each slot's largest view that nobody else owns: a kernel reading a last partial
 * group of 8 codes (16 bytes) past a view's end reads its own slot's bytes, never another
 * chunk's (which a file read may be filling meanwhile).
 */
const SLACK = 64;

/** The targets cast here: float32 to each has a kernel, and each decodes exactly to float32. @example const to: CastTallyTarget = "bfloat16"; */
export type CastTallyTarget = "bfloat16" | "float16";

/**
 * The target when `from` -> `to` is cast and measured here (float32 to bfloat16 or float16: the
 * checkpoint conversion's pairs), else undefined. The one test of which pairs take this path.
 * @example castTallyTarget(dtype("float32"), dtype("float16")) // "float16"
 */
export function castTallyTarget(from: DType, to: DType): CastTallyTarget | undefined {
  return from.name === "float32" && (to.name === "bfloat16" || to.name === "float16") ? to.name : undefined;
}

/**
 * The kernels and the tally on one memory, with its scratch blocks: `x` (float32 values), `codes`
 * (float16 / bfloat16 codes) and `y` (codes widened to float32) at byte addresses X_AT, CODES_AT
 * and Y_AT. One conversion at a time (begin ... end), which the synchronous convertChunk keeps.
 * @example
 * const f = castTally()!;
 * f.begin(3.3961e38); // bfloat16's overflow threshold
 * f.x.set(block); f.kernels.f32_bf16(SCRATCH.X_AT, SCRATCH.CODES_AT, 8192);
 * f.settle(SCRATCH.X_AT, SCRATCH.CODES_AT, true, 65536, () => maxRel, scalar);
 * f.end() // { changed, maxAbs } of the sub-blocks settled
 */
export interface CastTally {
  readonly buffer: ArrayBufferLike;
  readonly x: Float32Array;
  readonly codes: Uint16Array;
  readonly y: Float32Array;
  /** float32 -> bfloat16 / float16 kernels and float16 -> float32: (src, dst, groups of 8). */
  readonly kernels: Readonly<Record<"f32_bf16" | "f32_f16" | "f16_f32", Kernel>>;
  begin(inner: number): void;
  /** tally-simd.ts settler's: `n` float32 values at byte address xAt against new values (codes with `bf16`) at yAt. */
  settle(xAt: number, yAt: number, bf16: boolean, n: number, maxRel: () => number, scalar: (from: number, to: number) => void): void;
  end(): Settled;
}

/**
 * Byte addresses of the scratch blocks in every CastTally's memory: CAST_TALLY_BLOCK float32
 * values at X_AT, as many codes at CODES_AT, and the codes widened to float32 at Y_AT.
 * @example const f = castTally()!; f.x.byteOffset === SCRATCH.X_AT // true
 */
export const SCRATCH = { X_AT, CODES_AT, Y_AT } as const;

/** Memories with both modules on them, by buffer: ResidentChunks' (whose chunks are cast where they are). */
const byBuffer = new WeakMap<ArrayBufferLike, CastTally>();
let ownInstance: CastTally | null | undefined;

/** Both modules on a fresh memory of `pages` pages, or null without WebAssembly SIMD. */
function make(pages: number): CastTally | null {
  const k = kernelInstance(pages);
  const tally = k ? tallyOn(k.memory, pages) : undefined;
  if (!k || !tally) return null;
  const buffer = k.memory.buffer;
  return {
    buffer,
    x: new Float32Array(buffer, X_AT, CAST_TALLY_BLOCK),
    codes: new Uint16Array(buffer, CODES_AT, CAST_TALLY_BLOCK),
    y: new Float32Array(buffer, Y_AT, CAST_TALLY_BLOCK),
    kernels: { f32_bf16: k.kernels.f32_bf16, f32_f16: k.kernels.f32_f16, f16_f32: k.kernels.f16_f32 },
    begin: tally.begin,
    settle: tally.settle,
    end: tally.end,
  };
}

/**
 * The cast and tally for chunks in `buffer` when it is a ResidentChunks' memory (then they run
 * where the chunk is), else this thread's own instance (chunks copied through its scratch
 * blocks); undefined without WebAssembly SIMD.
 * @example
 * const f = castTally()!;
 * f.x.set([1, 1.00390625, NaN]); f.kernels.f32_bf16(SCRATCH.X_AT, SCRATCH.CODES_AT, 1);
 * f.codes.subarray(0, 3) // Uint16Array [0x3f80, 0x3f80, 0x7fc0]
 */
export function castTally(buffer?: ArrayBufferLike): CastTally | undefined {
  const resident = buffer && byBuffer.get(buffer);
  if (resident) return resident;
  if (ownInstance === undefined) ownInstance = make(SLOTS_AT / PAGE + 1);
  return ownInstance ?? undefined;
}

/** Whether `a` is the view `block` itself (a decoder wrote there): then nothing is copied. */
function sameView(a: Float32Array, block: Float32Array): boolean {
  return a.buffer === block.buffer && a.byteOffset === block.byteOffset;
}

/**
 * The SIMD tally for one measureConversion, on this thread's CastTally, or undefined without
 * WebAssembly SIMD. `begin(inner)` starts one; `block(x, y, n, maxRel, scalar)` settles what it can
 * of a block of `n` <= CAST_TALLY_BLOCK old values `x` and new values `y`, float32 or bfloat16
 * codes (each copied into the scratch blocks unless a decoder already wrote it into `x()` /
 * `y()`), as the settler does; `end()` gives what it settled.
 * @example
 * const t = simdTally()!;
 * t.begin(3.3895e38);
 * const x = new Float32Array(1024).fill(1.4), y = new Float32Array(1024).fill(1.5);
 * let rel = 0.08; // as if the scalar loop had already seen this
 * t.block(x, y, 1024, () => rel, (from, to) => { rel = 1; }); // not called: 0.1 < 0.08 * 1.4
 * t.end() // { changed: 1024, maxAbs: 0.10000002384185791 }
 */
export function simdTally(): {
  begin(inner: number): void;
  x(): Float32Array;
  y(): Float32Array;
  block(x: Float32Array, y: Float32Array | Uint16Array, n: number, maxRel: () => number, scalar: (from: number, to: number) => void): void;
  end(): Settled;
} | undefined {
  const f = castTally();
  if (!f) return undefined;
  return {
    begin: f.begin,
    x: () => f.x,
    y: () => f.y,
    block(x, y, n, maxRel, scalar) {
      if (!sameView(x, f.x)) f.x.set(x.subarray(0, n));
      const bf16 = y instanceof Uint16Array;
      if (bf16) f.codes.set(y.subarray(0, n));
      else if (!sameView(y, f.y)) f.y.set(y.subarray(0, n));
      f.settle(X_AT, bf16 ? CODES_AT : Y_AT, bf16, n, maxRel, scalar);
    },
    end: f.end,
  };
}

/**
 * Chunk buffers in a memory of their own that the cast kernels and the tally work in: `slots`
 * slots of up to `slotBytes` bytes each. A chunk read into one and converted into another (both
 * taken here) is cast and measured where it is, without a copy (kernel.ts castAndMeasure).
 * `take(length)` hands out a free slot's first `length` bytes (undefined when none is free, the
 * length is larger than a slot, or WebAssembly SIMD is unavailable: then use an ordinary buffer);
 * `give(bytes)` frees the slot `bytes` was taken from and returns true, or returns false for a
 * buffer not taken here. A slot given back is the giver's no more: as ChunkBuffers, the caller
 * gives back only what no one else holds (no read or write in flight on it).
 * @example
 * const chunks = new ResidentChunks(4 << 20, 4);
 * const raw = chunks.take(4 << 20) ?? new Uint8Array(4 << 20); // read into it, convert it ...
 * chunks.give(raw); // after its output is written
 */
export class ResidentChunks {
  /** Bytes from one slot's start to the next's: the largest view, the slack, rounded to 64. */
  private readonly stride: number;
  private readonly free: number[] = [];
  private readonly taken = new Set<number>();
  private readonly memory: ArrayBufferLike | undefined;

  constructor(readonly slotBytes: number, slots: number) {
    this.stride = Math.ceil((slotBytes + SLACK) / 64) * 64;
    let f: CastTally | null = null;
    try {
      f = make(Math.ceil((SLOTS_AT + slots * this.stride) / PAGE) + 1);
    } catch {
      f = null; // a platform that cannot reserve the memory: ordinary buffers then
    }
    if (!f) return;
    this.memory = f.buffer;
    byBuffer.set(f.buffer, f);
    for (let i = slots - 1; i >= 0; i--) this.free.push(SLOTS_AT + i * this.stride);
  }

  take(length: number): Uint8Array | undefined {
    if (!this.memory || length > this.slotBytes || length === 0) return undefined;
    const at = this.free.pop();
    if (at === undefined) return undefined;
    this.taken.add(at);
    return new Uint8Array(this.memory, at, length);
  }

  give(bytes: Uint8Array): boolean {
    if (bytes.buffer !== this.memory || !this.taken.has(bytes.byteOffset)) return false;
    this.taken.delete(bytes.byteOffset);
    this.free.push(bytes.byteOffset);
    return true;
  }
}
