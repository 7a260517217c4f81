/**
 * Checks a serialized ModelProto or TensorProto against onnx.proto (schema.ts) without decoding
 * it, so that a file is refused for what protobuf and onnx refuse, wherever the fault lies:
 * - the wire format: tags, varints (at most 10 bytes, no bits past 63), lengths that stay inside
 *   their message, groups closed by their own end-group tag;
 * - nesting: messages and groups at most MAX_NESTING levels below the outermost, protobuf's limit;
 * - every known field of every message has its type's wire type (repeated scalars packed or not),
 *   and string fields (and TensorProto.string_data) are UTF-8; unknown fields are skipped, as protobuf skips them;
 * - every TensorProto's data agrees with its data_type and dims (tensor-data.ts).
 * Stricter than protobuf's own proto2 parser in two ways, on purpose: a known field with the wrong
 * wire type is an error (protobuf files it under unknown fields, and the field reads as unset),
 * and so are non-UTF-8 strings (protobuf hands them on as bytes; ONNX says strings are UTF-8).
 *
 * It is push-style and iterative, with an explicit stack: a file is fed in pieces of any size, in
 * order, and the validator keeps only its stack (at most MAX_NESTING frames) and a token of at most
 * 10 bytes that straddles two pieces. Values it need not see (raw_data, other bytes fields,
 * unknown length-delimited fields, packed float_data / double_data) can be skipped without
 * reading them: `skippable` says how many bytes, so a multi-gigabyte file costs little more than
 * reading its tags.
 */
import { TensorcastError, type ErrorCode } from "../../errors.js";
import { UTF8_BAD_LEAD, utf8Lead } from "../utf8.js";
import { TENSOR_FIELD } from "./fields.js";
import { messageType, type FieldKind, type FieldSpec, type MessageType } from "./schema.js";
import { TensorFacts, type TypedField } from "./tensor-data.js";
import {
  MAX_NESTING, VARINT_INCOMPLETE, WIRE_END_GROUP, WIRE_FIXED32, WIRE_FIXED64, WIRE_LEN, WIRE_NAMES, WIRE_START_GROUP,
  WIRE_VARINT, decodeUtf8, varintAt, varintProblem,
} from "./wire.js";

/** The messages a file can hold: a .onnx model or a .pb tensor. */
export type OnnxRoot = "ModelProto" | "TensorProto";

const TENSOR_PROTO = messageType("TensorProto");

/** What the validator is in the middle of. */
const Mode = {
  /** Expecting a tag, or the end of the current message. */
  Tag: 0,
  /** A tag was read; its value comes next. */
  Value: 1,
  /** Inside a packed run of varints. */
  Packed: 2,
  /** Inside a value whose bytes are not looked at. */
  Opaque: 3,
  /** Inside a string, checking UTF-8. */
  Utf8: 4,
} as const;
type Mode = (typeof Mode)[keyof typeof Mode];

interface Frame {
  /** Undefined inside an unknown group, whose fields are all unknown. */
  readonly type: MessageType | undefined;
  /** The field number of a group; 0 for a message. */
  readonly group: number;
  /** Where its contents start and end in the whole input (a group ends with its parent). */
  readonly start: number;
  readonly end: number;
  /** The field it is the value of ("graph", "node"), for error messages. */
  readonly via: string;
  /** For a TensorProto: what its fields say about its data, checked when it ends. */
  readonly tensor: TensorFacts | undefined;
}

/** Per field number of TensorProto: the typed field whose entries it counts. */
const TYPED_FIELDS = new Map<number, TypedField>([
  [TENSOR_FIELD.floatData, "float_data"], [TENSOR_FIELD.int32Data, "int32_data"], [TENSOR_FIELD.stringData, "string_data"],
  [TENSOR_FIELD.int64Data, "int64_data"], [TENSOR_FIELD.doubleData, "double_data"], [TENSOR_FIELD.uint64Data, "uint64_data"],
]);

const WIRE_OF: Readonly<Record<FieldKind, number>> = {
  varint: WIRE_VARINT, fixed32: WIRE_FIXED32, fixed64: WIRE_FIXED64, string: WIRE_LEN, bytes: WIRE_LEN, message: WIRE_LEN,
};

