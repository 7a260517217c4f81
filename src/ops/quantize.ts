/**
 * QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: check the operator version's types,
 * attributes and shapes, then run the kernels of src/kernels/quant/. docs/semantics.md
 * ("Quantization") lists every rule with its test.
 */
import { expectOptions, isBoolean } from "../args.js";
import { TensorcastError } from "../errors.js";
import { dtype, type DType, type DTypeLike, type DTypeName } from "../dtype/table.js";
import { dequantizeLinearKernel, quantizeLinearKernel, type DequantizeArgs, type QuantizeArgs } from "../kernels/quant/kernels.js";
import { axisLayout, blockLayout, blockedScaleShape, tensorLayout, type QuantLayout } from "../kernels/quant/layout.js";
import type { PrecisionName } from "../kernels/quant/arithmetic.js";
import { dynamicQuantizeParams, groupMinMax } from "../kernels/quant/scales.js";
import { allocateOutputStorage, allocateStorage, expectStorage, expectTensor, shapeText, Tensor } from "../tensor.js";
import {
  DEQUANTIZE_OUTPUT_TYPES, LATEST_OPSET, quantizeOperatorVersion, type QuantizeOperatorVersion,
} from "./opsets.js";

export interface QuantizeOptions {
  /**
   * The quantization axis for per-axis and blocked scales (QuantizeLinear-13+), negative counting
   * from the back. Default 1. Ignored for a per-tensor (one-element) scale.
   */
  axis?: number;
  /** Blocked quantization (21+): consecutive elements along `axis` sharing a scale. Default 0 (not blocked). */
  blockSize?: number;
  /**
   * Float8 outputs (19+): Cast's saturate. True (default): overflow and +/-Inf give +/-max; false:
   * Inf for float8e5m2, NaN for the others. float4e2m1 and float6 always saturate, integers always clamp.
   */
  saturate?: boolean;
  /** The output type (21+) when there is no zero point; with one, it must be the zero point's type. Default uint8. */
  outputDtype?: DTypeLike;
  /**
   * The type the division x / scale is computed in (23+): float32, float16 or bfloat16. Default:
   * the scale's type (float32 for float8e8m0 scales, exact for int32 scales).
   */
  precision?: DTypeLike;
  /** The model opset whose operator version applies. Default: the newest (28). */
  opset?: number;
}

export interface DequantizeOptions {
  /** As for quantizeLinear (13+). Default 1. */
  axis?: number;
  /** As for quantizeLinear (21+). Default 0. */
  blockSize?: number;
  /** The output type (23+): float32, float16 or bfloat16. Default: the scale's type. */
  outputDtype?: DTypeLike;
  opset?: number;
}

export interface DynamicQuantizeOptions {
  opset?: number;
}

/** DynamicQuantizeLinear's three outputs. */
export interface DynamicQuantized {
  /** uint8, the shape of x. */
  readonly y: Tensor<"uint8">;
  /** A float32 scalar. */
  readonly scale: Tensor<"float32">;
  /** A uint8 scalar. */
  readonly zeroPoint: Tensor<"uint8">;
}

const isInteger = (v: unknown): boolean => typeof v === "number" && Number.isSafeInteger(v);
const isTypeLike = (v: unknown): boolean => typeof v === "string" || typeof v === "number" || (typeof v === "object" && v !== null);
const QUANTIZE_OPTIONS = { axis: isInteger, blockSize: isInteger, saturate: isBoolean, outputDtype: isTypeLike, precision: isTypeLike, opset: isInteger };
const DEQUANTIZE_OPTIONS = { axis: isInteger, blockSize: isInteger, outputDtype: isTypeLike, opset: isInteger };
const EXPECTED = { axis: "an integer", blockSize: "an integer", saturate: "true or false", outputDtype: "a data type", precision: "a data type", opset: "an integer" };
/** Option name -> ONNX attribute name. */
const ATTRIBUTE: Record<string, string> = { axis: "axis", blockSize: "block_size", saturate: "saturate", outputDtype: "output_dtype", precision: "precision" };

