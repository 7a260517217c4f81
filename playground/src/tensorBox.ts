/**
 * The tensor box: values, a data type and a shape make a tensor; `cast`, `reshape`, `bitcast`,
 * `promote` (ConvertPromoteTypes), `quantize` or `dequantize` (QuantizeLinear, DequantizeLinear) is
 * applied to it as you type, and the result is shown as a table. Every failure is the library's own
 * TensorcastError, shown with its code and message.
 */
import {
  bitcast, cast, convertPromoteTypes, dtype, operatorVersion, parseValue, promoteTypes, reshape, Tensor,
  type BitcastSemantics, type CastOptions, type DType, type ReshapeOptions, type RoundMode,
} from "tensorcast";
import { errorText } from "./format.js";
import { bracketError, splitValues } from "./explain.js";
import { runQuantOp, type QuantRequest } from "./quantBox.js";

/** The most values the box builds a tensor from; beyond, it says so instead of working for minutes. */
export const MAX_TENSOR_VALUES = 1_000_000;
/** The longest text it reads at all (about 1,000,000 values of 15 characters). */
export const MAX_TENSOR_TEXT = 16_000_000;

export type TensorOp = "cast" | "reshape" | "bitcast" | "promote" | "quantize" | "dequantize";
export const TENSOR_OPS: readonly TensorOp[] = ["cast", "reshape", "bitcast", "promote", "quantize", "dequantize"];

export interface TensorRequest extends QuantRequest {
  readonly values: string;
  readonly dtype: string;
  /** Empty: a 1-D tensor of all the values. */
  readonly shape: string;
  readonly op: TensorOp;
  readonly castTo: string;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  readonly castOpset: string;
  readonly reshapeShape: string;
  readonly allowzero: boolean;
  readonly reshapeOpset: string;
  readonly bitcastTo: string;
  readonly semantics: BitcastSemantics;
  readonly promoteWith: string;
  readonly promoteWithShape: string;
  readonly promoteUnsafe: boolean;
  readonly pytorchScalar: boolean;
}

export interface TensorOutcome {
  readonly input?: Tensor;
  /** Why the input tensor could not be built. */
  readonly inputError?: Failure;
  readonly output?: Tensor;
  /** quantize: the output dequantized back with the same scale and zero point. */
  readonly back?: Tensor;
  /** Why there is no `back` (the operator version refuses the way back). */
  readonly backError?: Failure;
  /** quantize, dequantize: the scale's and zero point's types and shapes, and how the shapes were derived. */
  readonly scaleNote?: string;
  readonly error?: Failure;
  /** What the operation did, e.g. "float16 [2] + bfloat16 [] -> f32". */
  readonly note?: string;
}

export interface Failure {
  readonly text: string;
  readonly code?: string;
  readonly message: string;
}

/** A thrown value as the page shows it: a TensorcastError's code and message, or a plain message. */
export function failure(e: unknown): Failure {
  const code = typeof e === "object" && e !== null && "code" in e ? String((e as { code: unknown }).code) : undefined;
  // The page's own refusals (too many values, unbalanced brackets) are plain Errors: their message is enough.
  const text = code ? errorText(e) : e instanceof Error ? e.message : String(e);
  return { text, message: e instanceof Error ? e.message : String(e), ...(code ? { code } : {}) };
}

/**
 * The values for `fromValues`: a JSON array (nested arrays are flattened, except complex pairs),
 * or tokens separated by spaces or commas (commas only for strings). A token that is not a value of
 * the type's kind is passed on as a string, so the library's own message says what is wrong.
 */
export function parseTensorValues(text: string, t: DType): unknown[] {
  const trimmed = text.trim();
  if (t.kind !== "string") {
    const unbalanced = bracketError(trimmed);
    if (unbalanced) throw new Error(unbalanced);
  }
  if (trimmed.startsWith("[") && t.kind !== "complex") {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed)) {
        const flat = (parsed as unknown[]).flat(Infinity);
        if (flat.length > MAX_TENSOR_VALUES) throw new Error(tooMany(flat.length));
        return flat.map((v) => (t.kind === "int" || t.kind === "uint") && t.bits === 64 && typeof v === "number" ? BigInt(v) : v);
      }
    } catch (e) {
      if (e instanceof Error && e.message.includes("the box builds tensors")) throw e;
      // Not JSON: read it as a list of tokens below.
    }
  }
  const tokens = t.kind === "string" ? (trimmed === "" ? [] : trimmed.split(",").map((s) => s.trim())) : splitValues(trimmed);
  if (tokens.length > MAX_TENSOR_VALUES) throw new Error(tooMany(tokens.length));
  return t.kind === "string" ? tokens : tokens.map((token) => parseToken(token, t));
}

/** The message for a list past MAX_TENSOR_VALUES. */
export function tooMany(n: number | string): string {
  return `${n} values: the box builds tensors of up to ${MAX_TENSOR_VALUES.toLocaleString("en")} values; the library itself has no such limit`;
}

