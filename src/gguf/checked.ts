/**
 * tensorcast/gguf's public face: each function checks its arguments as JavaScript may pass them
 * (no type checker) and then calls the reader, writer or GGML function the rest of tensorcast calls
 * unchecked. A wrong argument is a TensorcastError naming what was given, never a TypeError from
 * inside. What a caller's own object throws when touched (a getter, a ByteSource's read) passes
 * through as it is.
 *
 * Files and models are the objects readGguf and ggufModel return (tensorcast/node's openGguf's
 * `model` too); a record may be any object of a record's shape, so blocks read with
 * readGgufBlocks can be decoded as a record.
 */
import { describe, expectArray, expectBytes, expectInteger, expectObject, expectOptions, isBoolean, isDetached, isString } from "../args.js";
import { TensorcastError } from "../errors.js";
import { GGML_TYPES, ggmlRowBytes as rowBytes, ggmlType, type GgmlType } from "../ggml/types.js";
import { canQuantize as encodes } from "../ggml/quantize/index.js";
import type { ByteSource } from "../io/byte-source.js";
import * as header from "../io/gguf/header.js";
import * as records from "../io/gguf/records.js";
import * as split from "../io/gguf/split.js";
import * as write from "../io/gguf/write.js";
import { GGUF_MAX_ARRAY_ELEMENTS, GGUF_VALUE_TYPES, type GgufMetadataEntry, type GgufValue } from "../io/gguf/values.js";

function attr(what: string, got: unknown, want: string): TensorcastError {
  return new TensorcastError("INVALID_ATTRIBUTE", `${what} must be ${want}, got ${describe(got)}`);
}

/** A ByteSource of the caller's: a size and a read method; what read answers is checked per read. */
function expectSource(src: unknown, fn: string): ByteSource {
  expectObject(src, `${fn}'s source`, "INVALID_ATTRIBUTE");
  const size = src.size;
  const read = src.read;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) throw attr(`${fn}'s source.size`, size, "a byte count");
  if (typeof read !== "function") throw attr(`${fn}'s source.read`, read, "a function (position, length) => Promise<Uint8Array>");
  return {
    size,
    async read(position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
      const got: unknown = await read.call(src, position, length, into);
      if (!(got instanceof Uint8Array) || got.length !== length) {
        throw new TensorcastError("IO_ERROR", `${fn}'s source.read(${position}, ${length}) answered ${describe(got)}, not ${length} bytes`);
      }
      return got;
    },
  };
}

function expectFile(g: unknown, what: string): asserts g is header.GgufFile {
  if (!header.isGgufFile(g)) throw attr(what, g, "a GGUF file as readGguf returns it");
}

function expectModel(m: unknown, what: string): asserts m is split.GgufModel {
  if (!split.isGgufModel(m)) throw attr(what, m, "a GGUF model as ggufModel (or tensorcast/node's openGguf) returns it");
}

function expectGgmlType(t: unknown, what: string): asserts t is GgmlType | string {
  if (typeof t !== "string" && !GGML_TYPES.includes(t as GgmlType)) throw attr(what, t, "a GGML type name (\"q4_k\") or a row of GGML_TYPES");
}

function expectCounts(shape: unknown, what: string): asserts shape is number[] {
  expectArray(shape, what);
  if (shape.length > 64) throw attr(what, shape, "at most 64 dimensions");
  for (const d of shape) if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) throw attr(`${what}'s dimensions`, d, "counts (safe integers, 0 or more)");
}

const LAYOUT_OPTIONS = { version: (v: unknown) => v === 2 || v === 3, littleEndian: isBoolean };
const LAYOUT_EXPECTED = { version: "2 or 3", littleEndian: "true or false" };

function expectMetadata(metadata: unknown, fn: string): asserts metadata is GgufMetadataEntry[] {
  expectArray(metadata, `${fn}'s metadata`);
  if (metadata.length > GGUF_MAX_ARRAY_ELEMENTS) throw attr(`${fn}'s metadata`, metadata, `at most ${GGUF_MAX_ARRAY_ELEMENTS} entries`);
  metadata.forEach((e, i) => {
    expectObject(e, `${fn}'s metadata[${i}]`, "INVALID_ATTRIBUTE");
    if (typeof e.key !== "string") throw attr(`${fn}'s metadata[${i}].key`, e.key, "a string");
    if (!GGUF_VALUE_TYPES.includes(e.type as never)) throw attr(`${fn}'s metadata[${i}].type`, e.type, `one of ${GGUF_VALUE_TYPES.join(", ")}`);
    if (e.type === "array") expectArrayValue(e.value, `${fn}'s metadata[${i}].value`, 1);
  });
}

