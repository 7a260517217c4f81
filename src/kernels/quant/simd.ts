/**
 * WebAssembly SIMD fast paths of the 8-bit hot paths of QuantizeLinear and DequantizeLinear, each
 * giving exactly the bytes of the reference kernels (kernels.ts), or false, having written nothing,
 * where they do not apply (then the caller runs the reference):
 *
 * - quantize float32 -> int8 / uint8 with float32 scales, the division in float32 (the default
 *   precision for a float32 scale): per lane q = nearest(x / s) + zp, truncated with saturation,
 *   NaN lanes set to INT_MIN, then two saturating narrowings (int32 -> int16 -> int8 / uint8).
 *   f32x4.div is IEEE's correctly rounded division (no flush of subnormals), f32x4.nearest rounds
 *   half to even, the add is exact (|nearest| < 2^24; beyond, the lane saturates whatever it
 *   rounds to), and the saturating narrowings are the clamp: +Inf to max, -Inf and NaN to min.
 * - dequantize int8 / uint8 -> float32 with float32 scales: (float32(x) - zp) * s, where the
 *   difference is exact (small integers) and the product is IEEE's, i.e. the exact product rounded
 *   once, as the reference rounds it. Only with finite scales: 0 * Inf (a NaN whose sign the
 *   reference chooses) goes to the reference.
 *
 * Applies to layouts whose elements come in runs sharing one scale: per-tensor (one run),
 * per-axis (runs of the product of the dimensions after the axis) and blocked along the last axis
 * (runs of the block size), when runs average at least 16 elements. Each run is streamed through
 * the module's memory in chunks: copy in, convert, copy out (the caller's arrays are not in it).
 *
 * Browser-safe; built from source at run time like ../wasm (no generated file).
 */
import type { DType, Storage } from "../../dtype/table.js";
import { u8View } from "../fast/views.js";
import {
  extendHighS16, extendHighS8, extendHighU8, extendLowS16, extendLowS8, extendLowU8, f32x4Add, f32x4ConvertS, f32x4Div,
  f32x4Mul, f32x4Ne, f32x4Nearest, f32x4Pmax, f32x4Pmin, f32x4Sub, get, i32, load, moduleBytes, narrowS, narrowS8,
  narrowU8, relaxedTruncS, select, set, store, truncSatS, type Code, type Func,
} from "../wasm/encoder.js";
import type { WasmApi } from "../wasm/index.js";
import { loop } from "../wasm/kernels.js";
import type { DequantizeArgs, QuantizeArgs } from "./kernels.js";
import type { QuantLayout } from "./layout.js";

/** Elements per chunk (a multiple of 16): 64 KiB of float32 in or out. */
const CHUNK = 16384;
const IN = 0;
const OUT = 4 * CHUNK;
/**
 * The scale, the zero point, INT_MIN, 32767 and -32768 (the last two as float32), each in four
 * lanes, after the in and out regions.
 */
const PARAMS = 8 * CHUNK;
const PAGES = ((PARAMS + 80) >>> 16) + 1;

// (src, dst, groups), then v128 locals.
const SRC = 0;
const DST = 1;
const GROUPS = 2;
const S = 3;
const Z = 4;
const M = 5;
const R = 6;
const A = 7;
const B = 8;
const HI = 9;
const LO = 10;

const prologue: Code[] = [
  set(S, load(i32(PARAMS), 0)), set(Z, load(i32(PARAMS), 16)), set(M, load(i32(PARAMS), 32)),
  set(HI, load(i32(PARAMS), 48)), set(LO, load(i32(PARAMS), 64)),
];

/**
 * 16 float32 (64 bytes) -> 16 int8 or uint8 per group. With `relaxed`, the truncation is relaxed
 * SIMD's (one cvttps2dq on x86-64 where trunc_sat takes a sequence), exact for the lanes it is
 * given: each is first clamped into [-32768, 32767] (pmin / pmax keep a NaN lane NaN, and the
 * select replaces it), which the narrowings then saturate as before.
 */