/** Bytes of a tensor's name kept for error messages. */
const NAME_KEPT = 256;
const EMPTY = new Uint8Array(0);

/**
 * Validates one message fed in order: `push` the bytes (or `skip` what `skippable` allows), then
 * `finish`. Any error is a TensorcastError naming the message path and the byte offset; after one,
 * every call throws it again.
 *
 * @example const v = new MessageValidator("ModelProto", bytes.length); v.push(bytes); v.finish();
 */
export class MessageValidator {
  /** The total length of the message, fixed up front. */
  readonly length: number;
  private readonly base: number;
  private readonly stack: Frame[] = [];
  private mode: Mode = Mode.Tag;
  /** Opaque / Utf8: bytes left in the value. Packed: where the run ends. */
  private remaining = 0;
  private packedEnd = 0;
  /** The field being read (Value, Packed, Utf8); `spec` undefined for an unknown field. */
  private spec: FieldSpec | undefined;
  private field = 0;
  private wire = 0;
  /** The start of a token cut off by the end of a piece, completed by the next piece. */
  private carry = EMPTY;
  private fed = 0;
  private readonly words = { lo: 0, hi: 0 };
  /** UTF-8 state: continuation bytes still due, and the range the next one must fall in. */
  private need = 0;
  private lower = 0x80;
  private upper = 0xbf;
  /** The tensor whose name is being read, and the name's first NAME_KEPT bytes. */
  private naming: TensorFacts | undefined;
  private nameTotal = 0;
  private nameLength = 0;
  /**
   * The name's bytes: a view of the input when the whole name came in one piece (the usual case),
   * else copied into `nameCopy`, made on first need. A buffer per validator was most of the cost
   * of validating a small initializer.
   */
  private nameView: Uint8Array | undefined;
  private nameCopy: Uint8Array | undefined;
  /** The string_data entry being checked, or -1 for any other string. */
  private element = -1;
  private failure: TensorcastError | undefined;
  /** For a TensorProto: what its fields say about its data (complete once `finish` passed). */
  readonly tensor: TensorFacts | undefined;

  /**
   * @param root what the whole input is.
   * @param length its total length in bytes.
   * @param depth how deep the message already is inside another (for a message checked on its own
   *        after its parent was), so that the nesting limit counts from the outermost message.
   */
  constructor(root: OnnxRoot, length: number, depth = 0) {
    if (!Number.isSafeInteger(length) || length < 0) {
      throw new TensorcastError("INVALID_DATA", `${root}: length ${String(length)} is not a byte count`);
    }
    this.length = length;
    this.base = depth;
    const type = messageType(root);
    this.tensor = type === TENSOR_PROTO ? new TensorFacts() : undefined;
    this.stack.push({ type, group: 0, start: 0, end: length, via: root, tensor: this.tensor });
  }

  /** How many bytes have been pushed or skipped: where the next piece starts. */
  get position(): number {
    return this.fed;
  }

  /** How many of the next bytes the validator does not need to see (0 when it needs the next byte). */
  get skippable(): number {
    return this.mode === Mode.Opaque && this.carry.length === 0 && this.failure === undefined ? this.remaining : 0;
  }

  /** Passes over `n <= skippable` bytes without reading them. */
  skip(n: number): void {
    if (this.failure) throw this.failure;
    if (!(n >= 0 && n <= this.skippable)) {
      throw new TensorcastError("INVALID_DATA", `${this.where()}: cannot skip ${n} bytes at byte ${this.fed}; ${this.skippable} may be skipped`);
    }
    this.fed += n;
    this.remaining -= n;
    if (this.remaining === 0) this.mode = Mode.Tag;
  }

  /** Checks the next bytes of the message. */
  push(piece: Uint8Array): void {
    if (this.failure) throw this.failure;
    if (piece.length > this.length - this.fed) {
      throw new TensorcastError("INVALID_DATA", `${this.where()}: ${piece.length} bytes pushed at byte ${this.fed}, past the message's ${this.length}`);
    }
    try {
      this.feed(piece);
    } catch (e) {
      if (e instanceof TensorcastError) this.failure = e;
      throw e;
    }
  }