/**
 * ONNX QuantizeLinear: y = saturate(roundHalfEven(x / scale) + zeroPoint), per tensor, per axis or
 * per block, as the scale's shape says.
 *
 * The division is correctly rounded in the precision type (the `precision` option, else the
 * scale's type), both operands first converted to it. Integer outputs clamp to their range (+Inf
 * gives the maximum, -Inf the minimum, NaN the minimum, as onnxruntime and the reference
 * evaluator do). Float8, float4e2m1 and float6 outputs follow Cast from the quotient plus the zero
 * point, `saturate` included.
 *
 * @example quantizeLinear(Tensor.fromValues([0, 2, 3, 1000, -254, -1000], "float32"),
 *            Tensor.fromValues([2], "float32", []), Tensor.fromValues([128], "uint8", [])).toValues()
 *          // [128, 129, 130, 255, 1, 0]   (3 / 2 = 1.5 rounds to even: 2)
 * @throws TensorcastError UNSUPPORTED_TYPE for a type the version lacks (or a scale whose type
 *         differs from x's at versions 19 and 21); SHAPE_MISMATCH for a scale or zero point whose
 *         shape does not fit the axis and block size; INVALID_ATTRIBUTE for an option the version
 *         lacks, an axis out of range, a negative block size, or `outputDtype` contradicting the
 *         zero point's type.
 */
export function quantizeLinear(x: Tensor, scale: Tensor, zeroPoint?: Tensor, opts: QuantizeOptions = {}): Tensor {
  const { args, out } = checkQuantize("quantizeLinear", x, scale, zeroPoint, opts);
  // Memory a disposed output left in the pool when there is one (no page faults; the SIMD kernels write every byte).
  const { data: y } = allocateOutputStorage(out, args.layout.count);
  quantizeLinearKernel({ ...args, y }); // the SIMD path where it applies, else the reference
  return Tensor.fromStorage(y, out, x.shape);
}

/**
 * `quantizeLinear(x, scale, zeroPoint, opts)` written into `out` (the output type is `out`'s: it
 * must be the zero point's type and `outputDtype` when given; the shape must be x's). The bytes are
 * quantizeLinear's. When `x` and `out` live in one arena (createArena, src/arena.ts), the
 * WebAssembly SIMD kernels run in place on the arena's memory, without the chunk copies ordinary
 * arrays need (float32 -> int8 / uint8 / int4 / uint4 / float8e4m3fn / float4e2m1 with float32 or
 * float8e8m0 scales; the scale and zero point may live anywhere). Returns `out`.
 * @example const a = createArena(5 << 22); const xa = a.from(x); const q = a.zeros("int8", x.shape);
 *          quantizeLinearInto(xa, scale, zeroPoint, q) // in place
 * @throws TensorcastError as quantizeLinear; SHAPE_MISMATCH when out's shape differs from x's;
 *         INVALID_ATTRIBUTE when out's type contradicts the zero point or outputDtype;
 *         ALIASED_OUTPUT when out's bytes overlap x's.
 */
export function quantizeLinearInto<N extends DTypeName>(x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, out: Tensor<N>, opts: QuantizeOptions = {}): Tensor<N> {
  checkOutput("quantizeLinearInto", x, out);
  const { args, out: type } = checkQuantize("quantizeLinearInto", x, scale, zeroPoint, opts, out.dtype);
  if (type !== out.dtype) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `quantizeLinearInto: the output type is ${type.name} (the zero point's, output_dtype, or uint8) but the output tensor is ${out.dtype.name}`,
    );
  }
  checkAliasing("quantizeLinearInto", x, out);
  quantizeLinearKernel({ ...args, y: out.data });
  return out;
}

/**
 * quantizeLinear's checks; the kernel's arguments but the output. `wanted`: an *Into output's
 * type, the output type when neither a zero point nor outputDtype says it and the version has output_dtype.
 */
function checkQuantize(
  fn: string, x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, opts: QuantizeOptions, wanted?: DType,
): { args: Omit<QuantizeArgs, "y">; out: DType } {
  expectOptions(opts, fn, QUANTIZE_OPTIONS, EXPECTED);
  const { version, name, layout } = checkCommon("QuantizeLinear", x, scale, zeroPoint, opts);
  if (version.scaleIsInputType && scale.dtype !== x.dtype) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${name}: the scale must have the input's type (both are T1): x is ${x.dtype.name}, the scale ${scale.dtype.name}`);
  }
  const out = outputTypeOf(name, zeroPoint, opts.outputDtype ?? (version.attributes.has("output_dtype") ? wanted : undefined));
  checkType(name, zeroPoint ? "zero point / output" : "output", out, version.outputs);
  const precision = precisionOf(name, scale.dtype, opts.precision);
  return {
    out,
    args: {
      x: x.data, xType: x.dtype, scale: scale.data, scaleType: scale.dtype, zeroPoint: zeroPoint?.data,
      yType: out, layout, precision, saturate: opts.saturate ?? true,
    },
  };
}

