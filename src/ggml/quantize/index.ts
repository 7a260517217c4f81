/**
 * GGML quantization: float32 rows to the bytes ggml's `ggml_quantize_chunk` writes for them, one
 * reference encoder per type (legacy.ts, kquants.ts, iq4.ts, small.ts, plain.ts), with or without an
 * importance matrix.
 *
 * Browser-safe: no Node built-ins.
 */
import { describe } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import { GGML_TYPES, ggmlRowBytes, ggmlType, type GgmlType, type GgmlTypeName } from "../types.js";
import { iq1_m, iq1_s } from "./iq1.js";
import { iq2_s, iq2_xs, iq2_xxs } from "./iq2.js";
import { iq3_s, iq3_xxs } from "./iq3.js";
import { iq4_nl, iq4_xs } from "./iq4.js";
import { q2_K, q3_K, q4_K, q5_K, q6_K } from "./kquants.js";
import { q4_0, q4_1, q5_0, q5_1, q8_0 } from "./legacy.js";
import { bf16, f16, f32 } from "./plain.js";
import type { RowEncoder } from "./row.js";
import { mxfp4, tq1_0, tq2_0 } from "./small.js";

const ENCODERS: Partial<Record<GgmlTypeName, RowEncoder>> = {
  F32: f32, F16: f16, BF16: bf16,
  Q4_0: q4_0, Q4_1: q4_1, Q5_0: q5_0, Q5_1: q5_1, Q8_0: q8_0,
  Q2_K: q2_K, Q3_K: q3_K, Q4_K: q4_K, Q5_K: q5_K, Q6_K: q6_K,
  IQ1_S: iq1_s, IQ1_M: iq1_m, IQ2_XXS: iq2_xxs, IQ2_XS: iq2_xs, IQ2_S: iq2_s, IQ3_XXS: iq3_xxs, IQ3_S: iq3_s, IQ4_NL: iq4_nl, IQ4_XS: iq4_xs, TQ1_0: tq1_0, TQ2_0: tq2_0, MXFP4: mxfp4,
};

/**
 * The types whose rows are independent runs of blocks without an importance matrix: their encoder
 * takes all rows at once, as one row (so that a fast path copies whole chunks, not row by row).
 */
