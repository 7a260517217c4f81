/**
 * Exhaustive and large-tensor checks of quantizeLinear / dequantizeLinear against the rational
 * oracle: every code of every input type of 16 bits or fewer, and tensors larger than the
 * kernels' 4096-element blocks, so blocks start in the middle of scale groups and of packed bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEQUANTIZELINEAR_VERSIONS, QUANTIZELINEAR_VERSIONS, Tensor, dequantizeLinear, dtype, quantizeLinear, type DTypeName,
} from "../../src/index.js";
import { dequantizeOracle, quantizeOracle, valueOf } from "../support/quant-oracle.js";
import { Rng } from "../support/rng.js";
import { FULL } from "../support/suite.js";

const same = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** Every code of a 16-bit float type, as a tensor, and the values the oracle reads. */
function everyCode(t: DTypeName): { x: Tensor; values: number[] } {
  const codes = new Uint16Array(65536).map((_, i) => i);
  const type = dtype(t);
  return { x: Tensor.fromStorage(codes, t, [65536]), values: Array.from(codes, (c) => valueOf(type, c)) };
}

/** The value of each output element: integers as they are, floats by the textbook formula of their code. */
function outputValues(y: Tensor): number[] {
  const t = y.dtype;
  if (t.kind !== "float") return y.toValues() as number[];
  const bytes = y.bytes();
  return Array.from({ length: y.size }, (_, i) => {
    const bit = i * t.bits;
    const word = bytes[bit >> 3] | ((bytes[(bit >> 3) + 1] ?? 0) << 8);
    return valueOf(t, (word >> (bit & 7)) & (2 ** t.bits - 1));
  });
}

const LATEST_Q = QUANTIZELINEAR_VERSIONS[QUANTIZELINEAR_VERSIONS.length - 1];

/**
 * The exact oracle (BigInt arithmetic) is the slow part: the everyday suite compares every 7th
 * code of the 16-bit inputs (7 is odd and prime to the field widths, so the sample still meets every
 * exponent, both signs and every low-mantissa residue); the full suite compares them all.
 */
const STRIDE16 = FULL ? 1 : 7;

for (const xName of ["float16", "bfloat16"] as const) {
  test(`every ${xName} code, a float16 / bfloat16 scale each, into every output type of QuantizeLinear-28`, () => {
    const { x, values } = everyCode(xName);
    // 0.1 is inexact in both types; a subnormal float16 scale (2^-20) overflows the quotient.
    for (const s of [0.1, 2 ** -20]) {
      const scale = Tensor.fromValues([s], xName, []);
      const sv = scale.toValues()[0] as number;
      // The tiny scale on three outputs only: the oracle's BigInt arithmetic is the slow part.
      for (const out of s === 0.1 ? LATEST_Q.outputs : new Set<DTypeName>(["int8", "float8e4m3fn", "float4e2m1"])) {
        const t = dtype(out);
        for (const saturate of t.kind === "float" ? [true, false] : [true]) {
          const y = outputValues(quantizeLinear(x, scale, undefined, { outputDtype: out, saturate }));
          for (let i = 0; i < 65536; i += STRIDE16) {
            const want = quantizeOracle({ x: values[i], scale: sv, zeroPoint: 0, precision: dtype(xName), out: t, saturate });
            const nanAsZero = t.format?.nan === "none" && Number.isNaN(want) && y[i] === 0;
            if (!same(y[i], want) && !nanAsZero) assert.fail(`${xName} code ${i} (${values[i]}) / ${sv} -> ${out} saturate ${saturate}: got ${y[i]}, oracle ${want}`);
          }
        }
      }
    }
  });
}

