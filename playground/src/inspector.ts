/**
 * One code of one type, bit by bit (what Float Toy and float.exposed do, for every tensorcast
 * type down to float4e2m1 and int2): the code from a value or typed in hex or binary, its bits to
 * click, its value and that value's exact decimal digits, the (-1)^s * 2^e * 1.m breakdown, the
 * previous and next representable values and the ulp.
 */
import {
  bitFields, cast, classifyCast, DTYPES, dtype, elementCode, formatHex, formatNumber, parseValue, readElement, roundingError,
  splitBits, storeValue, Tensor, TensorcastError, VALUE_SYNTAX,
  type BitField, type CastFlag, type CastOptions, type DType, type Element, type InputValue,
} from "tensorcast";
import { exactDecimal } from "./decimal.js";

/** Types a code can be inspected in: everything with a fixed bit layout and a number for a value. */
export const INSPECTABLE: readonly DType[] = DTYPES.filter((t) => t.kind === "float" || t.kind === "int" || t.kind === "uint");

export type CodeKind = "zero" | "subnormal" | "normal" | "inf" | "nan" | "integer";

export interface Neighbour {
  readonly code: bigint;
  readonly hex: string;
  readonly value: string;
}

export interface Inspected {
  readonly type: DType;
  readonly code: bigint;
  readonly hex: string;
  readonly fields: readonly BitField[];
  /** The value as the CLI spells it. */
  readonly value: string;
  readonly number: number;
  readonly kind: CodeKind;
  /** Every digit of the value ("" for inf and NaN). */
  readonly exact: string;
  /** How the fields make the value, e.g. `(-1)^0 × 2^(8 − 7) × 1.1₂ = 3`. */
  readonly breakdown: string;
  readonly prev?: Neighbour;
  readonly next?: Neighbour;
  /** The gap to the next value away from zero (toward zero at the largest value); "" for inf and NaN. */
  readonly ulp: string;
  /** What typing a value did: "0.1 rounds to 0.0999755859375". */
  readonly note?: string;
  /** A typed value the code does not hold exactly: its rounding error (as the explorer measures it). */
  readonly error?: { readonly abs: number | null; readonly rel: number | null };
  /** A typed value the type cannot hold (500 for float8e4m3fn): what Cast did to it, as the explorer's flag says. */
  readonly flag?: CastFlag;
}

/** What `readCode` read: the code, and for a typed value what storing (or casting) it did. */
export interface ReadCode {
  readonly code: bigint;
  readonly note?: string;
  readonly error?: { readonly abs: number | null; readonly rel: number | null };
  readonly flag?: CastFlag;
}

/** A code's bytes, little-endian; a packed code sits in the low bits of the first byte. */
function codeBytes(t: DType, code: bigint): Uint8Array {
  const bytes = new Uint8Array(Math.ceil(t.bits / 8));
  for (let k = 0; k < bytes.length; k++) bytes[k] = Number((code >> BigInt(8 * k)) & 0xffn);
  return bytes;
}

/** A one-element tensor of type `t` holding `code`. */
export function codeTensor(t: DType, code: bigint): Tensor {
  return Tensor.fromBytes(codeBytes(t, code), t, [1]);
}

/** A code typed in hex or binary (`0x3c00`, `0b0111`, `_` allowed), or undefined for other text. */
export function typedCode(text: string): bigint | undefined {
  const s = text.trim().replace(/_/g, "");
  return /^(0x[0-9a-f]+|0b[01]+)$/i.test(s) ? BigInt(s.toLowerCase()) : undefined;
}

/**
 * `code` checked against `t`'s width.
 * @throws Error naming the code, the type's width and its range of codes.
 */
export function checkWidth(text: string, code: bigint, t: DType): bigint {
  const top = (1n << BigInt(t.bits)) - 1n;
  if (code > top) throw new Error(`${text.trim()} is wider than ${t.name}'s ${t.bits} bits (its codes are 0x0 to ${formatHex(top, t)})`);
  return code;
}

/** The value in the widest type that holds it: an integer for integer targets (exact past 2^53), else float64. */
function widest(v: InputValue, t: DType): Tensor {
  if (v.integer !== undefined && t.kind !== "float") {
    for (const w of ["int64", "uint64"]) {
      try {
        return storeValue(v, dtype(w));
      } catch {
        // Not in this type's range: the next.
      }
    }
  }
  return storeValue(v, dtype("float64"));
}

/** The value as typed, as an element (for measuring what storing it did). */
function typedElement(v: InputValue): Element {
  return { display: formatNumber(v.number, v.negativeNaN), value: v.number, ...(v.integer !== undefined ? { exact: v.integer } : {}) };
}

function decode(t: DType, code: bigint): { display: string; value: number; exact?: bigint } {
  return readElement(Tensor.fromBytes(codeBytes(t, code), t, [1]), 0);
}

