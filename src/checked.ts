/**
 * The public face of the small building blocks (float formats, packing, the explain helpers):
 * each checks its arguments, then calls the function the kernels and the playground use
 * unchecked in their loops. A wrong argument from JavaScript is a TensorcastError naming it.
 */
import { describe, expectInteger, expectObject } from "./args.js";
import { TensorcastError } from "./errors.js";
import * as mf from "./dtype/minifloat.js";
import type { FloatFormat, RoundMode } from "./dtype/minifloat.js";
import * as packing from "./dtype/packing.js";
import { DTYPES, isCodedFloat as codedFloat, type DType } from "./dtype/table.js";
import * as element from "./explain/element.js";
import * as format from "./explain/format.js";
import * as outcome from "./explain/outcome.js";
import * as value from "./explain/value.js";
import { expectTensor, type Tensor } from "./tensor.js";

const FORMATS = new Set(DTYPES.map((t) => t.format).filter((f): f is FloatFormat => f !== undefined));

/** A FloatFormat: one of the DTYPES' own, or an object with every trait a format has. */
function expectFormat(f: unknown, fn: string): asserts f is FloatFormat {
  if (FORMATS.has(f as FloatFormat)) return;
  expectObject(f, `${fn}'s format`);
  const ints = ["expBits", "manBits", "bias", "maxCode"].every((k) => Number.isSafeInteger(f[k]));
  const flags = ["signed", "subnormals", "inf"].every((k) => typeof f[k] === "boolean");
  if (!ints || !flags || !["ieee", "allOnes", "negativeZero", "none"].includes(f.nan as string) || !["inf", "saturable", "clamp"].includes(f.overflow as string)) {
    throw new TensorcastError("INVALID_DATA", `${fn}: the format must be a FloatFormat (a float type's dtype(...).format), got ${describe(f)}`);
  }
}

function expectDType(t: unknown, fn: string): asserts t is DType {
  if (!DTYPES.includes(t as DType)) {
    throw new TensorcastError("UNKNOWN_DTYPE", `${fn}: expected a data type from dtype(...) or DTYPES, got ${describe(t)}`);
  }
}

function expectNumber(x: unknown, what: string): asserts x is number {
  if (typeof x !== "number") throw new TensorcastError("INVALID_DATA", `${what} must be a number, got ${describe(x)}`);
}

function expectFlag(x: unknown, what: string): asserts x is boolean {
  if (typeof x !== "boolean") throw new TensorcastError("INVALID_ATTRIBUTE", `${what} must be true or false, got ${describe(x)}`);
}

function expectCode(code: unknown, f: FloatFormat, fn: string): asserts code is number {
  const bits = (f.signed ? 1 : 0) + f.expBits + f.manBits;
  expectInteger(code, `${fn}'s code`, 0, 2 ** bits - 1, "INVALID_DATA");
}

export function decodeFloat(f: FloatFormat, code: number): number {
  expectFormat(f, "decodeFloat");
  expectCode(code, f, "decodeFloat");
  return mf.decodeFloat(f, code);
}
export function isNegativeCode(f: FloatFormat, code: number): boolean {
  expectFormat(f, "isNegativeCode");
  expectCode(code, f, "isNegativeCode");
  return mf.isNegativeCode(f, code);
}
export function nanCode(f: FloatFormat, negative: boolean): number {
  expectFormat(f, "nanCode");
  expectFlag(negative, "nanCode's negative");
  return mf.nanCode(f, negative);
}
export function encodeFloat(f: FloatFormat, x: number, saturate: boolean): number {
  expectFormat(f, "encodeFloat");
  expectNumber(x, "encodeFloat's value");
  expectFlag(saturate, "encodeFloat's saturate");
  return mf.encodeFloat(f, x, saturate);
}
export function encodeE8M0(x: number, saturate: boolean, mode: RoundMode): number {
  expectNumber(x, "encodeE8M0's value");
  expectFlag(saturate, "encodeE8M0's saturate");
  if (mode !== "up" && mode !== "down" && mode !== "nearest") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `encodeE8M0's roundMode must be "up", "down" or "nearest", got ${describe(mode)}`);
  }
  return mf.encodeE8M0(x, saturate, mode);
}
export function overflowThreshold(f: FloatFormat): ReturnType<typeof mf.overflowThreshold> {
  expectFormat(f, "overflowThreshold");
  return mf.overflowThreshold(f);
}
export function roundsPastMax(f: FloatFormat, a: number): boolean {
  expectFormat(f, "roundsPastMax");
  expectNumber(a, "roundsPastMax's value");
  return mf.roundsPastMax(f, a);
}
export function packedByteLength(count: number, bits: number): number {
  expectInteger(count, "packedByteLength's count", 0, Number.MAX_SAFE_INTEGER, "INVALID_DATA");
  expectInteger(bits, "packedByteLength's bits", 1, 64);
  return packing.packedByteLength(count, bits);
}
export function isCodedFloat(t: DType): boolean {
  expectDType(t, "isCodedFloat");
  return codedFloat(t);
}
export function bitFields(t: DType): ReturnType<typeof element.bitFields> {
  expectDType(t, "bitFields");
  return element.bitFields(t);
}

