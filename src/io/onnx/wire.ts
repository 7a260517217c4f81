/**
 * A minimal protobuf wire-format reader: just what ONNX's TensorProto and ModelProto need, with no
 * Node built-ins and no dependencies, so it runs in a browser as is.
 *
 * The caller drives it field by field (`next()`, then read or `skip()`), the way generated protobuf
 * decoders do. Every read is bounds-checked against the current message, so a truncated or corrupt
 * buffer fails with TensorcastError INVALID_DATA instead of reading a neighbouring message's bytes.
 * 64-bit varints are kept as two 32-bit words (`lo`, `hi`) so that hot loops never allocate a BigInt;
 * `int64()` / `uint64()` build one only for callers that want it.
 */
import { TensorcastError } from "../../errors.js";

/** The low three bits of a tag. Groups (3, 4) are obsolete but can still be skipped. */
export type WireType = 0 | 1 | 2 | 3 | 4 | 5;
export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

/** Wire types in words, for error messages. */
export const WIRE_NAMES: readonly string[] = ["varint", "fixed64", "length-delimited", "start-group", "end-group", "fixed32"];
const TWO32 = 4294967296;

// ES2022's lib has no TextDecoder (a Web and Node global, typed by the DOM or Node lib); declaring the
// sliver used here keeps the core compiling with neither. Module scope: this shadows no global type.
interface Utf8Decoder {
  decode(input: Uint8Array): string;
}
declare const TextDecoder: new (label: string, options: { fatal: boolean; ignoreBOM: boolean }) => Utf8Decoder;

let utf8: Utf8Decoder | undefined;

/**
 * Decodes UTF-8 strictly: invalid bytes are an INVALID_DATA error rather than U+FFFD, because a
 * silently altered name or string element would compare unequal later for no visible reason. A
 * leading U+FEFF is kept (ignoreBOM): in a protobuf string it is a character, not a byte order mark.
 */
export function decodeUtf8(bytes: Uint8Array, what: string): string {
  utf8 ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  try {
    return utf8.decode(bytes);
  } catch {
    throw new TensorcastError("INVALID_DATA", `${what} is not valid UTF-8`);
  }
}

/**
 * How deep messages and groups may nest below the outermost message: protobuf's default recursion
 * limit, past which its parsers refuse the input (a message at depth 100 is read, 101 is not).
 */
export const MAX_NESTING = 100;

/** What `varintAt` returns instead of a position when it cannot read a varint. */
export const VARINT_INCOMPLETE = -1;
export const VARINT_TOO_LONG = -2;
export const VARINT_OVERFLOW = -3;

/** The words a 64-bit varint is read into (unsigned 32-bit halves). */
export interface VarintWords {
  lo: number;
  hi: number;
}

/**
 * Reads the varint at `buf[pos]` into `out.lo` / `out.hi` without reading at or past `end`, and
 * returns the position after it, or VARINT_INCOMPLETE when `end` comes first, VARINT_TOO_LONG
 * (more than 10 bytes) or VARINT_OVERFLOW (bits above bit 63). Shared by the reader, which wants a
 * whole message, and the validator, which gets a file in pieces and must tell "wait for more"
 * from "bad".
 */
export function varintAt(buf: Uint8Array, pos: number, end: number, out: VarintWords): number {
  let lo = 0;
  let hi = 0;
  let b: number;
  // Bytes 0..3 fill bits 0..27.
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) return VARINT_INCOMPLETE;
    b = buf[pos++];
    lo |= (b & 0x7f) << shift;
    if (b < 0x80) return setWords(out, pos, lo, 0);
  }
  // Byte 4 fills bits 28..34: four go to lo, three to hi.
  if (pos >= end) return VARINT_INCOMPLETE;
  b = buf[pos++];
  lo |= (b & 0x0f) << 28;
  hi = (b & 0x7f) >>> 4;
  if (b < 0x80) return setWords(out, pos, lo, hi);
  // Bytes 5..8 fill bits 35..62.
  for (let shift = 3; shift < 31; shift += 7) {
    if (pos >= end) return VARINT_INCOMPLETE;
    b = buf[pos++];
    hi |= (b & 0x7f) << shift;
    if (b < 0x80) return setWords(out, pos, lo, hi);
  }
  // Byte 9 holds bit 63 alone.
  if (pos >= end) return VARINT_INCOMPLETE;
  b = buf[pos++];
  if (b > 1) return b >= 0x80 ? VARINT_TOO_LONG : VARINT_OVERFLOW;
  return setWords(out, pos, lo, hi | (b << 31));
}