  /** Checks that the message ended where it should, and the messages still open with it. */
  finish(): void {
    if (this.failure) throw this.failure;
    try {
      if (this.fed !== this.length) {
        throw new TensorcastError("INVALID_DATA", `${this.where()}: finished after ${this.fed} of ${this.length} bytes`);
      }
      if (this.mode === Mode.Packed && this.packedEnd === this.fed) this.mode = Mode.Tag;
      if (this.mode !== Mode.Tag || this.carry.length > 0) this.fail(`truncated: field ${this.fieldName()} runs past the end of the input`);
      while (this.stack.length > 0) this.close(this.fed);
    } catch (e) {
      if (e instanceof TensorcastError) this.failure = e;
      throw e;
    }
  }

  private feed(piece: Uint8Array): void {
    const at = this.fed;
    this.fed += piece.length;
    let p = 0;
    if (this.carry.length > 0) {
      // Complete the token cut off last time from a few bytes of this piece (a token is at most
      // 10 bytes, so 16 more always settle it), then go on in the piece itself.
      const carried = this.carry.length;
      const joined = new Uint8Array(carried + Math.min(piece.length, 16));
      joined.set(this.carry);
      joined.set(piece.subarray(0, joined.length - carried), carried);
      this.carry = EMPTY;
      const q = this.run(joined, at - carried, 0, carried);
      if (this.carry.length > 0) return; // still cut off: the whole (short) piece is carried
      p = q - carried;
    }
    this.run(piece, at, p, piece.length);
  }

  /**
   * Checks `buf` (whose byte 0 is byte `base` of the input) from `p`, stopping at the first token
   * boundary at or after `stop`. Returns where it stopped. A token cut off by the end of `buf`
   * (and not by the end of its message) is kept in `carry`.
   */
  private run(buf: Uint8Array, base: number, p: number, stop: number): number {
    const words = this.words;
    while (p < stop) {
      const top = this.stack[this.stack.length - 1];
      const abs = base + p;
      switch (this.mode) {
        case Mode.Opaque: {
          const k = Math.min(this.remaining, buf.length - p);
          p += k;
          this.remaining -= k;
          if (this.remaining === 0) this.mode = Mode.Tag;
          break;
        }
        case Mode.Utf8: {
          const k = Math.min(this.remaining, buf.length - p);
          this.utf8(buf, p, p + k, base);
          p += k;
          this.remaining -= k;
          if (this.remaining === 0) this.endString(base + p);
          break;
        }
        case Mode.Tag: {
          if (abs === top.end) {
            this.close(abs);
            break;
          }
          const q = varintAt(buf, p, p + Math.min(buf.length - p, top.end - abs), words);
          if (q < 0) {
            if (this.cutOff(q, buf, p, top.end - abs)) return buf.length;
            this.badVarint(q, abs, "a tag");
          }
          this.tag(words.lo, words.hi, abs, base + q);
          p = q;
          break;
        }
        case Mode.Value: {
          const room = top.end - abs;
          if (this.wire === WIRE_FIXED32 || this.wire === WIRE_FIXED64) {
            const width = this.wire === WIRE_FIXED32 ? 4 : 8;
            if (room < width) this.fail(`truncated: field ${this.fieldName()} at byte ${abs} runs past the end of its message`);
            if (buf.length - p < width) {
              this.carry = buf.slice(p);
              return buf.length;
            }
            this.count(top, 1);
            p += width;
            this.mode = Mode.Tag;
            break;
          }
          const q = varintAt(buf, p, p + Math.min(buf.length - p, room), words);
          if (q < 0) {
            if (this.cutOff(q, buf, p, room)) return buf.length;
            this.badVarint(q, abs, `field ${this.fieldName()}`);
          }
          p = q;
          if (this.wire === WIRE_VARINT) {
            this.scalar(top, words.lo, words.hi);
            this.mode = Mode.Tag;
          } else {
            const n = words.hi * 4294967296 + words.lo;
            const left = top.end - (base + q);
            if (n > left) {
              this.fail(`truncated: field ${this.fieldName()} at byte ${abs} claims ${n} bytes, past the end of its message (${left} remain)`);
            }
            this.startValue(top, n, base + q);
          }
          break;
        }
        case Mode.Packed: {
          if (abs === this.packedEnd) {
            this.mode = Mode.Tag;
            break;
          }
          const room = this.packedEnd - abs;
          const end = p + Math.min(buf.length - p, room);
          const counted = this.spec!.number === TENSOR_FIELD.dims ? undefined : top.tensor && TYPED_FIELDS.get(this.spec!.number);
          let n = 0;
          while (p < end) {
            const q = varintAt(buf, p, end, words);
            if (q < 0) {
              if (counted) top.tensor!.add(counted, n);
              if (this.cutOff(q, buf, p, this.packedEnd - (base + p))) return buf.length;
              if (q === VARINT_INCOMPLETE) this.fail(`truncated: packed field ${this.fieldName()} ends inside a varint at byte ${base + p}`);
              this.badVarint(q, base + p, `packed field ${this.fieldName()}`);
            }
            if (counted) n++;
            else if (top.tensor) top.tensor.dim(words.lo, words.hi);
            p = q;
            if (p >= stop) break;
          }
          if (counted) top.tensor!.add(counted, n);
          break;
        }
      }
    }
    return p;
  }