const COMPLEX = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([+-](?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)j$/i;

function parseToken(token: string, t: DType): unknown {
  switch (t.kind) {
    case "bool":
      if (/^true$/i.test(token)) return true;
      if (/^false$/i.test(token)) return false;
      break;
    case "complex": {
      const m = COMPLEX.exec(token);
      if (m) return [Number(m[1]), Number(m[2])];
      const v = parseValue(token);
      return v ? [v.number, 0] : token;
    }
    case "int":
    case "uint":
      if (t.bits === 64 && /^[+-]?\d+$/.test(token)) return BigInt(token);
      break;
    default:
      break;
  }
  const v = parseValue(token);
  return v ? v.number : token;
}

/** "2 3", "[2, 3]", "2x3" or "[]"; empty text is undefined (the default shape). */
export function parseShape(text: string): number[] | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  return trimmed.replace(/[[\]()]/g, " ").split(/[\s,x×]+/).filter((s) => s !== "").map(Number);
}

/**
 * The shape a pasted list implies, as the shape box spells it: a nested JSON array's lengths
 * (`[[1, 2], [3, 4]]` is "2 2"), or "" (1-D) for a flat list. undefined when `shape` already fits
 * the paste's count, so a shape typed on purpose is kept.
 * @example shapeForPaste("[[1, 2], [3, 4]]", "2 3") // "2 2"
 * @example shapeForPaste("1 2 3 4 5", "2 3")        // ""
 * @example shapeForPaste("1 2 3 4 5 6", "3 2")      // undefined
 */
export function shapeForPaste(text: string, shape: string): string | undefined {
  const trimmed = text.trim();
  let dims: number[] | undefined;
  let count = 0;
  if (trimmed.startsWith("[")) {
    try {
      let a: unknown = JSON.parse(trimmed);
      dims = [];
      while (Array.isArray(a)) {
        dims.push(a.length);
        a = a[0];
      }
      count = dims.reduce((p, d) => p * d, 1);
    } catch {
      dims = undefined;
    }
  }
  if (!dims) count = splitValues(trimmed).length;
  const current = parseShape(shape);
  const fits = current === undefined ? dims === undefined || dims.length <= 1 : current.reduce((p, d) => p * d, 1) === count;
  if (fits) return undefined;
  return dims && dims.length > 1 ? dims.join(" ") : "";
}

/** An opset box's number; empty is undefined (the newest). */
export function opset(text: string): number | undefined {
  return text.trim() === "" ? undefined : Number(text);
}

/** Builds the input tensor and applies the operation. */
export function runTensorBox(r: TensorRequest): TensorOutcome {
  let input: Tensor;
  try {
    // `fromValues` checks every value and names the one it refuses.
    const t = dtype(r.dtype);
    const values = parseTensorValues(r.values, t);
    input = Tensor.fromValues(values as never[], t, parseShape(r.shape));
  } catch (e) {
    return { inputError: failure(e) };
  }
  try {
    switch (r.op) {
      case "cast": {
        const o = opset(r.castOpset);
        const options: CastOptions = o === undefined ? {} : { opset: o };
        const attributes = operatorVersion("Cast", o ?? 28).attributes;
        if (attributes.has("saturate")) options.saturate = r.saturate;
        if (attributes.has("round_mode")) options.roundMode = r.roundMode;
        return { input, output: cast(input, r.castTo, options) };
      }
      case "reshape": {
        const o = opset(r.reshapeOpset);
        const options: ReshapeOptions = o === undefined ? {} : { opset: o };
        if (r.allowzero) options.allowzero = true;
        const output = reshape(input, parseShape(r.reshapeShape) ?? [], options);
        return { input, output, note: sharedNote(input, output) };
      }
      case "bitcast": {
        const output = bitcast(input, r.bitcastTo, { semantics: r.semantics });
        return { input, output, note: sharedNote(input, output) };
      }
      case "promote": {
        const other = Tensor.zeros(r.promoteWith, parseShape(r.promoteWithShape) ?? []);
        const options = { promoteUnsafe: r.promoteUnsafe, pytorchScalarPromotion: r.pytorchScalar };
        const common = promoteTypes(input.dtype, other.dtype, { ...options, aRank: input.shape.length, bRank: other.shape.length });
        const note = `${input.dtype.name} [${input.shape.join(", ")}] + ${other.dtype.name} [${other.shape.join(", ")}] -> ${common.name}` +
          (common.dtype ? ` (${common.dtype.name})` : "");
        const [output] = convertPromoteTypes(input, other, options);
        return { input, output, note };
      }
      case "quantize":
      case "dequantize":
        return { input, ...runQuantOp(r.op, input, r) };
    }
  } catch (e) {
    return { input, error: failure(e) };
  }
}

function sharedNote(input: Tensor, output: Tensor): string {
  const a = input.data as { buffer?: ArrayBufferLike };
  const b = output.data as { buffer?: ArrayBufferLike };
  const shared = input.data === output.data || (a.buffer !== undefined && a.buffer === b.buffer);
  return shared ? "zero copy: the result is a view of the input's storage" : "the bytes were copied";
}
