/**
 * The one entry point for a numeric conversion: the platform's Float16Array for the float16 pairs
 * where it measured faster, else a WebAssembly SIMD kernel where one exists and the platform runs
 * it, else a measured scalar fast kernel, else the generic reference path. All give the same bytes
 * (test/kernels/native-float16.test.ts, test/kernels/wasm.test.ts, test/kernels/fast.test.ts).
 */
import type { DType, Storage } from "../dtype/table.js";
import { fastCast } from "./fast/index.js";
import { nativeFloat16Cast } from "./native/float16.js";
import { wasmCast } from "./wasm/index.js";
import { castReference, type ResolvedCastOptions } from "./reference.js";

/**
 * Whether a pair goes to the native float16 kernels first; where there is no Float16Array (Node 20,
 * 22) nativeFloat16Cast declines and the pair takes the path below, unchanged. Only where the
 * native kernel measured faster than that path, on every engine that has it. Million elements/s,
 * median of 9 rounds of 16 Mi elements, random bit patterns / ordinary values, native (Float16Array
 * set + NaN fix-up) against the path below; `npm run bench:native` (bench/native-f16.ts) on Node
 * 24.21 and 26.10, Bun 1.4.5 and Deno 2.9.6, `npm run bench:browser` in Chromium 156; a shared
 * 2-vCPU machine, so single numbers wander (Deno's most), the ratios within a run less:
 * - float64 -> float16, against JS round-to-odd: Node 24 204 / 309 against 58 / 171 (3.5x / 1.8x),
 *   Node 26 92 / 402 against 28 / 167 (3.3x / 2.4x), Bun 152 / 341 against 76 / 218 (2.0x /
 *   1.6x), Deno 2.3x / 2.1x, Chromium 3.1x / 2.1x. Wired.
 * - float16 -> float64, against the JS table: Node 24 424 / 437 against 290 / 177 (1.5x / 2.5x),
 *   Node 26 570 / 952 against 299 / 341 (1.9x / 2.8x), Deno 1.4x / 1.7x, Chromium 1.6x / 2.0x;
 *   Bun (JavaScriptCore) 292 / 420 against 303 / 513 (0.96x / 0.82x; 0.75x / 0.91x in a second
 *   run). Wired everywhere: a win of 1.4-2.8x on V8 against a loss of 4-25% on JavaScriptCore, and
 *   no feature to tell the engines apart by but the engine's name.
 * - float32 -> float16, against WebAssembly SIMD: 0.12-0.14x / 0.29-0.35x on every runtime (Node
 *   24: 133 / 366 against 961 / 1079; Bun 125 / 382 against 1066 / 1081). Not wired.
 * - float16 -> float32, against WebAssembly SIMD: 0.39-0.55x / 0.46-0.54x (Node 24: 350 / 567
 *   against 783 / 1204; Bun 352 / 510 against 773 / 1099). Not wired.
 * Math.f16round (an element loop, the code from the rounded value's float32 bits) lost to the path
 * below on every runtime (float64 -> float16: 0.59-0.93x / 0.18-0.47x), and to Float16Array set by
 * 3-10x: not used. A loop of Float16Array element stores / loads never beat `set`.
 */
function nativeFirst(from: DType, to: DType): boolean {
  return (from.name === "float64" && to.name === "float16") || (from.name === "float16" && to.name === "float64");
}

/** Casts `count` elements of `src` (type `from`) into the zeroed storage `dst` (type `to`). */
export function convert(src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions): void {
  if (nativeFirst(from, to) && nativeFloat16Cast(src, from, dst, to, count)) return;
  if (wasmCast(src, from, dst, to, count, opts)) return;
  if (!fastCast(src, from, dst, to, count, opts)) castReference(src, from, dst, to, count, opts);
}
