/**
 * Number <-> string casts (Cast-9+), as docs/semantics.md "Strings" describes:
 * - numbers print with the shortest digits that round-trip in the source type (the nearest such,
 *   ties to even, as numpy's repr), in Python's repr layout ("0.1", "1e-05", "16777216.0", "nan",
 *   "-inf", "-0.0"), or in onnxruntime's "%.8g" layout;
 * - strings parse with a strict grammar, correctly rounded to float16 / bfloat16 / float32 / float64
 *   (float8, float4, float6 and e8m0 go through float64, then the usual cast), integer literals
 *   exactly to 64 bits, anything else a PARSE_ERROR naming the element.
 */
import { TensorcastError } from "../errors.js";
import { decodeFloat, encodeFloat, exponentOf, pow2, type FloatFormat } from "../dtype/minifloat.js";
import { dtype, type DType, type Storage } from "../dtype/table.js";
import { convert } from "../kernels/convert.js";
import type { ResolvedCastOptions } from "../kernels/reference.js";
import { allocateStorage } from "../tensor.js";

/** How numbers print: Python's repr (the default) or onnxruntime's C "%.8g" ("NaN", "INF", "-0"). */
export type StringFormat = "python" | "onnxruntime";

const FLOAT64 = dtype("float64");
const INT64 = dtype("int64");

const DECIMAL = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/;
/** The same grammar without captures: the common case only needs a yes and `Number()`. */
const DECIMAL_TEST = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
const SPECIAL = /^\s*([+-]?)(inf|infinity|nan)\s*$/i;
const INTEGER = /^\s*([+-]?)(\d+)\s*$/;
const BOOLEAN = /^\s*(true|false)\s*$/i;

/** 10^0 .. 10^22, every one exact in float64. */
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

const scratch = new Float64Array(1);
const scratchWords = new Uint32Array(scratch.buffer);

// ---------------------------------------------------------------------------------------------
// Parsing

/** A parsed decimal literal: its exact value is (-1)^negative * digits * 10^exp10. */
interface Decimal {
  negative: boolean;
  digits: string;
  exp10: number;
}

function parseDecimal(text: string): Decimal | undefined {
  const m = DECIMAL.exec(text);
  if (!m) return undefined;
  const whole = m[2];
  const fraction = m[3] ?? "";
  if (whole === "" && fraction === "") return undefined; // ".", "e5", "+"
  const exponent = m[4] === undefined ? 0 : Number(m[4]);
  return { negative: m[1] === "-", digits: whole + fraction, exp10: exponent - fraction.length };
}

/** Sign of (decimal magnitude - a) for a finite a > 0, computed exactly. */
function compareExact(d: Decimal, a: number): number {
  scratch[0] = a;
  const hi = scratchWords[1];
  const field = (hi >>> 20) & 0x7ff;
  let mantissa = BigInt(hi & 0xfffff) * 4294967296n + BigInt(scratchWords[0]);
  let k: number;
  if (field === 0) k = -1074;
  else {
    mantissa += 1n << 52n;
    k = field - 1075;
  }
  const digits = BigInt(d.digits);
  const lhs = digits * 10n ** BigInt(Math.max(d.exp10, 0)) * 2n ** BigInt(Math.max(-k, 0));
  const rhs = mantissa * 2n ** BigInt(Math.max(k, 0)) * 10n ** BigInt(Math.max(-d.exp10, 0));
  return lhs > rhs ? 1 : lhs < rhs ? -1 : 0;
}

/** Whether the float64 `a` > 0 sits exactly halfway between two neighbours of format `f`. */
function isTie(f: FloatFormat, a: number): boolean {
  if (!(a > 0) || a === Infinity) return false;
  if (f.manBits === 23 && f.expBits === 8) {
    // float32, the hot case: a tie reflected off its rounding is the other float32 neighbour.
    const r = Math.fround(a);
    return r !== a && Math.fround(2 * a - r) === 2 * a - r;
  }
  const e = Math.max(exponentOf(a), 1 - f.bias);
  const y = a / pow2(e - f.manBits);
  return y - Math.floor(y) === 0.5;
}

/** The float64 next to `x` away from zero (up = true) or toward zero. x is finite and non-zero. */
function nudge(x: number, away: boolean): number {
  scratch[0] = x;
  if (away) {
    if (scratchWords[0] === 0xffffffff) { scratchWords[0] = 0; scratchWords[1]++; } else scratchWords[0]++;
  } else if (scratchWords[0] === 0) { scratchWords[0] = 0xffffffff; scratchWords[1]--; } else scratchWords[0]--;
  return scratch[0];
}

/**
 * The float64 to encode a decimal from: its correctly rounded float64 value, moved one float64 ulp
 * off a tie of the target format when the exact decimal is not on that tie, so that the target's
 * round-to-nearest-even then rounds the exact decimal, not the float64 (no double rounding).
 */
