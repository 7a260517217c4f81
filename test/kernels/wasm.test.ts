/**
 * The WebAssembly SIMD kernels give exactly the bytes of castReference:
 * - float16 -> float32 and bfloat16 -> float32: every code, in arrays whose lengths cross chunk
 *   and group boundaries;
 * - float32 -> float16 and -> bfloat16: every float16 and bfloat16 value, tie and their neighbours,
 *   crafted edges (subnormals, overflow thresholds, Inf, NaN payloads of both signs), and millions
 *   of random bit patterns (uniform, and with exponents where the casts are busy);
 * - float32 -> int8 / uint8: edges (+/-0, +/-2^31, 2^31 - 128, below -2^31, +/-Inf, NaNs of both signs
 *   and payloads, 127.9, -128.9, 255.5...), every power of two and its neighbours, every multiple of
 *   1/8 in [-600, 600], and millions of random patterns; with the relaxed-SIMD build (where the
 *   engine has relaxed SIMD, whose truncation of NaN and out-of-range lanes differs by CPU) and the
 *   plain one;
 * - float64 -> float32: every float32 binade (subnormals and overflow included) with the value, the
 *   tie to the next float32 and their float64 neighbours (sticky bits), NaN payloads, float64
 *   subnormals, and millions of random patterns; int64 -> int32: edges and random patterns;
 * - every 8-bit source -> float32 / int32 / uint32 (the table kernel): every code under several
 *   option sets, the table switched between calls;
 * - counts 0 to 33 and around the 16384-element chunk, views at odd element offsets;
 * - pairs without a kernel return false and write nothing.
 * With TENSORCAST_EXHAUSTIVE=1, also all 2^32 float32 patterns against fastCast's scalar kernels
 * (themselves checked against castReference in fast.test.ts; castReference alone would take minutes).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { dtype, DTYPES, type DType, type Storage } from "../../src/dtype/table.js";
import { castReference, type ResolvedCastOptions } from "../../src/kernels/reference.js";
import { fastCast } from "../../src/kernels/fast/index.js";
import { useWasmBuild, wasmAvailable, wasmCast, wasmRelaxed } from "../../src/kernels/wasm/index.js";
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

test("bfloat16 -> float32: every code, bit for bit, also from and into unaligned views", () => {
  const n = 4 * 0x10000 + 2 * CHUNK + 13;
  const h = new Uint16Array(n + 1);
  for (let i = 0; i < n + 1; i++) h[i] = (i * 40503) & 0xffff;
  for (let i = 0; i < 0x10000; i++) h[i] = i;
  check(h.subarray(0, n), BF16, F32);
  for (const count of [1, 7, 8, 9, 4097]) {
    const src = h.subarray(1, 1 + count); // byteOffset 2
    const backing = new Float32Array(count + 2).fill(1.5);
    const got = backing.subarray(1, 1 + count);
    const want = new Float32Array(count);
    assert.equal(wasmCast(src, BF16, got, F32, count, OPTS), true);
    castReference(src, BF16, want, F32, count, OPTS);
    assert.deepEqual(new Uint32Array(got.buffer, got.byteOffset, count), new Uint32Array(want.buffer), `count ${count}`);
    assert.equal(backing[0], 1.5);
    assert.equal(backing[count + 1], 1.5, "nothing written past the end");
  }
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

// ---- float32 -> int8 / uint8, float64 -> float32, int64 -> int32 -------------------------------

const F64 = dtype("float64");
const I8 = dtype("int8");
const U8 = dtype("uint8");
const I32 = dtype("int32");
const I64 = dtype("int64");

type Wide = Float32Array | Float64Array | BigInt64Array | Int8Array | Uint8Array | Int32Array;

function arrayFor(t: DType, n: number): Wide {
  switch (t.name) {
    case "float32": return new Float32Array(n);
    case "float64": return new Float64Array(n);
    case "int64": return new BigInt64Array(n);
    case "int8": return new Int8Array(n);
    case "uint8": return new Uint8Array(n);
    case "int32": return new Int32Array(n);
    default: throw new Error(t.name);
  }
}

/** Element i of `a` as hex of its bits (64-bit as two words). */
function bitsAt(a: Wide, i: number): string {
  const bytes = a.BYTES_PER_ELEMENT;
  const u = new Uint8Array(a.buffer, a.byteOffset + i * bytes, bytes);
  let h = "";
  for (let j = bytes - 1; j >= 0; j--) h += u[j].toString(16).padStart(2, "0");
  return `0x${h}`;
}