  /**
   * Whether a varint that `varintAt` could not finish was cut off by the end of `buf` rather than
   * by the end of its message (`room` bytes from `p`); if so it is carried to the next piece.
   */
  private cutOff(code: number, buf: Uint8Array, p: number, room: number): boolean {
    if (code !== VARINT_INCOMPLETE || buf.length - p >= room) return false;
    this.carry = buf.slice(p);
    return true;
  }

  /** A tag at `abs`, its value starting at `next`. */
  private tag(lo: number, hi: number, abs: number, next: number): void {
    const field = lo >>> 3;
    const wire = lo & 7;
    const top = this.stack[this.stack.length - 1];
    if (hi !== 0 || field === 0 || wire > 5) {
      const why = field === 0 && hi === 0 ? "field number 0" : wire > 5 ? `wire type ${wire}` : "a field number above 2^29 - 1";
      this.fail(`invalid tag at byte ${abs} (${why})`);
    }
    if (wire === WIRE_END_GROUP) {
      if (top.group === field) {
        this.stack.pop();
        return;
      }
      this.fail(
        top.group !== 0
          ? `group ${top.group} closed by the end-group tag of field ${field} at byte ${abs}`
          : `end-group tag of field ${field} at byte ${abs} without a start-group`,
      );
    }
    const spec = top.type?.fields.get(field);
    if (spec) {
      const expected = WIRE_OF[spec.kind];
      const packed = wire === WIRE_LEN && spec.repeated && expected !== WIRE_LEN;
      if (wire !== expected && !packed) {
        this.fail(`field ${field} (${spec.name}) at byte ${abs} has wire type ${WIRE_NAMES[wire]}, expected ${WIRE_NAMES[expected]}`);
      }
    }
    this.spec = spec;
    this.field = field;
    this.wire = wire;
    if (wire === WIRE_START_GROUP) {
      this.open({ type: undefined, group: field, start: next, end: top.end, via: `[group ${field}]`, tensor: undefined }, abs);
      return;
    }
    this.mode = Mode.Value;
  }

