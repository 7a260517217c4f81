/**
 * An exact oracle for QuantizeLinear and DequantizeLinear: rational arithmetic on BigInt
 * numerators and denominators, rounding by integer division. It shares nothing with
 * src/kernels/quant (nor with the minifloat encoder): inputs are decoded with the textbook formula
 * of oracle.ts, every operation is exact, and each rounding happens where docs/semantics.md
 * ("Quantization") says it does.
 */
import type { DType } from "../../src/index.js";
import { textbookValue } from "./oracle.js";

/** An exact rational n / d, d > 0. */
interface Q { readonly n: bigint; readonly d: bigint }

const scratch = new Float64Array(1);
const words = new BigUint64Array(scratch.buffer);

/** The exact value of a finite double. */
function exact(x: number): Q {
  scratch[0] = x;
  const bits = words[0];
  const negative = bits >> 63n === 1n;
  const field = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let e = field === 0 ? -1074 : field - 1075;
  if (field !== 0) mant |= 1n << 52n;
  const n = negative ? -mant : mant;
  return e >= 0 ? { n: n << BigInt(e), d: 1n } : { n, d: 1n << BigInt(-e) };
}
const div = (a: Q, b: Q): Q => (b.n < 0n ? { n: -a.n * b.d, d: a.d * -b.n } : { n: a.n * b.d, d: a.d * b.n });
const mul = (a: Q, b: Q): Q => ({ n: a.n * b.n, d: a.d * b.d });
const add = (a: Q, b: Q): Q => ({ n: a.n * b.d + b.n * a.d, d: a.d * b.d });
const bitLength = (v: bigint): number => v.toString(2).length;

/** Round half to even of a rational to an integer. */
function rneInteger(r: Q): bigint {
  let q = r.n / r.d; // truncates toward zero
  let rem = r.n - q * r.d;
  if (rem < 0n) { q -= 1n; rem += r.d; } // floor
  const twice = 2n * rem;
  if (twice > r.d || (twice === r.d && (q & 1n) === 1n)) q += 1n;
  return q;
}

/** A binary format for rounding: significand bits after the point and the smallest normal exponent. */
export interface Grid { readonly manBits: number; readonly emin: number }

/**
 * `r` rounded to nearest even on the grid of a format with `g.manBits` fraction bits and
 * subnormals below 2^g.emin, with no upper exponent limit (the caller applies overflow rules).
 * Returns the magnitude as an exact double and the sign.
 */
function roundGrid(r: Q, g: Grid): number {
  const negative = r.n < 0n;
  const a: Q = { n: negative ? -r.n : r.n, d: r.d };
  if (a.n === 0n) return negative ? -0 : 0;
  let e = bitLength(a.n) - bitLength(a.d);
  // 2^e <= a < 2^(e+1)
  const ge = (k: number): boolean => (k >= 0 ? a.n >= a.d << BigInt(k) : a.n << BigInt(-k) >= a.d);
  if (!ge(e)) e--;
  if (e < g.emin) e = g.emin;
  const u = e - g.manBits;
  const k = rneInteger(u >= 0 ? { n: a.n, d: a.d << BigInt(u) } : { n: a.n << BigInt(-u), d: a.d });
  const v = Number(k) * 2 ** u;
  return negative ? -v : v;
}

/** The grid of a float type's format (float32, float16, bfloat16, the float8s, float4, float6). */
export function gridOf(t: DType): Grid {
  const f = t.format!;
  return { manBits: f.manBits, emin: 1 - f.bias };
}

/** A sign-aware double for an exact rational whose value is 0. */
const zero = (negative: boolean): number => (negative ? -0 : 0);
const neg = (v: number): boolean => v < 0 || Object.is(v, -0);

/** IEEE rounding of a finite exact value to an IEEE type (float32 / float16 / bfloat16): overflow gives Inf. */
function toIeee(r: Q, t: DType | "exact", zeroNegative: boolean): number | Q {
  if (r.n === 0n) return zero(zeroNegative);
  if (t === "exact") return r;
  const v = roundGrid(r, gridOf(t));
  return Math.abs(v) > (t.max as number) ? (v < 0 ? -Infinity : Infinity) : v;
}