function setWords(out: VarintWords, pos: number, lo: number, hi: number): number {
  out.lo = lo >>> 0;
  out.hi = hi >>> 0;
  return pos;
}

/** Words for VARINT_TOO_LONG / VARINT_OVERFLOW, to follow "varint at byte N". */
export function varintProblem(code: number): string {
  return code === VARINT_TOO_LONG ? "is longer than 10 bytes" : "overflows 64 bits";
}

/**
 * Reads one protobuf message (or, through `message()`, a nested one) from `bytes[start, end)`.
 * Subarrays returned by `bytes()` share the input's memory.
 */
export class WireReader implements VarintWords {
  readonly buf: Uint8Array;
  /** The next byte to read. */
  pos: number;
  /** One past the last byte of this message (temporarily lowered inside a packed field). */
  end: number;
  /** The message type, for error messages ("TensorProto"). */
  readonly context: string;
  /** Field number and wire type of the field `next()` last returned. */
  field = 0;
  wireType: WireType = WIRE_VARINT;
  /** The low and high 32-bit words (unsigned) of the last `varint64()` or `fixed64()`. */
  lo = 0;
  hi = 0;
  /** How deep this message is nested: 0 for the outermost, +1 per `message()`. */
  depth = 0;
  private view: DataView | undefined;

  constructor(bytes: Uint8Array, context = "message", start = 0, end = bytes.length) {
    if (!(bytes instanceof Uint8Array)) {
      throw new TensorcastError("INVALID_DATA", `${context}: expected a Uint8Array, got ${typeof bytes}`);
    }
    if (start < 0 || end > bytes.length || start > end) {
      throw new TensorcastError("INVALID_DATA", `${context}: range [${start}, ${end}) is outside ${bytes.length} bytes`);
    }
    // A plain Uint8Array view even when given a Node Buffer, whose slice() shares memory instead of
    // copying: callers rely on slice() copying and subarray() sharing.
    this.buf = bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
    this.end = end;
    this.context = context;
  }

  /** Whether every byte of the message has been read. */
  get done(): boolean {
    return this.pos >= this.end;
  }

  /**
   * Reads the next tag and returns its field number, or 0 at the end of the message. The wire type
   * is left in `wireType`.
   */
  next(): number {
    if (this.pos >= this.end) return 0;
    const at = this.pos;
    this.varint64();
    const wire = this.lo & 7;
    const field = this.lo >>> 3;
    if (this.hi !== 0 || field === 0 || wire > 5) {
      const why = field === 0 ? "field number 0" : wire > 5 ? `wire type ${wire}` : "a field number above 2^29";
      throw new TensorcastError("INVALID_DATA", `${this.context}: invalid tag at byte ${at} (${why})`);
    }
    if (wire === WIRE_END_GROUP) {
      throw new TensorcastError("INVALID_DATA", `${this.context}: end-group tag for field ${field} at byte ${at} without a start`);
    }
    this.field = field;
    this.wireType = wire as WireType;
    return field;
  }

  /**
   * Reads a varint of up to 10 bytes into `lo` / `hi`. More than 10 bytes, or a 10th byte carrying
   * bits above bit 63, is rejected: no valid encoder writes either.
   */
  varint64(): void {
    const next = varintAt(this.buf, this.pos, this.end, this);
    if (next < 0) {
      if (next === VARINT_INCOMPLETE) this.truncated("varint", this.pos);
      throw new TensorcastError("INVALID_DATA", `${this.context}: varint at byte ${this.pos} ${varintProblem(next)}`);
    }
    this.pos = next;
  }

  /** An int32 or enum: a varint cut to its low 32 bits (negative values are 10-byte varints). */
  int32(): number {
    this.varint64();
    return this.lo | 0;
  }

