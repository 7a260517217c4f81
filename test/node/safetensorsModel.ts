/**
 * An independent model of which safetensors headers the Rust reader accepts, for tests, written
 * from the published rules rather than from src/: the header is decoded as UTF-8 (Rust's
 * str::from_utf8), parsed by a small recursive-descent JSON parser into a value tree the way
 * serde_json builds serde's `Content` (numbers become u64, i64 or f64 by serde_json's rules), and
 * the tree is then read into the Rust reader's types (HashMetadata, TensorInfo, Dtype) with
 * serde's derive semantics, and validated as `Metadata::validate` does.
 *
 * Recursion here is safe: the depth limit (serde_json's 128) is checked before descending.
 */

type Content =
  | { readonly kind: "null" | "bool" | "i64" | "f64" }
  | { readonly kind: "u64"; readonly value: bigint }
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "seq"; readonly items: Content[] }
  | { readonly kind: "map"; readonly entries: [string, Content][] };

export interface ModelTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: bigint[];
  readonly begin: bigint;
  readonly end: bigint;
}

export type Verdict =
  | { readonly ok: true; readonly metadata?: Record<string, string>; readonly tensors: ModelTensor[] }
  | { readonly ok: false; readonly why: string };

const DTYPE_BITS: Record<string, number> = {
  BOOL: 8, F4: 4, F6_E2M3: 6, F6_E3M2: 6, U8: 8, I8: 8, F8_E5M2: 8, F8_E4M3: 8, F8_E8M0: 8, F8_E4M3FNUZ: 8,
  F8_E5M2FNUZ: 8, I16: 16, U16: 16, F16: 16, BF16: 16, I32: 32, U32: 32, F32: 32, C64: 64, F64: 64, I64: 64, U64: 64,
};
const U64_MAX = (1n << 64n) - 1n;

class Refused extends Error {}

function refuse(why: string): never {
  throw new Refused(why);
}

/** What the Rust reader says of a file whose header is `header` followed by `dataLength` bytes. */
export function modelVerdict(header: Uint8Array, dataLength: number): Verdict {
  try {
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(header);
    } catch {
      refuse("not UTF-8");
    }
    const root = new JsonParser(text).document();
    return { ok: true, ...readHeader(root, BigInt(dataLength)) };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, why: e.message };
    throw e;
  }
}

class JsonParser {
  private i = 0;
  constructor(private readonly s: string) {}

  document(): Content {
    const v = this.value(0);
    this.space();
    if (this.i < this.s.length) refuse("trailing characters");
    return v;
  }

  private space(): void {
    while (this.i < this.s.length && " \t\n\r".includes(this.s[this.i])) this.i++;
  }

  private value(depth: number): Content {
    this.space();
    const ch = this.s[this.i];
    if (ch === "{" || ch === "[") {
      if (depth + 1 >= 128) refuse("recursion limit exceeded");
      return ch === "{" ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (ch === '"') return { kind: "string", value: this.string() };
    for (const [word, kind] of [["true", "bool"], ["false", "bool"], ["null", "null"]] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return { kind };
      }
    }
    const m = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?/.exec(this.s.slice(this.i, this.i + 200_000));
    if (!m) refuse("expected value");
    this.i += m[0].length;
    return serdeNumber(m[1] === "-", m[2], m[3], m[4], m[5]);
  }

  private object(depth: number): Content {
    this.i++;
    const entries: [string, Content][] = [];
    this.space();
    if (this.s[this.i] === "}") {
      this.i++;
      return { kind: "map", entries };
    }
    for (;;) {
      this.space();
      if (this.s[this.i] !== '"') refuse("expected a key");
      const key = this.string();
      this.space();
      if (this.s[this.i++] !== ":") refuse("expected :");
      entries.push([key, this.value(depth)]);
      this.space();
      const next = this.s[this.i++];
      if (next === "}") return { kind: "map", entries };
      if (next !== ",") refuse("expected , or }");
    }
  }

  private array(depth: number): Content {
    this.i++;
    const items: Content[] = [];
    this.space();
    if (this.s[this.i] === "]") {
      this.i++;
      return { kind: "seq", items };
    }
    for (;;) {
      items.push(this.value(depth));
      this.space();
      const next = this.s[this.i++];
      if (next === "]") return { kind: "seq", items };
      if (next !== ",") refuse("expected , or ]");
    }
  }

  private string(): string {
    this.i++;
    let out = "";
    for (;;) {
      if (this.i >= this.s.length) refuse("EOF in a string");
      const ch = this.s[this.i++];
      if (ch === '"') return out;
      if (ch < " ") refuse("control character in a string");
      if (ch !== "\\") {
        out += ch;
        continue;
      }
      const e = this.s[this.i++];
      const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (e in simple) {
        out += simple[e];
        continue;
      }
      if (e !== "u") refuse("invalid escape");
      const unit = this.hex();
      if (unit >= 0xdc00 && unit <= 0xdfff) refuse("lone trailing surrogate");
      if (unit >= 0xd800 && unit <= 0xdbff) {
        if (this.s.slice(this.i, this.i + 2) !== "\\u") refuse("lone leading surrogate");
        this.i += 2;
        const low = this.hex();
        if (low < 0xdc00 || low > 0xdfff) refuse("lone leading surrogate");
        out += String.fromCharCode(unit, low);
      } else {
        out += String.fromCharCode(unit);
      }
    }
  }

