/**
 * A protobuf message kept field by field, for editing a model without knowing all of it: every
 * field the precision pass does not touch (doc strings, metadata, local functions, training info,
 * quantization annotations, fields newer than this code) is written back as the bytes it was read
 * from, in its original position. Length-delimited fields are parsed into sub-messages only when
 * asked for; the pass edits those and `encode` re-serialises them.
 */
import { TensorcastError } from "../../../errors.js";
import { WireReader, WIRE_FIXED32, WIRE_FIXED64, WIRE_LEN, WIRE_START_GROUP, WIRE_VARINT, decodeUtf8, varintAt, type VarintWords, type WireType } from "../wire.js";
import { WireWriter } from "../wire-writer.js";

/**
 * The field number of a run of fields kept as their bytes (tags included): the fields of a message
 * the pass never reads. No real field has number 0, so `all(n)` never returns a run.
 */
export const RAW_RUN = 0;

/**
 * Per message type, the fields the precision pass (graph.ts, model.ts, weights.ts and the Node
 * converter) reads or edits; every other field is inert and kept as bytes. `unlessSet[n]`: field
 * n is inert all the same when its payload sets none of these fields (non-empty): a value_info
 * with neither name nor type, an attribute with no name, graph or tensor, which no lookup can find.
 * TensorProto is absent: tensors are decoded whole.
 */
const INERT: Readonly<Record<string, { reads: ReadonlySet<number>; unlessSet: Readonly<Record<number, readonly number[]>> }>> = {
  ModelProto: { reads: new Set([1, 7, 8]), unlessSet: {} },
  GraphProto: { reads: new Set([1, 2, 5, 11, 12, 13, 15]), unlessSet: { 13: [1, 2] } },
  NodeProto: { reads: new Set([1, 2, 3, 4, 5, 7]), unlessSet: { 5: [1, 5, 6, 10, 11] } },
  AttributeProto: { reads: new Set([1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 20]), unlessSet: {} },
  ValueInfoProto: { reads: new Set([1, 2]), unlessSet: {} },
  TypeProto: { reads: new Set([1]), unlessSet: {} },
};

/**
 * The most inputs plus outputs one node may have. Each is a value the pass types and may cast, a
 * few hundred bytes of memory; a node of 10,000,000 empty inputs (20 MB of file) would take
 * gigabytes. No operator comes near: the widest real ones (Concat, Sum) take a few thousand.
 */
export const MAX_NODE_VALUES = 1_000_000;

const words: VarintWords = { lo: 0, hi: 0 };

/**
 * Whether the message in `buf[start, end)` sets none of `wanted` (with a non-empty payload); false
 * too when it is malformed or holds a group, so that the ordinary parse meets (and reports) it.
 * Allocates nothing: it runs once per entry of a flood.
 */
function payloadLacks(buf: Uint8Array, start: number, end: number, wanted: readonly number[]): boolean {
  let pos = start;
  while (pos < end) {
    pos = varintAt(buf, pos, end, words);
    if (pos < 0 || words.hi !== 0) return false;
    const no = words.lo >>> 3;
    const wire = words.lo & 7;
    if (wire === WIRE_LEN) {
      pos = varintAt(buf, pos, end, words);
      if (pos < 0 || words.hi !== 0 || words.lo > end - pos) return false;
      if (words.lo > 0 && wanted.includes(no)) return false;
      pos += words.lo;
    } else if (wanted.includes(no)) return false;
    else if (wire === WIRE_VARINT) pos = varintAt(buf, pos, end, words);
    else if (wire === WIRE_FIXED64) pos += 8;
    else if (wire === WIRE_FIXED32) pos += 4;
    else return false;
    if (pos < 0 || pos > end) return false;
  }
  return true;
}

/** One field occurrence. `data`: a varint's or fixed value's encoded bytes, or a length-delimited payload. */
export interface PbField {
  no: number;
  wire: WireType;
  data: Uint8Array;
  /** The payload parsed as a message, once asked for; `encode` writes this instead of `data`. */
  msg?: PbMessage;
}

/**
 * A field as parse() found it: its payload's place in the message's bytes, a view made only when
 * read. A million-node graph has several million fields, and a Uint8Array view apiece costs more
 * than the field itself.
 */
class ParsedField implements PbField {
  msg?: PbMessage;
  private set_?: Uint8Array;

  constructor(public no: number, public wire: WireType, private readonly buf: Uint8Array, private readonly start: number, private readonly end: number) {}

  get data(): Uint8Array {
    return this.set_ ?? this.buf.subarray(this.start, this.end);
  }

  set data(bytes: Uint8Array) {
    this.set_ = bytes;
  }
}

/**
 * UTF-8 bytes of a string (the core has no TextEncoder in its lib types).
 * @example utf8Bytes("é")  // Uint8Array [0xc3, 0xa9]
 */
export function utf8Bytes(s: string): Uint8Array {
  return new WireWriter(3 * s.length + 8).utf8(s).finish().slice();
}

