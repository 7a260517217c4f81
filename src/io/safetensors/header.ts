/**
 * The safetensors format (huggingface/safetensors, safetensors/src/tensor.rs):
 *
 *   8 bytes   N, the header length, a little-endian u64
 *   N bytes   a UTF-8 JSON object, starting with "{" (the Rust reader also takes leading spaces), possibly
 *             padded with trailing spaces:
 *             { "__metadata__": { "key": "value", ... },          (optional, strings only)
 *               "name": { "dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end] }, ... }
 *   the rest  the data buffer; each tensor's bytes are [begin, end) of it, little-endian, row-major
 *
 * Validation follows the Rust reader: N at most 100 MB (it caps the header there), the JSON read as
 * serde_json reads it into the Rust reader's types (json.ts), the element count folded
 * in u64 without overflow, the offsets
 * sorted by begin tile the buffer exactly (the first begins at 0, each begins where the previous
 * ends, the last ends at the end of the file: no gap, no overlap, nothing outside), and each
 * tensor's length equals its element count times its dtype's size. The packed F4 / F6 types must
 * fill whole bytes (Rust's MisalignedSlice). Shapes are logical element counts, also for F4 (the
 * Python bindings double the last dimension of torch's float4_e2m1fn_x2 for the header).
 * Sub-byte types are packed as ONNX packs them: element 0 in the low bits.
 *
 * This file is pure (no Node built-ins): it parses headers; read.ts reads one from a ByteSource (a
 * page's File), src/node/io/reader.ts from a file on disk, and src/node/io/safetensors.ts writes them.
 */
import { TensorcastError } from "../../errors.js";
import { dtype, type DType } from "../../dtype/table.js";
import { shapeText } from "../../tensor.js";
import { describe, expectBytes, expectInteger } from "../../args.js";
import { quoteBounded, readHeaderJson } from "./json.js";
import { rawByteLength, type TensorInfo } from "../tensor-info.js";

/** The Rust reader's cap on N (MAX_HEADER_SIZE). */
export const MAX_HEADER_LENGTH = 100_000_000;

/** safetensors dtype code -> tensorcast type name, for every code the format defines. */
export const SAFETENSORS_DTYPES: Readonly<Record<string, string>> = {
  F64: "float64", F32: "float32", F16: "float16", BF16: "bfloat16",
  I64: "int64", I32: "int32", I16: "int16", I8: "int8",
  U64: "uint64", U32: "uint32", U16: "uint16", U8: "uint8", BOOL: "bool",
  F8_E4M3: "float8e4m3fn", F8_E5M2: "float8e5m2", F8_E8M0: "float8e8m0",
  F8_E4M3FNUZ: "float8e4m3fnuz", F8_E5M2FNUZ: "float8e5m2fnuz",
  F4: "float4e2m1", F6_E2M3: "float6e2m3", F6_E3M2: "float6e3m2",
  C64: "complex64",
};

const CODE_OF = new Map<string, string>(Object.entries(SAFETENSORS_DTYPES).map(([code, name]) => [name, code]));

/** The safetensors code of a type, or undefined when the format has none (int4, complex128, string, ...). */
export function safetensorsCode(t: DType): string | undefined {
  return CODE_OF.get(t.name);
}

/** One tensor of a safetensors header; `begin` and `end` are offsets into the data buffer. */
export interface SafetensorsTensor extends TensorInfo {
  readonly begin: number;
  readonly end: number;
}

export interface SafetensorsHeader {
  /** N: the JSON's length in bytes, padding included. */
  readonly headerLength: number;
  /** Where the data buffer starts in the file: 8 + N. */
  readonly dataStart: number;
  readonly metadata?: Readonly<Record<string, string>>;
  /** Sorted by `begin`, which is the order of their bytes in the file. */
  readonly tensors: readonly SafetensorsTensor[];
}

export function bad(file: string, message: string, tensor?: string, code: "INVALID_DATA" | "SHAPE_MISMATCH" | "INVALID_SHAPE" | "UNKNOWN_DTYPE" | "UNSUPPORTED_TYPE" = "INVALID_DATA"): TensorcastError {
  return new TensorcastError(code, `${file}: ${tensor === undefined ? "" : `tensor ${quoteBounded(tensor)}: `}${message}`);
}

/**
 * Reads N from the first 8 bytes and checks it against the cap and the file's size, so a lying
 * length is refused before anything is allocated for it.
 */
export function readHeaderLength(first: Uint8Array, fileSize: number, file: string): number {
  if (fileSize < 8 || first.length < 8) {
    throw bad(file, `is ${fileSize} bytes long; a safetensors file starts with an 8-byte header length`);
  }
  const view = new DataView(first.buffer, first.byteOffset, 8);
  const lo = view.getUint32(0, true);
  const hi = view.getUint32(4, true);
  const n = hi * 4294967296 + lo;
  if (n > MAX_HEADER_LENGTH) {
    throw bad(file, `header length ${hi >= 0x200000 ? `${BigInt(hi) * 4294967296n + BigInt(lo)}` : n} is over the ${MAX_HEADER_LENGTH}-byte limit of safetensors readers`);
  }
  if (n < 2) throw bad(file, `header length ${n} is too small for a JSON object`);
  if (8 + n > fileSize) {
    throw bad(file, `is truncated: the header says it is ${n} bytes long, but only ${fileSize - 8} bytes follow the length`);
  }
  return n;
}

/**
 * Parses and validates the N header bytes of a file of `fileSize` bytes: accepted exactly when the
 * Rust reader accepts them (json.ts reads the JSON as serde_json does), except a
 * dimension above 2^53 - 1, which no JS number holds.
 * @throws TensorcastError INVALID_DATA (malformed JSON or UTF-8, bad offsets), UNKNOWN_DTYPE,
 *         INVALID_SHAPE or SHAPE_MISMATCH, each naming the file and the tensor.
 */
