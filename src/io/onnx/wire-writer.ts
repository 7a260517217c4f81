/**
 * A minimal protobuf wire-format writer, the counterpart of wire.ts: varints (64-bit ones from two
 * 32-bit words, a bigint or a safe integer), fixed32 / fixed64, floats, UTF-8 strings, bytes,
 * packed runs and nested messages. No Node built-ins and no dependencies, so it runs in a browser.
 *
 * Everything is written into one growable buffer. A nested message or packed run is opened with
 * `fork(field)`, which reserves a one-byte length prefix, and closed with `join()`, which fills the
 * prefix in and, only when the body turned out to be 128 bytes or longer, moves the body right by
 * the extra prefix bytes. Small messages therefore cost no copy at all, and a large one is moved
 * once per enclosing level (a model nests a tensor four deep), never once per sibling.
 *
 * Multi-byte values are written little-endian explicitly (by shifts, or DataView with
 * `littleEndian = true`), whatever the host's byte order.
 */
import { TensorcastError } from "../../errors.js";
import { WIRE_FIXED32, WIRE_FIXED64, WIRE_LEN, WIRE_VARINT, type WireType } from "./wire.js";

const TWO32 = 4294967296;

/** The number of bytes the varint of a non-negative safe integer takes. */
export function varintSize(value: number): number {
  let n = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

/**
 * Builds one protobuf message. Field methods (`uint32Field`, `stringField`, ...) write a tag and a
 * value; the bare value methods (`uint32`, `int64`, ...) write just the value, for packed runs.
 */
export class WireWriter {
  private buf: Uint8Array;
  private view: DataView;
  /** The next byte to write. */
  private pos = 0;
  /** Body start of every fork() not yet joined (the byte after its reserved length prefix). */
  private readonly starts: number[] = [];

  /** `capacity` is a size hint; the buffer grows by doubling past it. */
  constructor(capacity = 256) {
    this.buf = new Uint8Array(Math.max(16, capacity));
    this.view = new DataView(this.buf.buffer);
  }

  /** Bytes written so far. */
  get byteLength(): number {
    return this.pos;
  }

  /**
   * The finished message. When the spare capacity is small (at most 4 KiB, or 1/16 of the message)
   * this is a view of the buffer, whose `.buffer` may then be a little longer than the message;
   * otherwise a trimmed copy, so a small message does not keep a large buffer alive. Copying a
   * large message would touch twice its size in fresh memory, which dominates the encoding time.
   * The writer must not be used afterwards.
   * @throws TensorcastError INVALID_DATA when a fork() was not joined.
   */
  finish(): Uint8Array {
    if (this.starts.length > 0) {
      throw new TensorcastError("INVALID_DATA", `WireWriter: ${this.starts.length} nested message(s) not joined`);
    }
    const slack = this.buf.length - this.pos;
    return slack <= Math.max(4096, this.pos / 16) ? this.buf.subarray(0, this.pos) : this.buf.slice(0, this.pos);
  }

  /** Makes room for `n` more bytes. */
  private ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(need, this.buf.length * 2));
    // The whole buffer, not just [0, pos): join() rewinds pos over a body that must survive.
    grown.set(this.buf);
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }

  // ---- values --------------------------------------------------------------------------------

  /** A tag: field number and wire type. Field numbers run from 1 to 2^29 - 1. */
  tag(field: number, wire: WireType): this {
    if (!Number.isInteger(field) || field < 1 || field > 0x1fffffff) {
      throw new TensorcastError("INVALID_DATA", `WireWriter: field number ${field} is outside 1..2^29 - 1`);
    }
    // field * 8, not field << 3: the shift would turn fields of 2^28 and above negative.
    return this.uint32(field * 8 + wire);
  }

  /** A varint of an unsigned 32-bit value (uint32, or a non-negative int32 / enum). */
  uint32(value: number): this {
    this.ensure(5);
    const buf = this.buf;
    let pos = this.pos;
    let v = value >>> 0;
    while (v > 127) {
      buf[pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
    return this;
  }

  /**
   * A varint of an int32 or enum. Negative values are sign-extended to 64 bits and take 10 bytes,
   * as protobuf writes them, so readers that read int64 see the same number.
   */
  int32(value: number): this {
    return value < 0 ? this.varint64(value >>> 0, 0xffffffff) : this.uint32(value);
  }

  /** A varint of the 64-bit value `hi * 2^32 + lo` (both words taken as unsigned 32-bit). */
  varint64(lo: number, hi: number): this {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    lo >>>= 0;
    hi >>>= 0;
    // Shift the 64-bit pair right by 7 until the high word is empty, then finish on the low word.
    while (hi !== 0) {
      buf[pos++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    while (lo > 127) {
      buf[pos++] = (lo & 127) | 128;
      lo >>>= 7;
    }
    buf[pos++] = lo;
    this.pos = pos;
    return this;
  }

  /**
   * A varint of an int64: a bigint in [-2^63, 2^63) or a safe integer. Negative values take 10
   * bytes (two's complement).
   * @throws TensorcastError INVALID_VALUE outside that range or for a non-integer number.
   */
  int64(value: bigint | number): this {
    if (typeof value === "bigint") {
      if (value < -(2n ** 63n) || value >= 2n ** 63n) {
        throw new TensorcastError("INVALID_VALUE", `${value} is outside int64's range [-2^63, 2^63 - 1]`);
      }
      return this.bigWords(value);
    }
    if (!Number.isSafeInteger(value)) {
      throw new TensorcastError("INVALID_VALUE", `${value} is not a safe integer (write larger int64 values as bigints)`);
    }
    // >>> 0 is the value modulo 2^32, exact for any integer; floor division gives the high word.
    return this.varint64(value >>> 0, Math.floor(value / TWO32) >>> 0);
  }

  /**
   * A varint of a uint64: a bigint in [0, 2^64) or a non-negative safe integer.
   * @throws TensorcastError INVALID_VALUE outside that range or for a non-integer number.
   */
  uint64(value: bigint | number): this {
    if (typeof value === "bigint") {
      if (value < 0n || value >= 2n ** 64n) {
        throw new TensorcastError("INVALID_VALUE", `${value} is outside uint64's range [0, 2^64 - 1]`);
      }
      return this.bigWords(value);
    }
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new TensorcastError("INVALID_VALUE", `${value} is not a non-negative safe integer (write larger uint64 values as bigints)`);
    }
    return this.varint64(value >>> 0, Math.floor(value / TWO32) >>> 0);
  }

  private bigWords(value: bigint): this {
    const bits = BigInt.asUintN(64, value);
    return this.varint64(Number(bits & 0xffffffffn), Number(bits >> 32n));
  }

  /** 4 bytes, little-endian. */
  fixed32(value: number): this {
    this.ensure(4);
    this.view.setUint32(this.pos, value >>> 0, true);
    this.pos += 4;
    return this;
  }

  /** 8 bytes, little-endian: the low word first. */
  fixed64(lo: number, hi: number): this {
    this.ensure(8);
    this.view.setUint32(this.pos, lo >>> 0, true);
    this.view.setUint32(this.pos + 4, hi >>> 0, true);
    this.pos += 8;
    return this;
  }

  /**
   * A `float` (IEEE binary32, little-endian), rounded from `value`. Not for preserving NaN
   * payloads: copy the bytes with `raw` for that.
   */
  float(value: number): this {
    this.ensure(4);
    this.view.setFloat32(this.pos, value, true);
    this.pos += 4;
    return this;
  }

  /** A `double` (IEEE binary64, little-endian). */
  double(value: number): this {
    this.ensure(8);
    this.view.setFloat64(this.pos, value, true);
    this.pos += 8;
    return this;
  }

  /** Appends bytes as they are (no tag, no length): the body of a packed fixed-width run. */
  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** The length prefix of a length-delimited value (up to 2^53 - 1). */
  lengthPrefix(n: number): this {
    return n < TWO32 ? this.uint32(n) : this.varint64(n >>> 0, Math.floor(n / TWO32));
  }

  /**
   * UTF-8 bytes of `s`, written straight into the buffer (no length prefix; see `stringField`).
   * @throws TensorcastError INVALID_VALUE for a lone surrogate, which UTF-8 cannot encode: a
   *         silent U+FFFD (what TextEncoder does) would come back as a different string.
   */
  utf8(s: string, what = "string"): this {
    this.ensure(s.length * 3);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        buf[pos++] = c;
      } else if (c < 0x800) {
        buf[pos++] = 0xc0 | (c >> 6);
        buf[pos++] = 0x80 | (c & 63);
      } else if (c < 0xd800 || c > 0xdfff) {
        buf[pos++] = 0xe0 | (c >> 12);
        buf[pos++] = 0x80 | ((c >> 6) & 63);
        buf[pos++] = 0x80 | (c & 63);
      } else {
        const low = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        if (c > 0xdbff || low < 0xdc00 || low > 0xdfff) {
          throw new TensorcastError(
            "INVALID_VALUE",
            `${what} has a lone surrogate U+${c.toString(16).toUpperCase()} at index ${i}; UTF-8 cannot encode it`,
          );
        }
        // A surrogate pair (two UTF-16 units, at most 6 reserved bytes) becomes 4 UTF-8 bytes.
        c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
        i++;
        buf[pos++] = 0xf0 | (c >> 18);
        buf[pos++] = 0x80 | ((c >> 12) & 63);
        buf[pos++] = 0x80 | ((c >> 6) & 63);
        buf[pos++] = 0x80 | (c & 63);
      }
    }
    this.pos = pos;
    return this;
  }

  // ---- nested messages and packed runs -------------------------------------------------------

  /**
   * Opens a length-delimited field whose length is not known yet: a nested message, a packed run
   * of varints, or a string. Write its body, then call `join()`. Forks nest.
   */
  fork(field: number): this {
    this.tag(field, WIRE_LEN);
    this.ensure(1);
    // One byte is reserved for the length: enough for bodies under 128 bytes, the common case.
    this.pos++;
    this.starts.push(this.pos);
    return this;
  }

  /** Closes the innermost `fork()`, writing its length prefix. */
  join(): this {
    const start = this.starts.pop();
    if (start === undefined) throw new TensorcastError("INVALID_DATA", "WireWriter: join() without fork()");
    const n = this.pos - start;
    const extra = varintSize(n) - 1;
    if (extra > 0) {
      this.ensure(extra);
      this.buf.copyWithin(start + extra, start, this.pos);
      this.pos += extra;
    }
    // Write the prefix over the reserved byte (and the extra room just made), then come back.
    const end = this.pos;
    this.pos = start - 1;
    this.lengthPrefix(n);
    this.pos = end;
    return this;
  }

  // ---- fields ---------------------------------------------------------------------------------

  /** A uint32 (or non-negative int32 / enum) field. */
  uint32Field(field: number, value: number): this {
    return this.tag(field, WIRE_VARINT).uint32(value);
  }

  /** An int32 or enum field (negative values take 10 bytes). */
  int32Field(field: number, value: number): this {
    return this.tag(field, WIRE_VARINT).int32(value);
  }

  /** An int64 field from a bigint or safe integer. */
  int64Field(field: number, value: bigint | number): this {
    return this.tag(field, WIRE_VARINT).int64(value);
  }

  /** A uint64 field from a bigint or non-negative safe integer. */
  uint64Field(field: number, value: bigint | number): this {
    return this.tag(field, WIRE_VARINT).uint64(value);
  }

  /** A `float` field (fixed32). */
  floatField(field: number, value: number): this {
    return this.tag(field, WIRE_FIXED32).float(value);
  }

  /** A `double` field (fixed64). */
  doubleField(field: number, value: number): this {
    return this.tag(field, WIRE_FIXED64).double(value);
  }

  /** A `bytes` field, or a packed fixed-width run whose little-endian bytes are already laid out. */
  bytesField(field: number, bytes: Uint8Array): this {
    return this.tag(field, WIRE_LEN).lengthPrefix(bytes.length).raw(bytes);
  }

  /** A `string` field, UTF-8 encoded (see `utf8` for lone surrogates). */
  stringField(field: number, s: string, what?: string): this {
    return this.fork(field).utf8(s, what).join();
  }
}