  private hex(): number {
    const h = this.s.slice(this.i, this.i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) refuse("invalid escape");
    this.i += 4;
    return parseInt(h, 16);
  }
}

/**
 * A number as serde_json (without float_roundtrip) classifies it: an integer literal is u64 when it
 * fits, i64 when negative and it fits (but -0 is a float); anything else is an f64 made from at most
 * the u64-sized prefix of its digits and a power of ten, refused when that overflows.
 */
function serdeNumber(negative: boolean, int: string, frac: string | undefined, expSign: string | undefined, expDigits: string | undefined): Content {
  if (frac === undefined && expDigits === undefined) {
    const v = BigInt(int);
    if (!negative && v <= U64_MAX) return { kind: "u64", value: v };
    if (negative && v !== 0n && v <= 1n << 63n) return { kind: "i64" };
  }
  // The significand takes digits while it stays within u64; later integer digits scale it by 10.
  let significand = 0n;
  let exponent = 0;
  let k = 0;
  while (k < int.length && significand * 10n + BigInt(int[k]) <= U64_MAX) significand = significand * 10n + BigInt(int[k++]);
  exponent += int.length - k;
  for (const d of frac ?? "") {
    if (significand * 10n + BigInt(d) > U64_MAX) break;
    significand = significand * 10n + BigInt(d);
    exponent -= 1;
  }
  if (expDigits !== undefined) {
    const e = BigInt(expDigits);
    if (e > 2147483647n) {
      if (significand !== 0n && expSign !== "-") refuse("number out of range");
      return { kind: "f64" };
    }
    exponent = Math.max(-2147483648, Math.min(2147483647, expSign === "-" ? exponent - Number(e) : exponent + Number(e)));
  }
  if (exponent < 0) return { kind: "f64" };
  if (exponent > 308) {
    if (significand !== 0n) refuse("number out of range");
    return { kind: "f64" };
  }
  if (!Number.isFinite(Number(significand) * Number(`1e${exponent}`))) refuse("number out of range");
  return { kind: "f64" };
}

function readHeader(root: Content, dataLength: bigint): { metadata?: Record<string, string>; tensors: ModelTensor[] } {
  if (root.kind !== "map") refuse("not a map");
  let metadataSeen = false;
  let metadata: Record<string, string> | undefined;
  const tensors = new Map<string, ModelTensor>();
  for (const [key, value] of root.entries) {
    if (key === "__metadata__") {
      if (metadataSeen) refuse("duplicate field __metadata__");
      metadataSeen = true;
      if (value.kind === "null") continue;
      if (value.kind !== "map") refuse("metadata not a map");
      const m = new Map<string, string>();
      for (const [k, v] of value.entries) {
        if (v.kind !== "string") refuse("metadata value not a string");
        m.set(k, v.value);
      }
      metadata = Object.fromEntries(m);
    } else {
      tensors.set(key, tensorInfo(key, value));
    }
  }
  // Metadata::validate: sorted by (begin, end), each starting where the last ended, sizes exact.
  const list = [...tensors.values()].sort((a, b) => (a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : a.end < b.end ? -1 : a.end > b.end ? 1 : 0));
  let start = 0n;
  for (const t of list) {
    if (t.begin !== start || t.end < t.begin) refuse("invalid offset");
    start = t.end;
    let elements = 1n;
    for (const d of t.shape) {
      elements *= d;
      if (elements > U64_MAX) refuse("validation overflow");
    }
    const bits = elements * BigInt(DTYPE_BITS[t.dtype]);
    if (bits > U64_MAX) refuse("validation overflow");
    if (bits % 8n !== 0n) refuse("misaligned slice");
    if (t.end - t.begin !== bits / 8n) refuse("tensor invalid info");
  }
  if (start !== dataLength) refuse("metadata incomplete buffer");
  return { metadata, tensors: list };
}

function tensorInfo(name: string, v: Content): ModelTensor {
  let fields: (Content | undefined)[];
  if (v.kind === "seq") {
    if (v.items.length !== 3) refuse("a TensorInfo list needs 3 items");
    fields = v.items;
  } else if (v.kind === "map") {
    fields = [undefined, undefined, undefined];
    for (const [k, x] of v.entries) {
      const at = ["dtype", "shape", "data_offsets"].indexOf(k);
      if (at < 0) continue;
      if (fields[at] !== undefined) refuse(`duplicate field ${k}`);
      fields[at] = x;
    }
    if (fields.includes(undefined)) refuse("missing field");
  } else {
    refuse("not a TensorInfo");
  }
  const [dtype, shape, offsets] = fields as Content[];
  const usize = (c: Content): bigint => (c.kind === "u64" ? c.value : refuse("not a usize"));
  if (shape.kind !== "seq") refuse("shape not a list");
  if (offsets.kind !== "seq" || offsets.items.length !== 2) refuse("data_offsets not a pair");
  return { name, dtype: dtypeName(dtype), shape: shape.items.map(usize), begin: usize(offsets.items[0]), end: usize(offsets.items[1]) };
}

function dtypeName(c: Content): string {
  let variant: Content = c;
  if (c.kind === "map") {
    if (c.entries.length !== 1) refuse("an enum map needs one key");
    if (c.entries[0][1].kind !== "null") refuse("a unit variant's value is null");
    variant = { kind: "string", value: c.entries[0][0] };
  }
  if (variant.kind !== "string" || !(variant.value in DTYPE_BITS)) refuse("unknown dtype");
  return variant.value;
}
