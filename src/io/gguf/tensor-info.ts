/**
 * GGUF tensor infos: name, GGML dimensions (fastest-varying first), GGML type id and the offset
 * of the data within the data section. Each is checked as gguf.cpp checks it, in its order, so a
 * file llama.cpp refuses is refused here with the same reason; then the offsets against the
 * running padded sum and the data against the file's end (llama.cpp's model loader).
 */
import { GGML_TYPE_COUNT, REMOVED_GGML_TYPES, ggmlTypeOfId, type GgmlType } from "../../ggml/types.js";
import { ggufError, type GgufCursor } from "./cursor.js";

/** ggml's GGML_MAX_NAME: a tensor name takes at most 63 bytes (64 with its terminating zero). */
export const GGML_MAX_NAME = 64;
/** ggml's GGML_MAX_DIMS. */
export const GGML_MAX_DIMS = 4;
/** Smallest bytes one tensor info takes: name length, dimension count, type, offset. */
export const MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8;

const INT64_MAX = (1n << 63n) - 1n;
const SIZE_MAX = (1n << 64n) - 1n;

export interface GgufTensorInfo {
  readonly name: string;
  readonly ggmlType: GgmlType;
  /** GGML's order: dims[0] is the row (the fastest-varying dimension). */
  readonly dims: readonly number[];
  /** Row-major, as safetensors, NumPy and PyTorch give it: `dims` reversed. */
  readonly shape: readonly number[];
  readonly elements: number;
  /** Bytes of its data: elements / blockSize * typeSize. */
  readonly byteLength: number;
  /** Where its data starts within the data section, as the file says. */
  readonly offset: number;
  /** Where its data starts in the file. */
  readonly position: number;
}

/** What a tensor info holds before the data section's place is known. */
export interface RawTensorInfo {
  readonly name: string;
  readonly ggmlType: GgmlType;
  readonly dims: readonly bigint[];
  readonly bytes: bigint;
  readonly offset: bigint;
}

/** One tensor info at the cursor, checked; `seen` holds the names before it. */
export async function readTensorInfo(c: GgufCursor, i: number, seen: Set<string>): Promise<RawTensorInfo> {
  const at = c.pos;
  const name = await c.string(`tensor ${i}'s name`, true);
  const nameBytes = c.lastStringBytes;
  const label = `tensor ${i} (${JSON.stringify(name.slice(0, 80))}) at byte ${at}`;
  if (nameBytes >= GGML_MAX_NAME) throw ggufError(c.file, `${label}: its name is ${nameBytes} bytes, GGML allows at most ${GGML_MAX_NAME - 1}`);
  // ggml_set_name keeps a name up to its NUL: llama.cpp would know the tensor by that part only.
  if (name.includes("\0")) throw ggufError(c.file, `${label}: its name holds a NUL, where ggml's C string names end (llama.cpp reads it as ${JSON.stringify(name.slice(0, name.indexOf("\0")))})`);
  if (seen.has(name)) throw ggufError(c.file, `${label}: a second tensor of that name`);
  seen.add(name);
  await c.need(4, `${label}'s dimension count`);
  const nDims = c.u32();
  if (nDims > GGML_MAX_DIMS) throw ggufError(c.file, `${label}: ${nDims} dimensions, GGML allows at most ${GGML_MAX_DIMS}`);
  await c.need(8 * nDims, `${label}'s dimensions`);
  const ne = [1n, 1n, 1n, 1n];
  for (let j = 0; j < nDims; j++) {
    ne[j] = c.i64();
    if (ne[j] < 0n) throw ggufError(c.file, `${label}: dimension ${j} is ${ne[j]}, negative (GGML reads it as a signed 64-bit count)`);
  }
  const elements = ne[0] * ne[1] * ne[2] * ne[3];
  // gguf.cpp's test, term for term: each partial product must stay below INT64_MAX.
  if (elements > 0n && (INT64_MAX / ne[1] <= ne[0] || INT64_MAX / ne[2] <= ne[0] * ne[1] || INT64_MAX / ne[3] <= ne[0] * ne[1] * ne[2])) {
    throw ggufError(c.file, `${label}: shape (${ne.join(", ")}) has ${elements} elements, at least INT64_MAX`);
  }
  await c.need(4, `${label}'s type`);
  const id = c.i32();
  if (id < 0 || id >= GGML_TYPE_COUNT) throw ggufError(c.file, `${label}: GGML type id ${id}, not in [0, ${GGML_TYPE_COUNT})`);
  const t = ggmlTypeOfId(id);
  if (t === undefined) throw ggufError(c.file, `${label}: GGML type id ${id} (${REMOVED_GGML_TYPES.get(id) ?? "unknown"}) has no block size`);
  if (ne[0] % BigInt(t.blockSize) !== 0n) {
    throw ggufError(c.file, `${label}: its rows hold ${ne[0]} elements, not a multiple of ${t.name}'s block of ${t.blockSize}`);
  }
  if (elements / BigInt(t.blockSize) > SIZE_MAX / BigInt(t.typeSize)) throw ggufError(c.file, `${label}: its size in bytes passes 2^64`);
  const bytes = (elements / BigInt(t.blockSize)) * BigInt(t.typeSize);
  await c.need(8, `${label}'s offset`);
  const offset = c.u64();
  return { name, ggmlType: t, dims: ne.slice(0, nDims), bytes, offset };
}

/** `x` rounded up to a multiple of `alignment` (a power of two). */
export function padTo(x: bigint, alignment: number): bigint {
  const a = BigInt(alignment);
  return ((x + a - 1n) / a) * a;
}

/**
 * The infos placed at `dataStart` in a file of `fileSize` bytes: each offset must be the padded
 * sum of the sizes before it (gguf.cpp), and each tensor's data must end within the file
 * (llama.cpp's loader; the padding after the last tensor may be missing).
 */
export function placeTensors(file: string, raw: readonly RawTensorInfo[], dataStart: number, alignment: number, fileSize: number): GgufTensorInfo[] {
  let expected = 0n;
  const out: GgufTensorInfo[] = [];
  for (const r of raw) {
    if (r.offset !== expected) {
      throw ggufError(file, `tensor ${JSON.stringify(r.name.slice(0, 80))}: its data offset is ${r.offset}, but the tensors before it end at ${expected} (padded to ${alignment})`);
    }
    const end = BigInt(dataStart) + r.offset + r.bytes;
    if (end > BigInt(fileSize)) {
      throw ggufError(file, `tensor ${JSON.stringify(r.name.slice(0, 80))}: its ${r.bytes} bytes at ${BigInt(dataStart) + r.offset} end at ${end}, past the end of the file (${fileSize} bytes)`);
    }
    expected = padTo(expected + r.bytes, alignment);
    // Only a tensor with no elements can have a dimension this large and still fit.
    const huge = r.dims.find((d) => d > BigInt(Number.MAX_SAFE_INTEGER));
    if (huge !== undefined) throw ggufError(file, `tensor ${JSON.stringify(r.name.slice(0, 80))}: dimension ${huge} is past 2^53, which a JavaScript shape cannot hold`);
    // Everything now ends inside the file, so every count is a safe integer.
    const dims = r.dims.map(Number);
    out.push({
      name: r.name, ggmlType: r.ggmlType, dims, shape: dims.slice().reverse(),
      elements: dims.reduce((a, b) => a * b, 1), byteLength: Number(r.bytes), offset: Number(r.offset), position: dataStart + Number(r.offset),
    });
  }
  return out;
}