/**
 * A message as its list of fields.
 *
 * @example PbMessage.parse(bytes, "ModelProto").sub(7).strings(2)  // the graph's name, as a list
 */
export class PbMessage {
  constructor(public fields: PbField[] = [], readonly context = "message", readonly depth = 0) {}

  /**
   * Splits `bytes` into fields without looking inside any of them. Runs of fields the precision
   * pass never reads (see INERT) become one RAW_RUN field holding their bytes: a flood of millions
   * of empty value_info entries or attributes costs one object, not one per entry.
   * @throws TensorcastError INVALID_DATA for malformed protobuf, or nesting deeper than 100 messages.
   */
  static parse(bytes: Uint8Array, context: string, depth = 0): PbMessage {
    if (depth > 100) throw new TensorcastError("INVALID_DATA", `${context}: nested deeper than 100 messages`);
    const r = new WireReader(bytes, context);
    const inert = INERT[context];
    const fields: PbField[] = [];
    let values = context === "NodeProto" ? 0 : -Infinity;
    let runStart = -1;
    let runEnd = -1;
    const flush = (): void => {
      if (runStart < 0) return;
      fields.push(new ParsedField(RAW_RUN, WIRE_LEN, r.buf, runStart, runEnd));
      runStart = -1;
    };
    for (;;) {
      const at = r.pos;
      const no = r.next();
      if (no === 0) break;
      const wire = r.wireType;
      let start: number;
      if (wire === WIRE_LEN) {
        const n = r.length();
        const lacks = inert?.unlessSet[no];
        const skip = inert !== undefined && (!inert.reads.has(no) || (lacks !== undefined && payloadLacks(r.buf, r.pos, r.pos + n, lacks)));
        r.pos += n;
        if (skip) {
          if (runStart < 0) runStart = at;
          runEnd = r.pos;
          continue;
        }
        start = r.pos - n;
      } else {
        start = r.pos;
        r.skip();
        // Groups are not part of ONNX (the validator refuses them): never folded into a run.
        if (inert && wire !== WIRE_START_GROUP && !inert.reads.has(no)) {
          if (runStart < 0) runStart = at;
          runEnd = r.pos;
          continue;
        }
      }
      if ((no === 1 || no === 2) && ++values > MAX_NODE_VALUES) {
        throw new TensorcastError("NOT_IMPLEMENTED", `${context}: a node with more than ${MAX_NODE_VALUES} inputs and outputs; tensorcast converts nodes of up to ${MAX_NODE_VALUES}`);
      }
      flush();
      fields.push(new ParsedField(no, wire, r.buf, start, r.pos));
    }
    flush();
    return new PbMessage(fields, context, depth);
  }

  /** Every occurrence of field `no`, in order. */
  all(no: number): PbField[] {
    return this.fields.filter((f) => f.no === no);
  }

  /** Whether field `no` occurs. */
  has(no: number): boolean {
    return this.fields.some((f) => f.no === no);
  }

  /** Field `no` as a message (the last occurrence, which protobuf's merge makes the winner for scalars; ONNX never repeats its singular message fields). */
  sub(no: number, context = `${this.context}.${no}`): PbMessage | undefined {
    const f = this.all(no).at(-1);
    return f ? this.message(f, context) : undefined;
  }

  /** Every occurrence of field `no` as a message. */
  subs(no: number, context = `${this.context}.${no}`): PbMessage[] {
    return this.all(no).map((f) => this.message(f, context));
  }

  /** A field's payload as a message, parsed once. */
  message(f: PbField, context: string): PbMessage {
    if (f.wire !== WIRE_LEN) throw new TensorcastError("INVALID_DATA", `${this.context}: field ${f.no} should be length-delimited, is wire type ${f.wire}`);
    f.msg ??= PbMessage.parse(f.data, context, this.depth + 1);
    return f.msg;
  }

  /**
   * A field's payload as a message for reading only: the kept parse when there is one, else a
   * fresh parse that is not kept. A graph's million nodes read this way are never all held at
   * once; whoever edits the result must keep it (`f.msg = m`), or the edit is lost.
   */
  peek(f: PbField, context: string): PbMessage {
    if (f.msg) return f.msg;
    if (f.wire !== WIRE_LEN) throw new TensorcastError("INVALID_DATA", `${this.context}: field ${f.no} should be length-delimited, is wire type ${f.wire}`);
    return PbMessage.parse(f.data, context, this.depth + 1);
  }

  /** The last string of field `no`, or `fallback`. */
  string(no: number, fallback = ""): string {
    const f = this.all(no).at(-1);
    return f ? decodeUtf8(f.data, `${this.context}: field ${no}`) : fallback;
  }

  /** Every string of field `no`. */
  strings(no: number): string[] {
    return this.all(no).map((f) => decodeUtf8(f.data, `${this.context}: field ${no}`));
  }

