/**
 * The checkpoint quantizers' SIMD block kernels (amax of each block, the scaled cast to
 * float8e4m3fn / float4e2m1 with its nibble packing: src/kernels/quant/simd.ts, used by
 * checkpoint.ts) against the scalar code they replace, bit for bit: every bfloat16 and every
 * float16 code as a weight (blocks of 32 consecutive codes, so each block has its own scale, NaN and
 * Inf blocks included), float32 weights with crafted edges, both FP8 scale formats, MXFP4.
 * The golden files of transformers are checked by test/node/ckpt-quant-golden.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { dtype } from "../../src/index.js";
import { fp8BlockDequantize, fp8QuantizeBand, mxfp4Dequantize, mxfp4Quantize, transposeMatrices } from "../../src/kernels/quant/checkpoint.js";
import { blockLayout, rowBandLayout } from "../../src/kernels/quant/layout.js";
import { dequantizeSimd, simdAbsMax, simdScaledCast } from "../../src/kernels/quant/simd.js";
import { Rng } from "../support/rng.js";
import { withoutQuantSimd } from "../support/quant-simd.js";

const everyCode = (): Uint8Array => new Uint8Array(new Uint16Array(65536).map((_, i) => i).buffer);

/** Float32 weights at the edges: ties of e4m3 and e2m1 after scaling, +/-0, subnormals, huge, Inf, NaN of both signs. */
function edgeWeights(n: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  const w = new Float32Array(n);
  const words = new Uint32Array(w.buffer);
  const specials = [0, -0, 1e-45, -1e-45, 2 ** -126, 3e38, -3e38, 448, 464, -464, 480, 6, 5, 0.25, 0.75, 2.5];
  for (let i = 0; i < n; i++) {
    const r = rng.u32() % 16;
    if (r === 0) w[i] = specials[rng.u32() % specials.length];
    else if (r === 1) words[i] = rng.u32(); // any bit pattern: NaNs of both signs, Inf, subnormals
    else w[i] = Math.fround(((rng.u32() / 4294967296) - 0.5) * 2 ** ((rng.u32() % 40) - 20));
  }
  return new Uint8Array(w.buffer);
}

test("FP8 blocks: every bfloat16 and float16 code, one row in blocks of 32 codes, both scale formats: the SIMD kernels give the scalar code's bytes", () => {
  for (const t of ["bfloat16", "float16"] as const) {
    const x = everyCode();
    for (const format of ["float32", "ue8m0"] as const) {
      const fast = fp8QuantizeBand(x, dtype(t), 1, 65536, 32, format);
      const slow = withoutQuantSimd(() => fp8QuantizeBand(x, dtype(t), 1, 65536, 32, format));
      assert.deepEqual(fast.scaleInv, slow.scaleInv, `${t} ${format} scales`);
      assert.deepEqual(fast.weight, slow.weight, `${t} ${format} weight`);
    }
  }
  // The layout is one the SIMD kernels take (else the comparison above would compare the scalar code with itself).
  const layout = rowBandLayout(1, 65536, 32);
  assert.ok(simdAbsMax(new Float32Array(65536), layout, new Float64Array(layout.scaleCount)));
  assert.ok(simdScaledCast(new Float32Array(65536), layout, new Float32Array(layout.scaleCount).fill(1), "fp8", new Uint8Array(65536)));
});

test("FP8 blocks of 128 x 128 on float32 weights with NaN, Inf, ties, subnormals: SIMD equals scalar", () => {
  const rows = 128;
  const cols = 384;
  for (let seed = 1; seed <= 6; seed++) {
    const x = edgeWeights(rows * cols, seed);
    for (const format of ["float32", "ue8m0"] as const) {
      const fast = fp8QuantizeBand(x, dtype("float32"), rows, cols, 128, format);
      const slow = withoutQuantSimd(() => fp8QuantizeBand(x, dtype("float32"), rows, cols, 128, format));
      assert.deepEqual(fast.scaleInv, slow.scaleInv, `seed ${seed} ${format} scales`);
      assert.deepEqual(fast.weight, slow.weight, `seed ${seed} ${format} weight`);
    }
  }
  const layout = rowBandLayout(rows, cols, 128);
  assert.ok(simdAbsMax(new Float32Array(rows * cols), layout, new Float64Array(layout.scaleCount)));
});

