/**
 * The WebAssembly SIMD fast paths of QuantizeLinear float32 -> int8 / uint8 and DequantizeLinear
 * int8 / uint8 -> float32 (src/kernels/quant/simd.ts) against the reference kernels, bit for bit:
 * crafted values (ties at every half, both ends of the range, +/-Inf, NaN of both signs, -0,
 * subnormal quotients and scales, huge quotients), every byte for dequantize, and random tensors
 * per-tensor, per-axis and blocked along the last axis, with lengths that end inside a SIMD group
 * and inside a chunk.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Tensor, dequantizeLinear, quantizeLinear, type DTypeName } from "../../src/index.js";
import { quantModule, quantSimdAvailable, useQuantSimd } from "../../src/kernels/quant/simd.js";
import { property } from "../support/suite.js";

const both = <T>(run: () => T): [T, T] => {
  const fast = run();
  useQuantSimd(false);
  try {
    return [fast, run()];
  } finally {
    useQuantSimd(true);
  }
};

const bytesOf = (t: Tensor): number[] => Array.from(t.bytes());

/** Float32 values a quantizer meets at its edges, for a scale `s`. */
function edges(s: number): number[] {
  const v: number[] = [0, -0, Infinity, -Infinity, NaN, -NaN, 1e38, -1e38, 3.4e38, 1e-45, -1e-45, 1.17e-38];
  for (let k = -300; k <= 300; k++) v.push((k + 0.5) * s, k * s, Math.fround((k + 0.5) * s) + 1e-7 * s);
  return v.map(Math.fround);
}

test("the SIMD module validates and is used here (no relaxed SIMD needed: Node 20 runs the same kernels)", () => {
  assert.ok(quantSimdAvailable(), "no WebAssembly SIMD in this runtime");
  assert.ok(quantModule().length > 100);
});

test("quantize float32 -> int8 / uint8, per tensor: every edge value, with and without zero points, bit for bit the reference", () => {
  for (const s of [1, 0.5, 0.1, 3, 1e-40, 2e-45, -0.25, 1e30, 0, -0, Infinity, NaN]) {
    const x = Tensor.fromValues(edges(Number.isFinite(s) && s !== 0 ? s : 1), "float32");
    for (const [t, zps] of [["int8", [0, -128, 127, 5]], ["uint8", [0, 255, 128]]] as [DTypeName, number[]][]) {
      for (const zp of zps) {
        const [fast, ref] = both(() => quantizeLinear(x, Tensor.fromValues([s], "float32", []), Tensor.fromValues([zp], t, [])));
        assert.deepEqual(bytesOf(fast), bytesOf(ref), `scale ${s}, ${t} zero point ${zp}`);
      }
      const [fast, ref] = both(() => quantizeLinear(x, Tensor.fromValues([s], "float32", []), undefined, { outputDtype: t }));
      assert.deepEqual(bytesOf(fast), bytesOf(ref), `scale ${s}, ${t}, no zero point`);
    }
  }
});

test("dequantize int8 / uint8 -> float32: every byte, every zero point, edge scales, bit for bit the reference", () => {
  for (const t of ["int8", "uint8"] as DTypeName[]) {
    const codes = Array.from({ length: 256 }, (_, i) => (t === "int8" ? i - 128 : i));
    const x = Tensor.fromValues(codes, t);
    for (const s of [1, 0.1, -0.1, 1e-45, 3e38, -3e38, 1.5e-39, 0, -0, Infinity, NaN]) {
      for (let zp = t === "int8" ? -128 : 0; zp < (t === "int8" ? 128 : 256); zp += 17) {
        const [fast, ref] = both(() => dequantizeLinear(x, Tensor.fromValues([s], "float32", []), Tensor.fromValues([zp], t, [])));
        assert.deepEqual(bytesOf(fast), bytesOf(ref), `${t} scale ${s} zero point ${zp}`);
      }
    }
  }
});

test("random tensors per tensor, per axis and blocked (partial groups, chunks and blocks): quantize and dequantize equal the reference", () => {
  const special = fc.constantFrom(NaN, Infinity, -Infinity, 0, -0, 0.5, -0.5, 127.5, -128.5, 255.5, 1e-45);
  const value = fc.oneof(fc.float({ noDefaultInfinity: false }), special, fc.integer({ min: -300, max: 300 }).map((k) => k + 0.5));
  const scale = fc.oneof(fc.float({ min: Math.fround(1e-3), max: 10, noNaN: true }), fc.constantFrom(1, 0.5, 2, 1e-40));
  fc.assert(
    fc.property(
      fc.constantFrom<DTypeName>("int8", "uint8"),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 70 }),
      fc.constantFrom<"tensor" | "axis0" | "axis1" | "block" | "block0">("tensor", "axis0", "axis1", "block", "block0"),
      fc.integer({ min: 2, max: 40 }),
      fc.integer(),
      (t, rows, cols, how, block, seed) => {
        const n = rows * cols;
        const values = fc.sample(value, { numRuns: n, seed }).map(Math.fround);
        const x = Tensor.fromValues(values, "float32", [rows, cols]);
        let scaleShape: number[];
        let opts: { axis?: number; blockSize?: number } = {};
        if (how === "tensor") scaleShape = [];
        else if (how === "axis0") {
          scaleShape = [rows];
          opts = { axis: 0 };
        } else if (how === "axis1") {
          scaleShape = [cols];
          opts = { axis: 1 };
        } else if (how === "block0") {
          // Blocks along the first axis: a scale per column inside a block, no runs to take.
          scaleShape = [Math.ceil(rows / block), cols];
          opts = { axis: 0, blockSize: block };
        } else {
          scaleShape = [rows, Math.ceil(cols / block)];
          opts = { axis: 1, blockSize: block };
        }
        const count = scaleShape.reduce((a, b) => a * b, 1);
        const scales = Tensor.fromValues(fc.sample(scale, { numRuns: count, seed: seed + 1 }).map(Math.fround), "float32", scaleShape);
        const lo = t === "int8" ? -128 : 0;
        const zp = Tensor.fromValues(fc.sample(fc.integer({ min: lo, max: lo + 255 }), { numRuns: count, seed: seed + 2 }), t, scaleShape);
        const [qFast, qRef] = both(() => quantizeLinear(x, scales, zp, opts));
        assert.deepEqual(bytesOf(qFast), bytesOf(qRef));
        const [dFast, dRef] = both(() => dequantizeLinear(qRef, scales, zp, opts));
        assert.deepEqual(bytesOf(dFast), bytesOf(dRef));
      },
    ),
    property(300, 20261201),
  );
});

test("long runs cross the 32768-element chunk and end inside a group", () => {
  for (const n of [16383, 16385, 32767, 32768, 32769, 70000 + 7]) {
    const values = Float32Array.from({ length: n }, (_, i) => ((i * 2654435761) % 100000) / 37 - 1300 + (i % 3 === 0 ? 0.5 : 0));
    const x = Tensor.fromStorage(values, "float32", [n]);
    for (const t of ["int8", "uint8"] as DTypeName[]) {
      const [fast, ref] = both(() => quantizeLinear(x, Tensor.fromValues([3.7], "float32", []), Tensor.fromValues([t === "int8" ? -3 : 100], t, [])));
      assert.deepEqual(bytesOf(fast), bytesOf(ref), `${n} ${t}`);
      const [dFast, dRef] = both(() => dequantizeLinear(ref, Tensor.fromValues([0.37], "float32", []), Tensor.fromValues([t === "int8" ? -3 : 100], t, [])));
      assert.deepEqual(bytesOf(dFast), bytesOf(dRef), `${n} ${t} back`);
    }
  }
});
