/**
 * GGML's tensor types, one row each: ggml's own type id (enum ggml_type in ggml.h, the number a
 * GGUF tensor info stores), its name, the elements and bytes of one block, and the block's fields
 * in the order ggml's C structs lay them out (ggml-common.h). Plain types (F32, F16, ...) are blocks
 * of one element. Ids that ggml has removed keep a row with the reason, so a file that uses one is
 * refused by name.
 *
 * Browser-safe: no Node built-ins. Decoders live in dequantize.ts, keyed by the same names.
 */
import { describe } from "../args.js";
import { TensorcastError } from "../errors.js";

/** How a block field's bytes are read: each element is `bytes` bytes, little-endian in a file. */
export type GgmlFieldKind =
  /** IEEE binary16. */
  | "f16"
  /** IEEE binary32 (Q8_K's scale). */
  | "f32"
  /** Unsigned bytes: packed codes, bit masks, packed scales. */
  | "u8"
  /** Signed bytes. */
  | "i8"
  /** Little-endian 16-bit words: packed codes or scales. */
  | "u16"
  /** Little-endian signed 16-bit words. */
  | "i16"
  /** Signed 32- and 64-bit integers; IEEE binary64. */
  | "i32" | "i64" | "f64"
  /** An exponent byte 2^(e - 127), as GGML's MXFP4 reads it (no NaN code). */
  | "e8m0"
  /** Unsigned float8 with 4 exponent bits (bias 7) and 3 mantissa bits: NVFP4's scales. */
  | "ue4m3";

/** One field of a block: `count` elements of `kind`. */
export interface GgmlField {
  readonly name: string;
  readonly kind: GgmlFieldKind;
  readonly count: number;
  /** Byte offset inside the block. */
  readonly offset: number;
  /** What the field holds, in a few words. */
  readonly holds: string;
}

/** The names of the GGML types tensorcast knows (ggml's spelling, upper case). */
export type GgmlTypeName =
  | "F32" | "F16" | "Q4_0" | "Q4_1" | "Q5_0" | "Q5_1" | "Q8_0" | "Q8_1"
  | "Q2_K" | "Q3_K" | "Q4_K" | "Q5_K" | "Q6_K" | "Q8_K"
  | "IQ2_XXS" | "IQ2_XS" | "IQ3_XXS" | "IQ1_S" | "IQ4_NL" | "IQ3_S" | "IQ2_S" | "IQ4_XS"
  | "I8" | "I16" | "I32" | "I64" | "F64" | "IQ1_M" | "BF16" | "TQ1_0" | "TQ2_0"
  | "MXFP4" | "NVFP4" | "Q1_0" | "Q2_0";

export interface GgmlType {
  /** ggml's enum ggml_type value. */
  readonly id: number;
  readonly name: GgmlTypeName;
  /** Elements per block (ggml's blck_size). */
  readonly blockSize: number;
  /** Bytes per block (ggml's type_size). */
  readonly typeSize: number;
  /** Whether ggml calls it quantized (a block of more than one element with shared scales). */
  readonly quantized: boolean;
  /**
   * Whether GGUF files carry it. Q8_1 and Q8_K are ggml's intermediates for dot products: they
   * have ids and sizes, but llama.cpp never stores them in a model.
   */
  readonly stored: boolean;
  /** The block's fields in layout order; their bytes add up to `typeSize`. */
  readonly fields: readonly GgmlField[];
  /** Bits per weight: 8 * typeSize / blockSize. */
  readonly bitsPerWeight: number;
}

type FieldSpec = readonly [name: string, kind: GgmlFieldKind, count: number, holds: string];

const KIND_BYTES: Readonly<Record<GgmlFieldKind, number>> = { f16: 2, f32: 4, u8: 1, i8: 1, u16: 2, i16: 2, i32: 4, i64: 8, f64: 8, e8m0: 1, ue4m3: 1 };

/** Elements in a K-quant super-block (QK_K). */
export const QK_K = 256;

function row(id: number, name: GgmlTypeName, blockSize: number, specs: readonly FieldSpec[], opts: { quantized?: boolean; stored?: boolean } = {}): GgmlType {
  let offset = 0;
  const fields = specs.map(([fname, kind, count, holds]) => {
    const f: GgmlField = Object.freeze({ name: fname, kind, count, offset, holds });
    offset += KIND_BYTES[kind] * count;
    return f;
  });
  return Object.freeze({
    id, name, blockSize, typeSize: offset, quantized: opts.quantized ?? blockSize > 1, stored: opts.stored ?? true,
    fields: Object.freeze(fields), bitsPerWeight: (8 * offset) / blockSize,
  });
}

const D: FieldSpec = ["d", "f16", 1, "the block's scale"];

