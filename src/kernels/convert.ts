/**
 * The one entry point for a numeric conversion: a WebAssembly SIMD kernel where one exists and the
 * platform runs it, else a measured scalar fast kernel, else the generic reference path. All give
 * the same bytes (test/kernels/wasm.test.ts, test/kernels/fast.test.ts).
 */
import type { DType, Storage } from "../dtype/table.js";
import { fastCast } from "./fast/index.js";
import { wasmCast } from "./wasm/index.js";
import { castReference, type ResolvedCastOptions } from "./reference.js";

/** Casts `count` elements of `src` (type `from`) into the zeroed storage `dst` (type `to`). */
export function convert(src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions): void {
  if (wasmCast(src, from, dst, to, count, opts)) return;
  if (!fastCast(src, from, dst, to, count, opts)) castReference(src, from, dst, to, count, opts);
}