/** wasmCast against castReference, byte for byte; a failure names the first differing elements. */
function checkWide(src: Wide, from: DType, to: DType): number {
  const n = src.length;
  const got = arrayFor(to, n);
  const want = arrayFor(to, n);
  assert.equal(wasmCast(src, from, got, to, n, OPTS), true);
  castReference(src, from, want, to, n, OPTS);
  const g = new Uint8Array(got.buffer);
  const w = new Uint8Array(want.buffer);
  const size = got.BYTES_PER_ELEMENT;
  const bad: string[] = [];
  for (let b = 0; b < g.length && bad.length < 5; b++) {
    if (g[b] !== w[b]) {
      const i = Math.floor(b / size);
      bad.push(`[${i}] ${bitsAt(src, i)}: got ${bitsAt(got, i)}, want ${bitsAt(want, i)}`);
      b = (i + 1) * size - 1;
    }
  }
  assert.deepEqual(bad, [], `${from.name} -> ${to.name}`);
  return n;
}

/** float64 from [hi, lo] word pairs. */
function f64Of(pairs: readonly (readonly [number, number])[]): Float64Array {
  const w = new Uint32Array(2 * pairs.length);
  pairs.forEach(([hi, lo], i) => { w[2 * i] = lo >>> 0; w[2 * i + 1] = hi >>> 0; });
  return new Float64Array(w.buffer);
}

const INT_EDGES = [
  0, -0, 2 ** 31, -(2 ** 31), 2 ** 31 - 128, -(2 ** 31) - 1, -(2 ** 31) - 256, 2 ** 32, -(2 ** 32), 2 ** 31 + 256,
  Infinity, -Infinity, 127.9, -128.9, 255.5, 256, -129, 128, -128, 127, 255, -1, 1, 0.5, -0.5, 0.99999994,
  -0.99999994, 1.5, -1.5, 2.5, -2.5, 2 ** 24, 2 ** 24 + 2, 2 ** 30 + 192, -(2 ** 30) - 192, 3.4028234663852886e38,
  -3.4028234663852886e38, 1e-45, -1e-45,
];
const F32_NANS = [0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fa00000, 0xffa5a5a5, 0x7fffffff, 0xffffffff];

/**
 * Runs `body` with the kernels as they load by default ("auto": relaxed SIMD where the engine has
 * it) and then without relaxed SIMD ("plain"), so that both builds of f32_i8 are checked wherever
 * the engine validates the relaxed one.
 */
function eachBuild(name: string, body: () => void): void {
  for (const build of ["auto", "plain"] as const) {
    test(`${name} (${build} build)`, () => {
      useWasmBuild(build);
      try {
        if (build === "plain") assert.equal(wasmRelaxed(), false);
        body();
      } finally {
        useWasmBuild("auto");
      }
    });
  }
}

test("the kernels use relaxed SIMD where the engine has it: from Node 22 (V8 11.4) on, not on Node 20", () => {
  const node = (globalThis as { process?: { versions?: { node?: string; bun?: string } } }).process?.versions;
  const major = node?.node && !node.bun ? Number(node.node.split(".")[0]) : undefined;
  const isDeno = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
  if (major !== undefined && !isDeno) assert.equal(wasmRelaxed(), major >= 22, `Node ${major}`);
  const api = (globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly;
  assert.equal(wasmRelaxed(), api.validate(kernelModule(2, { relaxed: true })));
});

eachBuild("float32 -> int8 and uint8: edges, every power of two and its neighbours, random patterns, bit for bit", () => {
  const bits: number[] = [...new Uint32Array(Float32Array.from(INT_EDGES).buffer), ...F32_NANS];
  // Around every power of two (every exponent, both signs): the power, its neighbours, the binade's top.
  for (let e = 0; e < 256; e++) {
    for (const sign of [0, 0x80000000]) {
      const p = (sign | (e << 23)) >>> 0;
      bits.push(p, p + 1, p - 1, p + 0x7fffff, p + 0x400000, p + 0x3fffff, p + 0x400001);
    }
  }
  // Every multiple of 1/8 in [-600, 600]: truncation of fractions near every byte value.
  for (let i = -4800; i <= 4800; i++) bits.push(new Uint32Array(Float32Array.of(i / 8).buffer)[0]);
  const edges = f32Of(bits);
  let checked = 0;
  for (const to of [I8, U8]) checked += checkWide(edges, F32, to);
  const rng = new Rng(0x510e527f);
  const n = 3_000_000;
  const w = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const u = rng.u32();
    // a third uniform; the rest with exponents 2^-2 .. 2^33, where truncation and the int32 range bite
    w[i] = i % 3 === 0 ? u : (u & 0x807fffff) | ((125 + (rng.u32() % 36)) << 23);
  }
  const random = new Float32Array(w.buffer);
  for (const to of [I8, U8]) checked += checkWide(random, F32, to);
  assert.ok(checked > 6_000_000);
});

