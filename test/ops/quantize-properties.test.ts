/**
 * Property tests: QuantizeLinear and DequantizeLinear against the exact rational oracle of
 * test/support/quant-oracle.ts, for every version, every type combination the version allows,
 * per-tensor, per-axis (negative axes too) and blocked (partial last blocks) scales. Inputs mix
 * ties (k + 1/2 times the scale), both ends of every range, +/-Inf, NaN, -0, subnormal and
 * negative scales with random bit patterns. fast-check draws the case seeds; a fixed seed makes a
 * failure reproduce.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  DEQUANTIZELINEAR_VERSIONS, QUANTIZELINEAR_VERSIONS, Tensor, dequantizeLinear, dtype, quantizeLinear,
  type DType, type DTypeName, type QuantizeOperatorVersion,
} from "../../src/index.js";
import { dequantizeOracle, quantizeOracle, valueOf } from "../support/quant-oracle.js";
import { Rng } from "../support/rng.js";
import { property } from "../support/suite.js";

const RUNS = property(150, 20261127);

/** Raw storage entries (numbers for float32 / int32, codes otherwise) for `n` elements of t. */
function randomRaw(rng: Rng, t: DType, n: number, special: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const pick = rng.below(4);
    if (t.name === "float32") {
      if (pick === 0) out.push(special[rng.below(special.length)]);
      else if (pick === 1) {
        const bits = new Uint32Array([rng.u32()]);
        out.push(new Float32Array(bits.buffer)[0]);
      } else out.push(Math.fround((rng.u32() / 2 ** 32 - 0.5) * 2 ** (rng.below(40) - 20)));
    } else if (t.name === "int32") {
      out.push(pick === 0 ? [0, 1, -1, 2147483647, -2147483648][rng.below(5)] : (rng.u32() | 0) >> rng.below(31));
    } else {
      out.push(rng.below(2 ** t.bits));
    }
  }
  return out;
}

/** A tensor of type t from raw entries (codes are written as bytes / bit patterns). */
function tensorOf(t: DType, raw: number[], shape: number[]): Tensor {
  if (t.name === "float32") return Tensor.fromStorage(new Float32Array(raw), "float32", shape);
  if (t.name === "int32") return Tensor.fromStorage(new Int32Array(raw), "int32", shape);
  if (t.bits === 16 && t.kind === "float") return Tensor.fromStorage(new Uint16Array(raw), t.name, shape);
  if (!t.packed) {
    if (t.kind === "float") return Tensor.fromStorage(new Uint8Array(raw), t.name, shape);
    return Tensor.fromValues(raw.map((c) => (t.kind === "int" && c >= 2 ** (t.bits - 1) ? c - 2 ** t.bits : c)), t.name, shape);
  }
  // Packed: codes into a bit stream.
  const bytes = new Uint8Array(Math.ceil((raw.length * t.bits) / 8));
  raw.forEach((c, i) => {
    const bit = i * t.bits;
    bytes[bit >> 3] |= (c << (bit & 7)) & 0xff;
    if ((bit & 7) + t.bits > 8) bytes[(bit >> 3) + 1] |= c >> (8 - (bit & 7));
  });
  return Tensor.fromBytes(bytes, t.name, shape);
}

/** The value each element of a tensor holds (codes decoded by the textbook formula). */
function valuesOf(x: Tensor): number[] {
  const t = x.dtype;
  if (t.name === "float32" || t.kind === "int" || t.kind === "uint") return x.toValues() as number[];
  const codes: number[] = [];
  const bytes = x.bytes();
  for (let i = 0; i < x.size; i++) {
    if (t.packed) {
      const bit = i * t.bits;
      const word = bytes[bit >> 3] | ((bytes[(bit >> 3) + 1] ?? 0) << 8);
      codes.push((word >> (bit & 7)) & (2 ** t.bits - 1));
    } else codes.push(t.bits === 16 ? bytes[2 * i] | (bytes[2 * i + 1] << 8) : bytes[i]);
  }
  return codes.map((c) => valueOf(t, c));
}

interface Granularity { readonly scaleShape: number[]; readonly axis?: number; readonly blockSize?: number; scaleOf(i: number): number }

