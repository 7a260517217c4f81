/**
 * The quantizers' fast loops (issue 26 point 4: q4 reads a block of rows of every column at a
 * time, int8 quantizes float32 runs in a monomorphic loop) against the element-by-element rule
 * they replaced, on random weights with the awkward values: NaN, infinities, exact halves, zero
 * blocks, odd K, odd block counts, both q4 forms.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mlasQuantize4, roundHalfAway } from "../../../src/kernels/quant/mlas-blockwise.js";
import { minMax, ortQuantizeValues, ortScaleZeroPoint } from "../../../src/kernels/quant/ort-minmax.js";
import { bnb4Code } from "../../../src/kernels/quant/bnb4.js";
import { groupMinMax } from "../../../src/kernels/quant/scales.js";
import { blockLayout } from "../../../src/kernels/quant/layout.js";
import { dtype } from "../../../src/dtype/table.js";

const F32_MAX = 3.4028234663852886e38;

/** The column-by-column rule, as it was written before (one MLAS task of two blocks at a time). */
function referenceQuantize4(w: Float32Array, K: number, N: number, blockSize: number, symmetric: boolean): { packed: Uint8Array; scales: Float32Array; zeroPoints?: Uint8Array } {
  const blocks = Math.ceil(K / blockSize);
  const blob = blockSize / 2;
  const qRows = blocks * blob;
  const mins = new Float64Array(blocks * N);
  const maxs = new Float64Array(blocks * N);
  groupMinMax(w, dtype("float32"), blockLayout([K, N], 0, blockSize), mins, maxs);
  const packed = new Uint8Array(N * qRows);
  const scales = new Float32Array(N * blocks);
  const zpStride = Math.ceil(blocks / 2);
  const zeroPoints = symmetric ? undefined : new Uint8Array(N * zpStride);
  const zp = [0, 0];
  const vi = [0, 0];
  for (let j = 0; j < N; j++) {
    // One MLAS task: rows [r, r + 2 * blockSize) of column j.
    for (let r = 0; r < K; r += 2 * blockSize) {
      const rEnd = Math.min(r + 2 * blockSize, K);
      zp[0] = zp[1] = 8;
      vi[0] = vi[1] = 0;
      for (let p = 0; p < 2; p++) {
        const b = r / blockSize + p;
        if (b >= blocks) break;
        // groupMinMax leaves +Inf / -Inf for an all-NaN block; MLAS starts from FLT_MAX / -FLT_MAX.
        const lo = Math.min(mins[b * N + j], F32_MAX);
        const hi = Math.max(maxs[b * N + j], -F32_MAX);
        if (symmetric) scales[j * blocks + b] = symmetricScale4(lo, hi);
        else {
          const { scale, zeroPoint } = asymmetricParams4(lo, hi);
          scales[j * blocks + b] = scale;
          zp[p] = zeroPoint;
        }
      }
      if (zeroPoints) zeroPoints[j * zpStride + r / blockSize / 2] = (zp[0] & 0xf) | ((zp[1] << 4) & 0xff);
      for (let i = r; i < rEnd; i += 2) {
        for (let l = 0; l < 2 && i + l < rEnd; l++) {
          const b = Math.floor((i + l) / blockSize);
          const scale = scales[j * blocks + b];
          const reciprocal = scale !== 0 ? Math.fround(1 / scale) : 0;
          const q = roundHalfAway(Math.fround(Math.fround(w[(i + l) * N + j] * reciprocal) + zp[b % 2]));
          // std::clamp passes NaN through and the float-to-uint8 conversion of NaN gives 0 on x86.
          vi[l] = q !== q ? 0 : q < 0 ? 0 : q > 15 ? 15 : q;
        }
        packed[j * qRows + i / 2] = (vi[0] & 0xf) | ((vi[1] << 4) & 0xff);
      }
    }
  }
  return { packed, scales, zeroPoints };
}
function symmetricScale4(min: number, max: number): number {
  const m = Math.abs(max) > Math.abs(min) ? max : min;
  return Math.fround(-m / 8);
}
function asymmetricParams4(min: number, max: number): { scale: number; zeroPoint: number } {
  const lo = Math.min(min, 0);
  const hi = Math.max(max, 0);
  const scale = Math.fround(Math.fround(hi - lo) / 15);
  const zpFloat = scale !== 0 ? Math.fround(0 - Math.fround(lo / scale)) : lo;
  const zeroPoint = zpFloat < 0 ? 0 : zpFloat > 15 ? 15 : roundHalfAway(zpFloat);
  return { scale, zeroPoint };
}

/** mulberry32 words as float32 weights, with the special values spread through them. */
function weights(n: number, seed: number, specials: boolean): Float32Array {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const w = new Float32Array(n);
  const odd = [NaN, Infinity, -Infinity, 0, -0, 0.5, -0.5, 2.5, 1e-40, 3.4e38];
  for (let i = 0; i < n; i++) {
    const u = next();
    w[i] = specials && u < 0.01 ? odd[Math.floor(next() * odd.length)] : (next() * 2 - 1) * (u < 0.5 ? 0.02 : 3);
  }
  return w;
}