/**
 * The code `text` names in type `t`: `0x..` or `0b..` is the code itself, anything else a value
 * stored in `t` (rounded to nearest even, as `Tensor.fromValues` stores it). A value `t` cannot
 * hold (500 for float8e4m3fn, inf for it, 1.5 for int8) is cast to `t` from float64 with
 * `castOptions` (the page's saturate and round_mode), as the explorer's table does, and its flag
 * says what happened.
 * @example readCode("0b0111", dtype("float4e2m1")) // { code: 7n }
 * @example readCode("0.1", dtype("float8e4m3fn"))  // { code: 0x1dn, note: "0.1 is stored as 0.1015625", error: { abs: 0.00156.., rel: 0.0156.. } }
 * @example readCode("500", dtype("float8e4m3fn"), { saturate: true }) // { code: 0x7en, flag: "saturated", note: "500 is outside ..." }
 * @throws Error with the reason for text that is neither, or a code wider than the type.
 */
export function readCode(text: string, t: DType, castOptions: CastOptions = {}): ReadCode {
  const code = typedCode(text);
  if (code !== undefined) return { code: checkWidth(text, code, t) };
  const s = text.trim().replace(/_/g, "");
  const v = parseValue(s);
  if (!v) throw new Error(`${JSON.stringify(text)} is not a value or a code; expected ${VALUE_SYNTAX}, or a code such as 0x3c or 0b0011`);
  const typed = typedElement(v);
  let stored: Tensor;
  try {
    stored = storeValue(v, t);
  } catch (e) {
    if (!(e instanceof TensorcastError) || e.code !== "INVALID_VALUE") throw e;
    // The library numbers the values it refuses ("value 0 (500) is outside ..."): name the value.
    // Only the reason: the page says itself what the cast gives instead.
    const why = e.message.replace(/^value 0 \([^)]*\) /, "").split(";")[0];
    const wide = widest(v, t);
    const result = cast(wide, t.name, castOptions);
    const r = readElement(result, 0);
    const flag = classifyCast(readElement(wide, 0), r, t);
    const [abs, rel] = roundingError(readElement(wide, 0), r);
    const settings = [castOptions.saturate === undefined ? "" : `saturate=${castOptions.saturate ? 1 : 0}`, castOptions.roundMode ? `round_mode=${castOptions.roundMode}` : ""].filter(Boolean).join(", ");
    return {
      code: elementCode(result, 0), flag, error: { abs, rel },
      note: `${s} ${why}: Cast to ${t.name}${settings ? ` (${settings})` : ""} gives ${r.display}, ${flag}`,
    };
  }
  const code2 = elementCode(stored, 0);
  const shown = readElement(stored, 0);
  const same = shown.display === typed.display || (v.integer !== undefined && shown.display === v.integer.toString());
  if (same) return { code: code2 };
  const [abs, rel] = roundingError(typed, shown);
  return { code: code2, note: `${s} is stored as ${shown.display}`, error: { abs, rel } };
}

/** Every non-NaN value of a format of 16 bits or fewer, ascending, each with one code (+0 for zero). */
const ladders = new Map<string, { value: number; code: bigint }[]>();

function ladder(t: DType): { value: number; code: bigint }[] {
  const cached = ladders.get(t.name);
  if (cached) return cached;
  const seen = new Map<number, bigint>();
  const n = 2 ** t.bits;
  const all = Tensor.fromBytes(allCodes(t, n), t, [n]).toValues() as number[];
  for (let c = 0; c < n; c++) {
    const v = all[c];
    if (v !== v) continue;
    const key = v === 0 ? 0 : v;
    if (!seen.has(key) || (v === 0 && !Object.is(v, -0))) seen.set(key, BigInt(c));
  }
  const out = [...seen].map(([value, code]) => ({ value, code })).sort((a, b) => a.value - b.value);
  ladders.set(t.name, out);
  return out;
}

/** The bytes of codes 0 .. n-1 of `t`, in order. */
function allCodes(t: DType, n: number): Uint8Array {
  if (t.bits >= 8) {
    const w = t.bits / 8;
    const bytes = new Uint8Array(n * w);
    for (let c = 0; c < n; c++) for (let k = 0; k < w; k++) bytes[c * w + k] = (c >> (8 * k)) & 0xff;
    return bytes;
  }
  const bytes = new Uint8Array(Math.ceil((n * t.bits) / 8));
  for (let c = 0; c < n; c++) {
    const bit = c * t.bits;
    bytes[bit >> 3] |= c << (bit & 7);
  }
  return bytes;
}

/** The codes just below and above `code` in value order (none past the ends, none for NaN). */
function neighbours(t: DType, code: bigint, v: number): [bigint | undefined, bigint | undefined] {
  if (v !== v) return [undefined, undefined];
  if (t.kind !== "float") {
    const value = decode(t, code).exact ?? BigInt(v);
    const min = BigInt(t.min as number | bigint);
    const max = BigInt(t.max as number | bigint);
    const at = (x: bigint) => (x < min || x > max ? undefined : elementCode(Tensor.fromValues([t.bits === 64 ? x : Number(x)] as never[], t), 0));
    return [at(value - 1n), at(value + 1n)];
  }
  if (t.bits <= 16) {
    const l = ladder(t);
    let lo = 0;
    let hi = l.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (l[mid].value < v) lo = mid + 1;
      else hi = mid;
    }
    // lo: the first value >= v, which is v itself.
    return [l[lo - 1]?.code, l[lo + 1]?.code];
  }
  // float32 and float64: IEEE sign-magnitude, where adjacent codes are adjacent values.
  const sign = 1n << BigInt(t.bits - 1);
  const magnitude = code & (sign - 1n);
  const negative = (code & sign) !== 0n;
  const up = v === 0 ? 1n : v === Infinity ? undefined : negative ? code - 1n : code + 1n;
  const down = v === 0 ? sign | 1n : v === -Infinity ? undefined : negative ? code + 1n : magnitude === 0n ? undefined : code - 1n;
  return [down, up];
}

