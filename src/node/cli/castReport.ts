/**
 * What `tensorcast cast` computes, apart from how it is printed: for each value, the value stored in
 * the source type, the target code, the value it decodes to, the rounding error and what happened.
 * The judging itself lives in src/explain/, which the playground runs too.
 */
import {
  cast, dequantizeLinear, dtype, LATEST_OPSET, operatorVersion, quantizeLinear, quantizeOperatorVersion, TensorcastError,
  type CastOptions, type DType, type QuantizeOptions, type RoundMode, Tensor,
} from "../../index.js";
import { elementCode, formatBinary, formatHex, readElement, type Element } from "../../explain/element.js";
import { changedByStoring, classifyCast, roundingError, storeValue, type CastFlag } from "../../explain/outcome.js";
import { parseValue, VALUE_SYNTAX, type InputValue } from "../../explain/value.js";
import { describe, expectObject } from "../../args.js";
import { expectStrings } from "../args.js";
import { quoteBounded } from "../../io/safetensors/json.js";

export type { CastFlag };

export interface CastRequest {
  /** Source type; default float64, so the value is what JS reads from the literal. */
  readonly from?: string;
  readonly to: string;
  readonly saturate?: boolean;
  readonly roundMode?: RoundMode;
  readonly opset?: number;
  /** Quantize instead of Cast (QuantizeLinear): the scale, as typed. */
  readonly scale?: string;
  /** The scale's type; default the --from type when it is float32, float16 or bfloat16, else float32. */
  readonly scaleType?: string;
  /** QuantizeLinear's zero point, as typed (stored in the --to type). Default: none (0). */
  readonly zeroPoint?: string;
}

export interface CastRow {
  /** The argument as given. */
  readonly input: string;
  /** The value once stored in the source type. */
  readonly source: string;
  /** Whether storing in the source type changed it (0.1 as float32 does). */
  readonly sourceChanged: boolean;
  /** The target code in hex (`0x7e`) and in binary, split into sign|exponent|mantissa for floats. */
  readonly code: string;
  readonly binary: string;
  /** The target code's value. */
  readonly result: string;
  /** |result - source| and that over |source|; null where undefined (NaN, inf, or source 0). */
  readonly absError: number | null;
  readonly relError: number | null;
  readonly flag: CastFlag;
  /**
   * Quantize mode: the quantized element's value (`result` is then its dequantized value,
   * (quantized - zero point) * scale, which the errors compare with the source).
   */
  readonly quantized?: string;
}

export interface CastReport {
  readonly from: string;
  readonly to: string;
  /** The operator version the opset selects, e.g. "Cast-24". */
  readonly operator: string;
  readonly opset: number;
  /** The options in effect (defaults filled in), whether or not the target uses them. */
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  /** Quantize mode: the scale and zero point as stored, and the scale's type. */
  readonly scale?: string;
  readonly scaleType?: string;
  readonly zeroPoint?: string;
  readonly rows: readonly CastRow[];
}

/**
 * Stores each value in `from` with `Tensor.fromValues` (round to nearest even), then casts it to
 * `to` with the request's options, one value at a time so each row stands alone.
 * @throws TensorcastError PARSE_ERROR for a value that is not a number; others for anything the library
 *         rejects (unknown type, type not in the opset's Cast, a value `from` cannot hold such as
 *         1.5 for int8 or inf for float8e4m3fn).
 */
export function castValues(values: readonly string[], request: CastRequest): CastReport {
  expectStrings(values, "castValues' values");
  expectObject(request, "castValues' request", "INVALID_ATTRIBUTE");
  if (request.scale !== undefined) return quantizeValues(values, request, request.scale);
  if (request.zeroPoint !== undefined || request.scaleType !== undefined) {
    throw new TensorcastError("INVALID_ATTRIBUTE", "castValues: zeroPoint and scaleType need scale (they describe QuantizeLinear)");
  }
  const inputs = values.map(parseCliValue);
  const from = resolve(request.from ?? "float64", "from");
  const to = resolve(request.to, "to");
  const options: CastOptions = {};
  if (request.saturate !== undefined) options.saturate = request.saturate;
  if (request.roundMode !== undefined) options.roundMode = request.roundMode;
  if (request.opset !== undefined) options.opset = request.opset;
  const opset = request.opset ?? LATEST_OPSET;
  const version = operatorVersion("Cast", opset);
  const roundMode = request.roundMode ?? "up";

  const rows = inputs.map((input): CastRow => {
    const stored = withContext(`cannot store ${input.text} in the --from type ${from.name}`, () => storeValue(input, from));
    const result = cast(stored, to, options);
    const s = readElement(stored, 0);
    const r = readElement(result, 0);
    return row(input, s, result, r, roundingError(s, r), classifyCast(s, r, to));
  });
  return {
    from: from.name, to: to.name, operator: `Cast-${version.version}`, opset,
    saturate: request.saturate ?? true, roundMode, rows,
  };
}