/** float64 bits [hi, lo] of x. */
function wordsOfF64(x: number): [number, number] {
  const w = new Uint32Array(Float64Array.of(x).buffer);
  return [w[1], w[0]];
}

/** The float64 whose bits are those of `[hi, lo]` plus d (a small signed integer), as [hi, lo]. */
function stepF64([hi, lo]: [number, number], d: number): [number, number] {
  const v = BigInt(hi >>> 0) * 2n ** 32n + BigInt(lo >>> 0) + BigInt(d);
  const m = BigInt.asUintN(64, v);
  return [Number(m >> 32n), Number(m & 0xffffffffn)];
}

test("float64 -> float32: every kind of float32 tie with sticky bits, overflow, subnormals, NaN payloads, random, bit for bit", () => {
  const pairs: [number, number][] = [
    [0, 0], [0x80000000, 0], [0x7ff00000, 0], [0xfff00000, 0], [0x7ff00000, 1], [0xfff00000, 1], [0x7ff80000, 0],
    [0xfff80000, 0], [0x7fffffff, 0xffffffff], [0xffffffff, 0xffffffff], [0x7ff00001, 0], [0xfff12345, 0x6789abcd],
    [0, 1], [0x80000000, 1], [0x000fffff, 0xffffffff], [0x00100000, 0], [0x7fefffff, 0xffffffff], [0xffefffff, 0xffffffff],
    wordsOfF64(2 ** 128), wordsOfF64(-(2 ** 128)), wordsOfF64(2 ** -150), wordsOfF64(-(2 ** -150)), wordsOfF64(2 ** -151),
    wordsOfF64(3 * 2 ** -150), wordsOfF64(2 ** -149), wordsOfF64(2 ** -126), wordsOfF64(2 ** -126 - 2 ** -150),
    ...F32_NANS.map((b): [number, number] => [b, 0]), ...F32_NANS.map((b): [number, number] => [b, 0x1234]),
  ];
  // Every float32 binade, both signs, with several mantissas (subnormals and the largest included):
  // the value, the tie to the next float32 up in magnitude (2^128 after the largest: the overflow
  // threshold), and float64 neighbours of both at distances 1, 2, 2^20 and 2^27 ulps (sticky bits).
  const mantissas = [0, 1, 2, 3, 0x155555, 0x2aaaaa, 0x400000, 0x7ffffe, 0x7fffff];
  const f32 = new Float32Array(1);
  const f32bits = new Uint32Array(f32.buffer);
  for (let e = 0; e < 255; e++) {
    for (const sign of [0, 0x80000000]) {
      for (const m of mantissas) {
        f32bits[0] = (sign | (e << 23) | m) >>> 0;
        const v = f32[0];
        f32bits[0] += 1;
        const next = Number.isFinite(f32[0]) ? f32[0] : sign ? -(2 ** 128) : 2 ** 128;
        const mid = (v + next) / 2; // exact in float64
        for (const base of [wordsOfF64(v), wordsOfF64(mid)]) {
          for (const d of [0, 1, -1, 2, -2, 1 << 20, -(1 << 20), 1 << 27, -(1 << 27)]) pairs.push(stepF64(base, d));
        }
      }
    }
  }
  let checked = checkWide(f64Of(pairs), F64, F32);
  const rng = new Rng(0x9b05688c);
  const n = 2_000_000;
  const w = new Uint32Array(2 * n);
  for (let i = 0; i < n; i++) {
    w[2 * i] = rng.u32();
    const hi = rng.u32();
    // half uniform; half with exponents 2^-160 .. 2^129 (float32's range, its subnormals and overflow),
    // a quarter of those with the low 29 bits a tie or next to one
    w[2 * i + 1] = i % 2 === 0 ? hi : (hi & 0x800fffff) | ((1023 - 160 + (rng.u32() % 290)) << 20);
    if (i % 4 === 1) w[2 * i] = (w[2 * i] & 0xe0000000) | [0x10000000, 0x10000001, 0x0fffffff, 0][rng.u32() & 3];
  }
  checked += checkWide(new Float64Array(w.buffer), F64, F32);
  assert.ok(checked > 2_000_000);
});

