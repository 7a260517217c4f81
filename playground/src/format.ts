/**
 * How the page spells numbers, codes and errors: the same spelling as `tensorcast cast` on the
 * command line, so that the page and the CLI can be compared character for character.
 */
import { TensorcastError, type DType } from "tensorcast";

/** nan, -nan, inf, -inf and -0 by name; integers from 2^53 to 1e21 exactly; everything else as JS prints it. */
export function formatNumber(x: number, negativeNaN = false): string {
  if (x !== x) return negativeNaN ? "-nan" : "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0 && 1 / x < 0) return "-0";
  if (Number.isInteger(x) && Math.abs(x) >= 2 ** 53 && Math.abs(x) < 1e21) return BigInt(x).toString();
  return String(x);
}

/** A rounding error: exact when short, else 3 significant digits; "-" where none is defined. */
export function formatError(x: number | null): string {
  if (x === null) return "-";
  const exact = String(x);
  return exact.length <= 7 ? exact : String(Number(x.toPrecision(3)));
}

/** One element as the tables show it (and as data-value holds it). */
export function formatElement(v: unknown): string {
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "bigint" || typeof v === "boolean") return String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `(${v.map((p) => formatNumber(p as number)).join(", ")})`;
  return String(v);
}

/** Sign, exponent and mantissa widths of a float type (float64 spelled out); undefined otherwise. */
export function bitFields(t: DType): { sign: number; exponent: number; mantissa: number } | undefined {
  if (t.kind !== "float") return undefined;
  const f = t.format;
  if (!f) return t.bits === 64 ? { sign: 1, exponent: 11, mantissa: 52 } : undefined;
  return { sign: f.signed ? 1 : 0, exponent: f.expBits, mantissa: f.manBits };
}

/** `0x7e`: as many hex digits as the type's width needs. */
export function formatHex(code: bigint, t: DType): string {
  return `0x${code.toString(16).padStart(Math.ceil(t.bits / 4), "0")}`;
}

export interface BitField {
  readonly kind: "sign" | "exponent" | "mantissa" | "bits";
  readonly bits: string;
}

/** The code's bits split into sign, exponent and mantissa for floats (empty fields left out), one field otherwise. */
export function splitBits(code: bigint, t: DType): BitField[] {
  const bits = code.toString(2).padStart(t.bits, "0");
  const fields = bitFields(t);
  if (!fields) return [{ kind: "bits", bits }];
  const out: BitField[] = [];
  let at = 0;
  for (const [kind, width] of [["sign", fields.sign], ["exponent", fields.exponent], ["mantissa", fields.mantissa]] as const) {
    if (width > 0) out.push({ kind, bits: bits.slice(at, at + width) });
    at += width;
  }
  return out;
}

/** The library's error as the page shows it: its code and message. */
export function errorText(e: unknown): string {
  if (e instanceof TensorcastError) return `${e.name} ${e.code}: ${e.message}`;
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
