/**
 * What a cast did to one value, judged the same way by `tensorcast cast` and the playground (the
 * browser test holds the two to it): the value stored in the source type, whether storing changed
 * it, the rounding error of the cast and a one-word verdict.
 */
import { nanCode, roundsPastMax } from "../dtype/minifloat.js";
import type { DType } from "../dtype/table.js";
import { Tensor } from "../tensor.js";
import type { Element } from "./element.js";
import { formatNumber } from "./format.js";
import type { InputValue } from "./value.js";

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

/**
 * A one-element tensor of type `from` holding `input`: `Tensor.fromValues` (round to nearest even),
 * except where a JS number cannot say what was asked (a NaN's sign, 64-bit integers beyond 2^53).
 * @throws TensorcastError for a value `from` cannot hold, such as 1.5 for int8 or inf for float8e4m3fn.
 */
export function storeValue(input: InputValue, from: DType): Tensor {
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

/** Whether storing `input` in the source type changed it (0.1 as float32 does). */
export function changedByStoring(input: InputValue, stored: Element): boolean {
  const asGiven: Element = {
    display: formatNumber(input.number, input.negativeNaN),
    value: input.number,
    ...(input.integer !== undefined ? { exact: input.integer } : {}),
  };
  // A NaN can still change: its sign is lost where the type's NaN has none (fnuz).
  if (asGiven.value !== asGiven.value) return stored.display !== asGiven.display;
  return !sameValue(asGiven, stored);
}

/** |result - source| and that over |source|; null where undefined (NaN, inf, or a source of 0 with an error). */
export function roundingError(s: Element, r: Element): [abs: number | null, rel: number | null] {
  if (!Number.isFinite(s.value) || !Number.isFinite(r.value)) return [null, null];
  const x = exactInteger(s);
  const y = exactInteger(r);
  // Subtract 64-bit integers exactly; the float difference of their roundings can be off.
  const abs = x !== undefined && y !== undefined ? Math.abs(Number(y - x)) : Math.abs(r.value - s.value);
  if (s.value === 0) return [abs, abs === 0 ? 0 : null];
  return [abs, abs / Math.abs(s.value)];
}

/** What happened when source element `s` was cast to `to` and came out as `r` (see CastFlag). */
export function classifyCast(s: Element, r: Element, to: DType): CastFlag {
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
    return to.kind !== "float" || landsPastMax(Math.abs(s.value), to) ? "saturated" : "rounded";
  }
  if ((to.kind === "int" || to.kind === "uint") && (s.value > max || s.value < min)) return "out of range";
  return "rounded";
}

/** Whether rounding |x| to nearest even, with no upper exponent limit, exceeds the type's max. */
function landsPastMax(a: number, to: DType): boolean {
  // e8m0 treats anything outside [2^-127, 2^127] as out of range whatever the round mode (encodeE8M0);
  // float64 has no format and no value past its max.
  if (to.name === "float8e8m0" || !to.format || !Number.isFinite(a)) return true;
  return roundsPastMax(to.format, a);
}