test("int64 -> int32: edges and random patterns, bit for bit", () => {
  const edges = BigInt64Array.from([
    0n, 1n, -1n, 2n ** 31n - 1n, 2n ** 31n, -(2n ** 31n), -(2n ** 31n) - 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 32n + 5n,
    -(2n ** 32n), 2n ** 63n - 1n, -(2n ** 63n), 0x123456789abcdef0n, -0x123456789abcdef0n,
  ]);
  let checked = checkWide(edges, I64, I32);
  const rng = new Rng(0x1f83d9ab);
  const n = 1_000_000;
  const w = new Uint32Array(2 * n);
  for (let i = 0; i < 2 * n; i++) w[i] = rng.u32();
  checked += checkWide(new BigInt64Array(w.buffer), I64, I32);
  assert.ok(checked > 1_000_000);
});

test("float32 -> int8 / uint8, float64 -> float32, int64 -> int32: every count around groups and chunks, offset views", () => {
  const rng = new Rng(0xa54ff53a);
  const counts = [0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, CHUNK - 1, CHUNK, CHUNK + 1, CHUNK + 15, CHUNK + 16, 2 * CHUNK + 9];
  const cases: [DType, DType][] = [[F32, I8], [F32, U8], [F64, F32], [I64, I32]];
  for (const count of counts) {
    for (const [from, to] of cases) {
      const size = from.bits / 8;
      const words = new Uint32Array(((count + 3) * size) / 4);
      for (let i = 0; i < words.length; i++) {
        const u = rng.u32();
        // float sources: mostly values where the cast is busy (int8: |x| < 2^9; float64: float32's range)
        words[i] = from === F32 && i % 4 !== 0 ? (u & 0x807fffff) | ((120 + (u % 16)) << 23)
          : from === F64 && i % 2 === 1 && i % 8 !== 1 ? (u & 0x800fffff) | ((1023 - 150 + (u % 280)) << 20) : u;
      }
      const src = (from === F32 ? new Float32Array(words.buffer, 4, count) // one element in
        : from === F64 ? new Float64Array(words.buffer, 8, count) : new BigInt64Array(words.buffer, 8, count)) as Wide;
      const backing = arrayFor(to, count + 3);
      const sentinel = new Uint8Array(backing.buffer).fill(0xab);
      const got = backing.subarray(1, 1 + count) as Wide; // int8: odd byte offset
      const want = arrayFor(to, count);
      assert.equal(wasmCast(src, from, got, to, count, OPTS), true);
      castReference(src, from, want, to, count, OPTS);
      const gb = new Uint8Array(got.buffer, got.byteOffset, got.byteLength);
      assert.deepEqual(gb, new Uint8Array(want.buffer), `${from.name} -> ${to.name}, count ${count}`);
      const e = to.bits / 8;
      for (let b = 0; b < e; b++) assert.equal(sentinel[b], 0xab, "nothing written before the start");
      for (let b = (count + 1) * e; b < sentinel.length; b++) assert.equal(sentinel[b], 0xab, "nothing written past the end");
    }
  }
});

