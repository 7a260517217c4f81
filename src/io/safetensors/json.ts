/**
 * The JSON of a safetensors header, read the way the Rust reader reads it, so that a header is
 * accepted here exactly when huggingface/safetensors accepts it (docs/convert.md lists the rules).
 * The Rust reader hands the text to serde_json, deserializing
 *
 *   struct HashMetadata { #[serde(rename = "__metadata__")] metadata: Option<HashMap<String, String>>,
 *                         #[serde(flatten)] tensors: HashMap<String, TensorInfo> }
 *   struct TensorInfo { dtype: Dtype, shape: Vec<usize>, data_offsets: (usize, usize) }
 *
 * which fixes, beyond JSON's grammar: only space, tab, CR and LF as whitespace (a byte-order mark
 * is an error); at most 127 nested arrays and objects; no unpaired UTF-16 surrogate escapes and no
 * raw control characters in strings; a float literal whose value overflows an f64 (as serde_json
 * computes it) is an error even where it is ignored; `__metadata__` at most once, null or strings
 * only (a repeated key inside it: the last wins); a repeated tensor name: the last entry wins, but
 * every entry must be a valid tensor; a tensor's fields at most once each, unknown fields ignored,
 * and (serde's derived struct reader) the tensor may also be the list [dtype, shape, data_offsets];
 * a dtype is its name or {"NAME": null}; dimensions and offsets are integer literals (no sign,
 * fraction or exponent) up to 2^64 - 1.
 *
 * One deliberate difference: a dimension above 2^53 - 1 is refused (JS numbers cannot hold it);
 * the Rust reader accepts one in a tensor with a zero dimension.
 *
 * The reader is iterative and reads the bytes once: no recursion (nesting is a counter), no
 * JSON.parse tree, and error messages quote at most a bounded prefix of anything the file says.
 */
import { UTF8_BAD_LEAD, utf8Lead } from "../utf8.js";
import { TensorcastError, type ErrorCode } from "../../errors.js";
import { NameIndex } from "../name-index.js";

/** serde_json's recursion limit: its 128th nested array or object is an error. */
export const MAX_JSON_DEPTH = 127;

/** The longest excerpt of file-supplied text an error message quotes. */
const QUOTE_LIMIT = 64;

/** `text` as a JSON string literal, cut to its first `limit` characters when longer. */
export function quoteBounded(text: string, limit = QUOTE_LIMIT): string {
  return text.length > limit ? `${JSON.stringify(text.slice(0, limit))}... (${text.length} characters)` : JSON.stringify(text);
}

/**
 * The tensor entries as the header writes them, a column per field (no object per entry: a header
 * may list millions), in the order of first appearance; a repeated name holds its last entry.
 * `dtypes` holds what the caller's table maps each dtype name to.
 */
export interface HeaderJson<T> {
  /** Absent when the header has no `__metadata__` or has `"__metadata__": null`. */
  readonly metadata?: Record<string, string>;
  readonly names: string[];
  readonly dtypes: T[];
  readonly shapes: number[][];
  readonly begins: number[];
  readonly ends: number[];
}

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a, MINUS = 0x2d, PLUS = 0x2b, DOT = 0x2e;
const LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d, ZERO = 0x30, NINE = 0x39;
const TRUE = [0x74, 0x72, 0x75, 0x65], FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65], NULL = [0x6e, 0x75, 0x6c, 0x6c];
const MAX_U64 = 0xffff_ffff_ffff_ffffn;
/** readUint's answers for a literal it cannot return as a number. */
const OVER_2_53 = -1, OVER_U64 = -2;

