/**
 * What the explorer shows for one typed-in value and every data type: the code the cast writes,
 * its bits, the value it decodes to, the rounding error, and what happened (saturated, overflow,
 * NaN, ...). The judgement follows `tensorcast cast` on the command line, rule for rule; the
 * browser test compares the two for every type.
 */
import {
  cast, DTYPES, nanCode, operatorVersion, Tensor, TensorcastError,
  type CastOptions, type DType, type RoundMode,
} from "tensorcast";
import { errorText, formatHex, formatNumber, splitBits, bitFields, type BitField } from "./format.js";

/**
 * What happened to a value (the CLI's words):
 * exact, rounded, saturated (clamped to max instead of overflowing), overflow (became inf),
 * underflow (became 0), nan (became NaN), nan lost (NaN became a number), out of range (a float
 * beyond an integer type, which wraps), nonzero (to bool).
 */
export type CastFlag =
  | "exact" | "rounded" | "saturated" | "overflow" | "underflow" | "nan" | "nan lost" | "out of range" | "nonzero";

export interface InputValue {
  readonly text: string;
  readonly number: number;
  readonly negativeNaN: boolean;
  /** The exact integer for literals without fraction or exponent, so 64-bit integers survive. */
  readonly integer?: bigint;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;
const INTEGER = /^[+-]?\d+$/;
const SPECIAL = /^([+-]?)(nan|inf|infinity)$/i;
export const VALUE_SYNTAX = "a decimal literal such as 1.5, -2e-3 or 448, or nan, -nan, inf, +inf, -inf";

/** The tokens of a typed or pasted list: separated by spaces, commas, semicolons or new lines; brackets ignored. */
export function splitValues(text: string): string[] {
  return text.replace(/[[\](){}]/g, " ").split(/[\s,;]+/).filter((s) => s !== "");
}

/** A decimal literal or a special name (the CLI's syntax), or undefined. */
export function parseValue(text: string): InputValue | undefined {
  const special = SPECIAL.exec(text);
  if (special) {
    const negative = special[1] === "-";
    if (special[2].toLowerCase() === "nan") return { text, number: NaN, negativeNaN: negative };
    return { text, number: negative ? -Infinity : Infinity, negativeNaN: false };
  }
  if (!DECIMAL.test(text)) return undefined;
  const value = { text, number: Number(text), negativeNaN: false };
  return INTEGER.test(text) ? { ...value, integer: BigInt(text) } : value;
}

export interface ExplainOptions {
  readonly from: DType;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  readonly opset: number;
}

export interface TypeRow {
  readonly type: DType;
  /** The library's error for this target (complex, or a type the opset's Cast lacks). */
  readonly error?: string;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  /** Hex code, e.g. `0x7e`; empty for string targets, which have no raw layout. */
  readonly code: string;
  readonly fields: readonly BitField[];
  /** The decoded value, spelled as the CLI spells it. */
  readonly result: string;
  readonly absError: number | null;
  readonly relError: number | null;
  readonly flag: CastFlag | "";
}

export interface Explained {
  readonly input: string;
  /** Why the token is not a value, or why the source type cannot hold it (the library's message). */
  readonly error?: string;
  /** The value once stored in the source type, and whether storing changed it. */
  readonly source: string;
  readonly sourceChanged: boolean;
  readonly rows: readonly TypeRow[];
}

/** The cast options the opset's Cast version has: saturate from Cast-19, round_mode from Cast-24. */
export function castOptions(o: ExplainOptions): CastOptions {
  const version = operatorVersion("Cast", o.opset);
  const options: CastOptions = { opset: o.opset };
  if (version.attributes.has("saturate")) options.saturate = o.saturate;
  if (version.attributes.has("round_mode")) options.roundMode = o.roundMode;
  return options;
}

/** One value through every data type. */
export function explain(text: string, o: ExplainOptions): Explained {
  const input = parseValue(text);
  if (!input) {
    return { input: text, error: `${JSON.stringify(text)} is not a value; expected ${VALUE_SYNTAX}`, source: "", sourceChanged: false, rows: [] };
  }
  let stored: Tensor;
  try {
    stored = storeInput(input, o.from);
  } catch (e) {
    return { input: text, error: `cannot store ${text} as ${o.from.name}: ${errorText(e)}`, source: "", sourceChanged: false, rows: [] };
  }
  const s = readElement(stored);
  const options = castOptions(o);
  const rows = DTYPES.map((to) => castRow(stored, s, to, options));
  return { input: text, source: s.display, sourceChanged: changedByStoring(input, s), rows };
}

function castRow(stored: Tensor, s: Element, to: DType, options: CastOptions): TypeRow {
  let result: Tensor;
  try {
    result = cast(stored, to, options);
  } catch (e) {
    const row: TypeRow = {
      type: to, error: errorText(e), code: "", fields: [], result: "", absError: null, relError: null, flag: "",
    };
    return e instanceof TensorcastError ? { ...row, errorCode: e.code, errorMessage: e.message } : row;
  }
  const r = readElement(result);
  if (to.kind === "string") {
    return { type: to, code: "", fields: [], result: r.display, absError: null, relError: null, flag: "" };
  }
  const code = elementCode(result);
  const [absError, relError] = roundingError(s, r);
  return {
    type: to, code: formatHex(code, to), fields: splitBits(code, to), result: r.display, absError, relError,
    flag: classify(s, r, to),
  };
}

/** `Tensor.fromValues([v], from)`, except where a JS number cannot say what was asked (a NaN's sign, 64-bit integers). */
function storeInput(input: InputValue, from: DType): Tensor {
  if (input.number !== input.number && from.kind === "float" && from.format?.nan !== "none") {
    return nanTensor(from, input.negativeNaN);
  }
  switch (from.kind) {
    case "string":
      return Tensor.fromValues([input.text], from);
    case "complex":
      return Tensor.fromValues([[input.number, 0]], from);
    case "int":
    case "uint":
      if (from.bits === 64 && input.integer !== undefined) return Tensor.fromValues([input.integer], from);
      return Tensor.fromValues([input.number], from);
    default:
      return Tensor.fromValues([input.number], from);
  }
}

/** A one-element tensor holding `from`'s NaN of that sign. */
function nanTensor(from: DType, negative: boolean): Tensor {
  const code = from.format
    ? BigInt(nanCode(from.format, negative))
    : 0x7ff8000000000000n | (negative ? 1n << 63n : 0n);
  const bytes = new Uint8Array(Math.ceil(from.bits / 8));
  for (let k = 0; k < bytes.length; k++) bytes[k] = Number((code >> BigInt(8 * k)) & 0xffn);
  return Tensor.fromBytes(bytes, from, [1]);
}

/** The code of element `index`, read from the raw little-endian bytes (sub-byte types as a bit stream, low bits first). */
export function elementCode(x: Tensor, index = 0): bigint {
  const t = x.dtype;
  const bytes = x.bytes();
  if (t.packed) {
    let code = 0;
    for (let b = 0; b < t.bits; b++) {
      const bit = index * t.bits + b;
      code |= ((bytes[bit >> 3] >> (bit & 7)) & 1) << b;
    }
    return BigInt(code);
  }
  const width = t.bits / 8;
  let code = 0n;
  for (let k = width - 1; k >= 0; k--) code = (code << 8n) | BigInt(bytes[index * width + k]);
  return code;
}

interface Element {
  readonly display: string;
  readonly value: number;
  readonly exact?: bigint;
}

/** Whether a NaN code's sign bit means something: not for fnuz (its one NaN is the -0 code) or e8m0. */
function nanHasSign(t: DType): boolean {
  if (!t.format) return t.bits === 64;
  return t.format.signed && (t.format.nan === "ieee" || t.format.nan === "allOnes");
}

function readElement(x: Tensor): Element {
  const v: unknown = x.toValues()[0];
  const t = x.dtype;
  if (typeof v === "number") {
    const negativeNaN = v !== v && nanHasSign(t) && elementCode(x) >> BigInt(t.bits - 1) === 1n;
    return { display: formatNumber(v, negativeNaN), value: v };
  }
  if (typeof v === "bigint") return { display: String(v), value: Number(v), exact: v };
  if (typeof v === "boolean") return { display: String(v), value: v ? 1 : 0 };
  if (typeof v === "string") return { display: JSON.stringify(v), value: NaN };
  if (Array.isArray(v)) return { display: `(${v.map((p) => formatNumber(p as number)).join(", ")})`, value: NaN };
  return { display: String(v), value: NaN };
}

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
  if (asGiven.value !== asGiven.value) return stored.display !== asGiven.display;
  return !sameValue(asGiven, stored);
}

