/**
 * A safetensors file read from any ByteSource (a page's File through blobSource, bytes in memory):
 * the header checked as the Rust reader checks it (header.ts), then each tensor's elements read in
 * runs, so a file larger than memory is never loaded whole. src/node/io/reader.ts reads files on
 * disk with the same header code.
 */
import { describe } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import type { ByteSource } from "../byte-source.js";
import { rawByteLength } from "../tensor-info.js";
import { readHeaderLength, readSafetensorsHeader, type SafetensorsTensor } from "./header.js";

export interface SafetensorsFile {
  /** The name errors give (a path, a File's name). */
  readonly name: string;
  readonly source: ByteSource;
  /** The file's size in bytes. */
  readonly size: number;
  /** N: the JSON header's length in bytes, padding included. */
  readonly headerLength: number;
  /** Where the data buffer starts: 8 + N. */
  readonly dataStart: number;
  /** `__metadata__`, when the header has one. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** In the order of their bytes in the file. */
  readonly tensors: readonly SafetensorsTensor[];
}

/** The files readSafetensors made, so readSafetensorsElements can tell one from a look-alike. */
const FILES = new WeakMap<object, ReadonlySet<SafetensorsTensor>>();

function isSource(x: unknown): x is ByteSource {
  if (typeof x !== "object" || x === null) return false;
  const s = x as { size?: unknown; read?: unknown };
  return typeof s.size === "number" && Number.isSafeInteger(s.size) && s.size >= 0 && typeof s.read === "function";
}

/** `src.read`, its answer checked: a caller's ByteSource may return anything. */
async function readChecked(src: ByteSource, position: number, length: number, name: string): Promise<Uint8Array> {
  const got: unknown = await src.read(position, length);
  if (!(got instanceof Uint8Array) || got.length !== length) {
    throw new TensorcastError("IO_ERROR", `${name}: a read of ${length} bytes at ${position} gave ${describe(got)}, not ${length} bytes`);
  }
  return got;
}

/**
 * The header of the safetensors file `src` holds: its metadata and its tensors, each with its
 * offsets. Reads 8 + N bytes (N at most the format's 100 MB cap), nothing of the data.
 * @example const f = await readSafetensors(blobSource(file), { name: file.name }); f.tensors[0].shape
 * @throws TensorcastError INVALID_DATA for a file that is not safetensors, truncated or lying
 *         (naming the file and the tensor), UNKNOWN_DTYPE, INVALID_SHAPE, SHAPE_MISMATCH; IO_ERROR
 *         when the source fails; INVALID_ATTRIBUTE for arguments of the wrong kind.
 */
export async function readSafetensors(src: ByteSource, opts: { name?: string } = {}): Promise<SafetensorsFile> {
  if (!isSource(src)) throw new TensorcastError("INVALID_ATTRIBUTE", `readSafetensors takes a ByteSource (blobSource(file), bytesSource(bytes)), got ${describe(src)}`);
  if (typeof opts !== "object" || opts === null) throw new TensorcastError("INVALID_ATTRIBUTE", `readSafetensors's options must be an object, got ${describe(opts)}`);
  const name: unknown = opts.name ?? "the safetensors file";
  if (typeof name !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `readSafetensors's name must be a string, got ${describe(name)}`);
  const size = src.size;
  const first = size < 8 ? new Uint8Array(0) : await readChecked(src, 0, 8, name);
  const n = readHeaderLength(first, size, name);
  const headerBytes = await readChecked(src, 8, n, name);
  const header = readSafetensorsHeader(headerBytes, size, name, (t) => t);
  const file: SafetensorsFile = { name, source: src, size, headerLength: header.headerLength, dataStart: header.dataStart, metadata: header.metadata, tensors: header.tensors };
  FILES.set(file, new Set(header.tensors));
  return file;
}

/**
 * The raw bytes (little-endian, sub-byte types packed from the low bits) of elements
 * [start, start + count) of tensor `t` of `file`: only those bytes are read. A packed type's run
 * must start on a byte (start a multiple of 8).
 * @throws TensorcastError INVALID_ATTRIBUTE for a file readSafetensors did not return, a tensor not
 *         its own, or a run outside the tensor; IO_ERROR when the source fails.
 */
export async function readSafetensorsElements(file: SafetensorsFile, t: SafetensorsTensor, start: number, count: number): Promise<Uint8Array> {
  const tensors = typeof file === "object" && file !== null ? FILES.get(file) : undefined;
  if (!tensors) throw new TensorcastError("INVALID_ATTRIBUTE", `readSafetensorsElements takes a file readSafetensors returned, got ${describe(file)}`);
  if (!tensors.has(t)) throw new TensorcastError("INVALID_ATTRIBUTE", `readSafetensorsElements takes one of ${file.name}'s tensors, got ${describe(t)}`);
  const ok = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
  if (!ok(start) || !ok(count) || start + count > t.size || (t.dtype.packed && start % 8 !== 0)) {
    throw new TensorcastError("INVALID_ATTRIBUTE",
      `tensor ${JSON.stringify(t.name.slice(0, 200))} has ${t.size} elements; elements [${describe(start)}, + ${describe(count)}) are not a run of them` +
      (t.dtype.packed ? " starting on a byte (start a multiple of 8)" : ""));
  }
  const offset = rawByteLength(t.dtype, start);
  const length = Math.min(rawByteLength(t.dtype, start + count), t.byteLength) - offset;
  return readChecked(file.source, file.dataStart + t.begin + offset, length, file.name);
}