const FIELD_DTYPE = 1, FIELD_SHAPE = 2, FIELD_OFFSETS = 3;
const FIELD_NAMES = ["", "dtype", "shape", "data_offsets"];
const FIELD_BYTES = FIELD_NAMES.map((f) => Array.from(f, (ch) => ch.charCodeAt(0)));

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** What a byte that starts a value (or -1, the end) makes it, for messages. */
function describe(c: number): string {
  if (c === -1) return "the end of the header";
  if (c === QUOTE) return "a string";
  if (c === LBRACE) return "an object";
  if (c === LBRACKET) return "a list";
  if (c === MINUS || isDigit(c)) return "a number";
  if (c === TRUE[0] || c === FALSE[0]) return "a boolean";
  if (c === NULL[0]) return "null";
  return c >= 0x21 && c < 0x7f ? JSON.stringify(String.fromCharCode(c)) : `byte 0x${c.toString(16).padStart(2, "0")}`;
}

// ES2022's lib has no TextDecoder (a Web and Node global); declaring the sliver used keeps the core
// compiling without the DOM or Node types, as src/io/gguf/cursor.ts does.
interface Utf8Decoder {
  decode(input: Uint8Array): string;
}
declare const TextDecoder: new (label: string, options: { fatal?: boolean; ignoreBOM: boolean }) => Utf8Decoder;

let rawDecoder: Utf8Decoder | undefined;

/**
 * Reads the JSON of a header whose bytes are `bytes` (padding included), naming `file` in errors.
 * `dtypes` maps each dtype name safetensors defines to the caller's type.
 * @throws TensorcastError INVALID_DATA (bad UTF-8 or JSON, a value of the wrong kind), UNKNOWN_DTYPE,
 *         INVALID_SHAPE (a dimension that is not an unsigned integer literal).
 */
export function readHeaderJson<T>(bytes: Uint8Array, file: string, dtypes: ReadonlyMap<string, T>): HeaderJson<T> {
  // A plain view: subarrays of a Node Buffer would be Buffers, slower to make.
  return new HeaderReader(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), file, dtypes).header();
}

class HeaderReader<T> {
  private p = 0;
  /** The last string scanned: its bytes between the quotes, and whether it has escapes. */
  private strStart = 0;
  private strEnd = 0;
  private strEscaped = false;
  /** The last number scanned: where its parts are; -1 for a part it lacks. */
  private numStart = 0;
  private numNegative = false;
  private intStart = 0;
  private intEnd = 0;
  private fracStart = -1;
  private fracEnd = -1;
  private expStart = -1;
  private expEnd = -1;
  private expNegative = false;
  private readonly dims: number[] = [];
  /** The tensor entry last read. */
  private dtype: T | undefined;
  private shape: number[] | undefined;
  private begin = 0;
  private end = 0;

  constructor(
    private readonly b: Uint8Array,
    private readonly file: string,
    private readonly dtypes: ReadonlyMap<string, T>,
  ) {}

  header(): HeaderJson<T> {
    let c = this.ws();
    if (c !== LBRACE) {
      const bom = this.b[0] === 0xef && this.b[1] === 0xbb && this.b[2] === 0xbf;
      throw this.invalid(`the header must be a JSON object ("{" after any spaces); it starts with ${bom ? "a UTF-8 byte-order mark" : describe(c)}`);
    }
    this.p++;
    const names: string[] = [];
    const dtypes: T[] = [];
    const shapes: number[][] = [];
    const begins: number[] = [];
    const ends: number[] = [];
    const index = new NameIndex(names);
    let metadata: Record<string, string> | undefined;
    let sawMetadata = false;
    c = this.ws();
    if (c === RBRACE) this.p++;
    else {
      for (;;) {
        const name = this.key("a tensor name");
        if (name === "__metadata__") {
          if (sawMetadata) throw this.invalid("__metadata__ appears twice (the Rust reader refuses a repeated __metadata__)");
          sawMetadata = true;
          metadata = this.metadata();
        } else {
          this.tensor(name);
          const at = index.find(name);
          if (at < 0) {
            index.add(name);
            dtypes.push(this.dtype!);
            shapes.push(this.shape!);
            begins.push(this.begin);
            ends.push(this.end);
          } else {
            dtypes[at] = this.dtype!;
            shapes[at] = this.shape!;
            begins[at] = this.begin;
            ends[at] = this.end;
          }
        }
        if (this.nextMember(RBRACE, "a tensor")) break;
      }
    }
    if (this.ws() !== -1) throw this.syntax("only spaces, tabs and line breaks may follow the header's JSON object");
    return { metadata, names, dtypes, shapes, begins, ends };
  }