function expectArrayValue(v: unknown, what: string, depth: number): void {
  expectObject(v, what, "INVALID_ATTRIBUTE");
  if (depth > 64) throw attr(what, v, "arrays nested at most 64 deep");
  const items = v.items;
  if (!GGUF_VALUE_TYPES.includes(v.itemType as never)) throw attr(`${what}.itemType`, v.itemType, `one of ${GGUF_VALUE_TYPES.join(", ")}`);
  if (!Array.isArray(items) && !(ArrayBuffer.isView(items) && !(items instanceof DataView))) throw attr(`${what}.items`, items, "an array or a typed array");
  if (ArrayBuffer.isView(items) && isDetached(items.buffer)) throw attr(`${what}.items`, items, "a typed array whose buffer is not detached");
  if (v.itemType === "array") (items as unknown[]).forEach((x, i) => expectArrayValue(x, `${what}.items[${i}]`, depth + 1));
}

function expectTensors(tensors: unknown, fn: string, withData: boolean): void {
  expectArray(tensors, `${fn}'s tensors`);
  if (tensors.length > GGUF_MAX_ARRAY_ELEMENTS) throw attr(`${fn}'s tensors`, tensors, `at most ${GGUF_MAX_ARRAY_ELEMENTS} tensors`);
  tensors.forEach((t, i) => {
    const what = `${fn}'s tensors[${i}]`;
    expectObject(t, what, "INVALID_ATTRIBUTE");
    if (typeof t.name !== "string") throw attr(`${what}.name`, t.name, "a string");
    expectGgmlType(t.ggmlType, `${what}.ggmlType`);
    expectCounts(t.dims, `${what}.dims`);
    if (withData) {
      const d = t.data;
      const iterable = typeof d === "object" && d !== null && (Symbol.iterator in d || Symbol.asyncIterator in d);
      if (!(d instanceof Uint8Array) && !iterable) throw attr(`${what}.data`, d, "a Uint8Array or an (async) iterable of them");
      if (d instanceof Uint8Array) expectBytes(d, `${what}.data`);
    }
  });
}

/** Checks each piece of a tensor's data as the writer takes it. */
async function* checkedPieces(data: write.GgufTensorData, what: string): AsyncIterable<Uint8Array> {
  if (data instanceof Uint8Array) {
    yield data;
    return;
  }
  for await (const piece of data as AsyncIterable<unknown>) {
    if (!(piece instanceof Uint8Array)) throw attr(`a piece of ${what}`, piece, "a Uint8Array");
    expectBytes(piece, `a piece of ${what}`);
    yield piece;
  }
}

/** @see bytesSource in src/io/byte-source.ts */
export { bytesSource, blobSource } from "../io/byte-source.js";

/**
 * Reads the header, metadata and tensor infos of the GGUF file in `src` (a ByteSource:
 * bytesSource, blobSource, or any `{ size, read(position, length) }`).
 * @example const g = await readGguf(blobSource(file), { name: file.name }); g.tensors[0].shape
 * @throws TensorcastError INVALID_DATA naming the file, the byte and the check that failed.
 */
export async function readGguf(src: ByteSource, opts?: header.ReadGgufOptions): Promise<header.GgufFile> {
  expectOptions(opts, "readGguf", { name: isString }, { name: "a string" });
  return header.readGguf(expectSource(src, "readGguf"), opts);
}

/** Whether `first` (a file's first 4 bytes or more) starts with GGUF's magic. */
export function isGguf(first: Uint8Array): boolean {
  expectBytes(first, "isGguf's bytes");
  return header.isGguf(first);
}

/** A metadata value by key, or undefined. */
export function ggufValue(g: header.GgufFile, key: string): GgufValue | undefined {
  expectFile(g, "ggufValue's file");
  if (typeof key !== "string") throw attr("ggufValue's key", key, "a string");
  return header.ggufValue(g, key);
}

/** One model from its parts, in order (one file for an unsplit model). */
export function ggufModel(files: readonly header.GgufFile[], name?: string): split.GgufModel {
  expectArray(files, "ggufModel's files");
  files.forEach((g, i) => expectFile(g, `ggufModel's files[${i}]`));
  if (name !== undefined && typeof name !== "string") throw attr("ggufModel's name", name, "a string");
  return split.ggufModel(files, name);
}

/** The parts of a split model's name, or undefined. */
export function splitNameOf(path: string): ReturnType<typeof split.splitNameOf> {
  if (typeof path !== "string") throw attr("splitNameOf's path", path, "a string");
  return split.splitNameOf(path);
}

/** The paths of a split model's parts: PREFIX-00001-of-0000N.gguf ... */
export function splitPaths(prefix: string, count: number): string[] {
  if (typeof prefix !== "string") throw attr("splitPaths's prefix", prefix, "a string");
  expectInteger(count, "splitPaths's count", 1, 99999);
  return split.splitPaths(prefix, count);
}

/** split.count of a file, 1 when it has none. */
export function splitCountOf(g: header.GgufFile): number {
  expectFile(g, "splitCountOf's file");
  return split.splitCountOf(g);
}