function quantize8(name: string, unsigned: boolean, relaxed: boolean): Func {
  // Four lanes at src + offset: nearest(x / s) + zp in R, then its int32 (INT_MIN for NaN).
  const lanes = (offset: number): Code => [
    ...set(R, f32x4Add(f32x4Nearest(f32x4Div(load(get(SRC), offset), get(S))), get(Z))),
    ...select(get(M), relaxed ? relaxedTruncS(f32x4Pmax(f32x4Pmin(get(R), get(HI)), get(LO))) : truncSatS(get(R)), f32x4Ne(get(R), get(R))),
  ];
  const code = loop([
    set(A, lanes(0)),
    set(A, narrowS(get(A), lanes(16))),
    set(B, lanes(32)),
    set(B, narrowS(get(B), lanes(48))),
    store(get(DST), (unsigned ? narrowU8 : narrowS8)(get(A), get(B))),
  ], 64, 16);
  return { name, params: 3, i32Locals: 0, v128Locals: LO - S + 1, body: [...prologue.flat(), ...code] };
}

/** 16 int8 or uint8 (16 bytes) -> 16 float32 (64 bytes) per group. */
function dequantize8(name: string, unsigned: boolean): Func {
  const four = (halfwords: Code, high: boolean): Code =>
    f32x4Mul(f32x4Sub(f32x4ConvertS((high ? extendHighS16 : extendLowS16)(halfwords)), get(Z)), get(S));
  const code = loop([
    set(R, load(get(SRC), 0)),
    set(A, (unsigned ? extendLowU8 : extendLowS8)(get(R))),
    store(get(DST), four(get(A), false), 0),
    store(get(DST), four(get(A), true), 16),
    set(A, (unsigned ? extendHighU8 : extendHighS8)(get(R))),
    store(get(DST), four(get(A), false), 32),
    store(get(DST), four(get(A), true), 48),
  ], 16, 64);
  return { name, params: 3, i32Locals: 0, v128Locals: LO - S + 1, body: [...prologue.flat(), ...code] };
}

type Kernel = (src: number, dst: number, groups: number) => void;
interface Loaded {
  /** Whether quantize is the relaxed-SIMD build. */
  readonly relaxed: boolean;
  readonly bytes: Uint8Array;
  readonly params: Float32Array;
  readonly q_i8: Kernel;
  readonly q_u8: Kernel;
  readonly dq_i8: Kernel;
  readonly dq_u8: Kernel;
}

/** The module's bytes; `relaxed`: quantize truncates with relaxed SIMD (engines without it do not validate it). */
export function quantModule(relaxed = false): Uint8Array {
  return moduleBytes([quantize8("q_i8", false, relaxed), quantize8("q_u8", true, relaxed), dequantize8("dq_i8", false), dequantize8("dq_u8", true)], PAGES);
}

let loaded: Loaded | null | undefined;
let enabled = true;
let allowRelaxed = true;

function instance(): Loaded | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    let relaxed = allowRelaxed;
    let code = quantModule(relaxed);
    if (api && relaxed && !api.validate(code)) {
      relaxed = false;
      code = quantModule(false);
    }
    if (api && api.validate(code)) {
      const e = new api.Instance(new api.Module(code)).exports;
      const buffer = (e.memory as { buffer: ArrayBuffer }).buffer;
      const params = new Float32Array(buffer, PARAMS, 12);
      new Int32Array(buffer, PARAMS + 32, 4).fill(-0x80000000);
      new Float32Array(buffer, PARAMS + 48, 8).fill(32767, 0, 4).fill(-32768, 4, 8);
      loaded = { relaxed, bytes: new Uint8Array(buffer), params, q_i8: e.q_i8 as Kernel, q_u8: e.q_u8 as Kernel, dq_i8: e.dq_i8 as Kernel, dq_u8: e.dq_u8 as Kernel };
    }
  } catch {
    loaded = null; // e.g. a Content-Security-Policy without 'wasm-unsafe-eval'
  }
  return loaded;
}

/**
 * For tests and benchmarks: false makes both fast paths decline, so the reference runs.
 * @example useQuantSimd(false); quantizeLinear(x, s); useQuantSimd(true);
 */
export function useQuantSimd(on: boolean): void {
  enabled = on;
}

/**
 * For tests and benchmarks: "plain" switches quantize to the build without relaxed SIMD, "auto" to
 * the relaxed one where the engine has it (the default).
 * @example useQuantSimdBuild("plain"); quantizeLinear(x, s); useQuantSimdBuild("auto");
 */