const ROWLESS: ReadonlySet<GgmlTypeName> = new Set(["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]);

/** The types ggml makes only with an importance matrix (ggml_quantize_requires_imatrix). */
const NEED_IMATRIX: ReadonlySet<GgmlTypeName> = new Set(["IQ2_XXS", "IQ2_XS", "IQ1_S"]);

/** Whether tensorcast quantizes to `t` (with an importance matrix where `withImatrix`). */
export function canQuantize(t: GgmlType, withImatrix = false): boolean {
  return ENCODERS[t.name] !== undefined && (withImatrix || !NEED_IMATRIX.has(t.name));
}

/** The type names quantizeRows takes. */
export function quantizableTypes(): GgmlTypeName[] {
  return GGML_TYPES.filter((t) => ENCODERS[t.name] !== undefined).map((t) => t.name);
}

/**
 * Quantizes rows of float32 values to a GGML type: the bytes `ggml_quantize_chunk(type, rows, dst,
 * 0, nrows, rowLength, imatrix)` writes on an x86-64 build without FMA, bit for bit. `rows` holds
 * whole rows of `rowLength` values; `imatrix` (optional) one importance weight per column, as
 * llama-imatrix stores them per tensor. Q8_0, TQ1_0, TQ2_0, MXFP4 and the plain types ignore it, as
 * ggml does. NaN and Inf inputs give what ggml's code gives for them (mostly meaningless blocks,
 * never a throw).
 * @example quantizeRows("Q8_0", new Float32Array(32).fill(1), 32) // 34 bytes: d = 1/127 as fp16 (0x2008), then 32 codes of 127
 * @throws TensorcastError UNKNOWN_DTYPE for a name that is no GGML type, UNSUPPORTED_TYPE for a type
 *         with no encoder here, SHAPE_MISMATCH when rowLength is not a positive multiple of the
 *         block or `rows` not whole rows, INVALID_DATA when imatrix's length is not rowLength.
 */
export function quantizeRows(type: GgmlType | string, rows: Float32Array, rowLength: number, imatrix?: Float32Array): Uint8Array {
  const { t, rowBytes } = checked(type, rows, rowLength, imatrix);
  const out = new Uint8Array((rows.length / rowLength) * rowBytes);
  encodeRows(t, rows, rowLength, rowBytes, out, imatrix);
  return out;
}

/**
 * quantizeRows into `out`, a Uint8Array of exactly the rows' bytes (ggmlRowBytes(type, rowLength)
 * per row), for a caller that reuses one output. When `rows` and `out` are views of one arena's
 * memory (src/arena.ts), the types with a per-block kernel (F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
 * Q5_1, without an importance matrix) encode in place, with no copy.
 * @example quantizeRowsInto("Q8_0", rows, 4096, out) // out, holding quantizeRows("Q8_0", rows, 4096)'s bytes
 * @throws TensorcastError as quantizeRows; SHAPE_MISMATCH when out's length is not the rows' bytes,
 *         INVALID_ATTRIBUTE when out is no Uint8Array or shares bytes with rows.
 */
export function quantizeRowsInto(type: GgmlType | string, rows: Float32Array, rowLength: number, out: Uint8Array, imatrix?: Float32Array): Uint8Array {
  const { t, rowBytes } = checked(type, rows, rowLength, imatrix);
  if (!(out instanceof Uint8Array)) throw new TensorcastError("INVALID_ATTRIBUTE", `quantizeRowsInto writes into a Uint8Array; got ${describe(out)}`);
  const bytes = (rows.length / rowLength) * rowBytes;
  if (out.length !== bytes) {
    throw new TensorcastError("SHAPE_MISMATCH", `${rows.length / rowLength} ${t.name} rows of ${rowLength} take ${bytes} bytes; out has ${out.length}`);
  }
  if (out.buffer === rows.buffer && out.byteOffset < rows.byteOffset + rows.byteLength && rows.byteOffset < out.byteOffset + out.byteLength) {
    throw new TensorcastError("INVALID_ATTRIBUTE", "quantizeRowsInto's out shares bytes with its rows; give it an output of its own");
  }
  encodeRows(t, rows, rowLength, rowBytes, out, imatrix);
  return out;
}

/** The checks of quantizeRows: the type, its encoder, the rows' shape and the importance matrix. */
function checked(type: GgmlType | string, rows: Float32Array, rowLength: number, imatrix: Float32Array | undefined): { t: GgmlType; rowBytes: number } {
  const t = typeof type === "string" ? ggmlType(type) : type;
  if (!GGML_TYPES.includes(t)) throw new TensorcastError("INVALID_ATTRIBUTE", "quantizeRows's type must be a GGML type name or a row of GGML_TYPES");
  const encode = ENCODERS[t.name];
  if (encode === undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tensorcast does not quantize to ${t.name}; it quantizes to ${quantizableTypes().join(", ")}`);
  }
  if (NEED_IMATRIX.has(t.name) && imatrix === undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${t.name} needs an importance matrix, as ggml requires one for it`);
  }
  if (!(rows instanceof Float32Array)) throw new TensorcastError("INVALID_ATTRIBUTE", `quantizeRows takes a Float32Array of rows`);
  const rowBytes = Number.isSafeInteger(rowLength) && rowLength > 0 ? ggmlRowBytes(t, rowLength) : undefined;
  if (rowBytes === undefined) {
    throw new TensorcastError("SHAPE_MISMATCH", `a ${t.name} row is whole blocks of ${t.blockSize} values; rowLength ${describe(rowLength)} is not a positive multiple of ${t.blockSize}`);
  }
  if (rows.length % rowLength !== 0) {
    throw new TensorcastError("SHAPE_MISMATCH", `${rows.length} values are not whole rows of ${rowLength}`);
  }
  if (imatrix !== undefined && (!(imatrix instanceof Float32Array) || imatrix.length !== rowLength)) {
    throw new TensorcastError("INVALID_DATA", `the importance matrix must be a Float32Array of one weight per column (${rowLength}); got ${imatrix instanceof Float32Array ? `${imatrix.length} weights` : typeof imatrix}`);
  }
  return { t, rowBytes };
}

function encodeRows(t: GgmlType, rows: Float32Array, rowLength: number, rowBytes: number, out: Uint8Array, imatrix: Float32Array | undefined): void {
  const encode = ENCODERS[t.name]!;
  if (imatrix === undefined && ROWLESS.has(t.name)) {
    encode(rows, 0, rows.length, out, 0, undefined);
    return;
  }
  const nrows = rows.length / rowLength;
  for (let r = 0; r < nrows; r++) encode(rows, r * rowLength, rowLength, out, r * rowBytes, imatrix);
}