/** Every GGML type in id order (ids with no row are the removed ones, REMOVED_GGML_TYPES). */
export const GGML_TYPES: readonly GgmlType[] = Object.freeze([
  row(0, "F32", 1, [["value", "f32", 1, "IEEE binary32"]], { quantized: false }),
  row(1, "F16", 1, [["value", "f16", 1, "IEEE binary16"]], { quantized: false }),
  row(2, "Q4_0", 32, [D, ["qs", "u8", 16, "4-bit codes q: element j in the low nibble of byte j, j + 16 in its high nibble; value (q - 8) * d"]]),
  row(3, "Q4_1", 32, [D, ["m", "f16", 1, "the block's minimum"], ["qs", "u8", 16, "4-bit codes q as Q4_0's; value q * d + m"]]),
  row(6, "Q5_0", 32, [D, ["qh", "u8", 4, "fifth bits: bit j of the 32-bit word is element j's"], ["qs", "u8", 16, "low nibbles as Q4_0's; value (q - 16) * d"]]),
  row(7, "Q5_1", 32, [D, ["m", "f16", 1, "the block's minimum"], ["qh", "u8", 4, "fifth bits as Q5_0's"], ["qs", "u8", 16, "low nibbles; value q * d + m"]]),
  row(8, "Q8_0", 32, [D, ["qs", "i8", 32, "signed codes q; value q * d"]]),
  row(9, "Q8_1", 32, [D, ["s", "f16", 1, "d * sum(qs)"], ["qs", "i8", 32, "signed codes"]], { stored: false }),
  row(10, "Q2_K", QK_K, [
    ["scales", "u8", 16, "per 16 elements: scale in the low nibble, min in the high nibble"],
    ["qs", "u8", 64, "2-bit codes, four per byte"], D, ["dmin", "f16", 1, "the scale of the mins"],
  ]),
  row(11, "Q3_K", QK_K, [
    ["hmask", "u8", 32, "third bits: a set bit adds 4"], ["qs", "u8", 64, "low 2 bits, four per byte"],
    ["scales", "u8", 12, "sixteen 6-bit scales, biased by 32"], D,
  ]),
  row(12, "Q4_K", QK_K, [D, ["dmin", "f16", 1, "the scale of the mins"], ["scales", "u8", 12, "eight 6-bit scales and eight 6-bit mins"], ["qs", "u8", 128, "4-bit codes"]]),
  row(13, "Q5_K", QK_K, [
    D, ["dmin", "f16", 1, "the scale of the mins"], ["scales", "u8", 12, "eight 6-bit scales and eight 6-bit mins"],
    ["qh", "u8", 32, "fifth bits"], ["qs", "u8", 128, "low 4 bits"],
  ]),
  row(14, "Q6_K", QK_K, [["ql", "u8", 128, "low 4 bits"], ["qh", "u8", 64, "high 2 bits"], ["scales", "i8", 16, "signed 8-bit scales, one per 16 elements"], D]),
  row(15, "Q8_K", QK_K, [["d", "f32", 1, "the block's scale"], ["qs", "i8", 256, "signed codes"], ["bsums", "i16", 16, "sums of 16 codes"]], { stored: false }),
  row(16, "IQ2_XXS", QK_K, [D, ["qs", "u16", 32, "per 32 elements: four 8-bit grid indices, then four 7-bit sign sets and a 4-bit scale"]]),
  row(17, "IQ2_XS", QK_K, [D, ["qs", "u16", 32, "9-bit grid index and 7-bit sign set per 8 elements"], ["scales", "u8", 8, "two 4-bit scales per 32 elements"]]),
  row(18, "IQ3_XXS", QK_K, [D, ["qs", "u8", 64, "8-bit grid indices, one per 4 elements"], ["sas", "u8", 32, "per 32 elements: four 7-bit sign sets and a 4-bit scale"]]),
  row(19, "IQ1_S", QK_K, [D, ["qs", "u8", 32, "low 8 bits of the 11-bit grid indices"], ["qh", "u16", 8, "per 32 elements: high index bits, a 3-bit scale, the delta's sign"]]),
  row(20, "IQ4_NL", 32, [D, ["qs", "u8", 16, "4-bit indices into the non-linear levels, nibbles as Q4_0's"]]),
  row(21, "IQ3_S", QK_K, [
    D, ["qs", "u8", 64, "low 8 bits of the 9-bit grid indices"], ["qh", "u8", 8, "ninth index bits"],
    ["signs", "u8", 32, "one sign bit per element"], ["scales", "u8", 4, "4-bit scales, one per 32 elements"],
  ]),
  row(22, "IQ2_S", QK_K, [
    D, ["qs", "u8", 32, "low 8 bits of the 10-bit grid indices"], ["signs", "u8", 32, "one sign bit per element"],
    ["qh", "u8", 8, "high index bits"], ["scales", "u8", 8, "two 4-bit scales per 32 elements"],
  ]),
  row(23, "IQ4_XS", QK_K, [D, ["scales_h", "u16", 1, "high 2 bits of the eight 6-bit scales"], ["scales_l", "u8", 4, "low 4 bits of the scales"], ["qs", "u8", 128, "4-bit indices into IQ4_NL's levels"]]),
  row(24, "I8", 1, [["value", "i8", 1, "signed 8-bit integer"]], { quantized: false }),
  row(25, "I16", 1, [["value", "i16", 1, "signed 16-bit integer"]], { quantized: false }),
  row(26, "I32", 1, [["value", "i32", 1, "signed 32-bit integer"]], { quantized: false }),
  row(27, "I64", 1, [["value", "i64", 1, "signed 64-bit integer"]], { quantized: false }),
  row(28, "F64", 1, [["value", "f64", 1, "IEEE binary64"]], { quantized: false }),
  row(29, "IQ1_M", QK_K, [
    ["qs", "u8", 32, "low 8 bits of the 11-bit grid indices"], ["qh", "u8", 16, "high index bits and delta signs"],
    ["scales", "u8", 8, "3-bit scales, with the block's fp16 scale in the top nibbles of the four words"],
  ]),
  row(30, "BF16", 1, [["value", "u16", 1, "bfloat16: the top half of a binary32"]], { quantized: false }),
  row(34, "TQ1_0", QK_K, [["qs", "u8", 48, "five base-3 digits per byte"], ["qh", "u8", 4, "four base-3 digits per byte"], D]),
  row(35, "TQ2_0", QK_K, [["qs", "u8", 64, "2-bit codes q, four per byte; value (q - 1) * d"], D]),
  row(39, "MXFP4", 32, [["e", "e8m0", 1, "the shared exponent"], ["qs", "u8", 16, "E2M1 codes, nibbles as Q4_0's"]]),
  row(40, "NVFP4", 64, [["d", "ue4m3", 4, "one scale per 16 elements"], ["qs", "u8", 32, "E2M1 codes, per 16 elements nibbles as Q4_0's"]]),
  row(41, "Q1_0", 128, [D, ["qs", "u8", 16, "one bit per element, low bit first: set is +d, clear is -d"]]),
  row(42, "Q2_0", 64, [D, ["qs", "u8", 16, "2-bit codes q, low bits first; value (q - 1) * d"]]),
]);

