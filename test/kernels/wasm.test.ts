/**
 * The WebAssembly SIMD kernels give exactly the bytes of castReference:
 * - float16 -> float32: every code, in arrays whose lengths cross chunk and group boundaries;
 * - float32 -> float16 and -> bfloat16: every float16 and bfloat16 value, tie and their neighbours,
 *   crafted edges (subnormals, overflow thresholds, Inf, NaN payloads of both signs), and millions
 *   of random bit patterns (uniform, and with exponents where the casts are busy);
 * - counts 0 to 17 and around the 16384-element chunk, views at odd element offsets;
 * - pairs without a kernel return false and write nothing.
 * With TENSORCAST_EXHAUSTIVE=1, also all 2^32 float32 patterns against fastCast's scalar kernels
 * (themselves checked against castReference in fast.test.ts; castReference alone would take minutes).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { dtype, type DType, type Storage } from "../../src/dtype/table.js";
import { castReference, type ResolvedCastOptions } from "../../src/kernels/reference.js";
import { fastCast } from "../../src/kernels/fast/index.js";
import { wasmAvailable, wasmCast } from "../../src/kernels/wasm/index.js";
import { kernelModule } from "../../src/kernels/wasm/kernels.js";
import { Rng } from "../support/rng.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };
const F32 = dtype("float32");
const F16 = dtype("float16");
const BF16 = dtype("bfloat16");
const CHUNK = 16384;


function hex(v: number, digits: number): string {
  return `0x${(v >>> 0).toString(16).padStart(digits, "0")}`;
}

function outputFor(to: DType, n: number): Uint16Array | Float32Array {
  return to.name === "float32" ? new Float32Array(n) : new Uint16Array(n);
}

function bitsOf(a: Storage): Uint16Array | Uint32Array {
  const t = a as Uint16Array | Float32Array;
  return t instanceof Float32Array ? new Uint32Array(t.buffer, t.byteOffset, t.length) : t;
}

/** wasmCast against castReference on `src`; a failure names the first differing elements. */
function check(src: Float32Array | Uint16Array, from: DType, to: DType): number {
  const n = src.length;
  const got = outputFor(to, n);
  const want = outputFor(to, n);
  assert.equal(wasmCast(src, from, got, to, n, OPTS), true);
  castReference(src, from, want, to, n, OPTS);
  const g = bitsOf(got);
  const w = bitsOf(want);
  const s = bitsOf(src);
  const bad: string[] = [];
  for (let i = 0; i < n && bad.length < 5; i++) {
    if (g[i] !== w[i]) bad.push(`[${i}] ${hex(s[i], from.bits / 4)}: got ${hex(g[i], to.bits / 4)}, want ${hex(w[i], to.bits / 4)}`);
  }
  assert.deepEqual(bad, [], `${from.name} -> ${to.name}`);
  return n;
}

function f32Of(bits: number[]): Float32Array {
  return new Float32Array(Uint32Array.from(bits, (b) => b >>> 0).buffer);
}

/** Every 16-bit pattern p as the top half of float32 bits, with low halves at and around ties. */
function tiesAndNeighbours(lows: readonly number[]): number[] {
  const out: number[] = [];
  for (let p = 0; p < 0x10000; p++) for (const lo of lows) out.push(((p << 16) | lo) >>> 0);
  return out;
}

/** float32 bits of every float16 value, the midpoints to the next code and their neighbours. */
function halfTies(): number[] {
  const h = new Uint16Array(0x10000);
  for (let i = 0; i < 0x10000; i++) h[i] = i;
  const f = new Float32Array(0x10000);
  castReference(h, F16, f, F32, 0x10000, OPTS);
  const bits = new Uint32Array(f.buffer);
  const out: number[] = [];
  for (let i = 0; i < 0x10000; i++) {
    if ((i & 0x7fff) >= 0x7c00) continue;
    const b = bits[i];
    // The tie between this code and the next one up in magnitude (65520 after the largest), as a
    // value: exact in float32, whose bits step within a binade but not across one.
    const next = (i & 0x7fff) === 0x7bff ? 0x47800000 | (b & 0x80000000) : bits[i + 1];
    const mid = Math.fround((new Float32Array(new Uint32Array([b]).buffer)[0] + new Float32Array(new Uint32Array([next]).buffer)[0]) / 2);
    const m = new Uint32Array(new Float32Array([mid]).buffer)[0];
    for (const d of [-2, -1, 0, 1, 2]) out.push((b + d) >>> 0, (m + d) >>> 0);
  }
  return out;
}

const EDGES = [
  0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x33000000, 0x33000001, 0x337fffff, 0x33800000,
  0x387fe000, 0x387fefff, 0x387ff000, 0x387fffff, 0x38800000, 0x38800001, 0x477fe000, 0x477fefff,
  0x477ff000, 0x477fffff, 0x47800000, 0x7f7fffff, 0x7f7f7fff, 0x7f7f8000, 0x7f800000, 0x7f800001,
  0x7fbfffff, 0x7fc00000, 0x7fffffff, 0xff800000, 0xff800001, 0xffc00000, 0xffffffff, 0x3f800000,
  0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000,
];