function decimalToDouble(text: string, target: FloatFormat | undefined): number {
  return offTie(text, Number(text), target);
}

/** `decimalToDouble` given x, the correctly rounded float64 of the decimal literal `text`. */
function offTie(text: string, x: number, target: FloatFormat | undefined): number {
  if (target && isTie(target, Math.abs(x))) {
    const side = compareExact(parseDecimal(text)!, Math.abs(x));
    if (side !== 0) return nudge(x, side > 0);
  }
  return x;
}

/** Formats parsed with exact (single) rounding; the rest go through float64 as DECISIONS says. */
function exactTarget(to: DType): FloatFormat | undefined {
  return to.name === "float16" || to.name === "bfloat16" || to.name === "float32" ? to.format : undefined;
}

function parseError(index: number, text: string, to: DType, expected: string): TensorcastError {
  const shown = text.length > 40 ? `${JSON.stringify(text.slice(0, 40))}...` : JSON.stringify(text);
  return new TensorcastError(
    "PARSE_ERROR",
    `element ${index} (${shown}) does not parse as ${to.name}: expected ${expected}`,
  );
}

const FLOAT_GRAMMAR = 'a decimal number such as "1.5", "-2e-3", ".5", or inf / infinity / nan in any case';

/** 2^53: an integer below it, built digit by digit, never rounded on the way. */
const TWO53 = 2 ** 53;

/**
 * The common case in one pass: `text` of the form [+-]digits[.digits][(e|E)[+-]digits] (no
 * whitespace, a mantissa digit on at least one side of the point) has its correctly rounded float64
 * written at `values[i]`, moved off a target tie as `decimalToDouble` does, and gives true; anything
 * else gives false without writing, and `parseFloatInto` takes the general path. The mantissa digits
 * accumulate as an integer, exact while below 2^53 (10 * d + c is exact below 2^53, and rounding is
 * monotonic, so a result below 2^53 was never rounded); with a decimal scale p in -22..22 the value
 * is then one correctly rounded multiply or divide by the exact 10^|p|, which is Number()'s answer.
 * More digits or a wider scale: Number(text), the grammar already checked.
 */
function scanDecimalInto(text: string, target: FloatFormat | undefined, values: Float64Array, i: number): boolean {
  const n = text.length;
  let at = 0;
  let negative = false;
  if (n > 0) {
    const first = text.charCodeAt(0);
    negative = first === 45; // -
    if (negative || first === 43) at = 1; // +
  }
  const start = at;
  let c = 0; // the last character read, minus "0"
  let digits = 0;
  for (; at < n; at++) {
    c = text.charCodeAt(at) - 48;
    if (c >>> 0 > 9) break;
    digits = 10 * digits + c;
  }
  let seen = at - start; // mantissa digits
  let scale = 0; // the mantissa is digits * 10^scale
  if (at < n && c === -2) { // .
    const point = ++at;
    for (; at < n; at++) {
      c = text.charCodeAt(at) - 48;
      if (c >>> 0 > 9) break;
      digits = 10 * digits + c;
    }
    scale = point - at;
    seen -= scale;
  }
  if (seen === 0) return false;
  if (at < n) {
    if (c !== 53 && c !== 21) return false; // e E
    if (++at === n) return false;
    const sign = text.charCodeAt(at);
    const down = sign === 45;
    if ((down || sign === 43) && ++at === n) return false;
    let e = 0;
    for (; at < n; at++) {
      c = text.charCodeAt(at) - 48;
      if (c >>> 0 > 9) return false;
      if (e < 100000) e = 10 * e + c;
    }
    // An exponent past 99999 stops counting and is left to Number(), however long the mantissa.
    scale = e < 100000 ? scale + (down ? -e : e) : 100000;
  }
  let x: number;
  if (digits < TWO53 && scale <= 22 && scale >= -22) {
    x = scale >= 0 ? digits * POW10[scale] : digits / POW10[-scale];
    if (negative) x = -x;
  } else x = Number(text);
  values[i] = target === undefined ? x : offTie(text, x, target);
  return true;
}

/** Writes a float literal's float64 value (NaN with its sign) at `values[i]`; false if it does not parse. */
function parseFloatInto(text: string, target: FloatFormat | undefined, values: Float64Array, words: Uint32Array, i: number): boolean {
  if (scanDecimalInto(text, target, values, i)) return true;
  if (DECIMAL_TEST.test(text)) {
    values[i] = decimalToDouble(text, target);
    return true;
  }
  const s = SPECIAL.exec(text);
  if (!s) return false;
  if (s[2].toLowerCase() === "nan") {
    words[2 * i] = 0;
    words[2 * i + 1] = s[1] === "-" ? 0xfff80000 : 0x7ff80000;
  } else values[i] = s[1] === "-" ? -Infinity : Infinity;
  return true;
}