  // ---- the safetensors structure ----

  private metadata(): Record<string, string> | undefined {
    const c = this.ws();
    if (c === NULL[0]) {
      this.literal(NULL);
      return undefined;
    }
    if (c !== LBRACE) throw this.invalid(`__metadata__ must be an object of strings (or null); it is ${this.kindOf(c)}`);
    this.p++;
    // A Map keeps a repeated key's first position and last value, as HashMap::insert keeps the last;
    // fromEntries then defines own properties, so a key such as "__proto__" stays a plain key.
    const entries = new Map<string, string>();
    if (this.ws() === RBRACE) {
      this.p++;
      return {};
    }
    for (;;) {
      const key = this.key("a metadata key");
      const v = this.ws();
      if (v !== QUOTE) throw this.invalid(`__metadata__ ${quoteBounded(key)} is ${this.kindOf(v)}; metadata values must be strings`);
      this.scanString();
      entries.set(key, this.stringValue());
      if (this.nextMember(RBRACE, "a metadata entry")) break;
    }
    return Object.fromEntries(entries);
  }

  /** Reads the entry of tensor `name` into `dtype`, `shape`, `begin` and `end`. */
  private tensor(name: string): void {
    const c = this.ws();
    this.dtype = undefined;
    this.shape = undefined;
    let offsets = false;
    if (c === LBRACKET) {
      // serde's derived reader also takes a struct as the list of its fields, in order.
      this.p++;
      this.dtype = this.readDtype(name);
      this.listComma(name);
      this.shape = this.readShape(name);
      this.listComma(name);
      this.readOffsets(name);
      if (this.ws() !== RBRACKET) throw this.inTensor(name, "a tensor written as a list has exactly 3 items: [dtype, shape, data_offsets]");
      this.p++;
      return;
    }
    if (c !== LBRACE) throw this.inTensor(name, `its entry must be an object with dtype, shape and data_offsets; it is ${this.kindOf(c)}`);
    this.p++;
    if (this.ws() === RBRACE) this.p++;
    else {
      for (;;) {
        if (this.ws() !== QUOTE) throw this.syntax("expected a field name (a string)");
        this.scanString();
        const field = this.field();
        this.colon();
        if (field === FIELD_DTYPE ? this.dtype !== undefined : field === FIELD_SHAPE ? this.shape !== undefined : field === FIELD_OFFSETS && offsets) {
          throw this.inTensor(name, `field ${FIELD_NAMES[field]} appears twice (the Rust reader refuses a repeated field)`);
        }
        if (field === FIELD_DTYPE) this.dtype = this.readDtype(name);
        else if (field === FIELD_SHAPE) this.shape = this.readShape(name);
        else if (field === FIELD_OFFSETS) {
          this.readOffsets(name);
          offsets = true;
        } else {
          this.skipValue(2); // an unknown field, ignored as serde ignores it; its value sits in the tensor's object, depth 2
        }
        if (this.nextMember(RBRACE, "a field")) break;
      }
    }
    if (this.dtype === undefined || this.shape === undefined || !offsets) {
      const missing = [this.dtype === undefined ? "dtype" : "", this.shape === undefined ? "shape" : "", offsets ? "" : "data_offsets"];
      throw this.inTensor(name, `it has no ${missing.filter((m) => m !== "").join(", ")}; a tensor has dtype, shape and data_offsets`);
    }
  }