/** |result - source| and that over |source|; null where undefined (NaN, inf, or a source of 0 with an error). */
function roundingError(s: Element, r: Element): [abs: number | null, rel: number | null] {
  if (!Number.isFinite(s.value) || !Number.isFinite(r.value)) return [null, null];
  const x = exactInteger(s);
  const y = exactInteger(r);
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
    // Landing on max is saturation only if plain rounding would have gone past it (464 -> 448 in
    // float8e4m3fn is a tie rounded to even, not a clamp).
    return to.kind !== "float" || roundsPastMax(Math.abs(s.value), to) ? "saturated" : "rounded";
  }
  if ((to.kind === "int" || to.kind === "uint") && (s.value > max || s.value < min)) return "out of range";
  return "rounded";
}

const scratch = new DataView(new ArrayBuffer(8));

/** floor(log2(a)) for a finite a > 0, from the float64's exponent field (subnormals: -1023). */
export function exponentOf(a: number): number {
  scratch.setFloat64(0, a);
  const field = (scratch.getUint16(0) >>> 4) & 0x7ff;
  return field === 0 ? -1023 : field - 1023;
}

/** Whether rounding |x| to nearest even, with no upper exponent limit, exceeds the type's max. */
function roundsPastMax(a: number, to: DType): boolean {
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
