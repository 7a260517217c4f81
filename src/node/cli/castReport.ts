/**
 * What `tensorcast cast` computes, apart from how it is printed: for each value, the value stored in
 * the source type, the target code, the value it decodes to, the rounding error and what happened.
 */
import { exponentOf } from "../../dtype/minifloat.js";
import {
  cast, dtype, LATEST_OPSET, nanCode, operatorVersion, Tensor, TensorcastError,
  type CastOptions, type DType, type RoundMode,
} from "../../index.js";
import { bitFields, elementCode, formatBinary, formatHex, readElement, type Element } from "./elements.js";
import { formatNumber } from "./format.js";
import { parseValue, type InputValue } from "./values.js";

/**
 * What happened to a value, judged against the value stored in the source type:
 * - exact: the target holds the same value (NaN stays NaN, inf stays inf);
 * - rounded: the nearest target value (or, to integers, the truncated one) was taken;
 * - saturated: beyond the target's range and clamped to its max (or min) instead of overflowing;
 * - overflow: a finite value became inf;
 * - underflow: a non-zero value became zero in a float type (too small even for its subnormals);
 * - nan: a number became NaN (a float8 target without inf, not saturating);
 * - nan lost: NaN became a number (the target has no NaN: float4, float6, integers, bool);
 * - out of range: a float outside an integer type's range, which wraps as the spec says;
 * - nonzero: a value other than 0 and 1 cast to bool (so true).
 */
export type CastFlag =
  | "exact" | "rounded" | "saturated" | "overflow" | "underflow" | "nan" | "nan lost" | "out of range" | "nonzero";

export interface CastRequest {
  /** Source type; default float64, so the value is what JS reads from the literal. */
  readonly from?: string;
  readonly to: string;
  readonly saturate?: boolean;
  readonly roundMode?: RoundMode;
  readonly opset?: number;
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
  readonly rows: readonly CastRow[];
}

/**
 * Stores each value in `from` with `Tensor.fromValues` (round to nearest even), then casts it to
 * `to` with the request's options, one value at a time so each row stands alone.
 * @throws UsageError for a value that is not a number; TensorcastError for anything the library
 *         rejects (unknown type, type not in the opset's Cast, a value `from` cannot hold such as
 *         1.5 for int8 or inf for float8e4m3fn).
 */
export function castValues(values: readonly string[], request: CastRequest): CastReport {
  const inputs = values.map(parseValue);
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
    const stored = withContext(`cannot store ${input.text} in the --from type ${from.name}`, () => storeInput(input, from));
    const result = cast(stored, to, options);
    const s = readElement(stored, 0);
    const r = readElement(result, 0);
    const code = elementCode(result, 0);
    const [absError, relError] = roundingError(s, r);
    return {
      input: input.text,
      source: s.display,
      sourceChanged: changedByStoring(input, s),
      code: formatHex(code, to),
      binary: formatBinary(code, to),
      result: r.display,
      absError,
      relError,
      flag: classify(s, r, to),
    };
  });
  return {
    from: from.name, to: to.name, operator: `Cast-${version.version}`, opset,
    saturate: request.saturate ?? true, roundMode, rows,
  };
}

/**
 * The data type named by --from or --to: a name, alias or ONNX number (17). The error says which
 * option named it.
 */
