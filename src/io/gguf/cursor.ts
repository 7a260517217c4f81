/**
 * A forward reader over a GGUF file's header: primitives in the file's byte order, read through a
 * window of the ByteSource so that a header of millions of values costs a few reads, and every
 * read checked against the bytes left in the file before anything is allocated for it.
 */
import type { ByteSource } from "../byte-source.js";
import { TensorcastError } from "../../errors.js";

/** gguf.cpp's GGUF_MAX_STRING_LENGTH: a string over 1 GiB is refused. */
export const GGUF_MAX_STRING_LENGTH = 1024 * 1024 * 1024;

/**
 * The longest string every JavaScript engine holds: V8's, 2^29 - 24 UTF-16 units. UTF-8 never
 * takes fewer bytes than the units it decodes to, so a string of at most this many bytes always
 * decodes; a longer one (gguf.cpp reads up to 1 GiB) is refused before its bytes are read, where
 * decoding it would throw V8's own RangeError after reading them all.
 */
export const GGUF_MAX_JS_STRING_BYTES = 2 ** 29 - 24;

const WINDOW = 64 * 1024;

// ES2022's lib has no TextDecoder (a Web and Node global); declaring the sliver used keeps the core
// compiling without the DOM or Node types, as src/io/onnx/wire.ts does.
interface Utf8Decoder {
  decode(input: Uint8Array): string;
}
declare const TextDecoder: new (label: string, options: { fatal: boolean; ignoreBOM: boolean }) => Utf8Decoder;

let utf8: Utf8Decoder | undefined;
let lenient: Utf8Decoder | undefined;

/** A TensorcastError INVALID_DATA about the GGUF file `file`. */
export function ggufError(file: string, message: string): TensorcastError {
  return new TensorcastError("INVALID_DATA", `${file}: gguf: ${message}`);
}

export class GgufCursor {
  readonly src: ByteSource;
  readonly file: string;
  /** Where the next read starts. */
  pos = 0;
  littleEndian = true;
  /** The byte length of the last string read. */
  lastStringBytes = 0;
  private buf: Uint8Array = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  /** File position of buf[0]. */
  private bufAt = 0;

  constructor(src: ByteSource, file: string) {
    this.src = src;
    this.file = file;
  }

  /** Bytes between the cursor and the end of the file. */
  get remaining(): number {
    return this.src.size - this.pos;
  }

  /**
   * Makes `n` bytes at the cursor readable synchronously.
   * @throws INVALID_DATA naming `what` when the file ends first.
   */
  async need(n: number, what: string): Promise<void> {
    if (n > this.remaining) throw ggufError(this.file, `${what} at byte ${this.pos} needs ${n} bytes, but the file ends after ${this.remaining}`);
    if (this.pos >= this.bufAt && this.pos + n <= this.bufAt + this.buf.length) return;
    const length = Math.min(Math.max(n, WINDOW), this.remaining);
    this.buf = await this.src.read(this.pos, length);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.bufAt = this.pos;
  }

  private at(n: number): number {
    const i = this.pos - this.bufAt;
    this.pos += n;
    return i;
  }

  // Synchronous reads: the caller has made the bytes readable with `need`.
  u8(): number { return this.buf[this.at(1)]; }
  i8(): number { return this.view.getInt8(this.at(1)); }
  u16(): number { return this.view.getUint16(this.at(2), this.littleEndian); }
  i16(): number { return this.view.getInt16(this.at(2), this.littleEndian); }
  u32(): number { return this.view.getUint32(this.at(4), this.littleEndian); }
  i32(): number { return this.view.getInt32(this.at(4), this.littleEndian); }
  u64(): bigint { return this.view.getBigUint64(this.at(8), this.littleEndian); }
  i64(): bigint { return this.view.getBigInt64(this.at(8), this.littleEndian); }
  f32(): number { return this.view.getFloat32(this.at(4), this.littleEndian); }
  f64(): number { return this.view.getFloat64(this.at(8), this.littleEndian); }

  /** `n` bytes at the cursor (a copy: the window is replaced by later reads). */
  async bytes(n: number, what: string): Promise<Uint8Array> {
    if (n > WINDOW) {
      if (n > this.remaining) throw ggufError(this.file, `${what} at byte ${this.pos} needs ${n} bytes, but the file ends after ${this.remaining}`);
      const out = await this.src.read(this.pos, n);
      this.pos += n;
      return out;
    }
    await this.need(n, what);
    const i = this.at(n);
    return this.buf.slice(i, i + n);
  }

  /**
   * A GGUF string (u64 length, then its bytes), checked as gguf.cpp checks it: at most 1 GiB and
   * within the file. `strict` refuses bytes that are not UTF-8 (keys and tensor names, which
   * are matched by name); values decode with U+FFFD for each malformed sequence, as gguf-py
   * cannot read them at all.
   */
  async string(what: string, strict: boolean): Promise<string> {
    await this.need(8, `${what}'s length`);
    const at = this.pos;
    const n = this.u64();
    if (n > BigInt(GGUF_MAX_STRING_LENGTH)) throw ggufError(this.file, `${what} at byte ${at} is ${n} bytes long, over the limit of ${GGUF_MAX_STRING_LENGTH} (1 GiB)`);
    if (Number(n) > this.remaining) throw ggufError(this.file, `${what} at byte ${at} is ${n} bytes long, past the end of the file (${this.remaining} bytes left)`);
    const length = Number(n);
    if (length > GGUF_MAX_JS_STRING_BYTES) {
      throw new TensorcastError("NOT_IMPLEMENTED", `${this.file}: gguf: ${what} at byte ${at} is ${n} bytes long, longer than a JavaScript string can hold (${GGUF_MAX_JS_STRING_BYTES} bytes); gguf.cpp reads strings of up to 1 GiB`);
    }
    this.lastStringBytes = length;
    if (length === 0) return "";
    let b: Uint8Array;
    if (length <= WINDOW) {
      await this.need(length, what);
      const i = this.at(length);
      b = this.buf.subarray(i, i + length);
    } else {
      b = await this.src.read(this.pos, length);
      this.pos += length;
    }
    if (strict) {
      utf8 ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
      try {
        return utf8.decode(b);
      } catch {
        throw ggufError(this.file, `${what} at byte ${at} is not valid UTF-8`);
      }
    }
    lenient ??= new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
    return lenient.decode(b);
  }
}