/** Ids ggml once had and removed, with what ggml says about each. */
export const REMOVED_GGML_TYPES: ReadonlyMap<number, string> = new Map([
  [4, "Q4_2, removed from ggml"], [5, "Q4_3, removed from ggml"],
  [31, "Q4_0_4_4, removed (ggml repacks Q4_0 at run time)"], [32, "Q4_0_4_8, removed (ggml repacks Q4_0 at run time)"],
  [33, "Q4_0_8_8, removed (ggml repacks Q4_0 at run time)"], [36, "IQ4_NL_4_4, removed (ggml repacks IQ4_NL at run time)"],
  [37, "IQ4_NL_4_8, removed (ggml repacks IQ4_NL at run time)"], [38, "IQ4_NL_8_8, removed (ggml repacks IQ4_NL at run time)"],
]);

/** ggml's GGML_TYPE_COUNT: ids are below it. */
export const GGML_TYPE_COUNT = 43;

const BY_ID = new Map(GGML_TYPES.map((t) => [t.id, t]));
const BY_NAME = new Map(GGML_TYPES.map((t) => [t.name, t]));

/** The row of a ggml type id, or undefined for an unknown or removed one. */
export function ggmlTypeOfId(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

/**
 * The row of a GGML type name, in any case ("q4_k", "Q4_K").
 * @throws TensorcastError UNKNOWN_DTYPE listing the names.
 */
export function ggmlType(name: string): GgmlType {
  const t = typeof name === "string" ? BY_NAME.get(name.toUpperCase() as GgmlTypeName) : undefined;
  if (t === undefined) {
    throw new TensorcastError("UNKNOWN_DTYPE", `${typeof name === "string" ? JSON.stringify(name.slice(0, 100)) : describe(name)} is not a GGML type; the types are ${GGML_TYPES.map((r) => r.name).join(", ")}`);
  }
  return t;
}

/** Bytes of a row of `n` elements of `t`; undefined when `n` is not a multiple of its block. */
export function ggmlRowBytes(t: GgmlType, n: number): number | undefined {
  return n % t.blockSize === 0 ? (n / t.blockSize) * t.typeSize : undefined;
}
