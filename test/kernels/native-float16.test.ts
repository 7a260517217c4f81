/**
 * The native float16 kernels (src/kernels/native/float16.ts: Float16Array.prototype.set, then the
 * NaN fix-up) give exactly the bytes of castReference, whatever convert() dispatches to:
 * - float16 -> float32 and -> float64: every code;
 * - float32 -> float16: every float16 value, the midpoint to the next one (the overflow threshold
 *   65520 included) and their float32 neighbours; every pattern of the top 16 bits (sign, exponent,
 *   7 mantissa bits: NaN payloads, subnormals, overflow) with low halves that put the dropped bits
 *   at, below and above the tie (sticky bits); edges; 2 million random bit patterns;
 * - float64 -> float16: every float16 value and midpoint with its float64 neighbours, the float32
 *   ties next to it (where rounding through float32 would round twice) and sticky bits far below
 *   float32's precision; NaN payloads of both signs in either word; ±0, ±Inf, float64 subnormals
 *   and extremes; 2 million random bit patterns (uniform, and with exponents near float16's);
 * - views at odd element offsets (a float16 side not on a 4-byte boundary), lengths 0 to 33 and
 *   around the block size, NaNs on block edges, and nothing written past `count`.
 * Then the same inputs through convert(), which uses the native kernels where it is wired to.
 *
 * The native tests need Float16Array: on Node 20 they are skipped (saying so). They run in Chromium
 * as one of the codec test files (test/browser/support.ts, CODEC_TEST_FILES), where the last test
 * makes sure they did not skip.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { dtype, type DType, type Storage } from "../../src/dtype/table.js";
import { convert, nativeFloat16ToFloat64 } from "../../src/kernels/convert.js";
import { NATIVE_BLOCK, nativeFloat16Available, nativeFloat16Cast } from "../../src/kernels/native/float16.js";
import { castReference, type ResolvedCastOptions } from "../../src/kernels/reference.js";
import { Rng } from "../support/rng.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };
const F16 = dtype("float16");
const F32 = dtype("float32");
const F64 = dtype("float64");
const SKIP = nativeFloat16Available() ? false : "no Float16Array here (Node 20): the native float16 kernels run in Chromium (test/browser/)";

type Float = Uint16Array | Float32Array | Float64Array;

function hex(v: number, digits: number): string {
  return `0x${(v >>> 0).toString(16).padStart(digits, "0")}`;
}

function outputFor(to: DType, n: number): Float {
  return to === F16 ? new Uint16Array(n) : to === F32 ? new Float32Array(n) : new Float64Array(n);
}

/** Element i's bits as hex (float64: high word then low word). */
function bitsAt(a: Float, i: number): string {
  if (a instanceof Uint16Array) return hex(a[i], 4);
  const w = new Uint32Array(a.buffer, a.byteOffset, a.byteLength >>> 2);
  return a instanceof Float32Array ? hex(w[i], 8) : hex(w[2 * i + 1], 8) + hex(w[2 * i], 8).slice(2);
}

function bytes(a: Float): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** The first few elements where `got` and `want` differ, with the source's bits. */
function differences(src: Float, got: Float, want: Float, what: string): string[] {
  const g = bytes(got);
  const w = bytes(want);
  const size = got.BYTES_PER_ELEMENT;
  const bad: string[] = [];
  for (let i = 0; i < got.length && bad.length < 5; i++) {
    for (let k = 0; k < size; k++) {
      if (g[i * size + k] !== w[i * size + k]) {
        bad.push(`${what} [${i}] ${bitsAt(src, i)}: got ${bitsAt(got, i)}, want ${bitsAt(want, i)}`);
        break;
      }
    }
  }
  return bad;
}

const references = new Map<string, Float>();

/** castReference's output for a named input, computed once for the native and the convert() test. */
function reference(name: string, src: Float, from: DType, to: DType): Float {
  let want = references.get(name);
  if (!want) {
    want = outputFor(to, src.length);
    castReference(src, from, want, to, src.length, OPTS);
    references.set(name, want);
  }
  return want;
}

/** Fills an output with 0xA5 bytes, so an element a kernel forgets to write shows. */
function garbage(to: DType, n: number): Float {
  const out = outputFor(to, n);
  bytes(out).fill(0xa5);
  return out;
}

type Cast = (src: Storage, from: DType, dst: Storage, to: DType, n: number) => void;

const viaNative: Cast = (src, from, dst, to, n) => assert.equal(nativeFloat16Cast(src, from, dst, to, n), true, "nativeFloat16Cast declined");
const viaConvert: Cast = (src, from, dst, to, n) => convert(src, from, dst, to, n, OPTS);

