/**
 * `readGguf(source)`: a GGUF file's header (magic, version, counts), its metadata and its tensor
 * infos, read from any ByteSource without reading the tensors' data. GGUF v2 and v3, in either
 * byte order: as gguf-py decides it, a version whose low 16 bits are zero when read
 * little-endian is a big-endian file (version 3 reads as 0x03000000).
 *
 * Every check gguf.cpp's reader makes is made here, as INVALID_DATA naming the file, the byte
 * and the reason. Memory follows the bytes the header really has, never the counts it claims.
 */
import type { ByteSource } from "../byte-source.js";
import { GgufCursor, ggufError } from "./cursor.js";
import { GGUF_MAX_ARRAY_ELEMENTS, MIN_KV_BYTES, readMetadata, type GgufMetadataEntry, type GgufValue } from "./values.js";
import { MIN_TENSOR_INFO_BYTES, padTo, placeTensors, readTensorInfo, type GgufTensorInfo, type RawTensorInfo } from "./tensor-info.js";

/** The GGUF versions read: v1 (32-bit counts) is gone from llama.cpp too. */
export const GGUF_VERSIONS: readonly number[] = [2, 3];
/** GGUF_DEFAULT_ALIGNMENT. */
export const GGUF_DEFAULT_ALIGNMENT = 32;

export interface GgufFile {
  /** The name errors give (a path, a File's name). */
  readonly name: string;
  readonly source: ByteSource;
  readonly version: number;
  readonly littleEndian: boolean;
  /** general.alignment, else 32. */
  readonly alignment: number;
  /** In file order. */
  readonly metadata: ReadonlyMap<string, GgufMetadataEntry>;
  /** In file order. */
  readonly tensors: readonly GgufTensorInfo[];
  /** Where the data section starts. */
  readonly dataOffset: number;
}

/** The files readGguf made, so a public function can tell one from a look-alike. */
const FILES = new WeakSet<object>();

/** Whether `x` is a file readGguf returned. */
export function isGgufFile(x: unknown): x is GgufFile {
  return typeof x === "object" && x !== null && FILES.has(x);
}

export interface ReadGgufOptions {
  /** What errors call the file (default "the GGUF file"). */
  name?: string;
}

/** Whether `first` (a file's first 4 bytes or more) starts with GGUF's magic. */
export function isGguf(first: Uint8Array): boolean {
  return first.length >= 4 && first[0] === 0x47 && first[1] === 0x47 && first[2] === 0x55 && first[3] === 0x46;
}

function printable(b: Uint8Array): string {
  return Array.from(b, (x) => (x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : "?")).join("");
}

/**
 * Reads the header, metadata and tensor infos of the GGUF file in `src`.
 * @example const g = await readGguf(blobSource(file), { name: file.name }); g.tensors[0].shape
 * @throws TensorcastError INVALID_DATA naming the file, the byte and the check that failed.
 */
export async function readGguf(src: ByteSource, opts: ReadGgufOptions = {}): Promise<GgufFile> {
  const name = opts.name ?? "the GGUF file";
  const c = new GgufCursor(src, name);
  if (src.size < 4) throw ggufError(name, `the file is ${src.size} bytes, too short for GGUF's magic`);
  await c.need(4, "the magic");
  const magic = await c.bytes(4, "the magic");
  if (!isGguf(magic)) throw ggufError(name, `the magic is '${printable(magic)}', not 'GGUF' (not a GGUF file)`);
  await c.need(4, "the version");
  let version = c.u32();
  if ((version & 0xffff) === 0) {
    c.littleEndian = false;
    c.pos -= 4;
    version = c.u32();
  }
  if (version === 0) throw ggufError(name, "version 0 is not a GGUF version");
  if (version === 1) throw ggufError(name, "GGUF version 1 is no longer read (llama.cpp dropped it too); convert the file anew");
  if (!GGUF_VERSIONS.includes(version)) throw ggufError(name, `version ${version} is not one tensorcast reads (${GGUF_VERSIONS.join(", ")})`);
  await c.need(16, "the tensor and key-value counts");
  const nTensors = c.u64();
  const nKv = c.u64();
  for (const [what, n] of [["tensors", nTensors], ["key-value pairs", nKv]] as const) {
    if (n >= 1n << 63n) throw ggufError(name, `the number of ${what} is ${n}, negative as GGUF's signed 64-bit count`);
    if (n > BigInt(GGUF_MAX_ARRAY_ELEMENTS)) throw ggufError(name, `the number of ${what} is ${n}, over the limit of ${GGUF_MAX_ARRAY_ELEMENTS} (2^30)`);
  }
  const least = Number(nKv) * MIN_KV_BYTES + Number(nTensors) * MIN_TENSOR_INFO_BYTES;
  if (least > c.remaining) {
    throw ggufError(name, `${nTensors} tensors and ${nKv} key-value pairs need at least ${least} bytes, but the file has ${c.remaining} after the header`);
  }
  const metadata = await readMetadata(c, Number(nKv));
  const align = metadata.get("general.alignment");
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  if (align !== undefined) {
    if (align.type !== "uint32") throw ggufError(name, `general.alignment must be of type uint32 but is ${align.type}`);
    alignment = align.value as number;
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) throw ggufError(name, `general.alignment ${alignment} is not a power of 2`);
  }
  const raw: RawTensorInfo[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < Number(nTensors); i++) raw.push(await readTensorInfo(c, i, seen));
  const padded = padTo(BigInt(c.pos), alignment);
  if (raw.length > 0 && padded > BigInt(src.size)) throw ggufError(name, `the data section would start at ${padded} (padded to ${alignment}), past the end of the file (${src.size} bytes)`);
  const dataOffset = Number(padded);
  const tensors = placeTensors(name, raw, dataOffset, alignment, src.size);
  const file: GgufFile = { name, source: src, version, littleEndian: c.littleEndian, alignment, metadata, tensors, dataOffset };
  FILES.add(file);
  return file;
}

/** A metadata value by key, or undefined. */
export function ggufValue(g: GgufFile, key: string): GgufValue | undefined {
  return g.metadata.get(key)?.value;
}