  /** The last varint of field `no` as a signed 64-bit value, or undefined. */
  varint(no: number): bigint | undefined {
    const f = this.all(no).at(-1);
    if (!f) return undefined;
    if (f.wire !== WIRE_VARINT) throw new TensorcastError("INVALID_DATA", `${this.context}: field ${no} should be a varint, is wire type ${f.wire}`);
    let v = 0n;
    for (let i = f.data.length - 1; i >= 0; i--) v = (v << 7n) | BigInt(f.data[i] & 0x7f);
    return BigInt.asIntN(64, v);
  }

  /** The last varint of field `no` as a number (int32 / enum fields), or `fallback`. */
  int(no: number, fallback = 0): number {
    const v = this.varint(no);
    return v === undefined ? fallback : Number(BigInt.asIntN(32, v));
  }

  /** Every varint of field `no`, packed or not. */
  varints(no: number): bigint[] {
    const out: bigint[] = [];
    for (const f of this.all(no)) {
      if (f.wire === WIRE_VARINT) {
        out.push(new PbMessage([f], this.context).varint(no)!);
        continue;
      }
      const r = new WireReader(f.data, this.context);
      while (!r.done) {
        r.varint64();
        out.push(BigInt.asIntN(64, (BigInt(r.hi) << 32n) | BigInt(r.lo)));
      }
    }
    return out;
  }

  /** Replaces every occurrence of field `no` with one varint (at the first occurrence's place, else at the end). */
  setVarint(no: number, value: number | bigint): this {
    return this.replace(no, { no, wire: WIRE_VARINT, data: varintBytes(BigInt(value)) });
  }

  /** Replaces every occurrence of field `no` with one string. */
  setString(no: number, s: string): this {
    return this.replace(no, { no, wire: WIRE_LEN, data: utf8Bytes(s) });
  }

  /** Replaces every occurrence of field `no` with one message. */
  setMessage(no: number, msg: PbMessage): this {
    return this.replace(no, { no, wire: WIRE_LEN, data: new Uint8Array(0), msg });
  }

  /** Appends a string occurrence of field `no`. */
  addString(no: number, s: string): this {
    this.fields.push({ no, wire: WIRE_LEN, data: utf8Bytes(s) });
    return this;
  }

  /** Appends a varint occurrence of field `no`. */
  addVarint(no: number, value: number | bigint): this {
    this.fields.push({ no, wire: WIRE_VARINT, data: varintBytes(BigInt(value)) });
    return this;
  }

  /** Appends a message occurrence of field `no`. */
  addMessage(no: number, msg: PbMessage): this {
    this.fields.push({ no, wire: WIRE_LEN, data: new Uint8Array(0), msg });
    return this;
  }

  /** Sets the k-th occurrence of string field `no` (node inputs and outputs). */
  setStringAt(no: number, k: number, s: string): this {
    const f = this.all(no)[k];
    if (!f) throw new TensorcastError("INTERNAL", `${this.context}: no occurrence ${k} of field ${no}`);
    f.data = utf8Bytes(s);
    return this;
  }

  /** Removes every occurrence of field `no`. */
  remove(no: number): this {
    this.fields = this.fields.filter((f) => f.no !== no);
    return this;
  }

  private replace(no: number, field: PbField): this {
    const at = this.fields.findIndex((f) => f.no === no);
    this.remove(no);
    if (at < 0 || at > this.fields.length) this.fields.push(field);
    else this.fields.splice(at, 0, field);
    return this;
  }

  /** Serialises the message: untouched fields as read, parsed ones re-encoded. */
  encode(capacity = 1024): Uint8Array {
    const w = new WireWriter(Math.max(capacity, this.sizeHint()));
    this.writeTo(w);
    return w.finish();
  }

  /** Writes the fields into `w` (no enclosing tag). */
  writeTo(w: WireWriter): void {
    for (const f of this.fields) {
      if (f.no === RAW_RUN) w.raw(f.data);
      else if (f.wire === WIRE_LEN) {
        if (f.msg) {
          w.fork(f.no);
          f.msg.writeTo(w);
          w.join();
        } else w.bytesField(f.no, f.data);
      } else if (f.wire === WIRE_VARINT || f.wire === WIRE_FIXED32 || f.wire === WIRE_FIXED64) {
        w.tag(f.no, f.wire).raw(f.data);
      } else {
        // Groups are not part of ONNX; kept as read (the validator refuses them before this).
        w.tag(f.no, f.wire).raw(f.data);
      }
    }
  }

  private sizeHint(): number {
    let n = 16;
    for (const f of this.fields) n += 12 + (f.msg ? f.msg.sizeHint() : f.data.length);
    return n;
  }
}

function varintBytes(v: bigint): Uint8Array {
  let u = BigInt.asUintN(64, v);
  const out: number[] = [];
  do {
    let b = Number(u & 0x7fn);
    u >>= 7n;
    if (u !== 0n) b |= 0x80;
    out.push(b);
  } while (u !== 0n);
  return Uint8Array.from(out);
}
