/**
 * The WebAssembly SIMD encoders of the types without a search (src/ggml/quantize/blocks-simd.ts:
 * F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 without an importance matrix) against the reference
 * encoders, bit for bit: weight-like rows at scales 2^-40 .. 2^40, rows of adversarial blocks
 * (zeros, constants, subnormals, values near FLT_MAX, roundf's halves, NaN and Inf, NaN payloads),
 * blocks whose largest magnitude comes twice with both signs (the first one decides Q4_0 / Q5_0),
 * every float32 bit pattern class for F16 and BF16 (the thresholds of their roundings), and
 * lengths that end inside a chunk of the kernels and inside a group of four blocks.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createArena } from "../../src/arena.js";
import { TensorcastError } from "../../src/errors.js";
import { ggmlType, quantizeRows, quantizeRowsInto } from "../../src/ggml/index.js";
import { encodeBlocksSimd, type BlockTypeName } from "../../src/ggml/quantize/blocks-simd.js";
import { useGgmlQuantizeSimd } from "../../src/ggml/quantize/search-simd.js";
import { encodeSmallSimd, type SmallTypeName } from "../../src/ggml/quantize/small-simd.js";
import { Rng } from "../support/rng.js";
import { adversarialRows, ROW_KINDS } from "./rows.js";

const TYPES: BlockTypeName[] = ["Q8_0", "F16", "BF16", "Q4_0", "Q5_0", "Q4_1", "Q5_1"];
const SMALL: SmallTypeName[] = ["TQ1_0", "TQ2_0", "MXFP4"];

function byteDifference(a: Uint8Array, b: Uint8Array, typeSize: number): string | undefined {
  if (a.length !== b.length) return `lengths ${a.length} and ${b.length}`;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return `byte ${i} (block ${Math.floor(i / typeSize)}, offset ${i % typeSize}): SIMD 0x${a[i].toString(16)}, reference 0x${b[i].toString(16)}`;
  }
  return undefined;
}

function assertSame(type: string, x: Float32Array, n: number, what: string): void {
  const fast = quantizeRows(type, x, n);
  useGgmlQuantizeSimd(false);
  let ref: Uint8Array;
  try {
    ref = quantizeRows(type, x, n);
  } finally {
    useGgmlQuantizeSimd(true);
  }
  const diff = byteDifference(fast, ref, ggmlType(type).typeSize);
  if (diff !== undefined) assert.fail(`${type}, ${what}: ${diff}`);
}

function gaussianRows(rows: number, n: number, seed: number, e: number): Float32Array {
  const rng = new Rng(seed);
  const u = (): number => (rng.u32() + 0.5) / 2 ** 32;
  const x = new Float32Array(rows * n);
  for (let i = 0; i < x.length; i++) x[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * 2 ** e * (rng.below(32) === 0 ? 6 : 1);
  return x;
}

/** Blocks of smaller values with the largest magnitude at two or three places, of either sign. */
function tiedRows(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const x = new Float32Array(n);
  for (let at = 0; at < n; at += 32) {
    const m = 2 ** (rng.below(41) - 20) * (1 + rng.below(8) / 8);
    for (let j = 0; j < 32; j++) x[at + j] = m * (rng.below(2000) - 1000) / 1001;
    for (let k = 2 + rng.below(2); k > 0; k--) x[at + rng.below(32)] = rng.below(2) === 0 ? m : -m;
  }
  return x;
}

/** Float32 bit patterns around each threshold of the F16 and BF16 roundings, and random ones. */
function edgeBits(seed: number): Float32Array {
  const rng = new Rng(seed);
  const edges = [0, 0x00000001, 0x007fffff, 0x00800000, 0x33000000, 0x33800000, 0x387fe000, 0x387ff000, 0x387fffff, 0x38800000, 0x38801000,
    0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fc00000, 0x7fffffff];
  const u: number[] = [];
  for (const e of edges) for (const sign of [0, 0x80000000]) for (let d = -3; d <= 3; d++) u.push(((e + d) >>> 0 | sign) >>> 0);
  // Halfway cases of both roundings, even and odd.
  for (let k = 0; k < 2000; k++) u.push((((rng.u32() & 0xffff0000) | (rng.below(2) === 0 ? 0x8000 : 0x1000)) ^ (rng.below(2) << 13)) >>> 0);
  for (let k = 0; k < 20000; k++) u.push(rng.u32() >>> 0);
  return new Float32Array(new Uint32Array(u).buffer);
}

test("the per-block SIMD kernels are available here", () => {
  for (const type of TYPES) assert.equal(encodeBlocksSimd(type, new Float32Array(32), 0, 32, new Uint8Array(64), 0), true, type);
  for (const type of SMALL) assert.equal(encodeSmallSimd(type, new Float32Array(256), 0, 256, new Uint8Array(256), 0), true, type);
});