test("WebAssembly SIMD is available on Node 20 and the module validates", () => {
  assert.equal(wasmAvailable(), true);
  const api = (globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly;
  assert.equal(api.validate(kernelModule(2)), true);
});

test("float16 -> float32: every code, bit for bit", () => {
  const n = 4 * 0x10000 + 2 * CHUNK + 13; // crosses chunks; ends in a partial group
  const h = new Uint16Array(n);
  for (let i = 0; i < n; i++) h[i] = (i * 40503) & 0xffff; // odd multiplier: every code, shuffled
  for (let i = 0; i < 0x10000; i++) h[i] = i;
  check(h, F16, F32);
});

test("float32 -> float16: ties, neighbours, edges and random patterns, bit for bit", () => {
  let checked = check(f32Of(EDGES), F32, F16);
  checked += check(f32Of(halfTies()), F32, F16);
  checked += check(f32Of(tiesAndNeighbours([0, 1, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x8000, 0xffff])), F32, F16);
  const rng = new Rng(0x6a09e667);
  const n = 3_000_000;
  const w = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const u = rng.u32();
    // a third uniform; the rest with exponents 2^-26 .. 2^16, where float16 rounds, underflows and overflows
    w[i] = i % 3 === 0 ? u : (u & 0x807fffff) | ((101 + (rng.u32() % 43)) << 23);
  }
  checked += check(new Float32Array(w.buffer), F32, F16);
  assert.ok(checked > 4_000_000);
});

test("float32 -> bfloat16: ties, neighbours, edges and random patterns, bit for bit", () => {
  let checked = check(f32Of(EDGES), F32, BF16);
  checked += check(f32Of(tiesAndNeighbours([0, 1, 0x7fff, 0x8000, 0x8001, 0xffff])), F32, BF16);
  const rng = new Rng(0xbb67ae85);
  const n = 1_000_000;
  const w = new Uint32Array(n);
  for (let i = 0; i < n; i++) w[i] = rng.u32();
  checked += check(new Float32Array(w.buffer), F32, BF16);
  assert.ok(checked > 1_000_000);
});

test("every count around groups and chunks, and views at odd offsets", () => {
  const rng = new Rng(0x3c6ef372);
  const counts = [0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 9];
  for (const count of counts) {
    const base = new Uint32Array(count + 3);
    for (let i = 0; i < base.length; i++) base[i] = rng.u32();
    const src32 = new Float32Array(base.buffer, 4, count); // byteOffset 4
    for (const to of [F16, BF16]) {
      const backing = new Uint16Array(count + 3).fill(0xabcd);
      const got = backing.subarray(1, 1 + count); // byteOffset 2: not word-aligned
      const want = new Uint16Array(count);
      assert.equal(wasmCast(src32, F32, got, to, count, OPTS), true);
      castReference(src32, F32, want, to, count, OPTS);
      assert.deepEqual(got, want, `float32 -> ${to.name}, count ${count}`);
      assert.equal(backing[0], 0xabcd);
      assert.equal(backing[count + 1], 0xabcd, "nothing written past the end");
    }
    const halves = new Uint16Array(count + 1);
    for (let i = 0; i < halves.length; i++) halves[i] = rng.u32();
    const src16 = halves.subarray(1);
    const backing = new Float32Array(count + 2).fill(1.5);
    const got = backing.subarray(1, 1 + count);
    const want = new Float32Array(count);
    assert.equal(wasmCast(src16, F16, got, F32, count, OPTS), true);
    castReference(src16, F16, want, F32, count, OPTS);
    assert.deepEqual(new Uint32Array(got.buffer, got.byteOffset, count), new Uint32Array(want.buffer), `float16 -> float32, count ${count}`);
    assert.equal(backing[count + 1], 1.5, "nothing written past the end");
  }
});

test("pairs without a kernel return false and write nothing", () => {
  const pairs: [DType, DType][] = [
    [F16, BF16], [BF16, F32], [F32, F32], [F16, F16], [dtype("float64"), F32], [F32, dtype("int8")],
    [dtype("int64"), dtype("int32")], [F32, dtype("float8e4m3fn")],
  ];
  for (const [from, to] of pairs) {
    const src = from.name === "int64" ? new BigInt64Array(8) : from.name === "float64" ? new Float64Array(8).fill(1)
      : from.name === "float32" ? new Float32Array(8).fill(1) : new Uint16Array(8).fill(0x3c00);
    const dst = to.name === "float32" ? new Float32Array(8) : to.name === "int32" ? new Int32Array(8)
      : to.bits === 8 ? new Uint8Array(8) : new Uint16Array(8);
    assert.equal(wasmCast(src as Storage, from, dst as Storage, to, 8, OPTS), false, `${from.name} -> ${to.name}`);
    assert.ok((dst as Uint8Array).every((v: number) => v === 0), `${from.name} -> ${to.name} wrote nothing`);
  }
});

test("all 2^32 float32 patterns against the scalar kernels (TENSORCAST_EXHAUSTIVE=1)", { skip: process.env.TENSORCAST_EXHAUSTIVE !== "1" }, () => {
  const block = 1 << 24;
  const w = new Uint32Array(block);
  const src = new Float32Array(w.buffer);
  const a = new Uint16Array(block);
  const b = new Uint16Array(block);
  for (const to of [F16, BF16]) {
    for (let hi = 0; hi < 256; hi++) {
      const base = hi * block;
      for (let i = 0; i < block; i++) w[i] = base + i;
      assert.equal(wasmCast(src, F32, a, to, block, OPTS), true);
      assert.equal(fastCast(src, F32, b, to, block, OPTS), true);
      for (let i = 0; i < block; i++) {
        if (a[i] !== b[i]) assert.fail(`float32 ${hex(base + i, 8)} -> ${to.name}: wasm ${hex(a[i], 4)}, scalar ${hex(b[i], 4)}`);
      }
    }
  }
});