/** A value that is a double, or an exact rational when the precision is "exact". */
type V = number | Q;
const isQ = (v: V): v is Q => typeof v === "object";
const asQ = (v: V): Q => (isQ(v) ? v : exact(v));

/** IEEE division x / s in precision `p` (operands already in p). */
function divide(x: number, s: number, p: DType | "exact"): V {
  if (Number.isNaN(x) || Number.isNaN(s)) return NaN;
  const negative = neg(x) !== neg(s);
  if (!Number.isFinite(x)) return Number.isFinite(s) ? (negative ? -Infinity : Infinity) : NaN;
  if (!Number.isFinite(s)) return zero(negative);
  if (s === 0) return x === 0 ? NaN : negative ? -Infinity : Infinity;
  return toIeee(div(exact(x), exact(s)), p, negative);
}

/** The value of element `code` (or plain number) of type t, by the textbook formula. */
export function valueOf(t: DType, raw: number): number {
  return t.format && t.name !== "float32" ? textbookValue(t.format, raw) : raw;
}

/** A value rounded into precision p (IEEE, overflow to Inf). */
function intoPrecision(v: number, p: DType | "exact"): number {
  if (p === "exact" || !Number.isFinite(v)) return v;
  const r = toIeee(exact(v), p, neg(v));
  return r as number;
}

/** The Cast of an exact value (or +/-Inf) to a float8 / float4 / float6 type: its value, NaN for NaN. */
function castToFloat(v: V, t: DType, saturate: boolean, zeroNegative: boolean): number {
  const f = t.format!;
  const max = t.max as number;
  let magnitude: number;
  let negative: boolean;
  if (!isQ(v) && Number.isNaN(v)) return NaN;
  if (!isQ(v) && !Number.isFinite(v)) {
    magnitude = Infinity;
    negative = v < 0;
  } else {
    const q = asQ(v);
    if (q.n === 0n) return f.nan === "negativeZero" ? 0 : zero(isQ(v) ? zeroNegative : neg(v as number));
    const r = roundGrid(q, gridOf(t));
    magnitude = Math.abs(r);
    negative = neg(r);
    if (magnitude === 0) return f.nan === "negativeZero" ? 0 : zero(negative);
  }
  if (magnitude > max) {
    if (f.overflow === "clamp" || saturate) magnitude = max;
    else if (f.inf) magnitude = Infinity;
    else return NaN;
  }
  return negative ? -magnitude : magnitude;
}

export interface QuantizeCase {
  readonly x: number;
  readonly scale: number;
  /** The zero point's value (0 when absent). */
  readonly zeroPoint: number;
  /** float32 / float16 / bfloat16, or "exact" (int32 scales). */
  readonly precision: DType | "exact";
  readonly out: DType;
  readonly saturate: boolean;
}

/** The value QuantizeLinear must give (NaN for a NaN code). */
export function quantizeOracle(c: QuantizeCase): number {
  const x = intoPrecision(c.x, c.precision);
  const s = intoPrecision(c.scale, c.precision);
  const q = divide(x, s, c.precision);
  const t = c.out;
  if (t.kind === "int" || t.kind === "uint") {
    const min = t.min as number;
    const max = t.max as number;
    if (!isQ(q) && Number.isNaN(q)) return min;
    if (!isQ(q) && !Number.isFinite(q)) return q > 0 ? max : min;
    const v = rneInteger(asQ(q)) + BigInt(c.zeroPoint);
    return v < BigInt(min) ? min : v > BigInt(max) ? max : Number(v);
  }
  // Float outputs: the IEEE sum q + zeroPoint, exact, then Cast.
  const z = c.zeroPoint;
  if (Number.isNaN(z) || (!isQ(q) && Number.isNaN(q))) return NaN;
  if (!isQ(q) && !Number.isFinite(q)) {
    if (!Number.isFinite(z) && neg(z) !== neg(q)) return NaN;
    return castToFloat(q, t, c.saturate, false);
  }
  if (!Number.isFinite(z)) return castToFloat(z, t, c.saturate, false);
  const sum = add(asQ(q), exact(z));
  const qZero = isQ(q) ? q.n === 0n : q === 0;
  const qNeg = isQ(q) ? q.n < 0n : neg(q);
  const zeroNegative = sum.n === 0n && qZero && z === 0 && qNeg && neg(z);
  return castToFloat(sum, t, c.saturate, zeroNegative);
}