for (const type of [...TYPES, ...SMALL]) {
  test(`${type}: the SIMD kernel gives the reference's bytes on weight-like rows at scales 2^-40 .. 2^40`, () => {
    for (let e = -40; e <= 40; e += 4) assertSame(type, gaussianRows(3, 1024, 0x100 + e, e), 1024, `scale 2^${e}`);
  });
  test(`${type}: the SIMD kernel gives the reference's bytes on adversarial blocks, NaN payloads included`, () => {
    for (let seed = 1; seed <= 40; seed++) assertSame(type, adversarialRows(4, 512, 32, seed * 11 + 3, ROW_KINDS), 512, `seed ${seed}`);
  });
  test(`${type}: the SIMD kernel gives the reference's bytes on blocks whose largest magnitude repeats with either sign`, () => {
    for (let seed = 1; seed <= 20; seed++) assertSame(type, tiedRows(2048, seed), 256, `seed ${seed}`);
  });
  test(`${type}: the SIMD kernel gives the reference's bytes on lengths ending inside a chunk and a group`, () => {
    const b = ggmlType(type).blockSize;
    for (const blocks of [1, 3, 5, 512, 512 + 5, 3 * 512 + 3]) assertSame(type, gaussianRows(1, blocks * b, blocks, -3), blocks * b, `${blocks * b} values`);
    const x = gaussianRows(7, 3 * b, 5, 0);
    assertSame(type, x, 3 * b, `7 rows of ${3 * b}`);
  });
}

for (const type of ["F16", "BF16"]) {
  test(`${type}: the SIMD kernel gives the reference's bytes around every threshold of the rounding, and on lengths of any count`, () => {
    const x = edgeBits(0xf16);
    assertSame(type, x, x.length, "edge bit patterns");
    for (const n of [1, 3, 7, 127, 129, 16383, 16385]) assertSame(type, edgeBits(n).subarray(0, n), n, `${n} values`);
    // Every exponent and sign with random mantissas.
    const u = new Uint32Array(512 * 64);
    const rng = new Rng(77);
    for (let i = 0; i < u.length; i++) u[i] = (((i % 512) << 23) | (rng.u32() & 0x7fffff)) >>> 0;
    assertSame(type, new Float32Array(u.buffer), 64, "every exponent");
  });
}

test("Q8_0: the SIMD kernel rounds x / d's exact halves away from zero, as roundf, at every integer part", () => {
  // amax 127 * 2^e makes d = 2^e and 1 / d exact, so (k + 0.5) * 2^e lands on k + 0.5.
  const rng = new Rng(0x8a1f);
  const x = new Float32Array(32 * 64);
  for (let at = 0; at < x.length; at += 32) {
    const s = 2 ** (rng.below(61) - 30);
    x[at] = (rng.below(2) === 0 ? 127 : -127) * s;
    for (let j = 1; j < 32; j++) x[at + j] = (rng.below(2) === 0 ? 1 : -1) * (rng.below(127) + 0.5) * s;
  }
  assertSame("Q8_0", x, 256, "halves");
});

const fromBits = (u: readonly number[]): Float32Array => new Float32Array(new Uint32Array(u.map((b) => b >>> 0)).buffer);

test("TQ1_0 / TQ2_0: the SIMD kernels round x * id's halves as lroundf and give lroundf's low bits for values past amax (a NaN before them)", () => {
  const rng = new Rng(0x7e1);
  const x = new Float32Array(256 * 64);
  for (let at = 0; at < x.length; at += 256) {
    const s = 2 ** (rng.below(61) - 30);
    const kind = rng.below(3);
    for (let j = 0; j < 256; j++) x[at + j] = (rng.below(2) === 0 ? 1 : -1) * [0.5, 1, 0, 0.25, 0.75][rng.below(5)] * s;
    x[at + rng.below(256)] = s;
    if (kind > 0) {
      // Values up to 2^40 times amax before a NaN: x * id reaches 2^31, 2^32 and beyond, and Inf where id is huge.
      const nan = 64 + rng.below(128);
      for (let j = 0; j < nan; j++) x[at + j] = (rng.below(2) === 0 ? 1 : -1) * (rng.below(2000) + rng.below(2) / 2) * 2 ** rng.below(40) * s;
      x[at + nan] = NaN;
      if (kind === 2) x[at + rng.below(nan)] = rng.below(2) === 0 ? 3e38 : -Infinity;
      for (let j = nan + 1; j < 256; j++) x[at + j] = (rng.below(2) === 0 ? 1 : -1) * rng.below(3) * s * 2 ** -rng.below(100);
    }
  }
  for (const type of ["TQ1_0", "TQ2_0"]) assertSame(type, x, 1024, "halves and values past amax");
  // The exact halves near 2^31, 2^32 and 2^63 of x * id, with id = 1.
  const big = [2 ** 31 - 128, 2 ** 31 - 0.5 * 0 - 64, 2 ** 31, 2 ** 32, 2 ** 32 + 512, 2 ** 40 + 2 ** 17, 2 ** 63, 2 ** 64, 1e38, 5e8 + 0.5 * 0, 12345.5, 2.5, 3.5, 255.5, 256.5];
  const y = new Float32Array(256 * 4);
  for (let at = 0; at < y.length; at += 256) {
    for (let j = 0; j < 200; j++) y[at + j] = (j % 2 === 0 ? 1 : -1) * big[(j + at / 256) % big.length];
    y[at + 200] = NaN;
    y[at + 201] = 1;
  }
  for (const type of ["TQ1_0", "TQ2_0"]) assertSame(type, y, 1024, "values near 2^31 and 2^63");
});

