/**
 * One element of a tensor as the CLI and the playground show it: its code (the raw bits as stored),
 * those bits split into fields, and its value. Codes are read from `bytes()`, the ONNX raw_data
 * layout, so what is shown is what a model file would hold.
 */
import { readCode } from "../dtype/packing.js";
import type { DType } from "../dtype/table.js";
import type { Tensor } from "../tensor.js";
import { formatNumber } from "./format.js";

export interface BitFields {
  readonly sign: number;
  readonly exponent: number;
  readonly mantissa: number;
}

// float64 has no FloatFormat in the table (it is never stored as codes), so its fields are spelled out.
const FLOAT64_FIELDS: BitFields = { sign: 1, exponent: 11, mantissa: 52 };

/** Sign, exponent and mantissa widths of a float type; undefined for everything else. */
export function bitFields(t: DType): BitFields | undefined {
  if (t.kind !== "float") return undefined;
  const f = t.format;
  if (!f) return t.bits === 64 ? FLOAT64_FIELDS : undefined;
  return { sign: f.signed ? 1 : 0, exponent: f.expBits, mantissa: f.manBits };
}

/** The code of element `index`: packed codes via the packing layout, others as little-endian bytes. */
export function elementCode(x: Tensor, index: number): bigint {
  const t = x.dtype;
  const bytes = x.bytes();
  if (t.packed) return BigInt(readCode(bytes, t.bits, index));
  const width = t.bits / 8;
  let code = 0n;
  for (let k = width - 1; k >= 0; k--) code = (code << 8n) | BigInt(bytes[index * width + k]);
  return code;
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

/** `0|1111|110` for floats (sign|exponent|mantissa, empty fields left out), plain bits otherwise. */
export function formatBinary(code: bigint, t: DType): string {
  return splitBits(code, t).map((f) => f.bits).join("|");
}

/** The header that explains `formatBinary`'s fields for type `t`. */
export function binaryHeader(t: DType): string {
  const fields = bitFields(t);
  if (!fields) return "bits";
  const names = [fields.sign ? "s" : "", fields.exponent ? "exp" : "", fields.mantissa ? "man" : ""];
  return names.filter((n) => n !== "").join("|");
}

/** Whether a NaN code's sign bit means something: not for fnuz (its one NaN is the -0 code) or e8m0. */
function nanHasSign(t: DType): boolean {
  if (!t.format) return t.bits === 64;
  return t.format.signed && (t.format.nan === "ieee" || t.format.nan === "allOnes");
}

export interface Element {
  /** How it is spelled: `1.5`, `-0`, `-nan`, `true`, or the digits of a bigint. */
  readonly display: string;
  /** As a float64, for comparisons and error arithmetic (NaN where there is no number). */
  readonly value: number;
  /** The exact value of 64-bit integer elements, which `value` may round. */
  readonly exact?: bigint;
}

/** Element `index` of `x`, read through `toValues()` so the library decides what a code means. */
export function readElement(x: Tensor, index: number): Element {
  const v: unknown = x.toValues()[index];
  const t = x.dtype;
  if (typeof v === "number") {
    const negativeNaN = v !== v && nanHasSign(t) && (elementCode(x, index) >> BigInt(t.bits - 1)) === 1n;
    return { display: formatNumber(v, negativeNaN), value: v };
  }
  if (typeof v === "bigint") return { display: String(v), value: Number(v), exact: v };
  if (typeof v === "boolean") return { display: String(v), value: v ? 1 : 0 };
  if (typeof v === "string") return { display: JSON.stringify(v), value: NaN };
  if (Array.isArray(v)) return { display: `(${v.map((p) => formatNumber(p as number, false)).join(", ")})`, value: NaN };
  return { display: String(v), value: NaN };
}