export interface DequantizeCase {
  readonly x: number;
  readonly scale: number;
  readonly zeroPoint: number;
  readonly out: DType;
}

/** The value DequantizeLinear must give: (x - zeroPoint) * scale, exact, rounded once to `out`. */
export function dequantizeOracle(c: DequantizeCase): number {
  const { x, zeroPoint: z, scale: s } = c;
  if (Number.isNaN(x) || Number.isNaN(z) || Number.isNaN(s)) return NaN;
  // d = x - z (IEEE: Inf - Inf is NaN; x - x is +0 except -0 - +0 = -0)
  let dInf = 0;
  let d: Q | undefined;
  let dNeg: boolean;
  if (!Number.isFinite(x) || !Number.isFinite(z)) {
    if (!Number.isFinite(x) && !Number.isFinite(z) && neg(x) === neg(z)) return NaN;
    dInf = Number.isFinite(x) ? (z > 0 ? -1 : 1) : x > 0 ? 1 : -1;
    dNeg = dInf < 0;
  } else {
    d = add(exact(x), exact(-z));
    dNeg = d.n < 0n || (d.n === 0n && neg(x) && !neg(z) && x === 0);
  }
  const negative = dNeg !== neg(s);
  if (dInf !== 0) return s === 0 ? NaN : negative ? -Infinity : Infinity;
  if (!Number.isFinite(s)) return d!.n === 0n ? NaN : negative ? -Infinity : Infinity;
  return toIeee(mul(d!, exact(s)), c.out, negative) as number;
}

/** An IEEE subtraction or division of two values, exact, rounded once to `t` (overflow to Inf). */
function ieee(op: "sub" | "div", a: number, b: number, t: DType): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return NaN;
  if (op === "div") return divide(a, b, t) as number;
  if (!Number.isFinite(a) || !Number.isFinite(b)) {
    if (!Number.isFinite(a) && !Number.isFinite(b) && neg(a) === neg(b)) return NaN;
    return Number.isFinite(a) ? -b : a;
  }
  const r = add(exact(a), exact(-b));
  return toIeee(r, t, r.n === 0n && neg(a) && !neg(b)) as number;
}

export interface DynamicQuantizeResult {
  readonly y: number[];
  readonly scale: number;
  readonly zeroPoint: number;
}

/**
 * What DynamicQuantizeLinear-11 must give for the float32 values `xs`, step by step as its function
 * body computes in float32 (each step exact, rounded once), with tensorcast's documented choices
 * (docs/semantics.md, "Quantization"): NaN elements do not widen the range; a NaN zero point
 * (0 / 0 or -Inf / Inf) is 0. `f32` and `u8` are the float32 and uint8 types.
 */
export function dynamicQuantizeOracle(xs: readonly number[], f32: DType, u8: DType): DynamicQuantizeResult {
  let lo = 0;
  let hi = 0;
  for (const x of xs) {
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  const scale = ieee("div", ieee("sub", hi, lo, f32), 255, f32);
  const initial = -ieee("div", lo, scale, f32);
  let zeroPoint: number;
  if (Number.isNaN(initial)) zeroPoint = 0;
  else if (initial <= 0) zeroPoint = 0;
  else if (initial >= 255) zeroPoint = 255;
  else zeroPoint = Number(rneInteger(exact(initial)));
  const y = xs.map((x) => quantizeOracle({ x, scale, zeroPoint, precision: f32, out: u8, saturate: true }));
  return { y, scale, zeroPoint };
}