function check(cast: Cast, name: string, src: Float, from: DType, to: DType): void {
  const want = reference(name, src, from, to);
  const got = garbage(to, src.length);
  cast(src, from, got, to, src.length);
  const bad = differences(src, got, want, `${from.name} -> ${to.name}`);
  assert.ok(bad.length === 0, `${name}: ${bad.join("; ")}`);
}

// ---- Inputs ----------------------------------------------------------------------------------

/** The value of a non-negative float16 code below 0x7C00, by the textbook formula. */
function f16Value(c: number): number {
  const e = c >>> 10;
  const m = c & 0x3ff;
  return e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
}

/** Every finite non-negative float16 value and the midpoint to the next (65504's next is 2^16). */
function valuesAndMidpoints(): number[] {
  const out: number[] = [];
  for (let c = 0; c < 0x7c00; c++) {
    const v = f16Value(c);
    const next = c === 0x7bff ? 65536 : f16Value(c + 1);
    out.push(v, (v + next) / 2);
  }
  return out;
}

function everyF16Code(): Uint16Array {
  const a = new Uint16Array(0x10000);
  for (let c = 0; c < a.length; c++) a[c] = c;
  return a;
}

function f32OfBits(bits: readonly number[] | Uint32Array): Float32Array {
  return new Float32Array(Uint32Array.from(bits, (b) => b >>> 0).buffer);
}

/** Float32 bits of every float16 value and midpoint, both signs, each with its float32 neighbours. */
function f32Midpoints(): Float32Array {
  const one = new Float32Array(1);
  const bits = new Uint32Array(one.buffer);
  const out: number[] = [];
  for (const v of valuesAndMidpoints()) {
    one[0] = v;
    const b = bits[0];
    assert.equal(one[0], v, `${v} is not exact in float32`);
    for (const sign of [0, 0x80000000]) for (const d of [-1, 0, 1]) if (b + d >= 0) out.push((sign | (b + d)) >>> 0);
  }
  return f32OfBits(out);
}

/**
 * Every top-16-bit pattern (sign, exponent, 7 mantissa bits) with low halves that give each value
 * of the last 3 kept mantissa bits (k << 13), and below them: nothing, 1, just under the tie, the
 * tie, just over it, and all ones.
 */
function f32TopPatterns(): Float32Array {
  const lows: number[] = [];
  for (let k = 0; k < 8; k++) for (const r of [0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff]) lows.push((k << 13) | r);
  const w = new Uint32Array(0x10000 * lows.length);
  let i = 0;
  for (let p = 0; p < 0x10000; p++) for (const lo of lows) w[i++] = ((p << 16) | lo) >>> 0;
  return new Float32Array(w.buffer);
}

function f32Edges(): Float32Array {
  return f32OfBits([
    0, 0x80000000, 0x7f800000, 0xff800000, // ±0, ±Inf
    0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fe00000, 0x7fffffff, // NaN: signalling, quiet, payloads
    0xff800001, 0xffbfffff, 0xffc00000, 0xffc00001, 0xffe00000, 0xffffffff,
    0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, // float32 subnormals, min normal, max
    0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, // 65504, below / at / above 65520, 65536
    0x33000000, 0x33000001, 0xb3000000, 0x33800000, 0x33c00000, // 2^-25 (tie to 0), 2^-24, 1.5 * 2^-24
    0x38800000, 0x387fe000, 0x387ff000, 0x387fffff, // 2^-14 (min normal), the largest subnormal and ties under it
  ]);
}

function f32Random(n: number): Float32Array {
  const rng = new Rng(0x5eed16);
  const w = new Uint32Array(n);
  for (let i = 0; i < n; i++) w[i] = rng.u32();
  // A quarter with exponents where float16 rounds (2^-26 .. 2^17).
  for (let i = 0; i < n; i += 4) w[i] = (w[i] & 0x807fffff) | ((101 + rng.below(44)) << 23);
  return new Float32Array(w.buffer);
}

/** float64 words: [low, high] per element. */
function f64OfWords(words: number[]): Float64Array {
  return new Float64Array(Uint32Array.from(words, (b) => b >>> 0).buffer);
}

/**
 * Every float16 value and midpoint, both signs, as float64 with: ±1 and ±2 ulps of float64; ±1
 * ulp of float32 (0x20000000 in the low word: bit 29); ±half an ulp of float32 (0x10000000: the
 * float32 tie, where float64 -> float32 -> float16 would round twice); and a lone sticky bit far
 * below float32 (a high-word-only change left the low word 0: low = 1).
 */