/** One row: the source as stored, the code of `coded`'s element 0, the value `r` shown as the result. */
function row(
  input: InputValue, s: Element, coded: Tensor, r: Element, [absError, relError]: readonly [number | null, number | null], flag: CastFlag,
): CastRow {
  const code = elementCode(coded, 0);
  return {
    input: input.text, source: s.display, sourceChanged: changedByStoring(input, s),
    code: formatHex(code, coded.dtype), binary: formatBinary(code, coded.dtype), result: r.display, absError, relError, flag,
  };
}

/**
 * The data type named by --from or --to: a name, alias or ONNX number (17). The error says which
 * option named it.
 */
function resolve(name: string, option: "from" | "to"): DType {
  if (typeof name !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `castValues' request.${option} must be a type name, got ${describe(name)}`);
  return withContext(`--${option}`, () => dtype(/^\d+$/.test(name) ? Number(name) : name));
}

/** Runs `f`, prefixing the message of a TensorcastError it throws (the code stays). */
function withContext<T>(context: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof TensorcastError) throw new TensorcastError(e.code, `${context}: ${e.message}`);
    throw e;
  }
}

/** @throws UsageError for anything that is not a decimal literal or a special name. */
function parseCliValue(text: string): InputValue {
  const value = parseValue(text);
  if (!value) throw new TensorcastError("PARSE_ERROR", notAValue(text));
  return value;
}

const QUANTIZE_INPUTS = new Set(["float32", "float16", "bfloat16"]);

/**
 * Quantize mode: each value stored in `from` (default float32), quantized with QuantizeLinear's
 * rules at the request's opset (the scale and zero point given once for all values), shown with
 * its code and its dequantized value, whose difference from the source is the rounding error.
 */
function quantizeValues(values: readonly string[], request: CastRequest, scaleText: string): CastReport {
  if (request.roundMode !== undefined) throw new TensorcastError("INVALID_ATTRIBUTE", "castValues: roundMode is a Cast option (e8m0 targets); QuantizeLinear has none");
  const inputs = values.map(parseCliValue);
  const from = resolve(request.from ?? "float32", "from");
  const to = resolve(request.to, "to");
  const scaleType = request.scaleType !== undefined
    ? withContext("--scale-type", () => dtype(/^\d+$/.test(request.scaleType!) ? Number(request.scaleType) : request.scaleType!))
    : dtype(QUANTIZE_INPUTS.has(from.name) ? from.name : "float32");
  const scale = withContext(`cannot store --scale ${scaleText} in ${scaleType.name}`, () => storeValue(parseCliValue(scaleText), scaleType));
  let zeroPoint = request.zeroPoint === undefined ? undefined
    : withContext(`cannot store --zero-point ${request.zeroPoint} in the --to type ${to.name}`, () => storeValue(parseCliValue(request.zeroPoint!), to));
  const opset = request.opset ?? LATEST_OPSET;
  const version = quantizeOperatorVersion("QuantizeLinear", opset);
  const options: QuantizeOptions = { opset };
  if (request.saturate !== undefined) options.saturate = request.saturate;
  // Without a zero point the type comes from output_dtype (21+), or before that from a zero point 0.
  if (!zeroPoint && to.name !== "uint8") {
    if (version.attributes.has("output_dtype")) options.outputDtype = to;
    else zeroPoint = Tensor.zeros(to, []);
  }
  const rows = inputs.map((input): CastRow => {
    const stored = withContext(`cannot store ${input.text} in the --from type ${from.name}`, () => storeValue(input, from));
    const q = quantizeLinear(stored, scale, zeroPoint, options);
    const s = readElement(stored, 0);
    const qe = readElement(q, 0);
    const back = dequantized(q, scale, zeroPoint, opset);
    const r = back ? readElement(back, 0) : { display: "", value: NaN };
    // The flag compares the exact quotient plus zero point with the quantized value.
    const ideal = s.value / readElement(scale, 0).value + (zeroPoint ? readElement(zeroPoint, 0).value : 0);
    const flag = classifyCast({ display: "", value: ideal }, qe, to);
    return { ...row(input, s, q, r, back ? roundingError(s, r) : [null, null], flag), quantized: qe.display };
  });
  return {
    from: from.name, to: to.name, operator: `QuantizeLinear-${version.version}`, opset,
    saturate: request.saturate ?? true, roundMode: "up",
    scale: readElement(scale, 0).display, scaleType: scaleType.name,
    ...(zeroPoint ? { zeroPoint: readElement(zeroPoint, 0).display } : {}),
    rows,
  };
}

/** DequantizeLinear of one quantized element at the same opset, in float32 where the scale cannot be an output type. */
function dequantized(q: Tensor, scale: Tensor, zeroPoint: Tensor | undefined, opset: number): Tensor | undefined {
  const version = quantizeOperatorVersion("DequantizeLinear", opset);
  if (!version.scales.has(scale.dtype.name) || !version.inputs.has(q.dtype.name)) return undefined;
  const outputDtype = opset >= 23 && !QUANTIZE_INPUTS.has(scale.dtype.name) ? "float32" : undefined;
  return dequantizeLinear(q, scale, zeroPoint, { opset, ...(outputDtype && { outputDtype }) });
}

/** The message for a command-line value that is not one `cast` accepts. */
export function notAValue(text: string): string {
  return `${quoteBounded(text)} is not a value cast accepts; expected ${VALUE_SYNTAX}`;
}
