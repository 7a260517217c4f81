/**
 * The safetensors format (huggingface/safetensors, safetensors/src/tensor.rs):
 *
 *   8 bytes   N, the header length, a little-endian u64
 *   N bytes   a UTF-8 JSON object, starting with "{", possibly padded with trailing spaces:
 *             { "__metadata__": { "key": "value", ... },          (optional, strings only)
 *               "name": { "dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end] }, ... }
 *   the rest  the data buffer; each tensor's bytes are [begin, end) of it, little-endian, row-major
 *
 * Validation follows the Rust reader: N at most 100 MB (it caps the header there), the offsets
 * sorted by begin tile the buffer exactly (the first begins at 0, each begins where the previous
 * ends, the last ends at the end of the file: no gap, no overlap, nothing outside), and each
 * tensor's length equals its element count times its dtype's size. The packed F4 / F6 types must
 * fill whole bytes (Rust's MisalignedSlice). Shapes are logical element counts, also for F4 (the
 * Python bindings double the last dimension of torch's float4_e2m1fn_x2 for the header).
 * Sub-byte types are packed as ONNX packs them: element 0 in the low bits.
 *
 * This file is pure (no Node built-ins): it parses and builds headers; reader.ts does the I/O.
 */
import { dtype, TensorcastError, type DType } from "../../index.js";
import { decodeUtf8 } from "../../io/onnx/wire.js";
import { checkedSize, rawByteLength, type TensorInfo } from "./tensors.js";

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

function bad(file: string, message: string, tensor?: string, code: "INVALID_DATA" | "SHAPE_MISMATCH" | "INVALID_SHAPE" | "UNKNOWN_DTYPE" | "UNSUPPORTED_TYPE" = "INVALID_DATA"): TensorcastError {
  return new TensorcastError(code, `${file}: ${tensor === undefined ? "" : `tensor ${JSON.stringify(tensor)}: `}${message}`);
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
 * Parses and validates the N header bytes of a file of `fileSize` bytes.
 * @throws TensorcastError INVALID_DATA (malformed JSON or UTF-8, bad offsets), UNKNOWN_DTYPE,
 *         INVALID_SHAPE or SHAPE_MISMATCH, each naming the file and the tensor.
 */
export function parseSafetensorsHeader(headerBytes: Uint8Array, fileSize: number, file: string): SafetensorsHeader {
  const headerLength = headerBytes.length;
  const text = decodeUtf8(headerBytes, `${file}: the header`);
  if (!text.startsWith("{")) throw bad(file, `the header must start with "{"; it starts with ${JSON.stringify(text.slice(0, 16))}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw bad(file, `the header is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw bad(file, "the header is not a JSON object");

  let metadata: Record<string, string> | undefined;
  const tensors: SafetensorsTensor[] = [];
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    if (name === "__metadata__") {
      metadata = checkMetadata(value, file);
      continue;
    }
    tensors.push(checkTensor(name, value, file));
  }
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);

  const dataLength = fileSize - 8 - headerLength;
  let at = 0;
  for (const t of tensors) {
    if (t.begin < at) {
      const previous = tensors[tensors.indexOf(t) - 1];
      throw bad(file, `data_offsets [${t.begin}, ${t.end}] overlap tensor ${JSON.stringify(previous.name)} at [${previous.begin}, ${previous.end}]`, t.name);
    }
    if (t.begin > at) {
      throw bad(file, `data_offsets [${t.begin}, ${t.end}] leave a gap: bytes [${at}, ${t.begin}) of the data belong to no tensor`, t.name);
    }
    if (t.end > dataLength) {
      throw bad(file, `data_offsets [${t.begin}, ${t.end}] reach past the end of the data (${dataLength} bytes): the file is truncated or the header is wrong`, t.name);
    }
    at = t.end;
  }
  if (at !== dataLength) {
    throw bad(file, `the tensors cover ${at} bytes of data but the file has ${dataLength} after the header: ${dataLength - at} bytes belong to no tensor`);
  }
  return { headerLength, dataStart: 8 + headerLength, metadata, tensors };
}

function checkMetadata(value: unknown, file: string): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad(file, "__metadata__ must be an object of strings");
  }
  const entries = Object.entries(value as Record<string, unknown>);
  for (const [k, v] of entries) {
    if (typeof v !== "string") throw bad(file, `__metadata__ ${JSON.stringify(k)} is ${JSON.stringify(v)}; metadata values must be strings`);
  }
  // fromEntries defines own properties, so a key such as "__proto__" stays a plain key.
  return Object.fromEntries(entries) as Record<string, string>;
}