function f64Midpoints(): Float64Array {
  const one = new Float64Array(1);
  const w = new Uint32Array(one.buffer);
  const out: number[] = [];
  const push = (lo: number, hi: number, delta: number): void => {
    // (hi:lo) + delta as 64-bit integers (delta within ±2^31), never below zero.
    let l = lo + delta;
    let h = hi;
    if (l < 0) {
      if (h === 0) return;
      l += 2 ** 32;
      h--;
    } else if (l >= 2 ** 32) {
      l -= 2 ** 32;
      h++;
    }
    out.push(l, h, l, (h | 0x80000000) >>> 0);
  };
  for (const v of valuesAndMidpoints()) {
    one[0] = v;
    const [lo, hi] = [w[0], w[1]];
    for (const d of [0, -1, 1, -2, 2, -0x20000000, 0x20000000, -0x10000000, 0x10000000, -0x10000001, 0x10000001]) push(lo, hi, d);
  }
  return f64OfWords(out);
}

function f64Edges(): Float64Array {
  const w: number[] = [];
  for (const sign of [0, 0x80000000]) {
    const s = (hi: number, lo = 0): void => void w.push(lo, (sign | hi) >>> 0);
    s(0); s(0x7ff00000); // ±0, ±Inf
    s(0x7ff00000, 1); s(0x7ff00001); s(0x7ff7ffff, 0xffffffff); s(0x7ff80000); s(0x7ff80000, 1); s(0x7ff80001); s(0x7fffffff, 0xffffffff); // NaNs
    s(0, 1); s(0x000fffff, 0xffffffff); s(0x00100000); s(0x7fefffff, 0xffffffff); // subnormals, min normal, max
    s(0x47efffff, 0xffffffff); s(0x47f00000); s(0x36a00000); s(0x3e700000); // float32 max, 2^128, 2^-149, 2^-24
    s(0x40effc00); s(0x40effdff, 0xffffffff); s(0x40effe00); s(0x40effe00, 1); s(0x40f00000); // 65504, around 65520, 65536
    s(0x3e600000); s(0x3e5fffff, 0xffffffff); s(0x3e600000, 1); // 2^-25 (tie to 0) and its neighbours
  }
  return f64OfWords(w);
}

function f64Random(n: number): Float64Array {
  const rng = new Rng(0xf64f16);
  const w = new Uint32Array(2 * n);
  for (let i = 0; i < w.length; i++) w[i] = rng.u32();
  // Half with exponents where float16 rounds (2^-26 .. 2^17).
  for (let i = 1; i < w.length; i += 4) w[i] = (w[i] & 0x800fffff) | ((1023 - 26 + rng.below(44)) << 20);
  return new Float64Array(w.buffer);
}

interface Case {
  readonly name: string;
  readonly from: DType;
  readonly to: DType;
  readonly input: () => Float;
}

const CASES: Case[] = [
  { name: "every float16 code -> float32", from: F16, to: F32, input: everyF16Code },
  { name: "every float16 code -> float64", from: F16, to: F64, input: everyF16Code },
  { name: "float32 -> float16: every float16 value and midpoint with float32 neighbours", from: F32, to: F16, input: f32Midpoints },
  { name: "float32 -> float16: every top-16-bit pattern with ties and sticky bits", from: F32, to: F16, input: f32TopPatterns },
  { name: "float32 -> float16: edges (NaN payloads, ±0, ±Inf, overflow, subnormals)", from: F32, to: F16, input: f32Edges },
  { name: "float32 -> float16: 2 million random bit patterns", from: F32, to: F16, input: () => f32Random(2_000_000) },
  { name: "float64 -> float16: every float16 value and midpoint with float64 and float32 neighbours", from: F64, to: F16, input: f64Midpoints },
  { name: "float64 -> float16: edges (NaN payloads in either word, ±0, ±Inf, overflow, subnormals)", from: F64, to: F16, input: f64Edges },
  { name: "float64 -> float16: 2 million random bit patterns", from: F64, to: F16, input: () => f64Random(2_000_000) },
];

const inputs = new Map<string, Float>();
function inputOf(c: Case): Float {
  let a = inputs.get(c.name);
  if (!a) inputs.set(c.name, (a = c.input()));
  return a;
}

for (const c of CASES) {
  test(`native float16: ${c.name}`, { skip: SKIP }, () => check(viaNative, c.name, inputOf(c), c.from, c.to));
}

/**
 * A source with NaNs of both signs on and next to every block edge and at both ends, random codes
 * elsewhere, as `count` elements starting `offset` elements into a larger array (so the float16
 * side may start off a 4-byte boundary), cast into an output that is also offset; elements around
 * the output's window must stay as they were.
 */
