/**
 * Positional reads of a file, whatever holds it: Node's RandomAccessFile (src/node/io/file.ts), a
 * Blob or File in a page, or bytes already in memory. The format readers of the core (the zip of a
 * PyTorch checkpoint, GGUF) take one of these, so the same reader runs in Node and in a browser.
 */
import { describe, expectBytes } from "../args.js";
import { TensorcastError } from "../errors.js";

/** Positional reads of a file (RandomAccessFile in Node, a Blob or buffer elsewhere). */
export interface ByteSource {
  readonly size: number;
  /**
   * Exactly `length` bytes at `position` (the caller has checked the range lies in the file),
   * into `into` when it is given and that long, or a new array: never one a later read reuses.
   */
  read(position: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
}

function checkRange(size: number, position: number, length: number, what: string): void {
  if (!Number.isSafeInteger(position) || !Number.isSafeInteger(length) || position < 0 || length < 0 || position + length > size) {
    throw new TensorcastError("INVALID_DATA", `${what}: a read of ${length} bytes at ${position} is outside its ${size} bytes`);
  }
}

/**
 * A ByteSource over bytes in memory (copied out on each read, so a caller may change what it got).
 * @example await bytesSource(new Uint8Array([1, 2, 3])).read(1, 2) // Uint8Array [2, 3]
 */
export function bytesSource(bytes: Uint8Array, name = "the bytes"): ByteSource {
  expectBytes(bytes, "bytesSource's bytes");
  if (typeof name !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `bytesSource's name must be a string, got ${describe(name)}`);
  return {
    size: bytes.length,
    async read(position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
      checkRange(bytes.length, position, length, name);
      const out = into && into.length === length ? into : new Uint8Array(length);
      out.set(bytes.subarray(position, position + length));
      return out;
    },
  };
}

/** What a Blob offers that a ByteSource needs (File, Node's Blob and openAsBlob's result all have it). */
export interface BlobLike {
  readonly size: number;
  slice(start?: number, end?: number): { arrayBuffer(): Promise<ArrayBuffer> };
}

/**
 * A ByteSource over a Blob or File (a page's `<input type=file>`, Node's `fs.openAsBlob`): each
 * read slices the range and reads only it, so a file larger than memory is never loaded whole.
 * @example const src = blobSource(input.files[0]); await readGguf(src, { name: input.files[0].name })
 */
export function blobSource(blob: BlobLike, name = "the blob"): ByteSource {
  if (typeof blob !== "object" || blob === null) throw new TensorcastError("INVALID_ATTRIBUTE", `blobSource takes a Blob or File, got ${describe(blob)}`);
  const size: unknown = blob.size;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0 || typeof blob.slice !== "function") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `blobSource takes a Blob or File (a size and a slice method), got ${describe(blob)}`);
  }
  if (typeof name !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `blobSource's name must be a string, got ${describe(name)}`);
  return {
    size,
    async read(position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
      checkRange(size, position, length, name);
      const part: unknown = blob.slice(position, position + length);
      const buffer: unknown = typeof part === "object" && part !== null && typeof (part as { arrayBuffer?: unknown }).arrayBuffer === "function" ? await (part as { arrayBuffer(): Promise<unknown> }).arrayBuffer() : undefined;
      if (!(buffer instanceof ArrayBuffer)) throw new TensorcastError("IO_ERROR", `${name}: slice(${position}, ${position + length}) gave ${describe(part)}, not a Blob whose arrayBuffer() is an ArrayBuffer`);
      const got = new Uint8Array(buffer);
      if (got.length !== length) throw new TensorcastError("IO_ERROR", `${name}: read ${got.length} of ${length} bytes at ${position} (the file changed while it was read?)`);
      if (into && into.length === length) {
        into.set(got);
        return into;
      }
      return got;
    },
  };
}