function checkTensor(name: string, value: unknown, file: string): SafetensorsTensor {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad(file, "its entry must be an object with dtype, shape and data_offsets", name);
  }
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (key !== "dtype" && key !== "shape" && key !== "data_offsets") {
      throw bad(file, `unknown field ${JSON.stringify(key)}; a tensor has dtype, shape and data_offsets`, name);
    }
  }
  const code = v.dtype;
  if (typeof code !== "string") throw bad(file, "dtype is missing or not a string", name);
  const typeName = Object.hasOwn(SAFETENSORS_DTYPES, code) ? SAFETENSORS_DTYPES[code] : undefined;
  if (typeName === undefined) {
    throw bad(file, `unknown dtype ${JSON.stringify(code)}; safetensors defines ${Object.keys(SAFETENSORS_DTYPES).join(", ")}`, name, "UNKNOWN_DTYPE");
  }
  const t = dtype(typeName);
  const shape = v.shape;
  if (!Array.isArray(shape)) throw bad(file, "shape is missing or not a list", name, "INVALID_SHAPE");
  for (const d of shape) {
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) {
      throw bad(file, `shape ${JSON.stringify(shape)} has ${JSON.stringify(d)}; dimensions are integers from 0 to 2^53 - 1`, name, "INVALID_SHAPE");
    }
  }
  const size = checkedSize(shape);
  if (size === undefined) throw bad(file, `shape ${JSON.stringify(shape)} has more than 2^53 - 1 elements`, name, "INVALID_SHAPE");
  if (t.packed && (size * t.bits) % 8 !== 0) {
    throw bad(file, `shape ${JSON.stringify(shape)} of ${code} is ${size} elements of ${t.bits} bits, which do not fill whole bytes`, name, "SHAPE_MISMATCH");
  }
  const offsets = v.data_offsets;
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => typeof o === "number" && Number.isSafeInteger(o) && o >= 0)) {
    throw bad(file, `data_offsets ${JSON.stringify(offsets)} must be two integers [begin, end]`, name);
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin) throw bad(file, `data_offsets [${begin}, ${end}] end before they begin`, name);
  const byteLength = rawByteLength(t, size);
  if (end - begin !== byteLength) {
    throw bad(
      file,
      `data_offsets [${begin}, ${end}] hold ${end - begin} bytes, but shape ${JSON.stringify(shape)} of ${code} needs ${byteLength}`,
      name, "SHAPE_MISMATCH",
    );
  }
  return { name, dtype: t, shape: shape as number[], size, byteLength, begin, end };
}

/**
 * The first 8 + N bytes of a safetensors file holding `tensors` in this order (offsets are
 * assigned back to back) and `metadata`: the length, then the JSON padded with spaces to a
 * multiple of 8 bytes, as the Rust writer pads it, so the data buffer starts 8-byte aligned.
 * @throws TensorcastError UNSUPPORTED_TYPE for a type safetensors has no code for, naming the tensor.
 */
export function encodeSafetensorsHeader(
  tensors: readonly Pick<TensorInfo, "name" | "dtype" | "shape" | "size" | "byteLength">[],
  metadata?: Readonly<Record<string, string>>,
  file = "output",
): Uint8Array {
  // JSON text built by hand, in this order: an object would move integer-like names ("0") first
  // and treat "__proto__" specially.
  const parts: string[] = [];
  if (metadata !== undefined) parts.push(`"__metadata__":${JSON.stringify(metadata)}`);
  const names = new Set<string>();
  let offset = 0;
  for (const t of tensors) {
    const code = safetensorsCode(t.dtype);
    if (code === undefined) {
      throw bad(file, `safetensors has no dtype for ${t.dtype.name}; it stores ${Object.values(SAFETENSORS_DTYPES).join(", ")}`, t.name, "UNSUPPORTED_TYPE");
    }
    if (t.name === "__metadata__") throw bad(file, "the name __metadata__ is reserved by the format", t.name);
    if (names.has(t.name)) throw bad(file, "appears twice; safetensors names must be unique", t.name);
    names.add(t.name);
    if (t.dtype.packed && (t.size * t.dtype.bits) % 8 !== 0) {
      throw bad(file, `${t.size} elements of ${code} do not fill whole bytes, which safetensors requires`, t.name, "SHAPE_MISMATCH");
    }
    parts.push(`${JSON.stringify(t.name)}:${JSON.stringify({ dtype: code, shape: t.shape, data_offsets: [offset, offset + t.byteLength] })}`);
    offset += t.byteLength;
  }
  const json = new TextEncoder().encode(`{${parts.join(",")}}`);
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded > MAX_HEADER_LENGTH) throw bad(file, `the header would be ${padded} bytes, over the ${MAX_HEADER_LENGTH}-byte limit`);
  const out = new Uint8Array(8 + padded).fill(0x20, 8 + json.length);
  new DataView(out.buffer).setUint32(0, padded, true);
  out.set(json, 8);
  return out;
}
