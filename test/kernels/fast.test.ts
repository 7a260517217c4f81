/**
 * Every pair `fastCast` accepts gives exactly the bytes of castReference:
 * - sources of 16 bits or fewer: every code (plus a few more, so that counts are odd and cross a
 *   block boundary), under every option that matters to the target;
 * - float32 sources: every 2^17 bucket of the encode tables at its low end, one above and its top
 *   (low 16 bits 0, 1, 0xFFFF), every float16 and bfloat16 tie and its neighbours, crafted edges,
 *   and millions of random bit patterns (uniform, and with exponents where the casts are busy);
 * - float64, int64 / uint64, int32 / uint32 sources: crafted edges (NaN payloads of both signs,
 *   +/-0, +/-Inf, subnormals, float32 ties and overflow thresholds, +/-2^31, +/-2^63, 2^53 +/- 1, ...)
 *   and random bit patterns.
 * Pairs fastCast declines must leave the output untouched. Inputs are deterministic (xorshift).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeFloat } from "../../src/dtype/minifloat.js";
import { DTYPES, dtype, type DType, type Storage } from "../../src/dtype/table.js";
import { castReference, type ResolvedCastOptions } from "../../src/kernels/reference.js";
import { fastCast } from "../../src/kernels/fast/index.js";
import { bucketBits, BUCKETS, storageFor, tableBytes } from "../../src/kernels/fast/tables.js";
import { u8View } from "../../src/kernels/fast/views.js";
import { Rng } from "../support/rng.js";

const NUMERIC: readonly DType[] = DTYPES.filter((t) => t.kind !== "string" && t.kind !== "complex");

/** The options that can change a target's bytes (the rest are ignored by both paths). */
function optionSets(to: DType): ResolvedCastOptions[] {
  if (to.name === "float8e8m0") {
    return (["up", "down", "nearest"] as const).flatMap((roundMode) => [
      { saturate: true, roundMode }, { saturate: false, roundMode },
    ]);
  }
  if (to.format && to.format.overflow !== "inf") {
    return [{ saturate: true, roundMode: "up" }, { saturate: false, roundMode: "up" }];
  }
  return [{ saturate: true, roundMode: "up" }];
}

function label(from: DType, to: DType, o: ResolvedCastOptions): string {
  const extra = to.name === "float8e8m0" ? ` saturate=${o.saturate} round=${o.roundMode}`
    : to.format && to.format.overflow === "saturable" ? ` saturate=${o.saturate}` : "";
  return `${from.name} -> ${to.name}${extra}`;
}

function hexBytes(b: Uint8Array, at: number, width: number): string {
  let s = "";
  for (let k = width - 1; k >= 0; k--) s += (b[at + k] ?? 0).toString(16).padStart(2, "0");
  return s;
}