  /** Which TensorInfo field the string just scanned names: FIELD_*, or 0 for another. */
  private field(): number {
    if (this.strEscaped) {
      const i = FIELD_NAMES.indexOf(this.stringValue());
      return i < 0 ? 0 : i;
    }
    const length = this.strEnd - this.strStart;
    for (let f = 1; f < FIELD_BYTES.length; f++) {
      const want = FIELD_BYTES[f];
      if (want.length !== length) continue;
      let same = true;
      for (let i = 0; i < length && same; i++) same = this.b[this.strStart + i] === want[i];
      if (same) return f;
    }
    return 0;
  }

  private listComma(name: string): void {
    if (this.ws() !== COMMA) throw this.inTensor(name, "a tensor written as a list has exactly 3 items: [dtype, shape, data_offsets]");
    this.p++;
  }

  private readDtype(name: string): T {
    const c = this.ws();
    if (c === QUOTE) return this.dtypeName(name);
    if (c === LBRACE) {
      // serde reads a unit enum variant from {"F32": null} too.
      this.p++;
      if (this.ws() !== QUOTE) throw this.inTensor(name, 'a dtype written as an object is {"NAME": null}');
      const t = this.dtypeName(name);
      this.colon();
      if (this.ws() !== NULL[0]) throw this.inTensor(name, 'a dtype written as an object is {"NAME": null}');
      this.literal(NULL);
      if (this.ws() !== RBRACE) throw this.inTensor(name, 'a dtype written as an object is {"NAME": null}, with one key');
      this.p++;
      return t;
    }
    throw this.inTensor(name, `dtype must be a string such as "F32"; it is ${this.kindOf(c)}`);
  }

  private dtypeName(name: string): T {
    this.scanString();
    const code = this.stringValue();
    const t = this.dtypes.get(code);
    if (t === undefined) {
      throw this.inTensor(name, `unknown dtype ${quoteBounded(code)}; safetensors defines ${[...this.dtypes.keys()].join(", ")}`, "UNKNOWN_DTYPE");
    }
    return t;
  }

  private readShape(name: string): number[] {
    const c = this.ws();
    if (c !== LBRACKET) throw this.inTensor(name, `shape must be a list of unsigned integers; it is ${this.kindOf(c)}`);
    this.p++;
    // Gathered in a reused array and copied out at their exact length: an array grown by push
    // keeps room for 17 elements, 150 bytes per tensor of a million.
    const dims = this.dims;
    dims.length = 0;
    if (this.ws() === RBRACKET) {
      this.p++;
      return [];
    }
    for (;;) {
      const d = this.readUint(name, "shape");
      if (d < 0) {
        throw this.inTensor(
          name,
          d === OVER_2_53
            ? `shape has the dimension ${this.numberText()}, above 2^53 - 1, which tensorcast cannot represent`
            : `shape has ${this.numberText()}, which is not an unsigned 64-bit integer`,
          "INVALID_SHAPE",
        );
      }
      dims.push(d);
      const after = this.ws();
      this.p++;
      if (after === RBRACKET) return dims.slice();
      if (after !== COMMA) {
        this.p--;
        throw this.syntax("expected , or ] in shape");
      }
    }
  }

  /** Reads data_offsets into `begin` and `end`. */
  private readOffsets(name: string): void {
    if (this.ws() !== LBRACKET) throw this.wrongOffsets(name);
    this.p++;
    this.begin = this.readOffset(name);
    if (this.ws() !== COMMA) throw this.wrongOffsets(name);
    this.p++;
    this.end = this.readOffset(name);
    if (this.ws() !== RBRACKET) throw this.wrongOffsets(name);
    this.p++;
  }

  private wrongOffsets(name: string): TensorcastError {
    return this.inTensor(name, "data_offsets must be a list of two unsigned integers [begin, end]");
  }