test("mlasQuantize4 (a block of rows at a time) equals the column-by-column rule, bytes and scales", () => {
  let cases = 0;
  for (const [K, N] of [[64, 48], [33, 5], [31, 7], [1, 3], [97, 17], [128, 1], [160, 9], [17, 16]]) {
    for (const blockSize of [16, 32, 64]) {
      for (const symmetric of [true, false]) {
        for (const specials of [false, true]) {
          const w = weights(K * N, K * 1000 + N + blockSize, specials);
          // A whole zero block and a whole NaN block in column 0.
          if (K >= 2 * blockSize) for (let r = 0; r < blockSize; r++) [w[r * N], w[(r + blockSize) * N]] = [0, NaN];
          // The last column's first block: -8 sets the scale to 1 (symmetric), and the others are
          // exact halves, which roundf takes away from zero.
          if (N > 1) for (let r = 0; r < Math.min(K, blockSize); r++) w[r * N + N - 1] = r === 0 ? -8 : (r % 15) - 7.5;
          const got = mlasQuantize4(w, K, N, blockSize, symmetric);
          const want = referenceQuantize4(w, K, N, blockSize, symmetric);
          const what = `K ${K} N ${N} block ${blockSize} ${symmetric ? "symmetric" : "asymmetric"}${specials ? " with NaN / Inf" : ""}`;
          assert.deepEqual(got.packed, want.packed, what);
          assert.deepEqual(new Uint32Array(got.scales.buffer), new Uint32Array(want.scales.buffer), what);
          assert.deepEqual(got.zeroPoints, want.zeroPoints, what);
          cases++;
        }
      }
    }
  }
  assert.equal(cases, 96);
});

test("mlasQuantize4: a block's range starts from FLT_MAX / -FLT_MAX, as MLAS's quantizeAndTranspose does", () => {
  const f32 = (x: number): number => Math.fround(x);
  // Column 0: all NaN -> min FLT_MAX, max -FLT_MAX, m = min (equal magnitudes) -> scale -FLT_MAX / 8.
  // Column 1: +Inf and 1 -> max +Inf -> scale -Inf, reciprocal -0: 1 * -0 + 8 = 8, Inf * -0 = NaN -> 0.
  // Column 2: -Inf and 1 -> m = -Inf -> scale +Inf, reciprocal 0: every code 8 but NaN's.
  const w = new Float32Array(16 * 3);
  for (let r = 0; r < 16; r++) {
    w[r * 3] = NaN;
    w[r * 3 + 1] = r === 0 ? Infinity : 1;
    w[r * 3 + 2] = r === 0 ? -Infinity : 1;
  }
  const q = mlasQuantize4(w, 16, 3, 16, true);
  assert.deepEqual(Array.from(q.scales), [f32(-3.4028234663852886e38 / 8), -Infinity, Infinity]);
  assert.deepEqual(Array.from(q.packed.subarray(8, 10)), [0x80, 0x88]);
  assert.deepEqual(Array.from(q.packed.subarray(16, 18)), [0x80, 0x88]);
  // Asymmetric, the all-NaN column: the range widened to 0 gives scale 0 and zero point 0.
  const a = mlasQuantize4(w, 16, 3, 16, false);
  assert.equal(a.scales[0], 0);
  assert.equal(a.zeroPoints![0] & 0xf, 0);
});

test("ortQuantizeValues' float32 loop equals its element-by-element rule; minMax too", () => {
  for (const [t, symmetric] of [["int8", true], ["uint8", false], ["uint8", true]] as const) {
    for (const specials of [false, true]) {
      const x = weights(5000, 7, specials);
      const [lo, hi] = minMax(x);
      assert.deepEqual([lo, hi], minMax(Array.from(x)));
      const p = ortScaleZeroPoint(specials ? -2 : lo, specials ? 3 : hi, t, symmetric);
      // Exact halves of the scale, so that round-half-to-even decides.
      for (let k = 0; k < 64; k++) x[k * 11] = Math.fround((k - 32 + 0.5) * p.scale);
      const fast = t === "int8" ? new Int8Array(x.length) : new Uint8Array(x.length);
      const slow = t === "int8" ? new Int8Array(x.length) : new Uint8Array(x.length);
      ortQuantizeValues(x, p, t, fast, 0, 1);
      ortQuantizeValues(Array.from(x), p, t, slow, 0, 1);
      assert.deepEqual(fast, slow, `${t} ${symmetric ? "symmetric" : "asymmetric"}${specials ? " with NaN / Inf" : ""}`);
    }
  }
});

test("bnb4Code equals the count of float32 midpoints strictly below, at and beside every midpoint", () => {
  const NF4 = [-0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544, -0.23460740596055984,
    -0.13791173323988914, -0.045525018125772476, 0.03979014977812767, 0.1202552504837513, 0.2035212516784668,
    0.2920137718319893, 0.3893125355243683, 0.5016634166240692, 0.6427869200706482, 0.8614784181118011].map(Math.fround);
  const FP4 = [0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333].map(Math.fround);
  const FP4_CODES = [0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011];
  const linear = (x: number, m: number[]): number => {
    let k = 0;
    while (k < m.length && x > m[k]) k++;
    return k;
  };
  const bits = new Float32Array(1);
  const words = new Uint32Array(bits.buffer);
  const neighbours = (x: number): number[] => {
    bits[0] = x;
    const w = words[0];
    const out = [x];
    for (const d of [-1, 1]) {
      words[0] = w + d;
      out.push(bits[0]);
    }
    return out;
  };
  const xs = [NaN, 0, -0, 1, -1, 2, -2, ...[...NF4, ...FP4].flatMap((m) => [...neighbours(m), ...neighbours(-m)])];
  for (let i = 0; i < 2000; i++) xs.push(Math.fround(Math.sin(i * 12.9898) * 1.1));
  for (const x of xs) {
    assert.equal(bnb4Code(x, "nf4"), linear(x, NF4), `nf4 ${x}`);
    assert.equal(bnb4Code(x, "fp4"), FP4_CODES[linear(Math.abs(x), FP4)] + (x < 0 ? 8 : 0), `fp4 ${x}`);
  }
});