  /** A uint32: a varint cut to its low 32 bits. */
  uint32(): number {
    this.varint64();
    return this.lo;
  }

  /** An int64 varint as a number; INVALID_DATA when it is outside +/-(2^53 - 1). */
  int64Number(what: string): number {
    this.varint64();
    const value = (this.hi | 0) * TWO32 + this.lo;
    if (!Number.isSafeInteger(value)) {
      throw new TensorcastError("INVALID_DATA", `${this.context}: ${what} ${this.int64Words()} is beyond 2^53 - 1`);
    }
    return value;
  }

  /** An int64 varint as a bigint. */
  int64(): bigint {
    this.varint64();
    return this.int64Words();
  }

  /** A uint64 varint as a bigint. */
  uint64(): bigint {
    this.varint64();
    return (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  private int64Words(): bigint {
    return BigInt.asIntN(64, (BigInt(this.hi) << 32n) | BigInt(this.lo));
  }

  /** A fixed32 field as an unsigned integer. */
  fixed32(): number {
    this.need(4, "fixed32");
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 4;
    return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
  }

  /** A fixed64 field into `lo` / `hi`. */
  fixed64(): void {
    const lo = this.fixed32();
    this.hi = this.fixed32();
    this.lo = lo;
  }

  /** A `float` field (fixed32, IEEE binary32 little-endian). */
  float(): number {
    this.need(4, "float");
    const x = this.dataView().getFloat32(this.pos, true);
    this.pos += 4;
    return x;
  }

  /** A `double` field (fixed64, IEEE binary64 little-endian). */
  double(): number {
    this.need(8, "double");
    const x = this.dataView().getFloat64(this.pos, true);
    this.pos += 8;
    return x;
  }

  /** The length prefix of a length-delimited field, checked against the bytes that remain. */
  length(): number {
    const at = this.pos;
    this.varint64();
    const n = this.hi * TWO32 + this.lo;
    if (n > this.end - this.pos) {
      throw new TensorcastError(
        "INVALID_DATA",
        `${this.context}: truncated: field ${this.field} at byte ${at} declares ${n} bytes but only ${this.end - this.pos} remain`,
      );
    }
    return n;
  }

  /** A `bytes` field, sharing the input's memory. */
  bytes(): Uint8Array {
    const n = this.length();
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A `string` field, decoded as strict UTF-8. */
  string(what: string): string {
    return decodeUtf8(this.bytes(), `${this.context}: ${what}`);
  }

  /** A reader over an embedded message; this reader moves past it. */
  message(context: string): WireReader {
    if (this.depth >= MAX_NESTING) this.tooDeep(this.depth + 1);
    const n = this.length();
    const sub = new WireReader(this.buf, context, this.pos, this.pos + n);
    sub.depth = this.depth + 1;
    this.pos += n;
    return sub;
  }

  /**
   * The bytes of a repeated fixed-width field: a packed run (its length must be a multiple of
   * `width`) or one unpacked element. Lets float_data / double_data be copied in bulk.
   */
  fixedChunk(width: 4 | 8, what: string): Uint8Array {
    if (this.wireType === WIRE_LEN) {
      const chunk = this.bytes();
      if (chunk.length % width !== 0) {
        throw new TensorcastError(
          "INVALID_DATA",
          `${this.context}: packed ${what} holds ${chunk.length} bytes, not a multiple of ${width}`,
        );
      }
      return chunk;
    }
    this.expect(width === 4 ? WIRE_FIXED32 : WIRE_FIXED64, what);
    this.need(width, what);
    const chunk = this.buf.subarray(this.pos, this.pos + width);
    this.pos += width;
    return chunk;
  }

  /**
   * Reads one occurrence of a repeated scalar field: calls `read` once for an unpacked element
   * (whose wire type must be `wire`), or once per element of a packed run. Writers may mix the two
   * forms; protobuf requires readers to accept both.
   */
  repeated(wire: WireType, what: string, read: () => void): void {
    if (this.wireType === WIRE_LEN && wire !== WIRE_LEN) {
      const n = this.length();
      const outer = this.end;
      this.end = this.pos + n;
      try {
        while (this.pos < this.end) read();
      } finally {
        this.end = outer;
      }
      return;
    }
    this.expect(wire, what);
    read();
  }

  /** Throws INVALID_DATA unless the current field has wire type `wire`. */
  expect(wire: WireType, what: string): void {
    if (this.wireType !== wire) {
      throw new TensorcastError(
        "INVALID_DATA",
        `${this.context}: field ${this.field} (${what}) has wire type ${WIRE_NAMES[this.wireType]}, expected ${WIRE_NAMES[wire]}`,
      );
    }
  }

  /** Skips the value of the field `next()` last returned: how unknown fields are ignored. */
  skip(): void {
    switch (this.wireType) {
      case WIRE_VARINT:
        this.varint64();
        return;
      case WIRE_FIXED64:
        this.need(8, "fixed64");
        this.pos += 8;
        return;
      case WIRE_LEN: {
        // Not `this.pos += this.length()`: that adds to pos as it was before the length prefix.
        const n = this.length();
        this.pos += n;
        return;
      }
      case WIRE_FIXED32:
        this.need(4, "fixed32");
        this.pos += 4;
        return;
      case WIRE_START_GROUP:
        this.skipGroup(this.field);
        return;
      default:
        throw new TensorcastError("INVALID_DATA", `${this.context}: cannot skip wire type ${this.wireType}`);
    }
  }

  /**
   * Skips to the end-group tag that closes `field`, through any groups nested inside. A loop with
   * its own stack of open groups, not recursion: 20,000 nested start-group tags must fail on
   * protobuf's depth limit, not on the JavaScript call stack.
   */
  private skipGroup(field: number): void {
    const at = this.pos;
    const open = [field];
    if (this.depth + open.length > MAX_NESTING) this.tooDeep(this.depth + open.length);
    while (open.length > 0) {
      const inside = open[open.length - 1];
      if (this.pos >= this.end) this.truncated(`group ${inside}`, at);
      this.varint64();
      const wire = this.lo & 7;
      const inner = this.lo >>> 3;
      if (this.hi !== 0 || inner === 0 || wire > 5) {
        throw new TensorcastError("INVALID_DATA", `${this.context}: invalid tag inside group ${inside}`);
      }
      if (wire === WIRE_END_GROUP) {
        if (inner !== inside) {
          throw new TensorcastError("INVALID_DATA", `${this.context}: group ${inside} closed by end-group ${inner}`);
        }
        open.pop();
      } else if (wire === WIRE_START_GROUP) {
        open.push(inner);
        if (this.depth + open.length > MAX_NESTING) this.tooDeep(this.depth + open.length);
      } else {
        this.field = inner;
        this.wireType = wire as WireType;
        this.skip();
      }
    }
    this.field = field;
    this.wireType = WIRE_START_GROUP;
  }

  private tooDeep(depth: number): never {
    throw new TensorcastError(
      "INVALID_DATA",
      `${this.context}: messages and groups nested ${depth} levels deep at byte ${this.pos}; ` +
        `protobuf's limit (its default recursion limit) is ${MAX_NESTING}`,
    );
  }

  private need(n: number, what: string): void {
    if (this.end - this.pos < n) this.truncated(what, this.pos);
  }

  private truncated(what: string, at: number): never {
    throw new TensorcastError("INVALID_DATA", `${this.context}: truncated: ${what} at byte ${at} runs past the end of the message`);
  }

  private dataView(): DataView {
    this.view ??= new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    return this.view;
  }
}

/**
 * A growable list of 32-bit words, for repeated varint fields whose count is not known up front
 * (int32_data, int64_data as lo/hi pairs, dims). Avoids a JS array of numbers per element.
 */
export class WordList {
  private words = new Uint32Array(16);
  length = 0;

  push(word: number): void {
    if (this.length === this.words.length) {
      const grown = new Uint32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    this.words[this.length++] = word;
  }

  /** The words pushed so far (a view; valid until the next push). */
  view(): Uint32Array {
    return this.words.subarray(0, this.length);
  }
}