  private readOffset(name: string): number {
    const v = this.readUint(name, "data_offsets");
    if (v >= 0) return v;
    throw this.inTensor(
      name,
      v === OVER_2_53
        ? `data_offsets has ${this.numberText()}, past the end of any file (2^53 bytes)`
        : `data_offsets has ${this.numberText()}, which is not an unsigned 64-bit integer`,
    );
  }

  /**
   * An element of shape or data_offsets: a usize, which serde_json makes only of an integer
   * literal without sign, fraction or exponent ("4.0", "4e0", "-0" are floats to it).
   * @returns the value, OVER_2_53 or OVER_U64.
   */
  private readUint(name: string, where: "shape" | "data_offsets"): number {
    const c = this.ws();
    const code: ErrorCode = where === "shape" ? "INVALID_SHAPE" : "INVALID_DATA";
    if (c === RBRACKET) throw this.syntax("a trailing comma");
    // A value of another kind is a header of the wrong structure, not a bad dimension.
    if (c !== MINUS && !isDigit(c)) {
      const kind = this.kindOf(c);
      throw where === "shape" ? this.inTensor(name, `shape must be a list of unsigned integers; it has ${kind}`) : this.wrongOffsets(name);
    }
    this.scanNumber();
    if (this.numNegative || this.fracStart >= 0 || this.expStart >= 0) {
      throw this.inTensor(
        name,
        `${where} has ${this.numberText()}; ${where === "shape" ? "dimensions" : "offsets"} are unsigned integers written without sign, fraction or exponent`,
        code,
      );
    }
    const digits = this.intEnd - this.intStart;
    if (digits <= 15) {
      let v = 0;
      for (let i = this.intStart; i < this.intEnd; i++) v = v * 10 + (this.b[i] - ZERO);
      return v;
    }
    if (digits > 20) return OVER_U64;
    const v = BigInt(this.numberText());
    return v > MAX_U64 ? OVER_U64 : v > BigInt(Number.MAX_SAFE_INTEGER) ? OVER_2_53 : Number(v);
  }

  // ---- JSON ----

  /** Skips spaces, tabs, CR and LF; returns the byte there, or -1 at the end. */
  private ws(): number {
    const b = this.b;
    let p = this.p;
    while (p < b.length) {
      const c = b[p];
      if (c !== 0x20 && c !== 0x0a && c !== 0x09 && c !== 0x0d) {
        this.p = p;
        return c;
      }
      p++;
    }
    this.p = p;
    return -1;
  }

  private colon(): void {
    if (this.ws() !== COLON) throw this.syntax("expected :");
    this.p++;
  }

  /** A member's key, decoded, and the colon after it. */
  private key(what: string): string {
    if (this.ws() !== QUOTE) throw this.syntax(`expected ${what} (a string)`);
    this.scanString();
    const key = this.stringValue();
    this.colon();
    return key;
  }

  /**
   * After a member or element: true at the `close` byte (consumed), false after a comma that a
   * further member follows.
   */
  private nextMember(close: number, what: string): boolean {
    const c = this.ws();
    this.p++;
    if (c === close) return true;
    if (c === COMMA) {
      if (this.ws() === close) throw this.syntax("a trailing comma");
      return false;
    }
    this.p--;
    throw this.syntax(`expected , or ${String.fromCharCode(close)} after ${what}`);
  }

  private literal(word: readonly number[]): void {
    for (let i = 0; i < word.length; i++) {
      if (this.b[this.p + i] !== word[i]) {
        this.p += i;
        throw this.syntax(`expected ${String.fromCharCode(...word)}`);
      }
    }
    this.p += word.length;
  }

