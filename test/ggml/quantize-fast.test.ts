/**
 * The quantizers' integer fast paths against the scalar references they replace, bit for bit:
 * F16's fp16OfBits against fp16Bits (binary16 by float arithmetic, as ggml_fp32_to_fp16) on every
 * binary32 near each rounding boundary of binary16, NaNs of every payload, infinities, zeros and
 * random bits; IQ4's table bestIndex against ggml's bisection (bestIndexBisect) on every float32
 * within 64 ulps of each level and midpoint, every quarter from -130 to 130, NaN, infinities and
 * random values of every exponent.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { IQ4_NL_LEVELS } from "../../src/ggml/dequantize.js";
import { bestIndex, bestIndexBisect } from "../../src/ggml/quantize/iq4.js";
import { fp16OfBits } from "../../src/ggml/quantize/plain.js";
import { fp16Bits } from "../../src/ggml/scalars.js";
import { Rng } from "../support/rng.js";

const bits = new Uint32Array(1);
const f = new Float32Array(bits.buffer);
const floatOf = (u: number): number => {
  bits[0] = u;
  return f[0];
};

test("fp16OfBits is fp16Bits on boundaries, subnormals, NaN payloads, infinities and random bits", () => {
  const us: number[] = [0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffffffff, 0x477ff000, 0x477fefff, 0x38800000, 0x387fffff, 0x33000000, 0x33000001, 0x32ffffff];
  // Every exponent, mantissas around each half-ulp boundary (the 13 dropped bits at 0x1000, odd and even).
  for (let e = 0; e < 256; e++) {
    for (const m of [0, 1, 0x0fff, 0x1000, 0x1001, 0x2fff, 0x3000, 0x3001, 0x7fe000, 0x7fefff, 0x7ff000, 0x7ff001, 0x7fffff]) {
      for (let sh = 0; sh < 12; sh++) {
        const mm = sh === 0 ? m : (m >>> sh) | ((m & 1) << 22);
        us.push(((e << 23) | (mm & 0x7fffff)) >>> 0, ((1 << 31) | (e << 23) | (mm & 0x7fffff)) >>> 0);
      }
    }
  }
  const rng = new Rng(0xf16);
  for (let i = 0; i < 300000; i++) us.push(rng.u32());
  // Subnormal halves: the range 2^-25 .. 2^-14, densely.
  for (let i = 0; i < 100000; i++) us.push(0x33000000 + rng.below(0x38800000 - 0x33000000));
  for (const u of us) assert.equal(fp16OfBits(u), fp16Bits(floatOf(u)), `at 0x${u.toString(16)}`);
});

/** The float32 `k` ulps from `x` (k may be negative) by stepping its bits. */
function near(x: number, k: number): number {
  if (x === 0) return k === 0 ? 0 : floatOf(k > 0 ? k : (0x80000000 | -k) >>> 0);
  f[0] = x;
  bits[0] += x > 0 ? k : -k;
  return f[0];
}

test("bestIndex is bestIndexBisect on levels, midpoints, quarters, NaN, infinities and random float32 values", () => {
  const values: number[] = [NaN, Infinity, -Infinity, 0, -0, 1e-45, -1e-45, 3.4e38, -3.4e38, 127.99999, 128, -128, -127.99999, 112.99999, 113];
  const L = [...IQ4_NL_LEVELS];
  const anchors = [...L, ...L.slice(1).map((v, i) => (v + L[i]) / 2)];
  for (const a of anchors) for (let k = -64; k <= 64; k++) values.push(near(a, k));
  for (let q = -520; q <= 520; q++) values.push(q / 4);
  const rng = new Rng(0x1a4);
  for (let i = 0; i < 200000; i++) {
    values.push(floatOf(rng.u32()));
    values.push(Math.fround((rng.u32() / 2 ** 32 - 0.5) * 300));
  }
  for (const v of values) {
    const x = Math.fround(v);
    assert.equal(bestIndex(x), bestIndexBisect(x), `at ${x}`);
  }
});