function resolve(name: string, option: "from" | "to"): DType {
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

/** `Tensor.fromValues([v], from)`, except where a JS number cannot say what was asked. */
function storeInput(input: InputValue, from: DType): Tensor {
  // Types without NaN (float4, float6) go to fromValues below, which refuses NaN for them.
  if (input.number !== input.number && from.kind === "float" && from.format?.nan !== "none") {
    return nanTensor(from, input.negativeNaN);
  }
  switch (from.kind) {
    // Let the library judge these (string casts, complex in Cast) rather than refusing them here.
    case "string":
      return Tensor.fromValues([input.text], from);
    case "complex":
      return Tensor.fromValues([[input.number, 0]], from);
    case "int":
    case "uint":
      // int64/uint64 beyond 2^53 only survive as bigints.
      if (from.bits === 64 && input.integer !== undefined) return Tensor.fromValues([input.integer], from);
      return Tensor.fromValues([input.number], from);
    default:
      return Tensor.fromValues([input.number], from);
  }
}

/** A one-element tensor holding the NaN code `from` uses for a NaN of that sign, built from bytes. */
function nanTensor(from: DType, negative: boolean): Tensor {
  // float64 is the one float without a FloatFormat; its quiet NaN is 0x7ff8... plus the sign bit.
  const code = from.format
    ? BigInt(nanCode(from.format, negative))
    : 0x7ff8000000000000n | (negative ? 1n << 63n : 0n);
  const bytes = new Uint8Array(Math.ceil(from.bits / 8));
  for (let k = 0; k < bytes.length; k++) bytes[k] = Number((code >> BigInt(8 * k)) & 0xffn);
  return Tensor.fromBytes(bytes, from, [1]);
}

/** The exact integer an element holds, if it is one (for comparing 64-bit integers exactly). */
function exactInteger(e: Element): bigint | undefined {
  if (e.exact !== undefined) return e.exact;
  return Number.isInteger(e.value) ? BigInt(e.value) : undefined;
}

/** Equal values; -0 equals 0, since the sign of zero is no rounding error. */
function sameValue(a: Element, b: Element): boolean {
  if (a.exact !== undefined || b.exact !== undefined) {
    const x = exactInteger(a);
    const y = exactInteger(b);
    return x !== undefined && x === y;
  }
  return a.value === b.value;
}

function changedByStoring(input: InputValue, stored: Element): boolean {
  const asGiven: Element = {
    display: formatNumber(input.number, input.negativeNaN),
    value: input.number,
    ...(input.integer !== undefined ? { exact: input.integer } : {}),
  };
  // A NaN can still change: its sign is lost where the type's NaN has none (fnuz).
  if (asGiven.value !== asGiven.value) return stored.display !== asGiven.display;
  return !sameValue(asGiven, stored);
}

function roundingError(s: Element, r: Element): [abs: number | null, rel: number | null] {
  if (!Number.isFinite(s.value) || !Number.isFinite(r.value)) return [null, null];
  const x = exactInteger(s);
  const y = exactInteger(r);
  // Subtract 64-bit integers exactly; the float difference of their roundings can be off.
  const abs = x !== undefined && y !== undefined ? Math.abs(Number(y - x)) : Math.abs(r.value - s.value);
  if (s.value === 0) return [abs, abs === 0 ? 0 : null];
  return [abs, abs / Math.abs(s.value)];
}

function classify(s: Element, r: Element, to: DType): CastFlag {
  if (s.value !== s.value) return r.value !== r.value ? "exact" : "nan lost";
  if (r.value !== r.value) return "nan";
  if (sameValue(s, r)) return "exact";
  if (!Number.isFinite(r.value)) return "overflow";
  if (r.value === 0 && to.kind === "float") return "underflow";
  if (to.kind === "bool") return "nonzero";
  const max = to.max === undefined ? Infinity : Number(to.max);
  const min = to.min === undefined ? -Infinity : Number(to.min);
  if ((s.value > max && r.value === max) || (s.value < min && r.value === min)) {
    // Landing on max is saturation only if plain rounding would have gone past it:
    // 464 -> 448 in float8e4m3fn is a tie rounded to even, not a clamp.
    return to.kind !== "float" || roundsPastMax(Math.abs(s.value), to) ? "saturated" : "rounded";
  }
  if ((to.kind === "int" || to.kind === "uint") && (s.value > max || s.value < min)) return "out of range";
  return "rounded";
}

/** Whether rounding |x| to nearest even, with no upper exponent limit, exceeds the type's max. */
function roundsPastMax(a: number, to: DType): boolean {
  // e8m0 treats anything outside [2^-127, 2^127] as out of range whatever the round mode (encodeE8M0).
  if (to.name === "float8e8m0") return true;
  const fields = bitFields(to);
  if (!fields || !Number.isFinite(a)) return true;
  const ulp = 2 ** (exponentOf(a) - fields.mantissa);
  const y = a / ulp;
  let n = Math.floor(y);
  const rest = y - n;
  if (rest > 0.5 || (rest === 0.5 && n % 2 === 1)) n++;
  return n * ulp > Number(to.max);
}