  /** A length-delimited value of `n` bytes starting at `at`. */
  private startValue(top: Frame, n: number, at: number): void {
    const spec = this.spec;
    const tensor = top.tensor;
    this.mode = Mode.Opaque;
    this.remaining = n;
    if (!spec) {
      if (n === 0) this.mode = Mode.Tag;
      return;
    }
    switch (spec.kind) {
      case "message":
        if (tensor && spec.number === TENSOR_FIELD.segment) tensor.segment = true;
        // external_data alone does not make a tensor external: data_location EXTERNAL does (onnx
        // and onnxruntime read the data fields of a tensor that has external_data without it).
        this.mode = Mode.Tag;
        this.open({ type: spec.message, group: 0, start: at, end: at + n, via: spec.name, tensor: spec.message === TENSOR_PROTO ? new TensorFacts() : undefined }, at);
        return;
      case "string":
        this.startString(n, at, tensor && spec.number === TENSOR_FIELD.name ? tensor : undefined, -1);
        return;
      case "bytes":
        if (tensor && spec.number === TENSOR_FIELD.rawData) tensor.raw = n;
        else if (tensor && spec.number === TENSOR_FIELD.stringData) {
          // onnx.proto declares string_data bytes, but every reader of a STRING tensor (decodeTensorProto,
          // onnx's numpy_helper) decodes each entry as UTF-8 and refuses other bytes: so does the check.
          tensor.add("string_data", 1);
          this.startString(n, at, undefined, (tensor.counts.get("string_data") ?? 1) - 1);
          return;
        }
        break;
      case "fixed32":
      case "fixed64": {
        const width = spec.kind === "fixed32" ? 4 : 8;
        if (n % width !== 0) {
          this.fail(`packed field ${this.fieldName()} holds ${n} bytes, not a multiple of ${width}`);
        }
        this.count(top, n / width);
        break;
      }
      case "varint":
        this.mode = Mode.Packed;
        this.packedEnd = at + n;
        // An empty run still marks the field present, as the decoder sees it.
        this.count(top, 0);
        return;
    }
    if (n === 0) this.mode = Mode.Tag;
  }

  /** A varint value of the current field. */
  private scalar(top: Frame, lo: number, hi: number): void {
    const tensor = top.tensor;
    if (!tensor || !this.spec) return;
    switch (this.spec.number) {
      case TENSOR_FIELD.dims:
        tensor.dim(lo, hi);
        return;
      case TENSOR_FIELD.dataType:
        tensor.dataType = lo | 0;
        return;
      case TENSOR_FIELD.dataLocation:
        if ((lo | 0) === 1) tensor.external = true;
        return;
      default:
        this.count(top, 1);
    }
  }

  /** `n` more entries of the current field, when it is one of a TensorProto's typed fields. */
  private count(top: Frame, n: number): void {
    const field = top.tensor && this.spec && TYPED_FIELDS.get(this.spec.number);
    if (field) top.tensor!.add(field, n);
  }

  private open(frame: Frame, at: number): void {
    const depth = this.base + this.stack.length;
    if (depth > MAX_NESTING) {
      this.stack.push(frame);
      this.fail(`messages and groups nested ${depth} levels deep at byte ${at}; protobuf's limit (its default recursion limit) is ${MAX_NESTING}`);
    }
    this.stack.push(frame);
  }

  /** The end of the innermost message, at `abs`. */
  private close(abs: number): void {
    const top = this.stack[this.stack.length - 1];
    if (top.group !== 0) this.fail(`truncated: group ${top.group} is not closed by the end of its message at byte ${abs}`);
    if (top.tensor) {
      try {
        top.tensor.check();
      } catch (e) {
        // The tensor's label says which tensor; a path adds to it only inside a model.
        if (e instanceof TensorcastError && this.stack.length > 1) this.fail(e.message, e.code);
        throw e;
      }
    }
    this.stack.pop();
  }

  /** Checks string bytes buf[from, to) as UTF-8 (WHATWG's decoder: no overlongs, surrogates or > U+10FFFF). */
  private utf8(buf: Uint8Array, from: number, to: number, base: number): void {
    if (this.naming) {
      if (this.nameLength === 0 && to - from === this.nameTotal && this.nameTotal <= NAME_KEPT) {
        // endString comes within this piece, so the view is read before the input can change.
        this.nameView = buf.subarray(from, to);
        this.nameLength = to - from;
      } else {
        const k = Math.min(to - from, NAME_KEPT - this.nameLength);
        (this.nameCopy ??= new Uint8Array(NAME_KEPT)).set(buf.subarray(from, from + k), this.nameLength);
        this.nameLength += k;
      }
    }
    let need = this.need;
    let lower = this.lower;
    let upper = this.upper;
    for (let i = from; i < to; i++) {
      const b = buf[i];
      if (need === 0) {
        if (b < 0x80) continue;
        const lead = utf8Lead(b);
        if (lead === UTF8_BAD_LEAD) this.badUtf8(base + i);
        need = lead & 0xff;
        lower = (lead >> 8) & 0xff;
        upper = lead >>> 16;
      } else {
        if (b < lower || b > upper) this.badUtf8(base + i);
        need--;
        lower = 0x80;
        upper = 0xbf;
      }
    }
    this.need = need;
    this.lower = lower;
    this.upper = upper;
  }

