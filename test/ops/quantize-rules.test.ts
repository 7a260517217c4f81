/**
 * One test per row of docs/semantics.md "Quantization": the choices where the spec is silent, the
 * upstream defects we do not copy, and the errors. Values are worked out by hand in each comment.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  QUANTIZELINEAR_VERSIONS, DEQUANTIZELINEAR_VERSIONS, Tensor, dequantizeLinear, dynamicQuantizeLinear, quantizeLinear,
  type DTypeName,
} from "../../src/index.js";
import { dynamicQuantizeParams, rangeParams, mxScaleCode, groupAbsMax, blockLayout, scaleIndexOf, axisLayout } from "../../src/kernels/quant/index.js";
import { dtype } from "../../src/index.js";
import { throwsCode } from "../support/assertions.js";

const f32 = (v: number[], shape?: number[]) => Tensor.fromValues(v, "float32", shape);
const scalar = (v: number, t: DTypeName = "float32") => Tensor.fromValues([v], t, []);

test("integer outputs: half to even, saturate, +Inf -> max, -Inf -> min, NaN -> min", () => {
  const x = f32([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, Infinity, -Infinity, NaN, 1e10, -1e10]);
  assert.deepEqual(quantizeLinear(x, scalar(1), scalar(0, "int8")).toValues(), [0, 2, 2, 0, -2, 126, 127, -128, -128, 127, -128]);
  assert.deepEqual(quantizeLinear(x, scalar(1), scalar(0, "uint16")).toValues(), [0, 2, 2, 0, 0, 126, 65535, 0, 0, 65535, 0]);
  assert.deepEqual(quantizeLinear(x, scalar(1), scalar(-32768, "int16")).toValues(), [-32768, -32766, -32766, -32768, -32768, -32642, 32767, -32768, -32768, 32767, -32768]);
  // The zero point is added after rounding: 2.5 -> 2, + 128 = 130; NaN is the minimum even with a zero point.
  assert.deepEqual(quantizeLinear(f32([2.5, NaN]), scalar(1), scalar(128, "uint8")).toValues(), [130, 0]);
  assert.deepEqual(quantizeLinear(f32([7.5, -8.5, 1.5, -2.5]), scalar(1), undefined, { outputDtype: "int4" }).toValues(), [7, -8, 2, -2]);
  assert.deepEqual(quantizeLinear(f32([1.5, -2.5, 3]), scalar(1), undefined, { outputDtype: "int2" }).toValues(), [1, -2, 1]);
});

test("float16 / bfloat16 scales divide in their own type at every version (onnxruntime divides in float32)", () => {
  // 9 / 1.05859375 = 8.50184...; in float16 it rounds to 8.5 (ulp 2^-7), a tie that goes to 8;
  // in float32 it stays above 8.5 and rounds to 9, which is what onnxruntime gives.
  const x = Tensor.fromValues([9], "float16");
  const s = Tensor.fromValues([1.05859375], "float16", []);
  for (const opset of [19, 21, 23, 24, 25, 28]) assert.deepEqual(quantizeLinear(x, s, scalar(0, "uint8"), { opset }).toValues(), [8], `opset ${opset}`);
  // With precision float32 (23+) the division is float32's.
  assert.deepEqual(quantizeLinear(x, s, scalar(0, "uint8"), { precision: "float32" }).toValues(), [9]);
});

test("precision (23+): both operands are converted to it, then divided", () => {
  // 2.5 + 2^-11 is a float32; in float16 it is 2.5 (a tie, to even: 2); in float32 3.
  const x = f32([2.5 + 2 ** -11]);
  assert.deepEqual(quantizeLinear(x, scalar(1), scalar(0, "uint8"), { precision: "float16" }).toValues(), [2]);
  assert.deepEqual(quantizeLinear(x, scalar(1), scalar(0, "uint8")).toValues(), [3]);
  assert.deepEqual(quantizeLinear(x, scalar(1), scalar(0, "uint8"), { precision: "bfloat16" }).toValues(), [2]);
  throwsCode(() => quantizeLinear(x, scalar(1), undefined, { precision: "float64" }), "INVALID_ATTRIBUTE", /precision must be float32, float16 or bfloat16/);
  throwsCode(() => quantizeLinear(x, scalar(1), undefined, { precision: "float32", opset: 21 }), "INVALID_ATTRIBUTE", /QuantizeLinear-21 has no precision/);
});

test("int32 inputs are converted to the precision type (the reference divides in float64)", () => {
  // x = 2^24 + 1 is 2^24 in float32; / 2^25 = 0.5 exactly, a tie -> 0. In float64 (the reference)
  // the quotient is 0.5 + 2^-25 -> 1.
  const x = Tensor.fromValues([2 ** 24 + 1], "int32");
  assert.deepEqual(quantizeLinear(x, scalar(2 ** 25), scalar(0, "uint8"), { opset: 13 }).toValues(), [0]);
  // An int32 scale (19+: with an int32 x) divides exactly: 7 / 2 = 3.5 -> 4, -7 / 2 -> -4.
  assert.deepEqual(quantizeLinear(Tensor.fromValues([7, -7, 5], "int32"), scalar(2, "int32"), scalar(0, "int8"), { opset: 19 }).toValues(), [4, -4, 2]);
});

test("a zero scale divides as IEEE does: +/-Inf and NaN, then the output's rules", () => {
  const x = f32([1, -1, 0]);
  assert.deepEqual(quantizeLinear(x, scalar(0), scalar(0, "int8")).toValues(), [127, -128, -128]);
  const y = quantizeLinear(x, scalar(0), undefined, { outputDtype: "float8e4m3fn" }).toValues();
  assert.deepEqual(y.slice(0, 2), [448, -448]);
  assert.ok(Number.isNaN(y[2]));
});

test("float8 outputs follow Cast's saturate; float4e2m1 always saturates; NaN keeps its sign", () => {
  const x = f32([1000, -1000, Infinity, 464, 480]);
  assert.deepEqual(quantizeLinear(x, scalar(1), undefined, { outputDtype: "float8e4m3fn" }).toValues(), [448, -448, 448, 448, 448]);
  const fn = quantizeLinear(x, scalar(1), undefined, { outputDtype: "float8e4m3fn", saturate: false }).toValues();
  assert.ok(Number.isNaN(fn[0]) && Number.isNaN(fn[2]) && Number.isNaN(fn[4]));
  assert.equal(fn[3], 448); // 464 is a tie that rounds down to 448
  assert.deepEqual(quantizeLinear(f32([1e6, -1e6, 61440]), scalar(1), undefined, { outputDtype: "float8e5m2", saturate: false }).toValues(), [Infinity, -Infinity, Infinity]);
  assert.deepEqual(quantizeLinear(f32([100, -7, 2.5]), scalar(1), undefined, { outputDtype: "float4e2m1", saturate: false }).toValues(), [6, -6, 2]);
  // float4e2m1 has no NaN: +NaN is code 0x8, -NaN code 0x0 (Cast's rule); -0 + the zero point 0 is +0.
  const nan = Tensor.fromBytes(new Uint8Array(new Uint32Array([0x7fc00000, 0xffc00000, 0x80000000]).buffer), "float32", [3]);
  assert.deepEqual(Array.from(quantizeLinear(nan, scalar(1), undefined, { outputDtype: "float4e2m1" }).bytes()), [0x08, 0x00]);
  assert.deepEqual(Array.from(quantizeLinear(nan, scalar(1), undefined, { outputDtype: "float8e4m3fn" }).bytes()), [0x7f, 0xff, 0x00]);
});

test("per-axis with a negative axis, blocked with a partial last block", () => {
  const x = f32([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [2, 5]);
  assert.deepEqual(quantizeLinear(x, f32([1, 2, 4, 8, 16]), Tensor.fromValues([0, 0, 0, 0, 0], "uint8"), { axis: -1 }).toValues(), [1, 1, 1, 0, 0, 6, 4, 2, 1, 1]);
  // Blocks of 2 along axis 1: columns {0, 1}, {2, 3}, {4} (partial).
  const s = f32([1, 2, 4, 1, 2, 4], [2, 3]);
  assert.deepEqual(quantizeLinear(x, s, undefined, { axis: 1, blockSize: 2 }).toValues(), [1, 2, 2, 2, 1, 6, 7, 4, 4, 2]);
  assert.deepEqual(dequantizeLinear(Tensor.fromValues([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "int8", [2, 5]), s, undefined, { axis: -1, blockSize: 2 }).toValues(), [1, 1, 2, 2, 4, 1, 1, 2, 2, 4]);
  const layout = blockLayout([2, 5], 1, 2);
  assert.deepEqual(Array.from({ length: 10 }, (_, i) => scaleIndexOf(layout, i)), [0, 0, 1, 1, 2, 3, 3, 4, 4, 5]);
  assert.deepEqual(Array.from({ length: 6 }, (_, i) => scaleIndexOf(axisLayout([3, 2], 0), i)), [0, 0, 1, 1, 2, 2]);
});

test("float8e8m0 scales (24+): a power of two; DequantizeLinear needs output_dtype", () => {
  const e8 = Tensor.fromBytes(new Uint8Array([128]), "float8e8m0", []); // 2^(128 - 127) = 2
  assert.deepEqual(quantizeLinear(f32([3, 5, -13]), e8, undefined, { outputDtype: "float4e2m1" }).toValues(), [1.5, 2, -6]);
  assert.deepEqual(dequantizeLinear(Tensor.fromValues([1.5, -6], "float4e2m1"), e8, undefined, { outputDtype: "bfloat16" }).toValues(), [3, -12]);
  throwsCode(() => dequantizeLinear(Tensor.fromValues([1], "int8"), e8), "INVALID_ATTRIBUTE", /float8e8m0 scale needs outputDtype/);
  throwsCode(() => quantizeLinear(f32([1]), e8, undefined, { opset: 23 }), "UNSUPPORTED_TYPE", /QuantizeLinear-23 does not accept float8e8m0 as scale/);
  const amax = new Float64Array(2);
  groupAbsMax(f32([1, -7, 0.5, 400]).data, dtype("float32"), blockLayout([4], 0, 2), amax);
  assert.deepEqual(Array.from(amax), [7, 400]);
  // MX: 2^(floor(log2 amax) - emax): e2m1 emax 2 -> 7: 2^0 (code 127); e4m3fn emax 8 -> 400: 2^0.
  assert.deepEqual([mxScaleCode(7, dtype("float4e2m1")), mxScaleCode(400, dtype("float8e4m3fn")), mxScaleCode(0, dtype("float4e2m1")), mxScaleCode(NaN, dtype("float4e2m1"))], [127, 127, 0, 255]);
});

test("DequantizeLinear: the exact (x - zero point) * scale rounded once to the output type", () => {
  assert.deepEqual(dequantizeLinear(Tensor.fromValues([0, 3, 128, 255], "uint8"), scalar(2), scalar(128, "uint8")).toValues(), [-256, -250, 0, 254]);
  // int32: 2^24 + 1 in float32 is one rounding: 16777216.
  assert.deepEqual(dequantizeLinear(Tensor.fromValues([2 ** 24 + 1], "int32"), scalar(1)).toValues(), [2 ** 24]);
  // float8 NaN and Inf go through: e5m2 Inf * 2 = Inf, NaN stays NaN.
  const y = dequantizeLinear(Tensor.fromBytes(new Uint8Array([0x7c, 0x7e, 0x80]), "float8e5m2", [3]), scalar(2)).toValues();
  assert.equal(y[0], Infinity);
  assert.ok(Number.isNaN(y[1]));
  assert.ok(Object.is(y[2], -0));
  // float16 output: 65504 * 2 overflows to Inf.
  assert.deepEqual(dequantizeLinear(Tensor.fromValues([65504 / 16], "int16"), Tensor.fromValues([32], "float16", [])).toValues(), [Infinity]);
});

test("DynamicQuantizeLinear: float32 steps; NaN skipped in the range; an all-zero tensor gives scale 0", () => {
  const a = dynamicQuantizeLinear(f32([1, NaN, -1]));
  // range [-1, 1]: scale fround(2 / 255); zero point 0 - (-1 / scale) = 127.49999... -> 127; NaN -> 0.
  assert.deepEqual([a.y.toValues(), a.scale.toValues(), a.zeroPoint.toValues()], [[254, 0, 0], [Math.fround(2 / 255)], [127]]);
  const z = dynamicQuantizeLinear(f32([0, 0]));
  assert.deepEqual([z.y.toValues(), z.scale.toValues(), z.zeroPoint.toValues()], [[0, 0], [0], [0]]);
  // -Inf: scale Inf, -Inf / Inf is NaN -> zero point 0 (onnxruntime gives 255); y: NaN -> 0, 1 / Inf = 0.
  const i = dynamicQuantizeLinear(f32([-Infinity, 1]));
  assert.deepEqual([i.y.toValues(), i.scale.toValues(), i.zeroPoint.toValues()], [[0, 0], [Infinity], [0]]);
  assert.deepEqual(dynamicQuantizeParams(-1, 2), { scale: Math.fround(3 / 255), zeroPoint: 85 });
  // The same rule onto other ranges: uint4 [0, 15] and int8 [-128, 127]; 0 - (-1 / (3/15)) = 5.
  assert.deepEqual(rangeParams(-1, 2, 0, 15), { scale: Math.fround(3 / 15), zeroPoint: 5 });
  assert.deepEqual(rangeParams(-1, 2, -128, 127), { scale: Math.fround(3 / 255), zeroPoint: -128 + 85 });
  assert.deepEqual(rangeParams(0, 0, -8, 7), { scale: 0, zeroPoint: -8 });
  throwsCode(() => dynamicQuantizeLinear(Tensor.fromValues([1], "float16")), "UNSUPPORTED_TYPE", /DynamicQuantizeLinear-11 does not accept float16/);
  throwsCode(() => dynamicQuantizeLinear(f32([1]), { opset: 10 }), "INVALID_OPSET");
});

test("each version's types and attributes, and the errors that name them", () => {
  assert.deepEqual(QUANTIZELINEAR_VERSIONS.map((v) => v.version), [10, 13, 19, 21, 23, 24, 25, 28]);
  assert.deepEqual(DEQUANTIZELINEAR_VERSIONS.map((v) => v.version), [10, 13, 19, 21, 23, 24, 25, 28]);
  assert.deepEqual([...QUANTIZELINEAR_VERSIONS[7].outputs].sort(), ["float4e2m1", "float6e2m3", "float6e3m2", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "int16", "int2", "int4", "int8", "uint16", "uint2", "uint4", "uint8"]);
  assert.deepEqual([...DEQUANTIZELINEAR_VERSIONS[0].inputs].sort(), ["int32", "int8", "uint8"]);
  const x = f32([1, 2, 3, 4], [2, 2]);
  throwsCode(() => quantizeLinear(x, f32([1, 2, 3]), undefined, { axis: 0 }), "SHAPE_MISMATCH", /needs 2 scales, got 3/);
  throwsCode(() => quantizeLinear(x, f32([1, 2], [2, 1]), undefined, { axis: 1, blockSize: 1 }), "SHAPE_MISMATCH", /needs a scale of shape \[2, 2\]/);
  throwsCode(() => quantizeLinear(x, f32([1, 2], [2, 1])), "SHAPE_MISMATCH", /needs a block size/);
  throwsCode(() => quantizeLinear(x, f32([1, 2]), Tensor.fromValues([0], "uint8")), "SHAPE_MISMATCH", /zero point's shape/);
  throwsCode(() => quantizeLinear(x, f32([1, 2]), undefined, { opset: 10 }), "SHAPE_MISMATCH", /QuantizeLinear-10 takes a scalar scale/);
  throwsCode(() => quantizeLinear(x, f32([1, 2]), undefined, { axis: 2 }), "INVALID_ATTRIBUTE", /axis 2 is out of range/);
  throwsCode(() => quantizeLinear(x, scalar(1), undefined, { blockSize: -1 }), "INVALID_ATTRIBUTE", /block_size must be 0/);
  throwsCode(() => quantizeLinear(x, scalar(1), scalar(0, "int8"), { outputDtype: "uint8" }), "INVALID_ATTRIBUTE", /output_dtype is uint8 but the zero point is int8/);
  throwsCode(() => quantizeLinear(x, scalar(1), scalar(0, "uint8"), { opset: 10, axis: 0 }), "INVALID_ATTRIBUTE");
  throwsCode(() => quantizeLinear(x, scalar(1), Tensor.fromValues([0], "float8e4m3fn", []), { opset: 13 }), "UNSUPPORTED_TYPE", /QuantizeLinear-13 does not accept float8e4m3fn/);
  throwsCode(() => quantizeLinear(x, scalar(1), Tensor.fromValues([0], "int4", []), { opset: 19 }), "UNSUPPORTED_TYPE");
  throwsCode(() => quantizeLinear(Tensor.fromValues([1], "float16"), scalar(1), undefined, { opset: 19 }), "UNSUPPORTED_TYPE", /the scale must have the input's type/);
  throwsCode(() => quantizeLinear(Tensor.fromValues([1], "float16"), scalar(1), undefined, { opset: 13 }), "UNSUPPORTED_TYPE", /does not accept float16 as input/);
  throwsCode(() => dequantizeLinear(Tensor.fromValues([1], "int8"), scalar(1), scalar(0, "uint8")), "UNSUPPORTED_TYPE", /zero point must have the input's type/);
  throwsCode(() => dequantizeLinear(Tensor.fromValues([1], "int4"), scalar(1), undefined, { opset: 19 }), "UNSUPPORTED_TYPE");
  throwsCode(() => dequantizeLinear(Tensor.fromValues([1], "int8"), scalar(1), undefined, { outputDtype: "float16", opset: 21 }), "INVALID_ATTRIBUTE", /DequantizeLinear-21 has no output_dtype/);
  throwsCode(() => dequantizeLinear(Tensor.fromValues([1], "int8"), scalar(1), undefined, { outputDtype: "int8" }), "UNSUPPORTED_TYPE");
  // opset 22 runs version 21; 20 runs 19.
  assert.equal(quantizeLinear(x, scalar(1), undefined, { opset: 22, blockSize: 0 }).dtype.name, "uint8");
});
