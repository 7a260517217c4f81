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
 * Whether a pair goes to the native float16 kernels first; where there is no Float16Array (Node 20)
 * nativeFloat16Cast declines and the pair takes the path below, unchanged. Only where the native
 * kernel measured faster than that path: `npm run bench:browser` (bench/browser-f16.ts), Chromium
 * 156, 16 Mi elements, median of 9, million elements/s for random bit patterns / ordinary values,
 * native (Float16Array set + NaN fix-up) against the path below:
 * - float64 -> float16:   69 / 141 against 22 / 67 (JS round-to-odd): 3.1x / 2.1x. Wired.
 * - float16 -> float64:  186 / 207 against 116 / 104 (JS table): 1.6x / 2.0x. Wired.
 * - float32 -> float16:   68 / 162 against 581 / 593 (WebAssembly SIMD): 0.12x / 0.27x. Not wired.
 * - float16 -> float32:  140 / 154 against 606 / 593 (WebAssembly SIMD): 0.23x / 0.26x. Not wired.
 * V8's `set` alone, without the fix-up, is no faster than WebAssembly for those two (73 / 177 and
 * 203 / 184), so no NaN handling could make them pay.
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