const TWO63 = 2n ** 63n;
const TWO64 = 2n ** 64n;

/**
 * Parses every string into storage of type `to`, or throws a PARSE_ERROR for the first element that
 * does not parse (nothing partial is returned).
 */
export function parseStrings(src: readonly string[], to: DType, opts: ResolvedCastOptions): Storage {
  const n = src.length;
  const values = new Float64Array(n);
  const words = new Uint32Array(values.buffer);
  const out = allocateStorage(to, n);

  if (to.kind === "float" || to.kind === "bool") {
    const target = exactTarget(to);
    for (let i = 0; i < n; i++) {
      const text = src[i];
      if (parseFloatInto(text, target, values, words, i)) continue;
      const b = to.kind === "bool" ? BOOLEAN.exec(text) : null;
      if (!b) throw parseError(i, text, to, to.kind === "bool" ? `true / false in any case, or ${FLOAT_GRAMMAR}` : FLOAT_GRAMMAR);
      values[i] = b[1].toLowerCase() === "true" ? 1 : 0;
    }
    convert(values, FLOAT64, out, to, n, opts);
    return out;
  }

  // Integers: integer literals exactly, as 64-bit two's complement that then wraps like int -> int;
  // decimal literals ("100.5", "1e3") as float64 that then follows float -> int.
  const wide = new BigInt64Array(n);
  const wideWords = new Uint32Array(wide.buffer);
  const decimals: number[] = [];
  for (let i = 0; i < n; i++) {
    const text = src[i];
    const m = INTEGER.exec(text);
    if (m) {
      if (m[2].length <= 15) {
        // Exact in a float64: write the two's-complement words without a BigInt.
        const v = m[1] === "-" ? -Number(m[2]) : Number(m[2]);
        const hi = Math.floor(v / 4294967296);
        wideWords[2 * i] = v - hi * 4294967296;
        wideWords[2 * i + 1] = hi;
        continue;
      }
      const big = m[1] === "-" ? -BigInt(m[2]) : BigInt(m[2]);
      if (big < -TWO63 || big >= TWO64) {
        throw new TensorcastError(
          "PARSE_ERROR",
          `element ${i} (${JSON.stringify(text)}) is outside the 64-bit range [-2^63, 2^64) that ${to.name} literals may use`,
        );
      }
      wide[i] = BigInt.asIntN(64, big);
      continue;
    }
    const d = parseDecimal(text);
    if (!d) throw parseError(i, text, to, 'an integer such as "-42", or a decimal such as "100.5" (truncated)');
    values[decimals.length] = Number(text);
    decimals.push(i);
  }
  if (decimals.length) {
    // float -> `to` by the usual rule, then back to int64 (exact), to sit beside the literals.
    const k = decimals.length;
    const narrow = allocateStorage(to, k);
    convert(values, FLOAT64, narrow, to, k, opts);
    const back = new BigInt64Array(k);
    convert(narrow, to, back, INT64, k, opts);
    for (let j = 0; j < k; j++) wide[decimals[j]] = back[j];
  }
  convert(wide, INT64, out, to, n, opts);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Printing

/** Splits "d.ddde+X" (from toExponential) into its digits (trailing zeros dropped) and X. */
function splitExponential(s: string): { digits: string; exp10: number } {
  const e = s.indexOf("e");
  let digits = s.slice(0, e).replace(".", "");
  digits = digits.replace(/0+$/, "") || "0";
  return { digits, exp10: Number(s.slice(e + 1)) };
}

/** Python repr layout for |x| with the given significant digits (d1.d2d3... * 10^exp10). */
function pythonLayout(negative: boolean, digits: string, exp10: number, magnitude: number): string {
  let body: string;
  if (magnitude >= 1e-4 && magnitude < 1e16) {
    if (exp10 >= 0) {
      const whole = digits.length > exp10 + 1 ? digits.slice(0, exp10 + 1) : digits.padEnd(exp10 + 1, "0");
      const fraction = digits.slice(exp10 + 1);
      body = `${whole}.${fraction || "0"}`;
    } else {
      body = `0.${"0".repeat(-exp10 - 1)}${digits}`;
    }
  } else {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp10);
    body = `${mantissa}e${exp10 < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  return negative ? `-${body}` : body;
}

/** Whether `text` (a plain decimal) parses back, as `parseStrings` would without saturation, to x. */
function roundTrips(text: string, t: DType, x: number): boolean {
  const f = t.format!;
  const target = exactTarget(t);
  const back = decimalToDouble(text, target);
  if (target === f && f.manBits === 23) return Math.fround(back) === x; // float32: fround is its RNE
  return decodeFloat(f, encodeFloat(f, back, false)) === x;
}

/**
 * The shortest significant digits of x (finite, > 0) that round-trip in type t, left in
 * `shortest` (digits as an integer without trailing zeros, and the decimal exponent of the first).
 * Of the shortest, the one nearest x, and on an exact decimal tie between two, the even one, as
 * numpy's repr (Dragon4, unique mode) picks them.
 *
 * x is first rounded to D = ceil(1 + p log10 2) digits (p significand bits; 9 for float32), the
 * digits that always suffice (the nearest D-digit decimal round-trips even where the interval
 * below a power of two is half as wide), by one exact-operand scaling (the printer only near a
 * rounding boundary), and placed against D exactly (`sideOf`). The k-digit decimals nearest x are
 * then the multiples of 10^(D - k) around D, found in integer arithmetic. Any k-digit decimal
 * inside x's rounding interval puts the one of them on its side there too, so only those two are
 * tried: the nearer first, and the farther only where the interval is wider on its side (above a
 * power of two, or above the max of a format that clamps). A candidate's value is one
 * exact-operand multiply or divide by a power of ten, the correctly rounded float64 of the decimal
 * as Number() would give; a target tie takes the exact path of `roundTrips`. More digits never
 * stop a string from round-tripping, so the search tries D - 1 and D - 2 digits first (most values
 * of a wide format need one of the last two) and bisects below.
 */
function shortestDigits(x: number, t: DType, check: RoundTripCheck): void {
  const f = t.format!;
  const most = SUFFICIENT_DIGITS[f.manBits];
  let digits = leadingDigits(x, most);
  let exp10 = leadExp;
  if (digits < 0) {
    // Too close to a rounding boundary (or out of the exact power-of-ten range): ask the printer.
    const full = x.toExponential(most - 1);
    const at = full.indexOf("e");
    digits = Number(full.slice(0, 1) + full.slice(2, at));
    exp10 = Number(full.slice(at + 1));
    // toExponential breaks an exact tie upward; the nearest D-digit decimal goes to even. A tie
    // x = (10 D - 5) * 10^(p - 1) needs |p - 1| <= 22 (5^23 has more bits than any format here,
    // and 10 D - 5 < 5^15), where the test is a float64 operation.
    const p = exp10 - most + 1;
    if (digits % 2 === 1 && p >= -21 && p <= 23 && sideOf(x, 10 * digits - 5, p - 1) === 0) digits--;
  }
  const lopsided = isPowerOfTwo(x) || (f.overflow === "clamp" && x === decodeFloat(f, f.maxCode));
  // x against D, which `attempt` reads only where D is half a unit past a multiple (D ends in 5,
  // 50, 500, ...): worked out only there.
  let nonzero = digits;
  while (nonzero - 10 * Math.floor(nonzero / 10) === 0) nonzero /= 10;
  const side = nonzero - 10 * Math.floor(nonzero / 10) === 5 ? sideOf(x, digits, exp10 - most + 1) : 0;
  shortest.digits = digits;
  shortest.exp10 = exp10;
  let hi = most;
  for (let k = most - 1; k >= Math.max(1, most - 2); k--) {
    if (!attempt(x, t, check, most, digits, exp10, side, lopsided, k)) return trimZeros();
    hi = k;
  }
  // Only a success writes `shortest`, so it ends holding the candidate of the final hi.
  let lo = 1;
  while (lo < hi) {
    const probe = (lo + hi) >> 1;
    if (attempt(x, t, check, most, digits, exp10, side, lopsided, probe)) hi = probe;
    else lo = probe + 1;
  }
  trimZeros();
}

/** Significant digits that always round-trip, by mantissa bits: ceil(1 + (m + 1) log10 2). */
const SUFFICIENT_DIGITS = Array.from({ length: 53 }, (_, m) => Math.ceil(1 + (m + 1) * Math.LOG10E * Math.LN2));

/** The result of `shortestDigits` and `attempt` (module state: no allocation per element). */
const shortest = { digits: 0, exp10: 0 };

function trimZeros(): void {
  let d = shortest.digits;
  while (d % 10 === 0 && d !== 0) d /= 10;
  shortest.digits = d;
}

/** How a candidate's float64 value is checked against x: float32 by fround, else by the codec. */
const enum RoundTripCheck { Float32, ExactTarget, ViaFloat64 }

function roundTripCheck(t: DType): RoundTripCheck {
  const target = exactTarget(t);
  if (!target) return RoundTripCheck.ViaFloat64;
  return target.manBits === 23 ? RoundTripCheck.Float32 : RoundTripCheck.ExactTarget;
}

/** The exact-operand float64 of digits * 10^p: Number()'s answer, without a string where it can. */
function scaled(digits: number, p: number): number {
  return p >= 0 && p <= 22 ? digits * POW10[p] : p < 0 && p >= -22 ? digits / POW10[-p] : Number(`${digits}e${p}`);
}

/** 5^0 .. 5^22, every one exact in float64. */
const POW5 = Array.from({ length: 23 }, (_, i) => 5 ** i);

/**
 * The sign of x - digits * 10^p, exactly, for a finite x > 0 and an integer 0 < digits < 2^53.
 * The float64 nearest the decimal tells unless it is x itself; then the decimal is x when the
 * product is exact (digits * 10^p below 2^53), or when digits = (x * 2^-p) * 5^-p in integers;
 * anything else is a decimal within half a float64 ulp of x, which BigInt arithmetic places.
 */
function sideOf(x: number, digits: number, p: number): number {
  const d = scaled(digits, p);
  if (d !== x) return x > d ? 1 : -1;
  if (p >= 0 && p <= 22 && d < TWO53) return 0;
  if (p < 0 && p >= -22 && digits % POW5[-p] === 0 && x * pow2(-p) === digits / POW5[-p]) return 0;
  return -compareExact({ negative: false, digits: String(digits), exp10: p }, x);
}

/** Whether the float64 x > 0 is a power of two (its mantissa field is zero). */
function isPowerOfTwo(x: number): boolean {
  scratch[0] = x;
  return scratchWords[0] === 0 && (scratchWords[1] & 0xfffff) === 0;
}

/**
 * Whether some k-digit decimal round-trips, given x's `most`-digit rounding
 * digits * 10^(exp10 - most + 1) and the sign of x against it; if so, the nearest of them (the even
 * one on an exact tie) is left in `shortest`. The two k-digit decimals around x are the multiples
 * q and q + 1 of 10^(most - k) around D, or D itself when it is one. A candidate's check is written
 * out here, not called: V8 then inlines the codec into this loop.
 */
function attempt(
  x: number, t: DType, check: RoundTripCheck, most: number, digits: number, exp10: number, side: number, lopsided: boolean, k: number,
): boolean {
  const f = t.format!;
  const unit = POW10[most - k];
  const q = Math.floor(digits / unit);
  const rest = digits - q * unit;
  if (rest === 0) {
    // D is a k-digit decimal: x itself, or the nearest to x (within half a unit of the last of
    // `most` digits), and D always round-trips.
    shortest.digits = q;
    shortest.exp10 = exp10;
    return true;
  }
  let c = q;
  let tries = 1;
  if (2 * rest > unit || (2 * rest === unit && (side > 0 || (side === 0 && q % 2 === 1)))) {
    // unit >= 10, so D and x are on the same side of the midpoint, unless D is on it: then x's
    // side decides, or on an exact tie the even one.
    c = q + 1;
  } else if (lopsided) {
    tries = 2; // the farther one, above, may be inside where the interval above is wider
  }
  for (; tries > 0; tries--, c++) {
    let e = exp10;
    let d = c;
    if (d === POW10[k]) { d = POW10[k - 1]; e++; }
    const p = e - k + 1;
    const v = scaled(d, p);
    let ok: boolean;
    if (check === RoundTripCheck.ViaFloat64) ok = decodeFloat(f, encodeFloat(f, v, false)) === x;
    else if (isTie(f, v)) ok = roundTrips(`${d}e${p}`, t, x);
    else if (check === RoundTripCheck.Float32) ok = Math.fround(v) === x;
    else ok = decodeFloat(f, encodeFloat(f, v, false)) === x;
    if (ok) {
      shortest.digits = d;
      shortest.exp10 = e;
      return true;
    }
  }
  return false;
}

/** Python's repr: NaN prints "nan" whatever its sign, as numpy does. */
function formatPython(x: number, t: DType, check: RoundTripCheck): string {
  if (x !== x) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return 1 / x < 0 ? "-0.0" : "0.0";
  const a = Math.abs(x);
  // float64 and e8m0 values are exact in float64, whose shortest repr JS computes; an e8m0 string
  // must be exact because its default round mode ("up") moves anything above 2^k to 2^(k+1).
  if (!t.format || t.name === "float8e8m0") {
    const { digits, exp10 } = splitExponential(a.toExponential());
    return pythonLayout(x < 0, digits, exp10, a);
  }
  shortestDigits(a, t, check);
  return pythonLayout(x < 0, String(shortest.digits), shortest.exp10, a);
}

/** The decimal exponent of the last `leadingDigits` result. */
let leadExp = 0;

/**
 * x (finite, > 0) rounded to n significant digits, as an integer, with its decimal exponent in
 * `leadExp`; -1 when float64 arithmetic cannot be trusted to round it exactly (a scale beyond
 * 10^22, or a scaled value within a few ulps of a rounding boundary), so the caller falls back.
 */
function leadingDigits(x: number, n: number): number {
  let e = Math.floor(Math.log10(x));
  for (let pass = 0; pass < 2; pass++) {
    const s = n - 1 - e;
    if (s > 22 || s < -22) return -1;
    // One correctly rounded multiply or divide by an exact power of ten.
    const y = s >= 0 ? x * POW10[s] : x / POW10[-s];
    const r = Math.round(y);
    if (Math.abs(Math.abs(y - Math.floor(y)) - 0.5) < y * 2 ** -50) return -1;
    if (r >= POW10[n]) { e++; continue; }
    if (r < POW10[n - 1]) { e--; continue; }
    leadExp = e;
    return r;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// float32 -> Python repr, the hot case

/*
 * The same digits as `shortestDigits`, decided in exact double arithmetic instead of by printing
 * and re-parsing. x = m * 2^e (m < 2^24) is scaled by 10^s into X = x * 10^s in [1e8, 1e9), whose
 * integer part holds x's first nine digits. 10^s (s <= 22, exact) is split into a 26-bit head and
 * a 26-bit tail, so x * head and x * tail are both exact (24 + 26 bits) and X is their exact sum,
 * held as S + T (S the rounded sum, T its error, |T| <= ulp(S) / 2). The k-digit decimals around
 * x are then the multiples of 10^(9 - k) just below and above X, and one round-trips when it lies
 * within x's rounding interval, which in these units is X - lower .. X + upper with
 * upper = 2^(e-1) * 10^s (exact: a power of two times an exact 10^s), lower the same or half that
 * below a power of two, the ends included when m is even (round half to even). Their distances to
 * S are exact (all are below 2^30 on S's grid of ulps), so only T blurs them; a candidate within
 * 1e-6 of an end (it cannot land exactly on one unless T is 0) goes to the reference printer. As in
 * `shortestDigits`: the nearer of the two, else the farther where the interval is wider on its
 * side (above a power of two), and on an exact tie between them (X exactly halfway, so T is 0) the
 * even one.
 */

/** 10^s = POW10_HEAD[s] + POW10_TAIL[s], each with at most 26 significant bits (Dekker's split). */
const POW10_HEAD = new Float64Array(23);
const POW10_TAIL = new Float64Array(23);
for (let s = 0; s <= 22; s++) {
  const p = POW10[s];
  const c = 134217729 * p; // 2^27 + 1
  POW10_HEAD[s] = c - (c - p);
  POW10_TAIL[s] = p - POW10_HEAD[s];
}

/** By float32 exponent field f (1..254): floor(log10(2^(f - 127))), the decimal exponent of x or one below. */
const DECADE = Int8Array.from({ length: 256 }, (_, f) => Math.floor((f - 127) * Math.log10(2)));
/** By float32 exponent field f: 2^(f - 151), half an ulp of the normal binade f. */
const HALF_ULP = Float64Array.from({ length: 256 }, (_, f) => pow2(f - 151));

/**
 * The k-digit decimal (k < 9) chosen for x, as an integer of k digits (or 10^k), if one round-trips;
 * 0 if none does; -1 if float64 cannot tell. X = S + T exactly, `whole` its integer part, and
 * upper / lower / even describe x's rounding interval in the same units. (Arguments, not module
 * variables: a double stored in a module variable is boxed, an allocation per store.)
 */
function attempt32(k: number, whole: number, S: number, T: number, upper: number, lower: number, even: boolean): number {
  const unit = POW10[9 - k];
  // whole / unit is a multiple of 1 / unit below 1e9, so its rounding cannot cross an integer.
  const q = Math.floor(whole / unit);
  // X - q * unit = below + T, exactly. 2 * below - unit is a multiple of ulp(S) >= 2|T|, and 0 only
  // when X sits exactly halfway (X is then a float64, so T is 0): the nearer is above, or below, or
  // on that tie the even one.
  const below = S - q * unit;
  const twice = 2 * below;
  const up = twice > unit || (twice === unit && (T > 0 || (T === 0 && q % 2 === 1)));
  const distance = up ? unit - below : below; // exact, off by T (written out: a call here cost 10%)
  const bound = up ? upper : lower;
  if (T === 0) {
    if (distance < bound || (distance === bound && even)) return up ? q + 1 : q;
  } else {
    const gap = bound - distance; // rounding error < 1e-8, and |T| <= 2^-24
    if (gap > 1e-6) return up ? q + 1 : q;
    if (gap >= -1e-6) return -1;
  }
  if (up || lower === upper) return 0;
  // Below failed, but above a power of two the interval is twice as wide (never decisive for
  // float32 in this range of scales, where every power of two is checked, but the rule is this).
  return fitsAbove(unit - below, -T, upper, even, q + 1);
}

/** r if distance + t (exactly; |t| <= 2^-24) is within `bound`, 0 if not, -1 if too close to tell. */
function fitsAbove(distance: number, t: number, bound: number, even: boolean, r: number): number {
  if (t === 0) return distance < bound || (distance === bound && even) ? r : 0;
  const gap = bound - distance;
  return gap > 1e-6 ? r : gap < -1e-6 ? 0 : -1;
}

/** Characters of the string being built, as char codes. */
const chars = new Uint8Array(32);

/**
 * Python's repr of the float32 with bits `b` whose magnitude is `a`, or "" when the fast path does
 * not apply (zero, subnormal, NaN, infinity, a scale outside the exact powers of ten, an undecidable
 * candidate): the caller then asks `formatPython`.
 */
function float32Repr(b: number, a: number): string {
  const field = (b >>> 23) & 0xff;
  if (field === 0 || field === 0xff) return "";
  // One more decade when X lands on or above 1e9.
  let s = 8 - DECADE[field];
  let S = 0;
  let T = 0;
  for (;;) {
    if (s < 0 || s > 22) return "";
    const head = a * POW10_HEAD[s];
    const tail = a * POW10_TAIL[s];
    S = head + tail;
    T = tail - (S - head); // Fast2Sum: |head| >= |tail|
    if (S < 1e9 || (S === 1e9 && T < 0)) break;
    s--;
  }
  let whole = Math.floor(S);
  if (whole === S && T < 0) whole--;
  const mantissa = b & 0x7fffff;
  const upper = HALF_ULP[field] * POW10[s];
  const lower = mantissa === 0 && field > 1 ? upper / 2 : upper;
  const even = (mantissa & 1) === 0;

  // The nearest nine digits always round-trip (even below a power of two), the even ones on an
  // exact tie. X - whole - 1/2 is exact in float64 and a multiple of ulp(S).
  const half = S - whole - 0.5;
  let best = half > 0 || (half === 0 && (T > 0 || (T === 0 && whole % 2 === 1))) ? whole + 1 : whole;
  let bestK = 9;
  // A k-digit value that round-trips is a (k+1)-digit value too, so whether some k-digit value
  // round-trips changes once, from no to yes, as k grows: walking down, the shortest length is one
  // more than the first that fails; walking up, the first that succeeds. Most float32 need 8 digits
  // and most of the rest 7, so start at 7 and walk away from it.
  let r = attempt32(7, whole, S, T, upper, lower, even);
  if (r < 0) return "";
  if (r === 0) {
    r = attempt32(8, whole, S, T, upper, lower, even);
    if (r < 0) return "";
    if (r > 0) { best = r; bestK = 8; }
  } else {
    best = r;
    bestK = 7;
    for (let k = 6; k >= 1; k--) {
      r = attempt32(k, whole, S, T, upper, lower, even);
      if (r < 0) return "";
      if (r === 0) break;
      best = r;
      bestK = k;
    }
  }
  // best has bestK digits, or is 10^bestK after rounding up: the first digit is 10^exp10.
  let exp10 = 8 - s;
  let digits = best | 0; // < 2^31: int32 arithmetic from here on
  let count = bestK;
  if (digits === POW10[bestK]) { digits = 1; count = 1; exp10++; }
  for (let q = (digits / 10) | 0; digits === 10 * q; q = (digits / 10) | 0) { digits = q; count--; }
  return layout32(b >>> 31 !== 0, digits, count, exp10, a);
}

/** Python's repr layout, as `pythonLayout` does, of `count` digits (an integer < 2^31) at exp10. */
function layout32(negative: boolean, digits: number, count: number, exp10: number, a: number): string {
  let at = 0;
  if (negative) chars[at++] = 45; // -
  if (a >= 1e-4 && a < 1e16) {
    if (exp10 >= 0) {
      const point = at + exp10 + 1;
      if (count <= exp10 + 1) {
        at = putDigits(digits, count, at);
        while (at < point) chars[at++] = 48;
        chars[at++] = 46; // .
        chars[at++] = 48;
      } else {
        // All the digits, then the fraction moved one place right to make room for the point.
        const end = putDigits(digits, count, at);
        for (let j = end; j > point; j--) chars[j] = chars[j - 1];
        chars[point] = 46;
        at = end + 1;
      }
    } else {
      chars[at++] = 48;
      chars[at++] = 46;
      for (let z = -exp10 - 1; z > 0; z--) chars[at++] = 48;
      at = putDigits(digits, count, at);
    }
  } else {
    // d[.ddd]e[+-]XX, the exponent at least two digits (float32's are at most two).
    const first = Math.floor(digits / POW10[count - 1]);
    chars[at++] = 48 + first;
    if (count > 1) {
      chars[at++] = 46;
      at = putDigits(digits - first * POW10[count - 1], count - 1, at);
    }
    chars[at++] = 101; // e
    chars[at++] = exp10 < 0 ? 45 : 43;
    const e = exp10 < 0 ? -exp10 : exp10;
    const tens = (e / 10) | 0;
    chars[at++] = 48 + tens;
    chars[at++] = 48 + e - 10 * tens;
  }
  return charString(at);
}

/** Writes `digits` as exactly `count` decimal digits (leading zeros kept) at chars[at]; returns the end. */
function putDigits(digits: number, count: number, at: number): number {
  const end = at + count;
  let d = digits | 0;
  for (let j = end - 1; j >= at; j--) {
    const q = (d / 10) | 0;
    chars[j] = 48 + d - 10 * q;
    d = q;
  }
  return end;
}

/**
 * The first `n` chars as a string, in one allocation: a fixed-arity fromCharCode per length
 * (spreading a subarray would allocate an iterator and an arguments list per element).
 */
function charString(n: number): string {
  const c = chars;
  switch (n) {
    case 1: return String.fromCharCode(c[0]);
    case 2: return String.fromCharCode(c[0], c[1]);
    case 3: return String.fromCharCode(c[0], c[1], c[2]);
    case 4: return String.fromCharCode(c[0], c[1], c[2], c[3]);
    case 5: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4]);
    case 6: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5]);
    case 7: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
    case 8: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    case 9: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]);
    case 10: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]);
    case 11: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]);
    case 12: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11]);
    case 13: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]);
    case 14: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13]);
    case 15: return String.fromCharCode(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14]);
    default: {
      let text = "";
      for (let j = 0; j < n; j++) text += String.fromCharCode(c[j]);
      return text;
    }
  }
}

/** Every float32 in `src` in Python's repr: the fast path, else the reference `formatPython`. */
function formatFloat32Python(src: Float32Array, from: DType, count: number, out: string[]): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, count);
  for (let i = 0; i < count; i++) {
    const x = src[i];
    const text = float32Repr(bits[i], Math.abs(x));
    out[i] = text !== "" ? text : formatPython(x, from, RoundTripCheck.Float32);
  }
}

/** C's "%.8g", with printf's round-half-even on exact decimal ties (JS rounds those up). */
function formatOnnxruntime(x: number): string {
  if (x !== x) return "NaN";
  if (x === Infinity) return "INF";
  if (x === -Infinity) return "-INF";
  if (x === 0) return 1 / x < 0 ? "-0" : "0";
  const a = Math.abs(x);
  let { digits, exp10 } = splitExponential(a.toExponential(7));
  const nine = a.toExponential(8);
  if (nine[9] === "5") {
    const exact = splitExponential(nine);
    if (compareExact({ negative: false, digits: exact.digits, exp10: exact.exp10 - (exact.digits.length - 1) }, a) === 0 &&
        Number(nine[8]) % 2 === 0) {
      const kept = splitExponential(`${nine.slice(0, 9)}e${exact.exp10}`);
      digits = kept.digits;
      exp10 = kept.exp10;
    }
  }
  let body: string;
  if (exp10 < -4 || exp10 >= 8) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp10);
    body = `${mantissa}e${exp10 < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  } else if (exp10 >= 0) {
    const whole = digits.length > exp10 + 1 ? digits.slice(0, exp10 + 1) : digits.padEnd(exp10 + 1, "0");
    const fraction = digits.slice(exp10 + 1);
    body = fraction ? `${whole}.${fraction}` : whole;
  } else {
    body = `0.${"0".repeat(-exp10 - 1)}${digits}`;
  }
  return x < 0 ? `-${body}` : body;
}

/** Prints every element of `src` (type `from`) as a string. */
export function formatStrings(src: Storage, from: DType, count: number, format: StringFormat): string[] {
  const out = new Array<string>(count);
  if (from.kind === "bool") {
    const b = src as Uint8Array;
    for (let i = 0; i < count; i++) out[i] = b[i] !== 0 ? "1" : "0";
    return out;
  }
  if (from.bits === 64 && from.kind !== "float") {
    const w = src as BigInt64Array | BigUint64Array;
    for (let i = 0; i < count; i++) out[i] = w[i].toString();
    return out;
  }
  if (from.name === "float32" && format === "python") {
    formatFloat32Python(src as Float32Array, from, count, out);
    return out;
  }
  const values = new Float64Array(count);
  convert(src, from, values, FLOAT64, count, { saturate: true, roundMode: "up" });
  if (from.kind !== "float") {
    for (let i = 0; i < count; i++) out[i] = String(values[i]);
    return out;
  }
  const check = roundTripCheck(from);
  for (let i = 0; i < count; i++) {
    out[i] = format === "onnxruntime" ? formatOnnxruntime(values[i]) : formatPython(values[i], from, check);
  }
  return out;
}