function neighbour(t: DType, code: bigint | undefined): Neighbour | undefined {
  if (code === undefined) return undefined;
  return { code, hex: formatHex(code, t), value: decode(t, code).display };
}

function kindOf(t: DType, code: bigint, v: number): CodeKind {
  if (t.kind !== "float") return "integer";
  if (v !== v) return "nan";
  if (!Number.isFinite(v)) return "inf";
  if (v === 0) return "zero";
  const f = bitFields(t)!;
  const exponent = (code >> BigInt(f.mantissa)) & ((1n << BigInt(f.exponent)) - 1n);
  const hasSubnormals = t.format ? t.format.subnormals : true;
  return exponent === 0n && hasSubnormals ? "subnormal" : "normal";
}

const SUB = "₀₁₂₃₄₅₆₇₈₉";

/** The value from the fields: (-1)^s × 2^(E − bias) × 1.m for floats, two's complement for integers. */
function breakdown(t: DType, code: bigint, v: number, kind: CodeKind, display: string): string {
  if (t.kind !== "float") {
    if (t.kind === "uint" || (code >> BigInt(t.bits - 1)) === 0n) return `${code} = ${display}`;
    return `two's complement: ${code} − 2^${t.bits} = ${display}`;
  }
  const f = bitFields(t)!;
  const bias = t.format ? t.format.bias : 1023;
  if (kind === "nan" || kind === "inf") return `${display}: a code ${t.name} reserves (no number)`;
  const s = f.sign ? Number(code >> BigInt(t.bits - 1)) : 0;
  const e = Number((code >> BigInt(f.mantissa)) & ((1n << BigInt(f.exponent)) - 1n));
  const mBits = f.mantissa === 0 ? "" : (code & ((1n << BigInt(f.mantissa)) - 1n)).toString(2).padStart(f.mantissa, "0");
  const signPart = f.sign ? `(−1)^${s} × ` : "";
  if (f.mantissa === 0) return `${signPart}2^(${e} − ${bias}) = 2^${e - bias} = ${display}`;
  const sub = (digits: string) => [...digits].map((d) => SUB[Number(d)]).join("");
  const m = Number(code & ((1n << BigInt(f.mantissa)) - 1n)) / 2 ** f.mantissa;
  if (kind === "zero") return `${signPart}0.${mBits}${sub("2")} = ${display}`;
  if (kind === "subnormal") {
    return `${signPart}2^(1 − ${bias}) × 0.${mBits}${sub("2")} = ${s ? "−" : ""}2^${1 - bias} × ${formatNumber(m)} = ${display}`;
  }
  return `${signPart}2^(${e} − ${bias}) × 1.${mBits}${sub("2")} = ${s ? "−" : ""}2^${e - bias} × ${formatNumber(1 + m)} = ${display}`;
}

/**
 * Everything the inspector shows for `code` of type `t`.
 * @example inspect(dtype("float16"), 0x3c00n) // { value: "1", kind: "normal", ulp: "0.0009765625", next: { value: "1.0009765625", ... }, ... }
 */
export function inspect(t: DType, code: bigint, read: Omit<ReadCode, "code"> = {}): Inspected {
  const d = decode(t, code);
  const v = d.value;
  const kind = kindOf(t, code, v);
  const [prevCode, nextCode] = neighbours(t, code, v);
  const prev = neighbour(t, prevCode);
  const next = neighbour(t, nextCode);
  let ulp = "";
  if (t.kind !== "float") ulp = "1";
  else if (Number.isFinite(v)) {
    const pv = prevCode === undefined ? NaN : decode(t, prevCode).value;
    const nv = nextCode === undefined ? NaN : decode(t, nextCode).value;
    const away = v < 0 || Object.is(v, -0) ? v - pv : nv - v;
    const toward = v < 0 || Object.is(v, -0) ? nv - v : v - pv;
    const gap = Number.isFinite(away) ? away : toward;
    ulp = Number.isFinite(gap) ? formatNumber(gap) : "";
  }
  return {
    type: t, code, hex: formatHex(code, t), fields: splitBits(code, t), value: d.display, number: v, kind,
    exact: d.exact !== undefined ? d.exact.toString() : Number.isFinite(v) ? exactDecimal(v) : "",
    breakdown: breakdown(t, code, v, kind, d.display), ulp,
    ...(prev ? { prev } : {}), ...(next ? { next } : {}),
    ...(read.note ? { note: read.note } : {}), ...(read.error ? { error: read.error } : {}), ...(read.flag ? { flag: read.flag } : {}),
  };
}