/** An *Into function's output: a live tensor of x's shape. */
function checkOutput(fn: string, x: Tensor, out: Tensor): void {
  if (!(out instanceof Tensor)) throw new TensorcastError("INVALID_DATA", `${fn} expects a Tensor as output, got ${typeof out}`);
  expectStorage(out, `${fn}'s output`);
  if (x instanceof Tensor && !sameShape(x.shape, out.shape)) {
    throw new TensorcastError("SHAPE_MISMATCH", `${fn}: the output's shape ${shapeText(out.shape)} differs from the input's ${shapeText(x.shape)}`);
  }
}

function checkAliasing(fn: string, x: Tensor, out: Tensor): void {
  const a = x.data as Uint8Array;
  const b = out.data as Uint8Array;
  if (a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength) {
    throw new TensorcastError("ALIASED_OUTPUT", `${fn}: the output's bytes overlap the input's (${x.dtype.name} -> ${out.dtype.name}); use a separate output`);
  }
}

/**
 * ONNX DequantizeLinear: y = (x - zeroPoint) * scale, per tensor, per axis or per block, the exact
 * product rounded once to the output type (the `outputDtype` option, else the scale's type;
 * float32 before version 19). NaN and infinities of float8 inputs go through the arithmetic.
 *
 * @example dequantizeLinear(Tensor.fromValues([0, 3, 128, 255], "uint8"), Tensor.fromValues([2], "float32", []),
 *            Tensor.fromValues([128], "uint8", [])).toValues()   // [-256, -250, 0, 254]
 * @throws TensorcastError as quantizeLinear; UNSUPPORTED_TYPE also for a zero point whose type is
 *         not x's, and INVALID_ATTRIBUTE for a float8e8m0 scale without `outputDtype`.
 */
export function dequantizeLinear(x: Tensor, scale: Tensor, zeroPoint?: Tensor, opts: DequantizeOptions = {}): Tensor {
  const { args, out } = checkDequantize("dequantizeLinear", x, scale, zeroPoint, opts);
  const { data: y } = allocateOutputStorage(out, args.layout.count);
  dequantizeLinearKernel({ ...args, y });
  return Tensor.fromStorage(y, out, x.shape);
}

/**
 * `dequantizeLinear(x, scale, zeroPoint, opts)` written into `out` (float32, float16 or bfloat16,
 * x's shape; it must agree with `outputDtype` when given, and with the scale's type when the
 * version has no output_dtype). The bytes are dequantizeLinear's. In place on an arena's memory
 * when `x` and `out` live in one arena (int8 / uint8 / int4 / uint4 / float8e4m3fn / float4e2m1
 * -> float32, finite float32 or float8e8m0 scales). Returns `out`.
 * @example dequantizeLinearInto(qa, scale, zeroPoint, arena.zeros("float32", qa.shape))
 * @throws TensorcastError as dequantizeLinear; SHAPE_MISMATCH, INVALID_ATTRIBUTE, ALIASED_OUTPUT as quantizeLinearInto.
 */
export function dequantizeLinearInto<N extends DTypeName>(x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, out: Tensor<N>, opts: DequantizeOptions = {}): Tensor<N> {
  checkOutput("dequantizeLinearInto", x, out);
  const { args, out: type } = checkDequantize("dequantizeLinearInto", x, scale, zeroPoint, opts, out.dtype);
  if (type !== out.dtype) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `dequantizeLinearInto: the output type is ${type.name} (output_dtype or the scale's type) but the output tensor is ${out.dtype.name}`);
  }
  checkAliasing("dequantizeLinearInto", x, out);
  dequantizeLinearKernel({ ...args, y: out.data });
  return out;
}