function granularity(rng: Rng, version: number, shape: number[]): Granularity {
  const rank = shape.length;
  const kind = rank === 0 || version < 13 ? 0 : rng.below(version >= 21 ? 3 : 2);
  if (kind === 0) return { scaleShape: rng.below(2) === 0 ? [] : [1], scaleOf: () => 0 };
  const a = rng.below(rank);
  const axis = rng.below(2) === 0 ? a : a - rank;
  const inner = shape.slice(a + 1).reduce((p, d) => p * d, 1);
  if (kind === 1) {
    return { scaleShape: [shape[a]], axis, scaleOf: (i) => Math.floor(i / inner) % shape[a] };
  }
  const blockSize = 1 + rng.below(Math.max(1, shape[a]) + 1);
  const blocks = Math.ceil(shape[a] / blockSize);
  const scaleShape = shape.map((d, i) => (i === a ? blocks : d));
  return {
    scaleShape, axis, blockSize,
    scaleOf: (i) => {
      const k = i % inner;
      const j = Math.floor(i / inner) % shape[a];
      const o = Math.floor(i / inner / shape[a]);
      return (o * blocks + Math.floor(j / blockSize)) * inner + k;
    },
  };
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.below(xs.length)];

function randomShape(rng: Rng): number[] {
  const rank = rng.below(4);
  return Array.from({ length: rank }, () => 1 + rng.below(rank === 1 ? 40 : 6));
}

/** Scales: ordinary, tiny (float32 subnormal 2^-149, float16 subnormal 2^-24), negative, zero, Inf, NaN, or random. */
const SCALE_SPECIALS = [1, 2, 0.5, 3, 0.1, 1 / 3, 2 ** -149, 2 ** -130, 2 ** -24, -2, -0.75, 1e-3, 448, 0, Infinity, NaN, 65504];
const X_SPECIALS = [0, -0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 255.5, 448, 464, 480, 57344, 61440, 6, 7, 1e30, -1e30, Infinity, -Infinity, NaN, -NaN, 3.4028234663852886e38];

function quantizeCase(version: QuantizeOperatorVersion, seed: number): void {
  const rng = new Rng(seed);
  const xType = dtype(pick(rng, [...version.inputs]));
  const scaleType = version.scaleIsInputType ? xType : dtype(pick(rng, [...version.scales]));
  const out = dtype(pick(rng, [...version.outputs]));
  const shape = randomShape(rng);
  const g = granularity(rng, version.version, shape);
  const count = shape.reduce((p, d) => p * d, 1);
  const scaleCount = g.scaleShape.reduce((p, d) => p * d, 1);
  const scaleRaw = scaleType.name === "float32" ? randomRaw(rng, scaleType, scaleCount, SCALE_SPECIALS).map((v, i) => (rng.below(3) === 0 ? v : Math.fround(pick(rng, SCALE_SPECIALS)) || v)) : randomRaw(rng, scaleType, scaleCount, SCALE_SPECIALS);
  const scale = tensorOf(scaleType, scaleRaw, g.scaleShape);
  const scaleValues = valuesOf(scale);
  // Ties: (k + 1/2) * scale for a float32 x.
  const xRaw = randomRaw(rng, xType, count, X_SPECIALS).map((v, i) =>
    xType.name === "float32" && rng.below(4) === 0 ? Math.fround((rng.below(600) - 300 + 0.5) * scaleValues[g.scaleOf(i)]) : v);
  const x = tensorOf(xType, xRaw, shape);
  // Before version 21 the zero point is the only way to ask for a type other than uint8.
  const withZeroPoint = rng.below(3) !== 0 || (version.version < 21 && out.name !== "uint8");
  const zpRaw = randomRaw(rng, out, scaleCount, []).map((c) => (rng.below(2) === 0 ? 0 : c));
  const zeroPoint = withZeroPoint ? tensorOf(out, zpRaw, g.scaleShape) : undefined;
  const saturate = version.version >= 19 ? rng.below(2) === 0 : undefined;
  const precision = version.version >= 23 && rng.below(3) === 0 ? pick(rng, ["float32", "float16", "bfloat16"] as DTypeName[]) : undefined;
  const opts = {
    opset: version.version, ...(g.axis !== undefined && { axis: g.axis }), ...(g.blockSize !== undefined && { blockSize: g.blockSize }),
    ...(saturate !== undefined && { saturate }), ...(precision && { precision }),
    ...(!withZeroPoint && out.name !== "uint8" && { outputDtype: out.name }),
  };
  const what = `QuantizeLinear-${version.version} ${xType.name} / ${scaleType.name} -> ${out.name}, shape [${shape}], scale [${g.scaleShape}], ${JSON.stringify(opts)}`;
  const y = quantizeLinear(x, scale, zeroPoint, opts);
  assert.equal(y.dtype, out, what);
  const got = valuesOf(y);
  const xv = valuesOf(x);
  const zv = zeroPoint ? valuesOf(zeroPoint) : [];
  const p = precision ? dtype(precision) : scaleType.name === "int32" ? "exact" as const : scaleType.name === "float8e8m0" ? dtype("float32") : scaleType;
  for (let i = 0; i < count; i++) {
    const gi = g.scaleOf(i);
    const want = quantizeOracle({ x: xv[i], scale: scaleValues[gi], zeroPoint: zeroPoint ? zv[gi] : 0, precision: p, out, saturate: saturate ?? true });
    // Types without NaN write a NaN as a zero whose sign is the NaN's (checked in quantize-rules).
    const nanAsZero = out.format?.nan === "none" && Number.isNaN(want) && got[i] === 0;
    if (!(Object.is(got[i], want) || (Number.isNaN(got[i]) && Number.isNaN(want)) || nanAsZero)) {
      assert.fail(`${what}: element ${i}: x ${xv[i]}, scale ${scaleValues[gi]}, zero point ${zeroPoint ? zv[gi] : "-"}: got ${got[i]}, oracle ${want}`);
    }
  }
}