  /** Scans the string at `p` (a quote), checking its escapes; `stringValue()` then decodes it. */
  private scanString(): void {
    const b = this.b;
    const n = b.length;
    let p = this.p + 1;
    const start = p;
    let escaped = false;
    for (;;) {
      if (p >= n) {
        this.p = p;
        throw this.syntax("a string that is not closed");
      }
      const c = b[p];
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        escaped = true;
        p = this.escape(p);
      } else if (c < 0x20) {
        this.p = p;
        throw this.syntax(`a raw control character (U+${c.toString(16).padStart(4, "0").toUpperCase()}) in a string; JSON writes it escaped`);
      } else if (c >= 0x80) {
        p = this.utf8(p);
      } else {
        p++;
      }
    }
    this.strStart = start;
    this.strEnd = p;
    this.strEscaped = escaped;
    this.p = p + 1;
  }

  /**
   * Checks the UTF-8 sequence at `p` (well-formed by Unicode's table 3-7: no overlong forms, no
   * surrogates, nothing above U+10FFFF, as Rust's str requires); returns where it ends. Outside
   * strings any byte above 0x7F is a JSON error anyway, so the header is valid UTF-8 once parsed.
   */
  private utf8(p: number): number {
    const b = this.b;
    const lead = utf8Lead(b[p]);
    const more = lead & 0xff;
    let ok = lead !== UTF8_BAD_LEAD && b[p + 1] >= ((lead >> 8) & 0xff) && b[p + 1] <= lead >>> 16;
    for (let k = 2; k <= more && ok; k++) ok = b[p + k] >= 0x80 && b[p + k] <= 0xbf;
    if (!ok) throw new TensorcastError("INVALID_DATA", `${this.file}: the header is not valid UTF-8 (at byte ${p} of the header)`);
    return p + more + 1;
  }

  /** Checks the escape at `p` (a backslash); returns where it ends. */
  private escape(p: number): number {
    const c = this.b[p + 1];
    if (c === QUOTE || c === BACKSLASH || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) return p + 2;
    if (c !== 0x75) {
      this.p = p;
      throw this.syntax("an invalid escape in a string");
    }
    const unit = this.hex4(p + 2);
    if (unit >= 0xdc00 && unit <= 0xdfff) {
      this.p = p;
      throw this.syntax(`a lone surrogate \\u${unit.toString(16)} in a string (serde_json refuses unpaired surrogates)`);
    }
    if (unit < 0xd800 || unit > 0xdbff) return p + 6;
    if (this.b[p + 6] !== BACKSLASH || this.b[p + 7] !== 0x75) {
      this.p = p;
      throw this.syntax(`a lone surrogate \\u${unit.toString(16)} in a string (serde_json refuses unpaired surrogates)`);
    }
    const low = this.hex4(p + 8);
    if (low < 0xdc00 || low > 0xdfff) {
      this.p = p;
      throw this.syntax(`a lone surrogate \\u${unit.toString(16)} in a string (serde_json refuses unpaired surrogates)`);
    }
    return p + 12;
  }

  private hex4(p: number): number {
    let v = 0;
    for (let i = p; i < p + 4; i++) {
      const c = this.b[i];
      const d = c >= ZERO && c <= NINE ? c - ZERO : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
      if (d < 0) {
        this.p = Math.min(i, this.b.length);
        throw this.syntax("a \\u escape needs 4 hexadecimal digits");
      }
      v = v * 16 + d;
    }
    return v;
  }

  /** The value of the string last scanned. */
  private stringValue(): string {
    if (!this.strEscaped) return this.raw(this.strStart, this.strEnd);
    const b = this.b;
    const parts: string[] = [];
    let run = this.strStart;
    let p = run;
    while (p < this.strEnd) {
      if (b[p] !== BACKSLASH) {
        p++;
        continue;
      }
      if (p > run) parts.push(this.raw(run, p));
      const c = b[p + 1];
      if (c === 0x75) {
        const unit = this.hex4(p + 2);
        if (unit >= 0xd800 && unit <= 0xdbff) {
          parts.push(String.fromCharCode(unit, this.hex4(p + 8)));
          p += 12;
        } else {
          parts.push(String.fromCharCode(unit));
          p += 6;
        }
      } else {
        parts.push(c === 0x62 ? "\b" : c === 0x66 ? "\f" : c === 0x6e ? "\n" : c === 0x72 ? "\r" : c === 0x74 ? "\t" : String.fromCharCode(c));
        p += 2;
      }
      run = p;
    }
    if (p > run) parts.push(this.raw(run, p));
    return parts.join("");
  }

  /** bytes [from, to), already known to be valid UTF-8. */
  private raw(from: number, to: number): string {
    const b = this.b;
    if (to - from <= 64) {
      let ascii = true;
      for (let i = from; i < to && ascii; i++) ascii = b[i] < 0x80;
      if (ascii) return String.fromCharCode.apply(null, b.subarray(from, to) as unknown as number[]);
    }
    rawDecoder ??= new TextDecoder("utf-8", { ignoreBOM: true });
    return rawDecoder.decode(b.subarray(from, to));
  }

  /** Scans the number at `p` by JSON's grammar, recording where its parts are. */
  private scanNumber(): void {
    const b = this.b;
    let p = this.p;
    this.numStart = p;
    this.numNegative = b[p] === MINUS;
    if (this.numNegative) p++;
    this.intStart = p;
    if (!isDigit(b[p])) {
      this.p = p;
      throw this.syntax("a minus sign without digits");
    }
    if (b[p] === ZERO) {
      p++;
      if (isDigit(b[p])) {
        this.p = p;
        throw this.syntax("a number with a leading zero");
      }
    } else {
      while (isDigit(b[p])) p++;
    }
    this.intEnd = p;
    this.fracStart = this.fracEnd = this.expStart = this.expEnd = -1;
    if (b[p] === DOT) {
      p++;
      if (!isDigit(b[p])) {
        this.p = p;
        throw this.syntax("a decimal point without digits after it");
      }
      this.fracStart = p;
      while (isDigit(b[p])) p++;
      this.fracEnd = p;
    }
    if (b[p] === 0x65 || b[p] === 0x45) {
      p++;
      this.expNegative = b[p] === MINUS;
      if (b[p] === MINUS || b[p] === PLUS) p++;
      if (!isDigit(b[p])) {
        this.p = p;
        throw this.syntax("an exponent without digits");
      }
      this.expStart = p;
      while (isDigit(b[p])) p++;
      this.expEnd = p;
    }
    this.p = p;
  }

  /** The number last scanned, as written (at most a bounded prefix). */
  private numberText(): string {
    const end = Math.min(this.p, this.numStart + QUOTE_LIMIT);
    return String.fromCharCode.apply(null, this.b.subarray(this.numStart, end) as unknown as number[]) + (end < this.p ? "..." : "");
  }

  /**
   * Skips one value of any kind, checking it as serde_json would while keeping it (serde buffers
   * a tensor's unknown fields before it ignores them): grammar, strings, nesting depth, and
   * floats that overflow. `depth` is the number of containers around the value.
   */
  private skipValue(depth: number): void {
    const closers: number[] = [];
    for (;;) {
      const c = this.ws();
      if (c === LBRACE || c === LBRACKET) {
        if (depth + closers.length + 1 > MAX_JSON_DEPTH) {
          throw this.syntax(`arrays and objects nested more than ${MAX_JSON_DEPTH} deep (serde_json's limit)`);
        }
        const close = c === LBRACE ? RBRACE : RBRACKET;
        this.p++;
        if (this.ws() === close) this.p++;
        else {
          closers.push(close);
          if (close === RBRACE) this.key("a key");
          continue;
        }
      } else if (c === QUOTE) {
        this.scanString();
      } else if (c === MINUS || isDigit(c)) {
        this.scanNumber();
        if (this.floatOverflows()) throw this.syntax(`the number ${this.numberText()} is out of range (serde_json refuses a float that overflows)`);
      } else if (c === TRUE[0]) this.literal(TRUE);
      else if (c === FALSE[0]) this.literal(FALSE);
      else if (c === NULL[0]) this.literal(NULL);
      else throw this.syntax(`expected a value, found ${describe(c)}`);
      // After a value: close what ends here, up to a comma or the end of the outermost value.
      for (;;) {
        if (closers.length === 0) return;
        const close = closers[closers.length - 1];
        if (!this.nextMember(close, "a value")) {
          if (close === RBRACE) this.key("a key");
          break;
        }
        closers.pop();
      }
    }
  }

  /**
   * Whether serde_json (without its float_roundtrip feature, as safetensors builds it) refuses the
   * number last scanned as out of range. It keeps up to 19-20 significant digits in a u64 (later
   * integer digits count as powers of ten, later fraction digits are dropped), then multiplies by
   * a table power of ten: only an exponent of 289 or more can overflow.
   */
  private floatOverflows(): boolean {
    const b = this.b;
    const intDigits = this.intEnd - this.intStart;
    if (this.expStart < 0 && intDigits < 300) return false;
    if (this.expStart >= 0 && !this.expNegative && this.expEnd - this.expStart <= 3) {
      let e = 0;
      for (let i = this.expStart; i < this.expEnd; i++) e = e * 10 + (b[i] - ZERO);
      if (intDigits + e < 289) return false;
    } else if (this.expStart >= 0 && this.expNegative && intDigits < 289) {
      return false;
    }
    let sig = 0n;
    let exponent = 0;
    let i = this.intStart;
    for (; i < this.intEnd; i++) {
      const next = sig * 10n + BigInt(b[i] - ZERO);
      if (next > MAX_U64) break;
      sig = next;
    }
    exponent += this.intEnd - i;
    if (this.fracStart >= 0) {
      let j = this.fracStart;
      if (sig === 0n) {
        while (j < this.fracEnd && b[j] === ZERO) j++;
        exponent -= j - this.fracStart;
      }
      for (; j < this.fracEnd; j++) {
        const next = sig * 10n + BigInt(b[j] - ZERO);
        if (next > MAX_U64) break;
        sig = next;
        exponent--;
      }
    }
    if (this.expStart >= 0) {
      let e = 0;
      for (let k = this.expStart; k < this.expEnd; k++) {
        const d = b[k] - ZERO;
        if (e * 10 + d > 2147483647) return sig !== 0n && !this.expNegative;
        e = e * 10 + d;
      }
      exponent = Math.max(-2147483648, Math.min(2147483647, this.expNegative ? exponent - e : exponent + e));
    }
    if (exponent < 0) return false;
    if (exponent > 308) return sig !== 0n;
    return !Number.isFinite(Number(sig) * pow10(exponent));
  }

  // ---- errors ----

  /** What the value starting with `c` is, for a message; a syntax error when no value starts there. */
  private kindOf(c: number): string {
    const starts = c === QUOTE || c === LBRACE || c === LBRACKET || c === MINUS || isDigit(c) || c === TRUE[0] || c === FALSE[0] || c === NULL[0];
    if (!starts) throw this.syntax(`expected a value, found ${describe(c)}`);
    return describe(c);
  }

  private syntax(what: string): TensorcastError {
    return new TensorcastError("INVALID_DATA", `${this.file}: the header is not valid JSON: ${what} (at byte ${this.p} of the header)`);
  }

  private invalid(what: string): TensorcastError {
    return new TensorcastError("INVALID_DATA", `${this.file}: ${what}`);
  }

  private inTensor(name: string, what: string, code: ErrorCode = "INVALID_DATA"): TensorcastError {
    return new TensorcastError(code, `${this.file}: tensor ${quoteBounded(name)}: ${what}`);
  }
}

let POW10: number[] | undefined;

/** serde_json's table of powers of ten: 1e0 ... 1e308, each the double nearest. */
function pow10(k: number): number {
  POW10 ??= Array.from({ length: 309 }, (_, i) => Number(`1e${i}`));
  return POW10[k];
}