/** Each tensor of `model` in order, its whole data read when the iterator reaches it. */
export function ggufRecords(model: split.GgufModel): AsyncGenerator<records.GgufRecord> {
  expectModel(model, "ggufRecords's model");
  return records.ggufRecords(model);
}

/** Blocks [firstBlock, firstBlock + blocks) of tensor `t` of `model`, little-endian. */
export async function readGgufBlocks(model: split.GgufModel, t: split.GgufModelTensor, firstBlock: number, blocks: number): Promise<Uint8Array> {
  expectModel(model, "readGgufBlocks's model");
  if (!model.tensors.includes(t)) throw attr("readGgufBlocks's tensor", t, "one of the model's tensors");
  expectInteger(firstBlock, "readGgufBlocks's firstBlock", 0, Number.MAX_SAFE_INTEGER);
  expectInteger(blocks, "readGgufBlocks's blocks", 0, Number.MAX_SAFE_INTEGER);
  return records.readGgufBlocks(model, t, firstBlock, blocks);
}

/** A record's values as a Tensor: float32 from GGML's decoder, then bfloat16 or float16 by Cast. */
export function ggufTensor(r: records.GgufRecord, to?: "float32" | "bfloat16" | "float16"): ReturnType<typeof records.ggufTensor> {
  expectObject(r, "ggufTensor's record", "INVALID_ATTRIBUTE");
  if (!GGML_TYPES.includes(r.ggmlType as GgmlType)) throw attr("ggufTensor's record.ggmlType", r.ggmlType, "a row of GGML_TYPES");
  expectCounts(r.shape, "ggufTensor's record.shape");
  expectBytes(r.bytes, "ggufTensor's record.bytes");
  if (to !== undefined && to !== "float32" && to !== "bfloat16" && to !== "float16") throw attr("ggufTensor's type", to, "float32, bfloat16 or float16");
  return records.ggufTensor(r, to);
}

/** The layout of a GGUF file holding `metadata` and `tensors`, in order. */
export function layoutGguf(metadata: readonly GgufMetadataEntry[], tensors: readonly write.GgufTensorSpec[], opts?: write.GgufLayoutOptions): write.GgufLayout {
  expectMetadata(metadata, "layoutGguf");
  expectTensors(tensors, "layoutGguf", false);
  expectOptions(opts, "layoutGguf", LAYOUT_OPTIONS, LAYOUT_EXPECTED);
  return write.layoutGguf(metadata, tensors, opts);
}

/** Writes a GGUF file to `sink` (`write(bytes, position)`), each tensor's data streamed. */
export async function writeGguf(sink: write.GgufSink, metadata: readonly GgufMetadataEntry[], tensors: readonly write.GgufTensorToWrite[], opts?: write.GgufLayoutOptions): Promise<write.GgufLayout> {
  expectObject(sink, "writeGguf's sink", "INVALID_ATTRIBUTE");
  const put = sink.write;
  if (typeof put !== "function") throw attr("writeGguf's sink.write", put, "a function (bytes, position)");
  expectMetadata(metadata, "writeGguf");
  expectTensors(tensors, "writeGguf", true);
  expectOptions(opts, "writeGguf", LAYOUT_OPTIONS, LAYOUT_EXPECTED);
  const checked = tensors.map((t) => ({ ...t, data: checkedPieces(t.data, `tensor ${JSON.stringify(t.name)}'s data`) }));
  return write.writeGguf({ write: (bytes, position) => put.call(sink, bytes, position) }, metadata, checked, opts);
}

/** GGML dimensions (fastest first) of a row-major shape; with `drop`, trailing 1s dropped. */
export function ggmlDims(shape: readonly number[], drop?: boolean): number[] {
  expectCounts(shape, "ggmlDims's shape");
  if (drop !== undefined && typeof drop !== "boolean") throw attr("ggmlDims's drop", drop, "true or false");
  return write.ggmlDims(shape, drop);
}

/** Bytes of a row of `n` elements of `t`, or undefined when `n` is not whole blocks. */
export function ggmlRowBytes(t: GgmlType, n: number): number | undefined {
  if (!GGML_TYPES.includes(t)) throw attr("ggmlRowBytes's type", t, "a row of GGML_TYPES");
  expectInteger(n, "ggmlRowBytes's element count", 0, Number.MAX_SAFE_INTEGER);
  return rowBytes(t, n);
}

/** Whether tensorcast quantizes to `t` (a name in any case or a row of GGML_TYPES), with an importance matrix where `withImatrix`. */
export function canQuantize(t: GgmlType | string, withImatrix?: boolean): boolean {
  expectGgmlType(t, "canQuantize's type");
  if (withImatrix !== undefined && typeof withImatrix !== "boolean") throw attr("canQuantize's withImatrix", withImatrix, "true or false");
  return encodes(typeof t === "string" ? ggmlType(t) : t, withImatrix);
}