function dequantizeCase(version: QuantizeOperatorVersion, seed: number): void {
  const rng = new Rng(seed);
  const xType = dtype(pick(rng, [...version.inputs]));
  const scaleType = dtype(pick(rng, [...version.scales]));
  const outputDtype = version.version >= 23 && (scaleType.name === "float8e8m0" || rng.below(2) === 0) ? pick(rng, ["float32", "float16", "bfloat16"] as DTypeName[]) : undefined;
  const out = dtype(outputDtype ?? (version.version < 19 ? "float32" : scaleType.name));
  const shape = randomShape(rng);
  const g = granularity(rng, version.version, shape);
  const count = shape.reduce((p, d) => p * d, 1);
  const scaleCount = g.scaleShape.reduce((p, d) => p * d, 1);
  const scale = tensorOf(scaleType, randomRaw(rng, scaleType, scaleCount, SCALE_SPECIALS), g.scaleShape);
  const x = tensorOf(xType, randomRaw(rng, xType, count, []), shape);
  const withZeroPoint = rng.below(3) !== 0;
  const zeroPoint = withZeroPoint ? tensorOf(xType, randomRaw(rng, xType, scaleCount, []).map((c) => (rng.below(2) === 0 ? 0 : c)), g.scaleShape) : undefined;
  const opts = {
    opset: version.version, ...(g.axis !== undefined && { axis: g.axis }), ...(g.blockSize !== undefined && { blockSize: g.blockSize }),
    ...(outputDtype && { outputDtype }),
  };
  const what = `DequantizeLinear-${version.version} ${xType.name} * ${scaleType.name} -> ${out.name}, shape [${shape}], scale [${g.scaleShape}], ${JSON.stringify(opts)}`;
  const y = dequantizeLinear(x, scale, zeroPoint, opts);
  assert.equal(y.dtype, out, what);
  const got = valuesOf(y);
  const xv = valuesOf(x);
  const sv = valuesOf(scale);
  const zv = zeroPoint ? valuesOf(zeroPoint) : [];
  for (let i = 0; i < count; i++) {
    const gi = g.scaleOf(i);
    const want = dequantizeOracle({ x: xv[i], scale: sv[gi], zeroPoint: zeroPoint ? zv[gi] : 0, out });
    if (!(Object.is(got[i], want) || (Number.isNaN(got[i]) && Number.isNaN(want)))) {
      assert.fail(`${what}: element ${i}: x ${xv[i]}, scale ${sv[gi]}, zero point ${zeroPoint ? zv[gi] : "-"}: got ${got[i]}, oracle ${want}`);
    }
  }
}

for (const version of QUANTIZELINEAR_VERSIONS) {
  test(`QuantizeLinear-${version.version} equals the rational oracle (every type, granularity, ties, ends, Inf, NaN)`, () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 0x7fffffff }), (seed) => quantizeCase(version, seed)), RUNS);
  });
}
for (const version of DEQUANTIZELINEAR_VERSIONS) {
  test(`DequantizeLinear-${version.version} equals the rational oracle (every type, granularity, Inf, NaN)`, () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 0x7fffffff }), (seed) => dequantizeCase(version, seed)), RUNS);
  });
}