function checkWindow(cast: Cast, from: DType, to: DType, offset: number, count: number): void {
  const total = offset + count + 3;
  const rng = new Rng(count * 31 + offset + 1);
  const srcAll = outputFor(from, total);
  const b = bytes(srcAll);
  for (let i = 0; i < b.length; i++) b[i] = rng.u32();
  const w = from === F16 ? new Uint32Array(0) : new Uint32Array(srcAll.buffer);
  const nan = from === F16 ? [0x7e01, 0xfc01] : from === F32 ? [0x7f800001, 0xffc00001] : [0x7ff00001, 0xfff80000];
  const setNaN = (i: number): void => {
    if (i < 0 || i >= count) return;
    const v = nan[i & 1];
    if (from === F16) (srcAll as Uint16Array)[offset + i] = v;
    else if (from === F32) w[offset + i] = v;
    else w[2 * (offset + i) + 1] = v;
  };
  setNaN(0);
  setNaN(1);
  setNaN(count - 1);
  setNaN(count - 2);
  for (let edge = NATIVE_BLOCK; edge <= count; edge += NATIVE_BLOCK) for (const d of [-2, -1, 0, 1]) setNaN(edge + d);
  const src = srcAll.subarray(offset, offset + count) as Float;
  const want = outputFor(to, count);
  castReference(src, from, want, to, count, OPTS);
  const outAll = garbage(to, total);
  const before = Uint8Array.from(bytes(outAll));
  const out = outAll.subarray(offset, offset + count) as Float;
  cast(src, from, out, to, count);
  const where = `${from.name} -> ${to.name}, ${count} elements at offset ${offset}`;
  const bad = differences(src, out, want, where);
  assert.ok(bad.length === 0, bad.join("; "));
  const size = out.BYTES_PER_ELEMENT;
  const after = bytes(outAll);
  for (let b = 0; b < after.length; b++) {
    if ((b < offset * size || b >= (offset + count) * size) && after[b] !== before[b]) assert.fail(`${where}: byte ${b} outside the output changed`);
  }
}

const PAIRS: [DType, DType][] = [[F32, F16], [F64, F16], [F16, F32], [F16, F64]];
const COUNTS = [
  ...Array.from({ length: 34 }, (_, n) => n),
  NATIVE_BLOCK - 1, NATIVE_BLOCK, NATIVE_BLOCK + 1, 2 * NATIVE_BLOCK + 3,
];

function checkWindows(cast: Cast): void {
  for (const [from, to] of PAIRS) for (const offset of [0, 1, 2, 3]) for (const count of COUNTS) checkWindow(cast, from, to, offset, count);
}

test("native float16: offsets 0-3, lengths 0-33 and around the block size, NaNs on block edges, nothing written outside", { skip: SKIP },
  () => checkWindows(viaNative));

test("native float16: other pairs are declined, nothing written", { skip: SKIP }, () => {
  const src = new Float32Array([1.5, NaN]);
  const dst = new Uint16Array([7, 7]);
  assert.equal(nativeFloat16Cast(src, F32, dst, dtype("bfloat16"), 2), false);
  assert.equal(nativeFloat16Cast(new Uint16Array([1, 2]), dtype("bfloat16"), new Float32Array(2), F32, 2), false);
  assert.equal(nativeFloat16Cast(new Uint16Array([1, 2]), F16, dst, F16, 2), false);
  assert.deepEqual(Array.from(dst), [7, 7]);
});

// ---- convert(): the native kernels where it uses them, the generic path elsewhere ---------------

for (const c of CASES) {
  test(`convert() gives the reference bytes: ${c.name}`, () => check(viaConvert, c.name, inputOf(c), c.from, c.to));
}

test("convert() gives the reference bytes: offsets, lengths and block edges", () => checkWindows(viaConvert));

test("native float16: a browser has Float16Array, so the native tests above ran there", () => {
  const inBrowser = typeof (globalThis as { document?: unknown }).document !== "undefined";
  if (inBrowser) assert.ok(nativeFloat16Available(), "this browser has no Float16Array: the native float16 tests were skipped");
});

test("float16 -> float64 goes native on V8 only (Node, Deno, Chromium), where it measured faster", () => {
  const g = globalThis as { Bun?: unknown; process?: { versions?: { v8?: string } }; navigator?: { userAgent?: string } };
  const ua = g.navigator?.userAgent ?? "";
  // What this runtime is, told by its own globals (the library reads the Error stack's format instead).
  const expected = g.Bun === undefined && (typeof g.process?.versions?.v8 === "string" || / Chrome\//.test(ua))
    ? true : g.Bun !== undefined || / Firefox\//.test(ua) || / Version\/[\d.]+ Safari\//.test(ua) ? false : undefined;
  if (expected !== undefined) assert.equal(nativeFloat16ToFloat64(), expected, `runtime: ${ua || JSON.stringify(g.process?.versions)}`);
});
