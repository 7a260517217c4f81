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
import { residentCast } from "./wasm/resident.js";
import { castReference, type ResolvedCastOptions } from "./reference.js";

/**
 * Whether a pair goes to the native float16 kernels first; where there is no Float16Array (Node 20,
 * 22) nativeFloat16Cast declines and the pair takes the path below, unchanged. Only where the
 * native kernel measured faster than that path on that engine. Million elements/s, median of 7-9
 * rounds, random bit patterns / ordinary values, native (Float16Array set + NaN fix-up) against
 * the path below: `npm run bench:native` (bench/native-f16.ts, 16 Mi elements) on Node 24.21 and
 * 26.10, Bun 1.4.5 and Deno 2.9.6; bench/browser-native.ts (4 Mi elements) in Chromium 156,
 * Firefox 153 ESR and WebKitGTK 2.50; a shared 2-vCPU machine, so single numbers wander, the
 * ratios within a run less:
 * - float64 -> float16, against JS round-to-odd: Node 24 204 / 309 against 58 / 171 (3.5x / 1.8x),
 *   Node 26 3.3x / 2.4x, Deno 2.3x / 2.1x, Chromium 3.4x / 2.4x; Bun 152 / 341 against 76 / 218
 *   (2.0x / 1.6x), WebKit 1.9x / 1.2x; Firefox 168 / 290 against 33 / 91 (5.2x / 3.2x). Wired on
 *   every engine.
 * - float16 -> float64, against the JS table: V8 wins, Node 24 424 / 437 against 290 / 177 (1.5x /
 *   2.5x), Node 26 1.9x / 2.8x, Deno 1.4x / 1.7x, Chromium 1.4x / 1.9x; elsewhere it is a wash or
 *   a loss: Bun 0.96x / 0.82x (0.75x / 0.91x in a second run), Firefox 0.82x / 1.10x, WebKit 1.08x
 *   / 1.45x in one run and 0.72x / 1.33x through convert() in the same run. Wired on V8 only
 *   (`v8`, below).
 * - float32 -> float16, against WebAssembly SIMD: 0.10-0.30x / 0.26-0.35x on every engine (Node
 *   24: 133 / 366 against 961 / 1079; Firefox 383 / 384 against 1279 / 1362). Not wired.
 * - float16 -> float32, against WebAssembly SIMD: 0.35-0.55x / 0.33-0.54x on every engine. Not wired.
 * Math.f16round (an element loop, the code from the rounded value's float32 bits) lost to
 * Float16Array set on every engine (by 3-10x on V8 and JavaScriptCore, 1.6-2.8x on Firefox): not
 * used. A loop of Float16Array element stores / loads never beat `set` by a margin that held
 * across runs (Firefox's float16 -> float64 loads: 0.80x-1.53x).
 */
function nativeFirst(from: DType, to: DType): boolean {
  return (from.name === "float64" && to.name === "float16") || (v8 && from.name === "float16" && to.name === "float64");
}

/**
 * Whether the engine is V8 (Node, Deno, Chromium and its kin): V8 alone begins an Error's stack
 * with "Error: message" and then "    at " frames; SpiderMonkey and JavaScriptCore list
 * `function@file:line:column`. Bun (JavaScriptCore) imitates V8's format, so it is named too. A
 * wrong answer costs speed only: both paths give the same bytes.
 */
const v8 = ((): boolean => {
  if ((globalThis as { Bun?: unknown }).Bun !== undefined) return false;
  const stack = String(new Error("probe").stack);
  return stack.startsWith("Error: probe\n    at ");
})();

/** Whether float16 -> float64 goes to the native kernel on this engine (for the tests). */
export function nativeFloat16ToFloat64(): boolean {
  return v8;
}

/**
 * Casts `count` elements of `src` (type `from`) into the zeroed storage `dst` (type `to`). Storages
 * that both live in one arena's memory (src/arena.ts) go to that memory's kernels in place first.
 */
export function convert(src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions): void {
  if (residentCast(src, from, dst, to, count, opts, scalar)) return;
  if (nativeFirst(from, to) && nativeFloat16Cast(src, from, dst, to, count)) return;
  if (wasmCast(src, from, dst, to, count, opts)) return;
  scalar(src, from, dst, to, count, opts);
}

function scalar(src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions): void {
  if (!fastCast(src, from, dst, to, count, opts)) castReference(src, from, dst, to, count, opts);
}
