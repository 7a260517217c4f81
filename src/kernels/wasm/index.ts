/**
 * WebAssembly SIMD kernels for float32 -> float16, float16 -> float32, float32 -> bfloat16,
 * bfloat16 -> float32, float32 -> int8 / uint8, float64 -> float32 and int64 -> int32, and a scalar
 * table kernel for every 8-bit source (float8, e8m0, int8, uint8, bool) -> float32 / int32 / uint32,
 * with the contract of fastCast: the bytes of castReference, or false (nothing written) when there is no kernel for the pair or
 * WebAssembly SIMD is unavailable (no WebAssembly, no SIMD, or a
 * Content-Security-Policy without 'wasm-unsafe-eval'); then use the TypeScript path.
 *
 * The module (about 2.5 KiB) is built from source at run time (kernels.ts, encoder.ts) and
 * instantiated synchronously on first use (`new WebAssembly.Module` + `new WebAssembly.Instance`,
 * allowed for small modules on browsers' main threads and in Node): no top-level await, no fetch,
 * no generated file. The caller's arrays are not in the module's memory, so each call streams the
 * input through it in chunks: copy in (TypedArray set on bytes: a memcpy), convert, copy out. The
 * chunk (16384 elements, 128 KiB in + 64 KiB out at most) stays in L2. Tensors in an arena live in
 * a memory of their own instance, where the kernels run in place instead (resident.ts).
 *
 * Browser-safe: declares the slice of the WebAssembly API it uses instead of relying on DOM or Node
 * typings.
 */
import type { DType, Storage } from "../../dtype/table.js";
import type { ResolvedCastOptions } from "../reference.js";
import { byteLut } from "../fast/tables.js";
import { u8View } from "../fast/views.js";
import { kernelModule, lutAddress, type KernelName } from "./kernels.js";
import { STAGGER_SLACK, staggered } from "./stagger.js";

/** The slice of the WebAssembly API the kernel modules use (no DOM or Node typings needed). */
export interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports?: object) => { readonly exports: Record<string, unknown> };
}

type Kernel = (src: number, dst: number, groups: number) => void;

interface Loaded {
  /** The instance's own memory (fixed size: its minimum and maximum are equal). */
  readonly memory: { readonly buffer: ArrayBufferLike; grow(pages: number): number };
  readonly bytes: Uint8Array;
  /** Whether f32_i8 is the relaxed-SIMD build. */
  readonly relaxed: boolean;
  readonly kernels: Record<KernelName, Kernel>;
  /** The 256-entry table now in the module's memory for byte_lut32. */
  lut?: Int32Array;
}

/**
 * Elements per chunk: a multiple of 16. The in region holds 8 bytes per element, the out region 4,
 * each with STAGGER_SLACK to spare: a chunk sits where `staggered` puts it.
 */
const CHUNK = 16384;
const IN = 0;
const OUT = 8 * CHUNK + STAGGER_SLACK;
/** The in and out regions, then a page for byte_lut32's table and the kernels' constants. */
const PAGES = Math.ceil((OUT + 4 * CHUNK + STAGGER_SLACK) / 65536) + 1;

let loaded: Loaded | null | undefined;
let allowRelaxed = true;
/** Each build once loaded, so that switching builds (tests, benchmarks) keeps compiled code. */
const builds = new Map<boolean, Loaded | null>();

/**
 * The relaxed-SIMD build where the engine validates it (Node 22+, V8 11.4+; not Node 20), else the
 * plain one. Relaxed only changes f32_i8's truncation, whose undefined lanes the kernel masks, so
 * both give the same bytes (test/kernels/wasm.test.ts runs both). f32_i8 over 16 Mi float32, M
 * elements/s, relaxed against plain: in cache (one chunk converted 1024 times, fastest of 9) Node
 * 24.21 8282 / 4864 (1.7x), Node 26.10 8116 / 4763, Deno 2.9.6 7943 / 4747, Bun 1.4.5 (JSC) 3662
 * / 3611 (the same); end to end through wasmCast (`npm run bench:wasm`, median, the builds taking
 * turns, on a machine at load 18-23) Node 24 1.17-1.63x, Node 26 1.10x, Node 22 1.45x, Bun
 * 0.74-1.13x (noise around 1: its in-cache rates are equal). Faster on V8, no slower on JSC.
 */
function load(pages: number, shared?: Loaded["memory"]): Loaded | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (!api) return null;
    let relaxed = allowRelaxed;
    let code = kernelModule(pages, { relaxed, shared: shared !== undefined });
    if (relaxed && !api.validate(code)) {
      relaxed = false;
      code = kernelModule(pages, { shared: shared !== undefined });
    }
    if (!api.validate(code)) return null; // no SIMD (or a malformed module: the tests catch that)
    // A shared memory is imported; instantiating rewrites the constant pool at its end with the
    // bytes every instance writes there, so kernels running on other threads read the same values.
    const instance = new api.Instance(new api.Module(code), shared ? { env: { memory: shared } } : {});
    const memory = instance.exports.memory as Loaded["memory"];
    const e = instance.exports as Record<KernelName, Kernel>;
    return {
      memory,
      bytes: new Uint8Array(memory.buffer),
      relaxed,
      kernels: {
        f32_f16: e.f32_f16, f16_f32: e.f16_f32, f32_bf16: e.f32_bf16,
        f32_i8: e.f32_i8, f64_f32: e.f64_f32, i64_i32: e.i64_i32, bf16_f32: e.bf16_f32, byte_lut32: e.byte_lut32,
      },
    };
  } catch {
    return null; // e.g. CompileError under a Content-Security-Policy
  }
}

