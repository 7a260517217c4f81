/**
 * The K-quants' SIMD scale searches (src/ggml/quantize/search-simd.ts) against the reference
 * searches, bit for bit: every K-quant, with and without an importance matrix, on weight-like rows
 * at many scales, on rows of adversarial sub-blocks (zeros, constants, one outlier, subnormals,
 * values near FLT_MAX, exact ties of nearest_int, a few levels, ramps, NaN and Inf), on rows whose sub-blocks repeat (so that candidates tie exactly), and on rows longer than one
 * chunk of the kernels and not a whole number of chunks. NaN payloads are left out: which operand's
 * payload a float operation passes on is the engine's choice (V8 may swap the operands of a
 * commutative f32x4 or float64 operation), and tensorcast promises payload bits only for the plain
 * types (quantize-peer.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ggmlType, quantizeRows } from "../../src/ggml/index.js";
import { ggmlQuantizeSimdAvailable, useGgmlQuantizeSimd } from "../../src/ggml/quantize/search-simd.js";
import { Rng } from "../support/rng.js";
import { adversarialRows, importance, ROW_KINDS } from "./rows.js";

const TYPES = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"];
const KINDS = ROW_KINDS.filter((k) => k !== "payloads");

/** The first byte where a and b differ, with its block, or undefined. */
function byteDifference(a: Uint8Array, b: Uint8Array, typeSize: number): string | undefined {
  if (a.length !== b.length) return `lengths ${a.length} and ${b.length}`;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return `byte ${i} (block ${Math.floor(i / typeSize)}, offset ${i % typeSize}): SIMD 0x${a[i].toString(16)}, reference 0x${b[i].toString(16)}`;
  }
  return undefined;
}

function reference(type: string, x: Float32Array, n: number, qw?: Float32Array): Uint8Array {
  useGgmlQuantizeSimd(false);
  try {
    return quantizeRows(type, x, n, qw);
  } finally {
    useGgmlQuantizeSimd(true);
  }
}

function assertSame(type: string, x: Float32Array, n: number, qw: Float32Array | undefined, what: string): void {
  const fast = quantizeRows(type, x, n, qw);
  const diff = byteDifference(fast, reference(type, x, n, qw), ggmlType(type).typeSize);
  if (diff !== undefined) assert.fail(`${type}${qw ? " with imatrix" : ""}, ${what}: ${diff}`);
}

/** Weight-like rows: Gaussian with a heavier tail, at a scale 2^e. */
function gaussianRows(rows: number, n: number, seed: number, e: number): Float32Array {
  const rng = new Rng(seed);
  const u = (): number => (rng.u32() + 0.5) / 2 ** 32;
  const x = new Float32Array(rows * n);
  for (let i = 0; i < x.length; i++) x[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * 2 ** e * (rng.below(32) === 0 ? 6 : 1);
  return x;
}

/** Rows made of a few sub-blocks of 16 repeated (and negated, and scaled by powers of two). */
function repeatedRows(rows: number, n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const base = adversarialRows(1, 64, 16, seed, ["ties", "levels", "ramp", "constant", "gaussian"], 8);
  const x = new Float32Array(rows * n);
  for (let at = 0; at < x.length; at += 16) {
    const from = 16 * rng.below(4);
    const f = (rng.below(2) === 0 ? 1 : -1) * 2 ** (rng.below(9) - 4);
    for (let i = 0; i < 16; i++) x[at + i] = base[from + i] * f;
  }
  return x;
}

test("the SIMD searches are available here", () => {
  assert.equal(ggmlQuantizeSimdAvailable(), true);
});

for (const type of TYPES) {
  for (const withImatrix of [false, true]) {
    const label = `${type}${withImatrix ? " with an importance matrix" : ""}`;
    test(`${label}: the SIMD searches give the reference's bytes on weight-like rows at scales 2^-30 .. 2^30`, () => {
      const n = 1024;
      for (let e = -30; e <= 30; e += 6) {
        const x = gaussianRows(2, n, 0x100 + e, e);
        assertSame(type, x, n, withImatrix ? importance(n, 0x200 + e) : undefined, `scale 2^${e}`);
      }
    });
    test(`${label}: the SIMD searches give the reference's bytes on adversarial sub-blocks`, () => {
      const n = 512;
      for (let seed = 1; seed <= 24; seed++) {
        for (const block of [16, 32]) {
          const x = adversarialRows(4, n, block, seed * 7 + block, KINDS);
          assertSame(type, x, n, withImatrix ? importance(n, seed) : undefined, `seed ${seed}, blocks of ${block}`);
        }
      }
    });
    test(`${label}: the SIMD searches give the reference's bytes on repeated sub-blocks (exact ties)`, () => {
      const n = 768;
      for (let seed = 1; seed <= 16; seed++) {
        assertSame(type, repeatedRows(3, n, seed), n, withImatrix ? importance(n, seed + 99) : undefined, `seed ${seed}`);
      }
    });
    test(`${label}: the SIMD searches give the reference's bytes on rows past one chunk (4096 + 256 values)`, () => {
      const n = 4352;
      const x = gaussianRows(2, n, 0x3f, -6);
      assertSame(type, x, n, withImatrix ? importance(n, 5) : undefined, "rows of 4352");
    });
  }
}