function expectIndex(x: Tensor, index: unknown, fn: string): asserts index is number {
  expectTensor(x, `${fn}'s tensor`);
  expectInteger(index, `${fn}'s index`, 0, Math.max(0, x.size - 1), "INVALID_DATA");
  if (x.size === 0) throw new TensorcastError("INVALID_DATA", `${fn}: the tensor has no elements`);
}
export function elementCode(x: Tensor, index: number): bigint {
  expectIndex(x, index, "elementCode");
  return element.elementCode(x, index);
}
export function readElement(x: Tensor, index: number): element.Element {
  expectIndex(x, index, "readElement");
  return element.readElement(x, index);
}
function expectBitCode(code: unknown, t: unknown, fn: string): asserts code is bigint {
  expectDType(t, fn);
  if (typeof code !== "bigint" || code < 0n || code >= 1n << BigInt(Math.max(t.bits, 1))) {
    throw new TensorcastError("INVALID_DATA", `${fn}: the code must be a bigint in [0, 2^${t.bits}), got ${describe(code)}`);
  }
}
export function formatHex(code: bigint, t: DType): string {
  expectBitCode(code, t, "formatHex");
  return element.formatHex(code, t);
}
export function formatBinary(code: bigint, t: DType): string {
  expectBitCode(code, t, "formatBinary");
  return element.formatBinary(code, t);
}
export function splitBits(code: bigint, t: DType): element.BitField[] {
  expectBitCode(code, t, "splitBits");
  return element.splitBits(code, t);
}
export function formatError(x: number | null): string {
  if (x !== null) expectNumber(x, "formatError's value");
  return format.formatError(x);
}
export function parseValue(text: string): value.InputValue | undefined {
  if (typeof text !== "string") throw new TensorcastError("PARSE_ERROR", `parseValue takes a string, got ${describe(text)}`);
  return value.parseValue(text);
}
function expectInput(input: unknown, fn: string): asserts input is value.InputValue {
  expectObject(input, `${fn}'s input (from parseValue)`);
  if (typeof input.number !== "number") throw new TensorcastError("INVALID_DATA", `${fn}'s input must come from parseValue, got ${describe(input)}`);
}
function expectElement(e: unknown, what: string): asserts e is element.Element {
  expectObject(e, what);
  if (typeof e.value !== "number") throw new TensorcastError("INVALID_DATA", `${what} must be an Element from readElement, got ${describe(e)}`);
}
export function storeValue(input: value.InputValue, from: DType): Tensor {
  expectInput(input, "storeValue");
  expectDType(from, "storeValue");
  return outcome.storeValue(input, from);
}
export function changedByStoring(input: value.InputValue, stored: element.Element): boolean {
  expectInput(input, "changedByStoring");
  expectElement(stored, "changedByStoring's stored element");
  return outcome.changedByStoring(input, stored);
}
export function roundingError(s: element.Element, r: element.Element): ReturnType<typeof outcome.roundingError> {
  expectElement(s, "roundingError's stored element");
  expectElement(r, "roundingError's result element");
  return outcome.roundingError(s, r);
}
export function classifyCast(s: element.Element, r: element.Element, to: DType): outcome.CastFlag {
  expectElement(s, "classifyCast's stored element");
  expectElement(r, "classifyCast's result element");
  expectDType(to, "classifyCast");
  return outcome.classifyCast(s, r, to);
}