test("every code of every DequantizeLinear-28 input of 16 bits or fewer, with float32, float16, bfloat16 and e8m0 scales", () => {
  const version = DEQUANTIZELINEAR_VERSIONS[DEQUANTIZELINEAR_VERSIONS.length - 1];
  for (const name of version.inputs) {
    const t = dtype(name);
    if (t.bits > 16) continue;
    const n = 2 ** t.bits;
    const codes = Array.from({ length: n }, (_, i) => i);
    const x = t.kind === "float"
      ? (t.packed ? Tensor.fromValues(codes.map((c) => valueOf(t, c)).map((v) => (Number.isNaN(v) ? 0 : v)), name) : Tensor.fromStorage(new Uint8Array(codes), name, [n]))
      : Tensor.fromValues(codes.map((c) => Number(t.min) + c), name);
    const xv = outputValues(x);
    const wide = t.bits === 16; // 65536 codes: fewer combinations
    const zeroPoints = t.kind === "float" ? [0] : wide ? [0, Number(t.min)] : [0, Number(t.min), Number(t.max)];
    const all: [DTypeName, number][] = [["float32", 0.1], ["float16", 1 / 3], ["bfloat16", 3], ["float32", 2 ** -149], ["float8e8m0", 2 ** 100]];
    const scales = wide ? [all[0], all[4]] : all;
    for (const [st, sRaw] of scales) {
      const scale = st === "float8e8m0" ? Tensor.fromBytes(new Uint8Array([227]), st, []) : Tensor.fromValues([sRaw], st, []);
      const sv = st === "float8e8m0" ? 2 ** 100 : (scale.toValues()[0] as number);
      for (const zp of zeroPoints) {
        for (const out of (wide ? ["float32", "bfloat16"] : ["float32", "float16", "bfloat16"]) as DTypeName[]) {
          const y = dequantizeLinear(x, scale, Tensor.fromValues([zp], name, []), { outputDtype: out }).toValues() as number[];
          for (let i = 0; i < n; i += wide ? STRIDE16 : 1) {
            const want = dequantizeOracle({ x: xv[i], scale: sv, zeroPoint: zp, out: dtype(out) });
            if (!same(y[i], want)) assert.fail(`${name} ${xv[i]} - ${zp} times ${st} ${sv} -> ${out}: got ${y[i]}, oracle ${want}`);
          }
        }
      }
    }
  }
});

/** Large tensors: 3 x 5001 and 5001 x 3, blocked along each axis with sizes that do not divide. */
for (const out of ["int4", "uint2", "float4e2m1", "float6e3m2", "int8", "float8e4m3fn"] as DTypeName[]) {
  test(`tensors beyond one 4096-element block keep their scale groups and packed bytes: ${out}`, () => {
    const rng = new Rng(77);
    const t = dtype(out);
    for (const [shape, axis, blockSize] of [[[3, 5001], 1, 7], [[5001, 3], 0, 32], [[5001, 3], -1, 2], [[2, 5001], 1, 0]] as [number[], number, number][]) {
      const count = shape[0] * shape[1];
      const xs = Array.from({ length: count }, () => Math.fround((rng.u32() / 2 ** 32 - 0.5) * 40));
      const x = Tensor.fromValues(xs, "float32", shape);
      const a = axis < 0 ? axis + 2 : axis;
      const scaleShape = blockSize ? shape.map((d, i) => (i === a ? Math.ceil(d / blockSize) : d)) : [shape[a]];
      const scaleCount = scaleShape.reduce((p, d) => p * d, 1);
      const sv = Array.from({ length: scaleCount }, () => Math.fround(0.5 + rng.below(1000) / 300));
      const scale = Tensor.fromValues(sv, "float32", scaleShape);
      const zps = Array.from({ length: scaleCount }, () => (t.kind === "float" ? 0 : Number(t.min) + rng.below(Number(t.max) - Number(t.min) + 1)));
      const zeroPoint = Tensor.fromValues(zps, out, scaleShape);
      const opts = { axis, ...(blockSize && { blockSize }) };
      const y = outputValues(quantizeLinear(x, scale, zeroPoint, opts));
      const back = dequantizeLinear(quantizeLinear(x, scale, zeroPoint, opts), scale, zeroPoint, opts).toValues() as number[];
      for (let i = 0; i < count; i++) {
        const r = Math.floor(i / shape[1]);
        const c = i % shape[1];
        const g = blockSize
          ? (a === 1 ? r * scaleShape[1] + Math.floor(c / blockSize) : Math.floor(r / blockSize) * shape[1] + c)
          : a === 1 ? c : r;
        const want = quantizeOracle({ x: xs[i], scale: sv[g], zeroPoint: zps[g], precision: dtype("float32"), out: t, saturate: true });
        if (!same(y[i], want)) assert.fail(`${out} [${shape}] axis ${axis} block ${blockSize} element ${i}: got ${y[i]}, oracle ${want}`);
        const dq = dequantizeOracle({ x: want, scale: sv[g], zeroPoint: zps[g], out: dtype("float32") });
        if (!same(back[i], dq)) assert.fail(`round trip ${out} element ${i}: got ${back[i]}, oracle ${dq}`);
      }
    }
  });
}

