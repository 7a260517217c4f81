/**
 * Where a TensorProto keeps its elements, and whether what it holds agrees with its dims: the rules
 * the validator applies to every TensorProto of a file and the decoder relies on.
 *
 * Like onnx.checker's check_tensor, a tensor holds its data in raw_data or in the one typed field
 * its data type uses, never both, and the count must fit the dims; external and segmented tensors
 * are left alone (their data is elsewhere or partial). The count must be exact, where the checker
 * of onnx 1.16+ only refuses too few: a tensor with surplus entries is no tensor numpy_helper reads.
 */
import { TensorcastError } from "../../errors.js";
import { dtype, DTYPES, type DType } from "../../dtype/table.js";
import { storageLength } from "../../tensor.js";

export type TypedField = "float_data" | "int32_data" | "string_data" | "int64_data" | "double_data" | "uint64_data";

/** Which typed field carries a type's elements when raw_data is absent. */
export function typedFieldOf(t: DType): TypedField {
  switch (t.name) {
    case "float32":
    case "complex64":
      return "float_data";
    case "float64":
    case "complex128":
      return "double_data";
    case "int64":
      return "int64_data";
    case "uint32":
    case "uint64":
      return "uint64_data";
    case "string":
      return "string_data";
    default:
      return "int32_data";
  }
}

/** Bytes of raw_data that `size` elements of `t` take (sub-byte types packed, complex as pairs). */
export function rawDataLength(t: DType, size: number): number {
  const entries = storageLength(t, size);
  return t.packed ? entries : t.kind === "complex" ? (entries * t.bits) / 16 : (entries * t.bits) / 8;
}

/** At most this many dims are kept for error messages; the element count uses all of them. */
const DIMS_SHOWN = 16;

/** What a TensorProto says about its data, gathered field by field (in any order) by its reader. */
export class TensorFacts {
  dataType = 0;
  /** The number of dims and the first DIMS_SHOWN of them. */
  dimCount = 0;
  readonly dims: number[] = [];
  /** The same dims as exact decimal text (a number past 2^53 is rounded), for messages. */
  private readonly shown: string[] = [];
  /** The product of the non-zero dims (inexact, but still above 2^53, past it), and whether one is 0. */
  private product = 1;
  private zero = false;
  /** A dim that is negative or beyond 2^53 - 1, as text, when one is. */
  badDim: string | undefined;
  /** raw_data's length; the last raw_data field wins, as in protobuf. */
  raw: number | undefined;
  /** Entries seen per typed field, and which typed fields occur at all (even empty). */
  readonly counts = new Map<TypedField, number>();
  external = false;
  segment = false;
  name = "";

  /** One dims entry, as a varint's unsigned 32-bit words. */
  dim(lo: number, hi: number): void {
    const value = (hi | 0) * 4294967296 + lo;
    const exact = value < 0 || !Number.isSafeInteger(value) ? String(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo))) : undefined;
    if (this.dimCount < DIMS_SHOWN) {
      this.dims.push(value);
      this.shown.push(exact ?? String(value));
    }
    this.dimCount++;
    if (exact !== undefined) {
      this.badDim ??= exact;
    } else if (value === 0) {
      this.zero = true;
    } else {
      this.product *= value;
    }
  }

  /** The number of elements the dims give (meaningful once `check()` passed). */
  get size(): number {
    return this.zero ? 0 : this.product;
  }

  /** `n` more entries of a typed field. */
  add(field: TypedField, n: number): void {
    this.counts.set(field, (this.counts.get(field) ?? 0) + n);
  }

  get label(): string {
    return this.name ? `tensor ${JSON.stringify(this.name)}` : "tensor";
  }

  private shapeText(): string {
    return `[${this.shown.join(", ")}${this.dimCount > this.dims.length ? `, ... (${this.dimCount} dims)` : ""}]`;
  }

  /**
   * Throws unless the data agrees with data_type and dims. Returns the data type, or undefined
   * for external and segmented tensors, whose data is not all here to check.
   * @throws TensorcastError INVALID_DATA (no data type, raw_data with a typed field or for STRING,
   *         a typed field the type does not use), UNKNOWN_DTYPE, INVALID_SHAPE (a negative or huge
   *         dim), SHAPE_MISMATCH (the count of elements disagrees with dims).
   */
  check(): DType | undefined {
    const label = this.label;
    if (this.dataType === 0) throw new TensorcastError("INVALID_DATA", `${label}: data_type is 0 (UNDEFINED)`);
    let t: DType;
    try {
      t = dtype(this.dataType);
    } catch {
      throw new TensorcastError(
        "UNKNOWN_DTYPE",
        `${label}: data_type ${this.dataType} is not an ONNX type tensorcast knows (1..${DTYPES.length})`,
      );
    }
    if (this.badDim !== undefined) {
      throw new TensorcastError("INVALID_SHAPE", `${label}: dims ${this.shapeText()} hold ${this.badDim}; dimensions must be integers from 0 to 2^53 - 1`);
    }
    if (!this.zero && this.product > Number.MAX_SAFE_INTEGER) {
      throw new TensorcastError("INVALID_SHAPE", `${label}: dims ${this.shapeText()} have more than 2^53 - 1 elements`);
    }
    if (this.external) {
      const fields = [...(this.raw !== undefined ? ["raw_data"] : []), ...this.counts.keys()];
      if (fields.length > 0) {
        throw new TensorcastError("INVALID_DATA", `${label}: is stored externally (data_location EXTERNAL) and also has ${fields.join(", ")}`);
      }
      return undefined;
    }
    if (this.segment) return undefined;
    const size = this.size;
    if (this.raw !== undefined) {
      if (this.counts.size > 0) {
        throw new TensorcastError("INVALID_DATA", `${label}: has both raw_data and ${[...this.counts.keys()].join(", ")}`);
      }
      if (t.kind === "string") {
        throw new TensorcastError("INVALID_DATA", `${label}: STRING tensors store string_data, never raw_data`);
      }
      const expected = rawDataLength(t, size);
      if (this.raw !== expected) {
        throw new TensorcastError(
          "SHAPE_MISMATCH",
          `${label}: raw_data has ${this.raw} bytes; shape ${this.shapeText()} of ${t.onnxName} needs ${expected}`,
        );
      }
      return t;
    }
    const field = typedFieldOf(t);
    for (const other of this.counts.keys()) {
      if (other !== field) {
        throw new TensorcastError(
          "INVALID_DATA",
          `${label}: ${t.onnxName} elements are stored in ${field} or raw_data, but the tensor has ${other}`,
        );
      }
    }
    const got = this.counts.get(field) ?? 0;
    const entries = storageLength(t, size);
    if (got !== entries) {
      const what = t.packed ? "packed bytes" : t.kind === "complex" ? "numbers (re, im pairs)" : "elements";
      throw new TensorcastError(
        "SHAPE_MISMATCH",
        `${label}: ${field} holds ${got} entries; shape ${this.shapeText()} of ${t.onnxName} needs ${entries} ${what}`,
      );
    }
    return t;
  }
}