test("MXFP4: the SIMD kernel ties at every level's midpoint, one ulp either side, at e from 0 to 255", () => {
  const rng = new Rng(0x4f4);
  const mids = [0.5, 1.5, 2.5, 3.5, 5, 7, 10, 0, 1, 2, 3, 4, 6, 8, 12];
  const u: number[] = [];
  const f = new Float32Array(1);
  const bitsOf = (v: number): number => (f[0] = v, new Uint32Array(f.buffer)[0]);
  for (let b = 0; b < 600; b++) {
    // amax just below 2^(E + 1) makes d = 2^(E - 3), or 2^(E - 2) where log2f rounds up.
    const E = rng.below(280) - 150;
    const amax = bitsOf(2 ** (E + 1)) - rng.below(3) * (1 + rng.below(100));
    const d = 2 ** (E - 3);
    u.push(amax | (rng.below(2) << 31));
    for (let j = 1; j < 32; j++) {
      const v = bitsOf(mids[rng.below(mids.length)] * d * (rng.below(3) === 0 ? 2 : 1));
      u.push((v + rng.below(3) - 1) | (rng.below(2) << 31));
    }
  }
  assertSame("MXFP4", fromBits(u), 32 * 20, "midpoints");
});

test("MXFP4: the SIMD kernel follows C's scan where a block's amax is Inf (e = 0, d = 2^-128)", () => {
  const rng = new Rng(0x1f);
  const x = new Float32Array(32 * 64);
  for (let at = 0; at < x.length; at += 32) {
    for (let j = 0; j < 32; j++) x[at + j] = (rng.below(2) === 0 ? 1 : -1) * [0.5, 1, 1.5, 3, 5, 7, 10, 12, 13, 2 ** 20, 2 ** 30, 0][rng.below(12)] * 2 ** -128 * 2 ** (rng.below(8) === 0 ? rng.below(200) : 0);
    if (rng.below(4) !== 0) x[at + rng.below(32)] = rng.below(2) === 0 ? Infinity : -Infinity;
    if (rng.below(4) === 0) x[at + rng.below(32)] = NaN;
  }
  assertSame("MXFP4", x, 256, "infinite amax");
});

for (const type of TYPES) {
  test(`${type}: quantizeRowsInto with rows and output in one arena encodes in place, the reference's bytes, nothing around the output touched`, () => {
    const t = ggmlType(type);
    // Whole groups of four blocks in place, then a last part group through the private memory.
    for (const n of [128, 128 * 3 + 32, 16384 + 96, type === "F16" || type === "BF16" ? 16384 * 2 + 7 : 32]) {
      const x = gaussianRows(1, n, n + 9, -4);
      x.set(adversarialRows(1, Math.min(n - (n % 32), 256), 32, n, ROW_KINDS).subarray(0, Math.min(n - (n % 32), 256)));
      useGgmlQuantizeSimd(false);
      let ref: Uint8Array;
      try {
        ref = quantizeRows(type, x, n);
      } finally {
        useGgmlQuantizeSimd(true);
      }
      const arena = createArena(4 * n + ref.length + 4096);
      const rows = arena.zeros("float32", [n]).data as Float32Array;
      rows.set(x);
      const frame = arena.zeros("uint8", [ref.length + 64]).data as Uint8Array;
      frame.fill(0xa5);
      const out = frame.subarray(32, 32 + ref.length);
      assert.equal(quantizeRowsInto(type, rows, n, out), out);
      const diff = byteDifference(out, ref, t.typeSize);
      if (diff !== undefined) assert.fail(`${type}, ${n} values in an arena: ${diff}`);
      for (const i of [...Array(32).keys(), ...Array.from({ length: 32 }, (_, k) => 32 + ref.length + k)]) assert.equal(frame[i], 0xa5, `${type}, ${n}: byte ${i} around the output`);
      // The same bytes into an ordinary array.
      assert.equal(byteDifference(quantizeRowsInto(type, x, n, new Uint8Array(ref.length)), ref, t.typeSize), undefined, `${type}, ${n} into an array`);
    }
  });
}

test("quantizeRowsInto refuses an output of the wrong length or one sharing bytes with the rows", () => {
  const x = new Float32Array(64);
  assert.throws(() => quantizeRowsInto("Q8_0", x, 32, new Uint8Array(67)), (e: unknown) => e instanceof TensorcastError && e.code === "SHAPE_MISMATCH" && /68 bytes; out has 67/.test(e.message));
  const shared = new Uint8Array(x.buffer, 100, 68);
  assert.throws(() => quantizeRowsInto("Q8_0", x, 32, shared), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && /shares bytes/.test(e.message));
  assert.throws(() => quantizeRowsInto("Q8_0", x, 32, [] as unknown as Uint8Array), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
});
