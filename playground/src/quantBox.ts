/**
 * The tensor box's `quantize` and `dequantize`: the library's quantizeLinear / dequantizeLinear
 * (QuantizeLinear, DequantizeLinear) with a scale and an optional zero point typed as lists. A list
 * gets its shape from the input, the axis and the block size (docs/playground.md), and the page
 * says which; a list that fits no shape stays 1-D, so the library's SHAPE_MISMATCH says what it
 * needed.
 */
import {
  dequantizeLinear, dtype, LATEST_OPSET, quantizeLinear, quantizeOperatorVersion, Tensor,
  type DequantizeOptions, type QuantizeOptions,
} from "tensorcast";
import { failure, opset, parseShape, parseTensorValues, shapeForPaste, type TensorOutcome } from "./tensorBox.js";

/** The quantization controls (the same scale, zero point, axis, block size and opset for both ways). */
export interface QuantRequest {
  /** One value (per tensor) or a list: per axis, or one per block. */
  readonly qScale: string;
  readonly qScaleType: string;
  /** Empty: no zero point. quantize: a value of the output type; dequantize: of the input's. */
  readonly qZeroPoint: string;
  /** The axis box's text (ONNX's default 1). */
  readonly qAxis: string;
  /** The block size box's text (0: not blocked). */
  readonly qBlockSize: string;
  /** quantize: the output (and zero point) type. */
  readonly qOutput: string;
  readonly qSaturate: boolean;
  /** quantize: the division's type; empty: the scale's. */
  readonly qPrecision: string;
  /** dequantize: the output type; empty: the scale's. */
  readonly qDeqOutput: string;
  readonly qOpset: string;
}

/** Types the scale can be given in (the newest versions'; an older version names what it lacks). */
export const SCALE_TYPES = ["float32", "float16", "bfloat16", "float8e8m0", "int32"] as const;
/** QuantizeLinear-28's output types, for the output select. */
export function quantizeOutputTypes(): string[] {
  return [...quantizeOperatorVersion("QuantizeLinear", LATEST_OPSET).outputs];
}

const product = (shape: readonly number[]) => shape.reduce((p, d) => p * d, 1);
const shapeText = (shape: readonly number[]) => `[${shape.join(", ")}]`;

/**
 * The shape a scale (or zero point) list of `count` values gets, and why: one value is per tensor
 * ([]); a nested JSON array keeps its own shape; with a block size, the input's shape with ceil(d /
 * blockSize) along the axis, when the count fits it; else 1-D (per axis).
 * @example paramShape("0.1 0.2 0.3 0.4", 4, [2, 6], 1, 3) // { shape: [2, 2], how: "blocked along axis 1: ceil(6 / 3) = 2 blocks" }
 * @example paramShape("0.1 0.2 0.3", 3, [2, 3], 1, 0)     // { shape: [3], how: "per axis 1" }
 */
export function paramShape(text: string, count: number, xShape: readonly number[], axis: number, blockSize: number): { shape: number[]; how: string } {
  if (count === 1) return { shape: [], how: "per tensor" };
  const nested = shapeForPaste(text, "");
  if (nested) return { shape: parseShape(nested)!, how: "as typed" };
  const rank = xShape.length;
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank || !Number.isSafeInteger(a)) return { shape: [count], how: `1-D (axis ${axis} is not one of the input's)` };
  if (blockSize > 0) {
    const blocks = Math.ceil(xShape[a] / blockSize);
    const want = xShape.map((d, i) => (i === a ? blocks : d));
    if (product(want) === count) return { shape: want, how: `blocked along axis ${a}: ceil(${xShape[a]} / ${blockSize}) = ${blocks} blocks` };
    return { shape: [count], how: `1-D: blocked along axis ${a} needs ${shapeText(want)}, ${product(want)} values` };
  }
  return { shape: [count], how: count === xShape[a] ? `per axis ${a}` : `1-D: per axis ${a} needs ${xShape[a]} values` };
}

/** A number box's value; empty is the default. Not a number: NaN, which the library's option check names. */
function numberBox(text: string, fallback: number): number {
  return text.trim() === "" ? fallback : Number(text);
}

function param(role: string, text: string, type: string, xShape: readonly number[], axis: number, blockSize: number): { tensor: Tensor; note: string } {
  const t = dtype(type);
  const values = parseTensorValues(text, t);
  const { shape, how } = paramShape(text, values.length, xShape, axis, blockSize);
  return { tensor: Tensor.fromValues(values as never[], t, shape), note: `${role} ${t.name} ${shapeText(shape)} (${how})` };
}

/** Runs quantize or dequantize on the box's input tensor. */
export function runQuantOp(op: "quantize" | "dequantize", input: Tensor, r: QuantRequest): Omit<TensorOutcome, "input"> {
  const axis = numberBox(r.qAxis, 1);
  const blockSize = numberBox(r.qBlockSize, 0);
  const o = opset(r.qOpset);
  let scaleNote: string | undefined;
  try {
    const name = op === "quantize" ? "QuantizeLinear" : "DequantizeLinear";
    const version = quantizeOperatorVersion(name, o ?? LATEST_OPSET);
    const attributes = version.attributes;
    const scale = param("scale", r.qScale, r.qScaleType, input.shape, axis, blockSize);
    const zpType = op === "quantize" ? r.qOutput : input.dtype.name;
    const zp = r.qZeroPoint.trim() === "" ? undefined : param("zero point", r.qZeroPoint, zpType, input.shape, axis, blockSize);
    scaleNote = `${name}-${version.version}: ${scale.note}${zp ? `; ${zp.note}` : "; no zero point"}`;
    // Defaults are left out, so an older version without the attribute runs; a value set on purpose
    // is passed, so a version without it says so (INVALID_ATTRIBUTE) instead of ignoring it.
    const common: DequantizeOptions = o === undefined ? {} : { opset: o };
    if (attributes.has("axis") || axis !== 1) common.axis = axis;
    if (attributes.has("block_size") || blockSize !== 0) common.blockSize = blockSize;
    if (op === "dequantize") {
      const options: DequantizeOptions = { ...common, ...(r.qDeqOutput ? { outputDtype: r.qDeqOutput } : {}) };
      return { output: dequantizeLinear(input, scale.tensor, zp?.tensor, options), scaleNote };
    }
    const options: QuantizeOptions = { ...common };
    if (attributes.has("saturate")) options.saturate = r.qSaturate;
    if (r.qPrecision) options.precision = r.qPrecision;
    if (!zp && (attributes.has("output_dtype") || r.qOutput !== "uint8")) options.outputDtype = r.qOutput;
    const output = quantizeLinear(input, scale.tensor, zp?.tensor, options);
    return { output, scaleNote, ...back(output, scale.tensor, zp?.tensor, common) };
  } catch (e) {
    return { error: failure(e), ...(scaleNote ? { scaleNote } : {}) };
  }
}

/** The codes dequantized back with the same scale, zero point, axis, block size and opset. */
function back(codes: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, common: DequantizeOptions): { back: Tensor } | { backError: ReturnType<typeof failure> } {
  try {
    const version = quantizeOperatorVersion("DequantizeLinear", common.opset ?? LATEST_OPSET);
    const options: DequantizeOptions = { ...common };
    // A float8e8m0 (or int32) scale has no float type of its own to give back: float32.
    const floatScale = ["float32", "float16", "bfloat16"].includes(scale.dtype.name);
    if (!floatScale && version.attributes.has("output_dtype")) options.outputDtype = "float32";
    return { back: dequantizeLinear(codes, scale, zeroPoint, options) };
  } catch (e) {
    return { backError: failure(e) };
  }
}