export function parseSafetensorsHeader(headerBytes: Uint8Array, fileSize: number, file: string): SafetensorsHeader {
  expectBytes(headerBytes, "parseSafetensorsHeader's header");
  expectInteger(fileSize, "parseSafetensorsHeader's fileSize", 0, Number.MAX_SAFE_INTEGER, "INVALID_DATA");
  if (typeof file !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `parseSafetensorsHeader's file must be a string (the name errors give), got ${describe(file)}`);
  return readSafetensorsHeader(headerBytes, fileSize, file, (t) => t);
}

/**
 * parseSafetensorsHeader, with each tensor's record handed to `make` as it is made and only what
 * `make` returns kept (reader.ts makes its file tensors so: a header can list millions).
 */
export function readSafetensorsHeader<R>(
  headerBytes: Uint8Array, fileSize: number, file: string, make: (t: SafetensorsTensor) => R,
): Omit<SafetensorsHeader, "tensors"> & { tensors: R[] } {
  const headerLength = headerBytes.length;
  const { metadata, names, dtypes, shapes, begins, ends } = readHeaderJson(headerBytes, file, DTYPES);
  const sizes = new Float64Array(names.length);
  for (let i = 0; i < names.length; i++) sizes[i] = checkTensor(names[i], dtypes[i], shapes[i], begins[i], ends[i], file);

  // The Rust reader sorts by (begin, end); the index breaks ties, so tensors at the same offsets
  // (empty ones) keep the header's order.
  const order = Uint32Array.from(names, (_, i) => i);
  let sorted = true;
  for (let i = 1; i < names.length && sorted; i++) sorted = begins[i - 1] < begins[i] || (begins[i - 1] === begins[i] && ends[i - 1] <= ends[i]);
  if (!sorted) order.sort((a, b) => begins[a] - begins[b] || ends[a] - ends[b] || a - b);

  const dataLength = fileSize - 8 - headerLength;
  let at = 0;
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    const range = `data_offsets [${begins[i]}, ${ends[i]}]`;
    if (begins[i] < at) {
      const p = order[k - 1];
      throw bad(file, `${range} overlap tensor ${quoteBounded(names[p])} at [${begins[p]}, ${ends[p]}]`, names[i]);
    }
    if (begins[i] > at) throw bad(file, `${range} leave a gap: bytes [${at}, ${begins[i]}) of the data belong to no tensor`, names[i]);
    if (ends[i] > dataLength) {
      throw bad(file, `${range} reach past the end of the data (${dataLength} bytes): the file is truncated or the header is wrong`, names[i]);
    }
    at = ends[i];
  }
  if (at !== dataLength) {
    throw bad(file, `the tensors cover ${at} bytes of data but the file has ${dataLength} after the header: ${dataLength - at} bytes belong to no tensor`);
  }
  const tensors = Array.from(order, (i) => make({
    name: names[i], dtype: dtypes[i], shape: shapes[i], size: sizes[i], byteLength: ends[i] - begins[i], begin: begins[i], end: ends[i],
  }));
  return { headerLength, dataStart: 8 + headerLength, metadata, tensors };
}

const DTYPES = new Map<string, DType>(Object.entries(SAFETENSORS_DTYPES).map(([code, name]) => [code, dtype(name)]));


const MAX_U64 = 0xffff_ffff_ffff_ffffn;

/**
 * The product of `shape` as the Rust reader folds it (checked u64 multiplication from the left:
 * [2^32, 2^32, 0] overflows before the 0), or "overflow"; a bigint when above 2^53 - 1.
 */
function elementCount(shape: readonly number[]): number | bigint | "overflow" {
  let size: number | bigint = 1;
  for (const d of shape) {
    if (typeof size === "number") {
      const product: number = size * d;
      // Exact when at most 2^53 - 1; a true product above that rounds to 2^53 or more.
      if (product <= Number.MAX_SAFE_INTEGER) {
        size = product;
        continue;
      }
      size = BigInt(size);
    }
    size *= BigInt(d);
    if (size > MAX_U64) return "overflow";
    if (size <= BigInt(Number.MAX_SAFE_INTEGER)) size = Number(size);
  }
  return size;
}

/** Checks a tensor's shape against its dtype and offsets; returns its element count. */
function checkTensor(name: string, t: DType, shape: readonly number[], begin: number, end: number, file: string): number {
  const code = CODE_OF.get(t.name)!;
  const size = elementCount(shape);
  if (size === "overflow") {
    throw bad(file, `shape ${shapeText(shape)} has more elements than 2^64 - 1 (the Rust reader's overflow check)`, name, "INVALID_SHAPE");
  }
  if (typeof size === "bigint") {
    throw bad(file, `shape ${shapeText(shape)} has ${size} elements, more than 2^53 - 1 (no file holds them)`, name, "INVALID_SHAPE");
  }
  if (t.packed && (size * t.bits) % 8 !== 0) {
    throw bad(file, `shape ${shapeText(shape)} of ${code} is ${size} elements of ${t.bits} bits, which do not fill whole bytes`, name, "SHAPE_MISMATCH");
  }
  if (end < begin) throw bad(file, `data_offsets [${begin}, ${end}] end before they begin`, name);
  const byteLength = rawByteLength(t, size);
  if (end - begin !== byteLength) {
    throw bad(
      file,
      `data_offsets [${begin}, ${end}] hold ${end - begin} bytes, but shape ${shapeText(shape)} of ${code} needs ${byteLength}`,
      name, "SHAPE_MISMATCH",
    );
  }
  return size;
}