/** dequantizeLinear's checks; the kernel's arguments but the output. `wanted`: an *Into output's type, used when the version allows output_dtype and none is given. */
function checkDequantize(
  fn: string, x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, opts: DequantizeOptions, wanted?: DType,
): { args: Omit<DequantizeArgs, "y">; out: DType } {
  expectOptions(opts, fn, DEQUANTIZE_OPTIONS, EXPECTED);
  const { version, name, layout } = checkCommon("DequantizeLinear", x, scale, zeroPoint, opts);
  if (zeroPoint && zeroPoint.dtype !== x.dtype) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${name}: the zero point must have the input's type: x is ${x.dtype.name}, the zero point ${zeroPoint.dtype.name}`);
  }
  let out: DType;
  if (opts.outputDtype !== undefined) out = dtype(opts.outputDtype);
  else if (wanted && version.attributes.has("output_dtype")) out = wanted;
  else if (DEQUANTIZE_OUTPUT_TYPES.has(scale.dtype.name)) out = scale.dtype;
  else {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${name}: a ${scale.dtype.name} scale needs outputDtype (output_dtype): float32, float16 or bfloat16`);
  }
  checkType(name, "output", out, version.outputs);
  return { out, args: { x: x.data, xType: x.dtype, scale: scale.data, scaleType: scale.dtype, zeroPoint: zeroPoint?.data, yType: out, layout } };
}

/**
 * ONNX DynamicQuantizeLinear-11: the uint8 quantization of a float32 tensor with the scale and
 * zero point of its range (widened to include 0), in the operator's float32 arithmetic:
 * scale = (max - min) / 255, zeroPoint = saturate(roundHalfEven(0 - min / scale)), then
 * y = quantizeLinear(x, scale, zeroPoint). NaN elements do not widen the range (onnxruntime's
 * choice) and quantize to 0; an all-zero tensor gives scale 0 and zero point 0, as the formula
 * does (onnxruntime gives scale 1, the reference evaluator 1/255).
 *
 * @example dynamicQuantizeLinear(Tensor.fromValues([1, 2, 3], "float32"))
 *          // y [85, 170, 255], scale 0.0117647061124444 (3/255 in float32), zeroPoint 0
 * @throws TensorcastError UNSUPPORTED_TYPE for anything but float32; INVALID_OPSET below 11.
 */
export function dynamicQuantizeLinear(x: Tensor, opts: DynamicQuantizeOptions = {}): DynamicQuantized {
  expectOptions(opts, "dynamicQuantizeLinear", { opset: isInteger }, EXPECTED);
  const version = quantizeOperatorVersion("DynamicQuantizeLinear", opts.opset ?? LATEST_OPSET);
  expectTensor(x, "DynamicQuantizeLinear's input");
  if (x.disposed) throw new TensorcastError("INVALID_DATA", "DynamicQuantizeLinear: the input tensor was disposed (its storage is released)");
  checkType(`DynamicQuantizeLinear-${version.version}`, "input x", x.dtype, version.inputs);
  const layout = tensorLayout(x.shape);
  const min = new Float64Array(1);
  const max = new Float64Array(1);
  groupMinMax(x.data, x.dtype, layout, min, max);
  const p = dynamicQuantizeParams(min[0], max[0]);
  const scale = Tensor.fromStorage(new Float32Array([p.scale]), "float32", []);
  const zeroPoint = Tensor.fromStorage(new Uint8Array([p.zeroPoint]), "uint8", []);
  const uint8 = dtype("uint8");
  const y = allocateStorage(uint8, layout.count);
  quantizeLinearKernel({
    x: x.data, xType: x.dtype, scale: scale.data, scaleType: scale.dtype, zeroPoint: zeroPoint.data,
    y, yType: uint8, layout, precision: "float32", saturate: true,
  });
  return { y: Tensor.fromStorage(y, uint8, x.shape), scale, zeroPoint };
}

/** The checks both operators make: the version, its attributes, the shapes, x's and the scale's types. */
function checkCommon(
  op: "QuantizeLinear" | "DequantizeLinear", x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, opts: QuantizeOptions | DequantizeOptions,
): { version: QuantizeOperatorVersion; name: string; layout: QuantLayout } {
  const version = quantizeOperatorVersion(op, opts.opset ?? LATEST_OPSET);
  const name = `${op}-${version.version}`;
  checkAttributes(version, opts);
  const { layout } = checkOperands(version, x, scale, zeroPoint, opts);
  checkType(name, "input x", x.dtype, version.inputs);
  checkType(name, "scale", scale.dtype, version.scales);
  return { version, name, layout };
}

function checkAttributes(version: QuantizeOperatorVersion, opts: QuantizeOptions | DequantizeOptions): void {
  for (const [key, attribute] of Object.entries(ATTRIBUTE)) {
    if ((opts as Record<string, unknown>)[key] === undefined || version.attributes.has(attribute)) continue;
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `${version.op}-${version.version} has no ${attribute} attribute (option ${key}); its attributes are ${[...version.attributes].join(", ") || "none"}`,
    );
  }
  if (opts.blockSize !== undefined && opts.blockSize < 0) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${version.op}-${version.version}: block_size must be 0 (not blocked) or positive, got ${opts.blockSize}`);
  }
}

function checkType(name: string, role: string, t: DType, allowed: ReadonlySet<DTypeName>): void {
  if (!allowed.has(t.name)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${name} does not accept ${t.name} as ${role} type; it allows ${[...allowed].join(", ")}`);
  }
}

/** The output type of QuantizeLinear: the zero point's, else output_dtype, else uint8. */
function outputTypeOf(name: string, zeroPoint: Tensor | undefined, outputDtype: DTypeLike | undefined): DType {
  const asked = outputDtype === undefined ? undefined : dtype(outputDtype);
  if (zeroPoint) {
    if (asked && asked !== zeroPoint.dtype) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${name}: output_dtype is ${asked.name} but the zero point is ${zeroPoint.dtype.name}; they must agree`);
    }
    return zeroPoint.dtype;
  }
  return asked ?? dtype("uint8");
}