test("MXFP4: every bfloat16 and float16 code (blocks of 32 codes), and float32 edges in experts: SIMD equals scalar", () => {
  for (const t of ["bfloat16", "float16"] as const) {
    const fast = mxfp4Quantize(everyCode(), dtype(t), [1, 65536, 1]);
    const slow = withoutQuantSimd(() => mxfp4Quantize(everyCode(), dtype(t), [1, 65536, 1]));
    assert.deepEqual(fast.scales, slow.scales, `${t} scales`);
    assert.deepEqual(fast.blocks, slow.blocks, `${t} blocks`);
  }
  for (let seed = 1; seed <= 4; seed++) {
    const shape = [3, 96, 40];
    const x = edgeWeights(3 * 96 * 40, 100 + seed);
    const fast = mxfp4Quantize(x, dtype("float32"), shape);
    const slow = withoutQuantSimd(() => mxfp4Quantize(x, dtype("float32"), shape));
    assert.deepEqual(fast.scales, slow.scales, `seed ${seed} scales`);
    assert.deepEqual(fast.blocks, slow.blocks, `seed ${seed} blocks`);
  }
  const layout = blockLayout([40, 96], 1, 32);
  assert.ok(simdAbsMax(new Float32Array(40 * 96), layout, new Float64Array(layout.scaleCount)));
  assert.ok(simdScaledCast(new Float32Array(40 * 96), layout, new Float32Array(layout.scaleCount).fill(1), "mx", new Uint8Array(40 * 48)));
});

test("simdAbsMax: NaN anywhere in a group gives NaN, -0 and 0 give 0, and it declines blocks that do not start on 32", () => {
  const x = new Float32Array(128);
  x[5] = -3;
  x[40] = NaN;
  x[70] = -0;
  x[127] = Infinity;
  const out = new Float64Array(4);
  assert.ok(simdAbsMax(x, rowBandLayout(1, 128, 32), out));
  assert.deepEqual(Array.from(out), [3, NaN, 0, Infinity]);
  const two = new Float64Array(2);
  assert.ok(simdAbsMax(x, rowBandLayout(1, 128, 64), two));
  assert.deepEqual(Array.from(two), [NaN, Infinity]);
  assert.equal(simdAbsMax(new Float32Array(96), rowBandLayout(2, 48, 48), new Float64Array(1)), false);
});

test("transposeMatrices: 1-, 2- and 4-byte elements, several matrices, even and odd sizes, equal the element-by-element transpose", () => {
  const rng = new Rng(7);
  for (const elementBytes of [1, 2, 4]) {
    for (const [count, rows, cols] of [[3, 64, 96], [2, 70, 34], [1, 33, 7], [2, 6, 130]]) {
      const src = Uint8Array.from({ length: count * rows * cols * elementBytes }, () => rng.u32() & 0xff);
      const want = new Uint8Array(src.length);
      for (let e = 0; e < count; e++) {
        for (let i = 0; i < rows; i++) {
          for (let j = 0; j < cols; j++) {
            for (let b = 0; b < elementBytes; b++) {
              want[((e * cols + j) * rows + i) * elementBytes + b] = src[((e * rows + i) * cols + j) * elementBytes + b];
            }
          }
        }
      }
      assert.deepEqual(transposeMatrices(src, count, rows, cols, elementBytes), want, `${elementBytes} bytes, ${count} x [${rows}, ${cols}]`);
    }
  }
});

test("the way back with e8m0 scales: every float8e4m3fn code (ue8m0 FP8) and every float4e2m1 byte (MXFP4) to float32, bfloat16 and float16, SIMD equals scalar", () => {
  // 256 rows of 32 codes: each row is every e4m3fn code, with its own e8m0 scale across the range.
  const rows = 256;
  const q = Uint8Array.from({ length: rows * 256 }, (_, i) => i & 0xff);
  const scaleCodes = Uint8Array.from({ length: rows * 8 }, (_, i) => [0, 1, 60, 118, 127, 135, 200, 253][i % 8] + ((i >> 3) % 2));
  const blocks = Uint8Array.from({ length: 4 * 2 * 16 * 16 }, (_, i) => (i * 37) & 0xff);
  const mxScales = Uint8Array.from({ length: 4 * 2 * 16 }, (_, i) => [0, 1, 100, 127, 128, 200, 253, 254][i % 8]);
  for (const out of ["float32", "bfloat16", "float16"] as const) {
    const fast = fp8BlockDequantize(q, [rows, 256], scaleCodes, dtype("float8e8m0"), [rows, 8], dtype(out));
    const slow = withoutQuantSimd(() => fp8BlockDequantize(q, [rows, 256], scaleCodes, dtype("float8e8m0"), [rows, 8], dtype(out)));
    assert.deepEqual(fast, slow, `fp8 ue8m0 -> ${out}`);
    const mFast = mxfp4Dequantize(blocks, [4, 2, 16, 16], mxScales, [4, 2, 16], dtype(out));
    const mSlow = withoutQuantSimd(() => mxfp4Dequantize(blocks, [4, 2, 16, 16], mxScales, [4, 2, 16], dtype(out)));
    assert.deepEqual(mFast.data, mSlow.data, `mxfp4 -> ${out}`);
  }
  const layout = blockLayout([2, 512], 1, 32);
  assert.ok(dequantizeSimd({ x: new Uint8Array(512), xType: dtype("float4e2m1"), scale: new Uint8Array(32).fill(127), scaleType: dtype("float8e8m0"), y: new Float32Array(1024), yType: dtype("float32"), layout }));
});