function instance(): Loaded | null {
  if (loaded === undefined) {
    if (!builds.has(allowRelaxed)) builds.set(allowRelaxed, load(PAGES));
    loaded = builds.get(allowRelaxed)!;
  }
  return loaded;
}

/** Whether the kernels in use are the relaxed-SIMD build (false also without WebAssembly SIMD). */
export function wasmRelaxed(): boolean {
  return instance()?.relaxed === true;
}

/**
 * For tests and benchmarks: "plain" switches to the kernels without relaxed SIMD, "auto" to those
 * with it where the engine has it (the default). Each build is instantiated once.
 * @example useWasmBuild("plain"); wasmCast(...); useWasmBuild("auto");
 */
export function useWasmBuild(build: "auto" | "plain"): void {
  allowRelaxed = build === "auto";
  loaded = undefined;
}

/** Whether WebAssembly SIMD kernels are available here (instantiates the module on first call). */
export function wasmAvailable(): boolean {
  return instance() !== null;
}

/**
 * A fresh instance of the kernel module, in the build useWasmBuild selects, or null where
 * WebAssembly SIMD is unavailable. Its memory has `pages` pages (the last one holds the table and
 * constants; the pages before it are the caller's); with `shared`, a shared WebAssembly memory of
 * fixed size, it works in that one instead (each thread of a shared arena instantiates it there).
 * For resident.ts: each arena runs its own instance.
 * @example const w = kernelInstance(17); w?.kernels.f32_f16(0, 4096, 1) // 8 floats at 0 -> float16 at 4096
 */
export function kernelInstance(pages: number, shared?: Loaded["memory"]): Loaded | null {
  return load(pages, shared);
}

export type { Loaded as KernelInstance, Kernel };

/**
 * The kernel for a pair: name, bytes per input and per output element, elements per group.
 * @example kernelFor(dtype("float32"), dtype("int8")) // ["f32_i8", 4, 1, 16]
 */
export function kernelFor(from: DType, to: DType): [KernelName, number, number, number] | undefined {
  if (from.name === "float32") {
    if (to.name === "float16") return ["f32_f16", 4, 2, 8];
    if (to.name === "bfloat16") return ["f32_bf16", 4, 2, 8];
    if (to.name === "int8" || to.name === "uint8") return ["f32_i8", 4, 1, 16];
  } else if (from.name === "float16") {
    if (to.name === "float32") return ["f16_f32", 2, 4, 8];
  } else if (from.name === "bfloat16") {
    if (to.name === "float32") return ["bf16_f32", 2, 4, 8];
  } else if (from.bits === 8 && !from.packed && to.bits === 32 && !to.packed) {
    return ["byte_lut32", 1, 4, 8];
  } else if (from.name === "float64") {
    if (to.name === "float32") return ["f64_f32", 8, 4, 8];
  } else if (from.name === "int64") {
    if (to.name === "int32") return ["i64_i32", 8, 4, 8];
  }
  return undefined;
}

/**
 * Casts `count` elements of `src` (type `from`) into `dst` (type `to`) as castReference would and
 * returns true; or returns false, having written nothing, when there is no WebAssembly kernel for
 * the pair here (float32 -> float16 / bfloat16 / int8 / uint8, float16 / bfloat16 -> float32,
 * float64 -> float32, int64 -> int32 and 8-bit sources -> 32-bit targets have one where WebAssembly
 * SIMD is available; `opts` matters only to the 8-bit sources' tables). Same conventions as fastCast.
 *
 * @example if (!wasmCast(x.data, x.dtype, out, to, x.size, opts) && !fastCast(...)) castReference(...);
 */
export function wasmCast(
  src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions,
): boolean {
  const k = kernelFor(from, to);
  if (!k) return false;
  const w = instance();
  if (!w) return false;
  const [name, inSize, outSize, group] = k;
  const kernel = w.kernels[name];
  const mem = w.bytes;
  if (name === "byte_lut32") loadLut(w, from, to, opts);
  const s = u8View(src);
  const d = u8View(dst);
  for (let start = 0; start < count; start += CHUNK) {
    const n = Math.min(CHUNK, count - start);
    const inAt = staggered(IN, s.byteOffset + start * inSize);
    const outAt = staggered(OUT, d.byteOffset + start * outSize);
    mem.set(s.subarray(start * inSize, (start + n) * inSize), inAt);
    kernel(inAt, outAt, Math.ceil(n / group)); // a last partial group converts stale lanes, never copied out
    d.set(mem.subarray(outAt, outAt + n * outSize), start * outSize);
  }
  return true;
}

/**
 * Puts byte_lut32's table for the pair into `w`'s memory (at the start of its last page), unless
 * it is there already.
 * @example loadLut(w, dtype("float8e4m3fn"), dtype("float32"), opts)
 */
export function loadLut(w: Loaded, from: DType, to: DType, opts: ResolvedCastOptions): void {
  const lut = byteLut(from, to, opts) as Int32Array;
  if (w.lut !== lut) {
    new Int32Array(w.memory.buffer, lutAddress(w.memory.buffer.byteLength / 65536), 256).set(lut);
    w.lut = lut;
  }
}