test("8-bit sources -> float32 / int32 / uint32: every code under every option set, tables switched between calls", () => {
  const sources = DTYPES.filter((t) => t.bits === 8 && !t.packed && t.kind !== "string");
  const targets = [F32, dtype("int32"), dtype("uint32")];
  const optionSets: ResolvedCastOptions[] = [
    OPTS, { saturate: false, roundMode: "up" }, { saturate: true, roundMode: "down" }, { saturate: false, roundMode: "nearest" },
  ];
  const count = 2 * CHUNK + 256 + 13; // every code, across chunks, a partial group at the end
  const bytes = new Uint8Array(count + 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 167 + (i >>> 8)) & 0xff;
  for (let c = 0; c < 256; c++) bytes[1 + c] = c;
  let checked = 0;
  // Each round visits every (source, target, options): consecutive calls need different tables.
  for (let round = 0; round < 2; round++) {
    for (const opts of optionSets) {
      for (const from of sources) {
        // A view at byte offset 1, typed as the source's storage.
        const src = from.array === "Int8Array" ? new Int8Array(bytes.buffer, 1, count) : new Uint8Array(bytes.buffer, 1, count);
        for (const to of targets) {
          const backing = new Uint32Array(count + 2).fill(0xdeadbeef);
          const got = to.array === "Float32Array" ? new Float32Array(backing.buffer, 4, count)
            : to.array === "Int32Array" ? new Int32Array(backing.buffer, 4, count) : new Uint32Array(backing.buffer, 4, count);
          const want = got instanceof Float32Array ? new Float32Array(count) : got instanceof Int32Array ? new Int32Array(count) : new Uint32Array(count);
          assert.equal(wasmCast(src, from, got, to, count, opts), true, `${from.name} -> ${to.name}`);
          castReference(src, from, want, to, count, opts);
          const g = new Uint32Array(got.buffer, got.byteOffset, count);
          const w = new Uint32Array(want.buffer);
          for (let i = 0; i < count; i++) {
            if (g[i] !== w[i]) assert.fail(`${from.name} -> ${to.name} ${JSON.stringify(opts)}: element ${i} (code ${src[i]}): got ${hex(g[i], 8)}, want ${hex(w[i], 8)}`);
          }
          assert.equal(backing[0], 0xdeadbeef);
          assert.equal(backing[count + 1], 0xdeadbeef, "nothing written past the end");
          checked++;
        }
      }
    }
  }
  assert.equal(checked, 2 * optionSets.length * sources.length * targets.length);
});

test("pairs without a kernel return false and write nothing", () => {
  const pairs: [DType, DType][] = [
    [F16, BF16], [BF16, dtype("float64")], [F32, F32], [F16, F16], [dtype("float64"), F16], [F32, dtype("int16")],
    [dtype("uint64"), dtype("int32")], [dtype("int64"), dtype("uint32")], [F32, dtype("float8e4m3fn")],
  ];
  for (const [from, to] of pairs) {
    const src = from.name === "int64" ? new BigInt64Array(8).fill(1n) : from.name === "uint64" ? new BigUint64Array(8).fill(1n)
      : from.name === "float64" ? new Float64Array(8).fill(1)
      : from.name === "float32" ? new Float32Array(8).fill(1) : new Uint16Array(8).fill(0x3c00);
    const dst = to.name === "float32" ? new Float32Array(8) : to.name === "int32" ? new Int32Array(8)
      : to.name === "uint32" ? new Uint32Array(8)
      : to.bits === 8 ? new Uint8Array(8) : new Uint16Array(8);
    assert.equal(wasmCast(src as Storage, from, dst as Storage, to, 8, OPTS), false, `${from.name} -> ${to.name}`);
    assert.ok((dst as Uint8Array).every((v: number) => v === 0), `${from.name} -> ${to.name} wrote nothing`);
  }
});

/** Whether TENSORCAST_EXHAUSTIVE=1 is set (never in a browser, where this file also runs: test/browser/support.ts). */
const EXHAUSTIVE = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.TENSORCAST_EXHAUSTIVE === "1";

test("all 2^32 float32 patterns against the scalar kernels (TENSORCAST_EXHAUSTIVE=1)", { skip: EXHAUSTIVE ? false : "set TENSORCAST_EXHAUSTIVE=1 to run it (Node)" }, () => {
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