export function useQuantSimdBuild(build: "auto" | "plain"): void {
  allowRelaxed = build === "auto";
  loaded = undefined;
}

/** Whether quantize runs the relaxed-SIMD build here. */
export function quantSimdRelaxed(): boolean {
  return instance()?.relaxed === true;
}

/** Whether the SIMD fast paths are available here (instantiates the module on first call). */
export function quantSimdAvailable(): boolean {
  return instance() !== null;
}

/**
 * Calls `each(start, length, scaleIndex)` for every run of consecutive elements sharing a scale,
 * in order; returns false (calling nothing) when the layout has no such runs of 16 elements on
 * average (a scale per element along the innermost axis, or tiny blocks).
 */
function forRuns(layout: QuantLayout, each: (start: number, length: number, scale: number) => void): boolean {
  const { outer, axisLength, inner, blockSize, strideOuter, strideBlock, strideInner } = layout;
  if (strideInner !== 0 && inner > 1) return false;
  const blocks = Math.ceil(axisLength / blockSize);
  if (layout.count < 16 * outer * blocks) return false;
  for (let o = 0; o < outer; o++) {
    for (let b = 0; b < blocks; b++) {
      const first = b * blockSize;
      each((o * axisLength + first) * inner, (Math.min(blockSize, axisLength - first)) * inner, o * strideOuter + b * strideBlock);
    }
  }
  return true;
}

function is8bit(t: DType): "int8" | "uint8" | undefined {
  return t.name === "int8" || t.name === "uint8" ? t.name : undefined;
}

/**
 * QuantizeLinear float32 -> int8 / uint8 (float32 scales, float32 division) by SIMD, bit for bit
 * the reference's; false, nothing written, where it does not apply.
 * @example if (!quantizeSimd(a)) quantizeLinearKernel(a)
 */
export function quantizeSimd(a: QuantizeArgs): boolean {
  const kind = is8bit(a.yType);
  if (!enabled || !kind || a.xType.name !== "float32" || a.scaleType.name !== "float32" || a.precision !== "float32") return false;
  const w = instance();
  return w !== null && stream(w, kind === "int8" ? w.q_i8 : w.q_u8, a, 4, 1);
}

/**
 * DequantizeLinear int8 / uint8 -> float32 (finite float32 scales) by SIMD, bit for bit the
 * reference's; false, nothing written, where it does not apply.
 * @example if (!dequantizeSimd(a)) dequantizeLinearKernel(a)
 */
export function dequantizeSimd(a: DequantizeArgs): boolean {
  const kind = is8bit(a.xType);
  if (!enabled || !kind || a.yType.name !== "float32" || a.scaleType.name !== "float32") return false;
  const scales = a.scale as Float32Array;
  for (let g = 0; g < a.layout.scaleCount; g++) if (!Number.isFinite(scales[g])) return false;
  const w = instance();
  return w !== null && stream(w, kind === "int8" ? w.dq_i8 : w.dq_u8, a, 1, 4);
}

/**
 * Runs `kernel` over every run of `a.x` sharing a scale (forRuns), a chunk at a time through the
 * module's memory: `inSize` / `outSize` bytes per element in and out.
 */
function stream(w: Loaded, kernel: Kernel, a: QuantizeArgs | DequantizeArgs, inSize: number, outSize: number): boolean {
  const x = u8View(a.x);
  const y = u8View(a.y);
  const scales = a.scale as Float32Array;
  const zps = a.zeroPoint as Int8Array | Uint8Array | undefined;
  const mem = w.bytes;
  return forRuns(a.layout, (start, length, g) => {
    w.params.fill(scales[g], 0, 4);
    w.params.fill(zps ? zps[g] : 0, 4, 8);
    for (let at = start; at < start + length; at += CHUNK) {
      const n = Math.min(CHUNK, start + length - at);
      mem.set(x.subarray(inSize * at, inSize * (at + n)), IN);
      kernel(IN, OUT, Math.ceil(n / 16)); // a last partial group converts stale lanes, never copied out
      y.set(mem.subarray(OUT, OUT + outSize * n), outSize * at);
    }
  });
}