  /** A string value of `n` bytes at `at`: a name to keep, or string_data entry `element` (else -1). */
  private startString(n: number, at: number, naming: TensorFacts | undefined, element: number): void {
    this.mode = Mode.Utf8;
    this.need = 0;
    this.naming = naming;
    this.nameTotal = n;
    this.nameLength = 0;
    this.nameView = undefined;
    this.element = element;
    if (n === 0) this.endString(at);
  }

  private endString(abs: number): void {
    if (this.need !== 0) this.badUtf8(abs);
    this.mode = Mode.Tag;
    if (this.naming) {
      const kept = this.nameView ?? this.nameCopy ?? EMPTY;
      let n = this.nameLength;
      // A name cut at NAME_KEPT bytes may end inside a character: drop that character.
      if (n === NAME_KEPT && this.nameTotal > NAME_KEPT) {
        while (n > 0 && (kept[n - 1] & 0xc0) === 0x80) n--;
        if (n > 0 && kept[n - 1] >= 0xc0) n--;
      }
      this.naming.name = decodeUtf8(kept.subarray(0, n), "a tensor name") + (n < this.nameLength ? "..." : "");
      this.naming = undefined;
      this.nameView = undefined;
    }
  }

  private badUtf8(abs: number): never {
    if (this.element >= 0) this.fail(`string_data[${this.element}] is not valid UTF-8 (at byte ${abs})`);
    this.fail(`field ${this.fieldName()} is not valid UTF-8 (at byte ${abs})`);
  }

  private badVarint(code: number, abs: number, what: string): never {
    if (code === VARINT_INCOMPLETE) this.fail(`truncated: ${what} at byte ${abs} runs past the end of its message`);
    this.fail(`${what}: varint at byte ${abs} ${varintProblem(code)}`);
  }

  private fieldName(): string {
    return this.spec ? `${this.field} (${this.spec.name})` : String(this.field);
  }

  private fail(what: string, code: ErrorCode = "INVALID_DATA"): never {
    throw new TensorcastError(code, `${this.where()}: ${what}`);
  }

  /**
   * Where the innermost open message is: its path of field names from the outermost message
   * (shortened when deep) and where it starts.
   */
  private where(): string {
    const s = this.stack;
    if (s.length === 0) return "message";
    const names = s.map((f) => f.via);
    const path = names.length > 8 ? [...names.slice(0, 3), `...${names.length - 6} more...`, ...names.slice(-3)] : names;
    const top = s[s.length - 1];
    if (s.length === 1) return path[0];
    return `${path.join(".")} (${top.type ? top.type.name : `group ${top.group}`} at byte ${top.start})`;
  }
}

/**
 * Validates the message in `bytes[start, end)` (see MessageValidator), `depth` levels inside
 * another message.
 * @throws TensorcastError INVALID_DATA, UNKNOWN_DTYPE, INVALID_SHAPE or SHAPE_MISMATCH, naming the
 *         message path and the byte.
 */
export function validateMessage(root: OnnxRoot, bytes: Uint8Array, start = 0, end = bytes.length, depth = 0): void {
  validated(root, bytes, start, end, depth);
}

/** Validates the TensorProto in `bytes[start, end)` like `validateMessage`, and says what its data is. */
export function validateTensorProto(bytes: Uint8Array, start = 0, end = bytes.length, depth = 0): TensorFacts {
  return validated("TensorProto", bytes, start, end, depth).tensor!;
}

function validated(root: OnnxRoot, bytes: Uint8Array, start: number, end: number, depth: number): MessageValidator {
  if (!(bytes instanceof Uint8Array)) {
    throw new TensorcastError("INVALID_DATA", `${root}: expected a Uint8Array, got ${bytes === null ? "null" : typeof bytes}`);
  }
  const v = new MessageValidator(root, end - start, depth);
  v.push(bytes.subarray(start, end));
  v.finish();
  return v;
}