const PRECISIONS: ReadonlySet<DTypeName> = new Set(["float32", "float16", "bfloat16"]);

/** The type the division is rounded in (docs/semantics.md, "Quantization"). */
function precisionOf(name: string, scaleType: DType, precision: DTypeLike | undefined): PrecisionName {
  if (precision !== undefined) {
    const p = dtype(precision);
    if (!PRECISIONS.has(p.name)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${name}: precision must be float32, float16 or bfloat16, got ${p.name}`);
    }
    return p.name as PrecisionName;
  }
  if (PRECISIONS.has(scaleType.name)) return scaleType.name as PrecisionName;
  // An e8m0 scale is a power of two: float32 divides by it exactly but for under- and overflow.
  // An int32 scale: the exact quotient, rounded once to an integer (no float type to round in).
  return scaleType.name === "float8e8m0" ? "float32" : "float64";
}

/** Checks the tensors and their shapes; returns how elements map to scales. */
function checkOperands(
  version: QuantizeOperatorVersion, x: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, opts: QuantizeOptions | DequantizeOptions,
): { layout: QuantLayout } {
  const name = `${version.op}-${version.version}`;
  expectTensor(x, `${name}'s input x`);
  expectTensor(scale, `${name}'s scale`);
  if (zeroPoint !== undefined) expectTensor(zeroPoint, `${name}'s zero point`);
  for (const t of [x, scale, zeroPoint]) {
    if (t?.disposed) throw new TensorcastError("INVALID_DATA", `${name}: a tensor argument was disposed (its storage is released)`);
  }
  if (zeroPoint && !sameShape(zeroPoint.shape, scale.shape) && !(isScalarLike(zeroPoint.shape) && isScalarLike(scale.shape))) {
    throw new TensorcastError("SHAPE_MISMATCH", `${name}: the zero point's shape ${shapeText(zeroPoint.shape)} differs from the scale's ${shapeText(scale.shape)}`);
  }
  const blockSize = opts.blockSize ?? 0;
  const s = scale.shape;
  if (isScalarLike(s)) return { layout: tensorLayout(x.shape) };
  if (version.version < 13) {
    throw new TensorcastError("SHAPE_MISMATCH", `${name} takes a scalar scale (per-tensor only; per-axis from version 13); got shape ${shapeText(s)}`);
  }
  const rank = x.shape.length;
  const axis = opts.axis ?? 1;
  if (rank === 0 || axis < -rank || axis >= rank) {
    throw new TensorcastError(
      rank === 0 ? "SHAPE_MISMATCH" : "INVALID_ATTRIBUTE",
      rank === 0
        ? `${name}: a scalar input takes a one-element scale, got shape ${shapeText(s)}`
        : `${name}: axis ${axis} is out of range for an input of rank ${rank}; it must be in [${-rank}, ${rank - 1}]`,
    );
  }
  const a = axis < 0 ? axis + rank : axis;
  if (blockSize > 0) {
    const want = blockedScaleShape(x.shape, a, blockSize);
    if (!sameShape(s, want)) {
      throw new TensorcastError(
        "SHAPE_MISMATCH",
        `${name}: blocked quantization of an input of shape ${shapeText(x.shape)} along axis ${a} with block size ${blockSize} ` +
          `needs a scale of shape ${shapeText(want)} (ceil(${x.shape[a]} / ${blockSize}) = ${want[a]} blocks), got ${shapeText(s)}`,
      );
    }
    return { layout: blockLayout(x.shape, a, blockSize) };
  }
  if (s.length !== 1) {
    throw new TensorcastError(
      "SHAPE_MISMATCH",
      `${name}: a scale of shape ${shapeText(s)} needs a block size (blocked quantization${version.version < 21 ? ", from version 21" : ""}); per-axis scales are 1-D`,
    );
  }
  if (s[0] !== x.shape[a]) {
    throw new TensorcastError(
      "SHAPE_MISMATCH",
      `${name}: per-axis quantization along axis ${a} of an input of shape ${shapeText(x.shape)} needs ${x.shape[a]} scales, got ${s[0]}`,
    );
  }
  return { layout: axisLayout(x.shape, a) };
}

/** Shape [] or [1]: one scale for the whole tensor, as onnxruntime and the reference evaluator read it. */
function isScalarLike(shape: readonly number[]): boolean {
  return shape.length === 0 || (shape.length === 1 && shape[0] === 1);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
