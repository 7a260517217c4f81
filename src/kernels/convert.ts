/**
 * The one entry point for a numeric conversion: a measured fast kernel where one exists for the
 * pair, the generic reference path otherwise. Both give the same bytes (test/kernels/fast.test.ts).
 */
import type { DType, Storage } from "../dtype/table.js";
import { fastCast } from "./fast/index.js";
import { castReference, type ResolvedCastOptions } from "./reference.js";

/** Casts `count` elements of `src` (type `from`) into the zeroed storage `dst` (type `to`). */
export function convert(src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions): void {
  if (!fastCast(src, from, dst, to, count, opts)) castReference(src, from, dst, to, count, opts);
}