/** Source element i as hex (little-endian bytes, packed types: the whole byte holding it). */
function describeSource(src: Storage, from: DType, i: number): string {
  const b = u8View(src);
  if (from.packed) return `byte ${hexBytes(b, Math.floor((i * from.bits) / 8), 1)}`;
  const w = from.bits / 8;
  return `0x${hexBytes(b, i * w, w)}`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  const words = a.length >>> 2;
  if (a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0) {
    const wa = new Int32Array(a.buffer, a.byteOffset, words);
    const wb = new Int32Array(b.buffer, b.byteOffset, words);
    for (let k = 0; k < words; k++) if (wa[k] !== wb[k]) return false;
  } else return false;
  for (let k = 4 * words; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

/** Compares fastCast with castReference on `count` elements; returns whether fastCast took the pair. */
function check(src: Storage, from: DType, to: DType, count: number, opts: ResolvedCastOptions): boolean {
  const fast = storageFor(to, count);
  const took = fastCast(src, from, fast, to, count, opts);
  const fb = u8View(fast);
  if (!took) {
    assert.ok(fb.every((v) => v === 0), `${label(from, to, opts)}: declined but wrote to the output`);
    return false;
  }
  const ref = storageFor(to, count);
  castReference(src, from, ref, to, count, opts);
  const rb = u8View(ref);
  assert.equal(fb.length, rb.length);
  if (sameBytes(fb, rb)) return true;
  for (let k = 0; k < rb.length; k++) {
    if (fb[k] !== rb[k]) {
      const width = to.packed ? 1 : to.bits / 8;
      const element = to.packed ? Math.floor((k * 8) / to.bits) : Math.floor(k / width);
      const at = to.packed ? k : element * width;
      assert.fail(
        `${label(from, to, opts)}: element ${element} (source ${describeSource(src, from, element)}): ` +
          `fast 0x${hexBytes(fb, at, width)}, reference 0x${hexBytes(rb, at, width)}`,
      );
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Inputs

/** Every code of a type of 16 bits or fewer, then `extra` random codes (odd counts, block edges). */
function allCodes(t: DType, extra: number, rng: Rng): { data: Storage; count: number } {
  const codes = 2 ** t.bits;
  const count = codes + extra;
  const data = storageFor(t, count);
  const code = (i: number): number => (i < codes ? i : rng.below(codes));
  if (t.packed) {
    const bytes = data as Uint8Array;
    for (let i = 0, bit = 0; i < count; i++, bit += t.bits) {
      const c = code(i);
      const at = bit >>> 3;
      const shift = bit & 7;
      bytes[at] |= (c << shift) & 0xff;
      if (shift + t.bits > 8) bytes[at + 1] |= c >>> (8 - shift);
    }
  } else {
    const view = t.bits === 8 ? u8View(data) : new Uint16Array(u8View(data).buffer);
    for (let i = 0; i < count; i++) view[i] = code(i);
  }
  return { data, count };
}

const f32Scratch = new Float32Array(1);
const f32ScratchBits = new Uint32Array(f32Scratch.buffer);
function f32Bits(x: number): number {
  f32Scratch[0] = x;
  return f32ScratchBits[0];
}

/** float32 values where integer targets decide something, and the documented edges of onnx.md. */
const VALUE_EDGES: number[] = [
  0, Infinity, 0.5, 1.5, 2.5, 0.49999997, 0.9999999, 7.5, 8, 8.5, 15.5, 16, 127.5, 128, 255.5, 256, 32767.5,
  32768, 65535.5, 65536, 2 ** 31, 2 ** 31 - 128, 2 ** 31 + 256, 2 ** 32, 2 ** 32 - 256, 2 ** 32 + 512, 2 ** 63,
  2 ** 63 - 2 ** 39, 2 ** 64, 2 ** 64 - 2 ** 40, 2 ** 24 + 2, 3e9, 1e19, 1e30, 3.4028234663852886e38,
  2 ** -126, 2 ** -149, 2 ** -127, 2 ** -128, 1.5 * 2 ** -127, 1.25 * 2 ** -127, 2 ** 127, 1.5 * 2 ** 127,
  65504, 65519, 65520, 65536, 2 ** -14, 2 ** -24, 2 ** -25, 1.5 * 2 ** -25, 448, 464, 480, 57344, 61440, 240, 248, 6, 7,
];

/** float32 bit patterns: NaN payloads and signs, Inf, subnormals, max. */
const BIT_EDGES: number[] = [
  0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fa00000, 0x7fffffff, 0xffffffff, 0x7f800000, 0xff800000,
  0x00000001, 0x007fffff, 0x80000001, 0x807fffff, 0x00400000, 0x00400001, 0x003fffff, 0x00600000, 0x005fffff,
  0x7f7fffff, 0xff7fffff, 0x7f000000, 0x7f000001, 0x80000000, 0x4f000000, 0xcf000000, 0x4effffff, 0xcf000001,
  0x4f800000, 0x4f7fffff, 0x5f000000, 0xdf000000, 0x5effffff, 0xdf000001, 0x5f800000, 0x33000000, 0x33000001,
  0x477fefff, 0x477ff000, 0x477ff001, 0x387fffff, 0x38800000,
];

function pushBits(out: number[], bits: number): void {
  out.push(bits >>> 0);
}

/** Crafted float32 patterns plus every bucket at low 16 bits 0, 1 and 0xFFFF. */
function f32Crafted(): number[] {
  const out: number[] = [];
  for (const b of BIT_EDGES) pushBits(out, b);
  for (const v of VALUE_EDGES) {
    for (const s of [v, -v]) {
      const b = f32Bits(s);
      pushBits(out, b);
      if (s === s && Math.abs(s) !== Infinity && s !== 0) pushBits(out, b + 1), pushBits(out, b - 1);
    }
  }
  for (let b = 0; b < BUCKETS; b++) pushBits(out, bucketBits(b, 1));
  for (let h = 0; h < BUCKETS / 2; h++) pushBits(out, bucketBits(2 * h + 1, 0xffff));
  return out;
}

/** Every float16 tie (the midpoint between two neighbours, and beyond max) and one float32 ulp either side. */
function f16Ties(): number[] {
  const f = dtype("float16").format!;
  const out: number[] = [];
  for (let c = 0; c <= 0x7bff; c++) {
    const a = decodeFloat(f, c);
    const b = c < 0x7bff ? decodeFloat(f, c + 1) : 65536;
    for (const sign of [1, -1]) {
      const m = f32Bits(sign * ((a + b) / 2));
      pushBits(out, m), pushBits(out, m + 1), pushBits(out, m - 1);
    }
  }
  return out;
}

/** Every bfloat16 tie: bits (c << 16) | 0x8000, and one ulp either side, for every code c. */
function bf16Ties(): number[] {
  const out: number[] = [];
  for (let c = 0; c < 0x10000; c++) {
    const m = (c << 16) | 0x8000;
    pushBits(out, m), pushBits(out, m + 1), pushBits(out, m - 1);
  }
  return out;
}

/** Random float32 bit patterns: half uniform, half with an exponent in [lo, hi]. */
function f32Random(count: number, rng: Rng, lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < count; k++) {
    const u = rng.u32();
    if ((k & 1) === 0) out.push(u);
    else out.push(((u & 0x807fffff) | ((lo + rng.below(hi - lo + 1) + 127) << 23)) >>> 0);
  }
  return out;
}

function float32Storage(bits: number[]): Float32Array {
  return new Float32Array(Uint32Array.from(bits).buffer);
}

// 64-bit sources, as word pairs.

function wordsStorage(words: number[], t: DType): Storage {
  const w = Uint32Array.from(words); // stores wrap modulo 2^32
  if (t.name === "float64") return new Float64Array(w.buffer);
  return t.kind === "int" ? new BigInt64Array(w.buffer) : new BigUint64Array(w.buffer);
}

function pushBig(out: number[], v: bigint): void {
  const u = BigInt.asUintN(64, v);
  out.push(Number(u & 0xffffffffn), Number(u >> 32n));
}

const f64Scratch = new Float64Array(1);
const f64ScratchWords = new Uint32Array(f64Scratch.buffer);
function pushF64(out: number[], x: number): void {
  f64Scratch[0] = x;
  out.push(f64ScratchWords[0], f64ScratchWords[1]);
}

function float64Words(rng: Rng, random: number): number[] {
  const out: number[] = [];
  // NaN payloads of both signs, +/-Inf, +/-0, subnormals, max.
  out.push(0, 0x7ff80000, 0, 0xfff80000, 1, 0x7ff00000, 1, 0xfff00000, 0xffffffff, 0x7fffffff, 0xffffffff, 0xffffffff);
  out.push(0, 0x7ff00000, 0, 0xfff00000, 0, 0, 0, 0x80000000, 1, 0, 1, 0x80000000, 0xffffffff, 0x000fffff);
  out.push(0xffffffff, 0x7fefffff, 0xffffffff, 0xffefffff);
  const values: number[] = [];
  for (const v of VALUE_EDGES) values.push(v);
  values.push(2 ** 128 - 2 ** 103, 2 ** -150, 3 * 2 ** -151, -2147483648.5, -2147483649, 2147483647.5, 4294967295.5);
  values.push(2 ** 31 - 0.5, 2 ** 53 + 1, 2 ** 1023, 2 ** -1074, 2 ** -1022, 1e300);
  // float32 ties: the midpoint of random neighbours (normal and subnormal), and just off it.
  for (let k = 0; k < 20000; k++) {
    const b = k < 2000 ? rng.below(0x800000) : rng.u32() & 0x7f7fffff;
    f32ScratchBits[0] = b;
    const a = f32Scratch[0];
    f32ScratchBits[0] = b + 1;
    const m = (a + f32Scratch[0]) / 2;
    values.push(m, m * (1 + 2 ** -40), m * (1 - 2 ** -40));
  }
  for (const v of values) for (const s of [v, -v]) pushF64(out, s);
  for (let k = 0; k < random; k++) {
    if ((k & 1) === 0) out.push(rng.u32(), rng.u32());
    else out.push(rng.u32(), ((rng.u32() & 0x800fffff) | ((990 + rng.below(80)) << 20)) >>> 0);
  }
  return out;
}

function int64Words(t: DType, rng: Rng, random: number): number[] {
  const out: number[] = [];
  const edges: bigint[] = [0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n + 1n, 2n ** 53n - 1n, -(2n ** 53n) - 1n];
  for (let k = 0n; k < 64n; k++) edges.push(2n ** k, 2n ** k - 1n, 2n ** k + 1n, -(2n ** k), -(2n ** k) + 1n, -(2n ** k) - 1n);
  // float32 ties above 2^24, with and without a sticky bit far below (round to odd must keep it).
  for (let e = 24n; e < 64n; e++) {
    const half = 2n ** (e - 24n);
    edges.push(2n ** e + half, 2n ** e + half + 1n, 2n ** e + 3n * half, 2n ** e + half - 1n, -(2n ** e) - half, -(2n ** e) - half - 1n);
  }
  for (const v of edges) pushBig(out, v);
  for (let k = 0; k < random; k++) {
    const lo = rng.u32();
    const hi = rng.u32();
    const len = rng.below(65);
    // Uniform bits, or a random bit length so small magnitudes (and both signs near 0) are common.
    if ((k & 1) === 0 || len === 64) out.push(lo, hi);
    else if (len <= 32) {
      const v = len === 32 ? lo : lo & ((2 ** len) - 1);
      const neg = t.kind === "int" && (hi & 1) === 1 && v !== 0;
      out.push(neg ? -v >>> 0 : v, neg ? 0xffffffff : 0); // -v in two's complement, without a BigInt
    } else out.push(lo, (hi & ((2 ** (len - 32)) - 1)) >>> 0);
  }
  return out;
}

function int32Storage(t: DType, rng: Rng, random: number): Storage {
  const values: number[] = [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 25 + 2, 255, 256, 65535, 65536];
  for (let k = 0; k < 32; k++) values.push(2 ** k, 2 ** k - 1, 2 ** k + 1, -(2 ** k), -(2 ** k) - 1);
  for (let k = 0; k < random; k++) values.push((k & 1) === 0 ? rng.u32() : rng.u32() >>> rng.below(32));
  return t.name === "int32" ? Int32Array.from(values) : Uint32Array.from(values); // stores wrap
}

// ---------------------------------------------------------------------------------------------
// The tests

/** Runs every target and option set for one source input; returns the pairs fastCast took. */
function sweep(from: DType, src: Storage, count: number, targets: readonly DType[] = NUMERIC): string[] {
  const took: string[] = [];
  for (const to of targets) {
    if (to === from) continue;
    for (const o of optionSets(to)) if (check(src, from, to, count, o)) took.push(label(from, to, o));
  }
  return took;
}

const accepted = new Set<string>();
function note(pairs: string[]): void {
  for (const p of pairs) accepted.add(p);
}

test("sources of 16 bits or fewer: every code, every target, every option", () => {
  const rng = new Rng(0x5eed0016);
  for (const from of NUMERIC) {
    if (from.bits > 16) continue;
    // 4101 extra codes: odd counts, and more than one 4096-element block for 8-bit sources too.
    const { data, count } = allCodes(from, from.bits === 16 ? 5 : 4101, rng);
    note(sweep(from, data, count));
  }
});

test("float32 sources: every encode-table bucket, float16 / bfloat16 ties, edges, random bits", () => {
  const rng = new Rng(0x5eed0032);
  const crafted = f32Crafted();
  const common = float32Storage([...crafted, ...f32Random(262144, rng, -40, 70)]);
  const F32 = dtype("float32");
  note(sweep(F32, common, common.length));

  // The busiest targets get millions more.
  const f16 = float32Storage([...f16Ties(), ...f32Random(2_000_000, rng, -28, 18)]);
  note(sweep(F32, f16, f16.length, [dtype("float16")]));
  const bf16 = float32Storage([...bf16Ties(), ...f32Random(2_000_000, rng, -140, 128)]);
  note(sweep(F32, bf16, bf16.length, [dtype("bfloat16")]));
  const narrow = float32Storage(f32Random(500_000, rng, -30, 20));
  const float8 = NUMERIC.filter((t) => t.name.startsWith("float8"));
  note(sweep(F32, narrow, narrow.length, float8));
});

test("float64 sources: NaN payloads, float32 ties and thresholds, integer edges, random bits", () => {
  const rng = new Rng(0x5eed0064);
  const F64 = dtype("float64");
  const words = float64Words(rng, 150_000);
  note(sweep(F64, wordsStorage(words, F64), words.length / 2));
  // float64 -> float32 gets millions more.
  const deep = float64Words(rng, 2_000_000);
  note(sweep(F64, wordsStorage(deep, F64), deep.length / 2, [dtype("float32")]));
});

/**
 * The midpoints between neighbouring finite values of `t` (decoded by the reference), and points
 * just off them by far less than a float32 ulp: where rounding through float32 to nearest would
 * land on the midpoint and round a second time.
 */
function midpoints(t: DType): number[] {
  const codes = allCodes(t, 0, new Rng(1));
  const values = storageFor(dtype("float64"), codes.count) as Float64Array;
  castReference(codes.data, t, values, dtype("float64"), codes.count, { saturate: true, roundMode: "up" });
  const sorted = [...new Set(Array.from(values).filter((v) => Number.isFinite(v)))].sort((a, b) => a - b);
  const out: number[] = [];
  for (let i = 0; i + 1 < sorted.length; i++) {
    const m = (sorted[i] + sorted[i + 1]) / 2;
    const d = Math.max(Math.abs(m) * 2 ** -45, 2 ** -1074);
    out.push(m, m + d, m - d);
  }
  return out;
}

test("float64, int32 and int64 sources -> float16, bfloat16, float8, float6, float4: one rounding (midpoints with sticky bits)", () => {
  const narrow = NUMERIC.filter((t) => t.format && t.bits <= 16 && t.name !== "float8e8m0");
  const F64 = dtype("float64");
  for (const t of narrow) {
    const values = midpoints(t);
    const words: number[] = [];
    for (const v of values) pushF64(words, v);
    // Beyond the float32 range, where float32 rounding to odd stops at +/-max.
    for (const v of [2 ** 128, -(2 ** 128), 1e300, -1e300, 2 ** -150, 2 ** -160, -(2 ** -200)]) pushF64(words, v);
    const took = sweep(F64, wordsStorage(words, F64), words.length / 2, narrow);
    assert.ok(took.some((p) => p.startsWith(`float64 -> ${t.name}`)), `float64 -> ${t.name} should be fast`);
    note(took);
  }
  // Integers: bfloat16 midpoints above 2^24 plus and minus 1 (float32 would round them to the midpoint).
  const ints: bigint[] = [];
  for (let e = 9n; e < 63n; e++) {
    for (const k of [0n, 1n, 5n, 77n, 127n]) {
      const ulp = 2n ** (e - 7n);
      const m = 2n ** e + k * ulp + ulp / 2n;
      ints.push(m, m + 1n, m - 1n, -m, -m - 1n, -m + 1n);
    }
  }
  for (const name of ["int64", "uint64"] as const) {
    const t = dtype(name);
    const words: number[] = [];
    for (const v of ints) if (t.kind === "int" || v >= 0n) pushBig(words, v);
    note(sweep(t, wordsStorage(words, t), words.length / 2, narrow));
  }
  const i32 = Int32Array.from(ints.filter((v) => v >= -(2n ** 31n) && v < 2n ** 31n), Number);
  note(sweep(dtype("int32"), i32, i32.length, narrow));
  const u32 = Uint32Array.from(ints.filter((v) => v >= 0n && v < 2n ** 32n), Number);
  note(sweep(dtype("uint32"), u32, u32.length, narrow));
});

test("int64 / uint64 sources: powers of two, float32 ties with sticky bits, random words", () => {
  const rng = new Rng(0x5eed0007);
  for (const name of ["int64", "uint64"] as const) {
    const t = dtype(name);
    const words = int64Words(t, rng, 100_000);
    note(sweep(t, wordsStorage(words, t), words.length / 2));
  }
  // int64 -> int32 and int64 -> float32 (round to odd) get millions more.
  const t = dtype("int64");
  const deep = int64Words(t, rng, 2_000_000);
  note(sweep(t, wordsStorage(deep, t), deep.length / 2, [dtype("int32"), dtype("float32")]));
});

test("int32 / uint32 sources: edges and random values", () => {
  const rng = new Rng(0x5eed0006);
  for (const name of ["int32", "uint32"] as const) {
    const t = dtype(name);
    const src = int32Storage(t, rng, 100_000);
    note(sweep(t, src, src.length));
  }
});

test("storages at a non-zero byte offset, aligned to 4 bytes or not", () => {
  const rng = new Rng(0x5eed0008);
  const pairs: [string, string][] = [
    ["float32", "float16"], ["float32", "bfloat16"], ["float32", "float8e4m3fn"], ["float32", "float8e8m0"],
    ["float32", "int8"], ["float32", "uint4"], ["float32", "float4e2m1"], ["float32", "float64"],
    ["float16", "float32"], ["bfloat16", "float32"], ["float16", "float4e2m1"], ["float16", "float8e5m2"],
    ["float8e5m2", "float32"], ["float8e4m3fn", "float16"], ["float8e4m3fn", "uint8"], ["uint8", "float64"],
    ["int64", "int32"], ["float64", "float32"], ["int32", "int64"],
  ];
  for (const [a, b] of pairs) {
    const from = dtype(a);
    const to = dtype(b);
    // 8 bytes in, and the smallest offset the container allows that is not a multiple of 4.
    const offsets = (t: DType): number[] => [8, t.packed || t.bits === 8 ? 1 : t.bits === 16 ? 2 : t.bits === 32 ? 4 : 8];
    for (const so of offsets(from)) {
      for (const dof of offsets(to)) {
        for (const count of [1001, 4099]) {
          const srcBytes = storageFor(from, count);
          const raw = u8View(srcBytes);
          for (let k = 0; k < raw.length; k++) raw[k] = rng.u32();
          const srcHost = new Uint8Array(raw.length + 16);
          srcHost.set(raw, so);
          const src = sliceAs(from, srcHost, so, count);
          const dstHost = new Uint8Array(u8View(storageFor(to, count)).length + 16);
          const dst = sliceAs(to, dstHost, dof, count);
          const opts: ResolvedCastOptions = { saturate: true, roundMode: "up" };
          const what = `${a} -> ${b}, ${count} elements at byte offsets ${so} -> ${dof}`;
          assert.ok(fastCast(src, from, dst, to, count, opts), `${what}: taken`);
          const ref = storageFor(to, count);
          castReference(srcBytes, from, ref, to, count, opts);
          assert.deepEqual(u8View(dst), u8View(ref), what);
          const outside = [...dstHost.subarray(0, dof), ...dstHost.subarray(dof + u8View(ref).length)];
          assert.ok(outside.every((v) => v === 0), `${what}: wrote outside its output`);
        }
      }
    }
  }
});

function sliceAs(t: DType, host: Uint8Array, offset: number, count: number): Storage {
  const length = t.packed ? Math.ceil((count * t.bits) / 8) : count;
  switch (t.array) {
    case "Float32Array": return new Float32Array(host.buffer, offset, length);
    case "Float64Array": return new Float64Array(host.buffer, offset, length);
    case "Int8Array": return new Int8Array(host.buffer, offset, length);
    case "Uint8Array": return new Uint8Array(host.buffer, offset, length);
    case "Int16Array": return new Int16Array(host.buffer, offset, length);
    case "Uint16Array": return new Uint16Array(host.buffer, offset, length);
    case "Int32Array": return new Int32Array(host.buffer, offset, length);
    case "Uint32Array": return new Uint32Array(host.buffer, offset, length);
    case "BigInt64Array": return new BigInt64Array(host.buffer, offset, length);
    case "BigUint64Array": return new BigUint64Array(host.buffer, offset, length);
    default: throw new Error(t.name);
  }
}

test("the pairs the issue names are covered, and the tables stay under 2 MiB", () => {
  const wanted = [
    "float32 -> float16", "float16 -> float32", "float32 -> bfloat16", "bfloat16 -> float32",
    "float32 -> float8e4m3fn saturate=true", "float32 -> float8e4m3fn saturate=false",
    "float32 -> float8e4m3fnuz saturate=false", "float32 -> float8e5m2 saturate=true",
    "float32 -> float8e5m2fnuz saturate=true", "float8e4m3fn -> float32", "float8e4m3fnuz -> float32",
    "float8e5m2 -> float32", "float8e5m2fnuz -> float32", "float8e8m0 -> float32",
    "float32 -> float8e8m0 saturate=true round=up", "float32 -> int8", "float32 -> uint8", "float32 -> int16",
    "float32 -> int32", "float32 -> uint32", "int64 -> int32", "float64 -> float32", "float32 -> uint4",
    "float32 -> int4", "float32 -> float4e2m1", "float64 -> float16", "float64 -> bfloat16",
    "float64 -> float8e4m3fn saturate=false", "int64 -> bfloat16", "int32 -> float16",
  ];
  for (const w of wanted) assert.ok(accepted.has(w), `fastCast should take ${w}`);
  const bytes = tableBytes();
  assert.ok(bytes <= 2 * 1024 * 1024, `tables use ${bytes} bytes`);
  console.log(`fastCast took ${accepted.size} (pair, options) configurations; tables ${(bytes / 1024).toFixed(0)} KiB`);
});
