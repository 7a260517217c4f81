/**
 * The GGUF class of the fuzz suite: mutated GGUF files. Seeds are gguf-py's files
 * (test/fixtures/gguf/files and reader/, a split model's three parts among them) and one file of
 * every stored block type built from ggml's own blocks (test/fixtures/gguf/dequant). Each seed is
 * scanned here, independently of the reader under test, into its fields and their byte positions,
 * so that a case is either
 *   - structured: the file taken apart into key-value pairs and tensors, one of them changed
 *     (duplicate keys, keys and names with NUL or bytes that are not UTF-8, general.alignment and
 *     split.* keys given other values and types, type ids, dimensions, tensor order, data bytes,
 *     padding) and laid out again with consistent offsets, so the change reaches the checks past
 *     the first broken field;
 *   - a poke: one field of the file as it is set to an edge value (counts, string lengths, value
 *     and array item types, array counts, dimension counts, dimensions, GGML type ids, offsets),
 *     or bytes flipped, dropped or repeated, or the file cut short;
 *   - random bytes, with or without GGUF's magic and version.
 * Case N is the same file(s) on every run (seeded by its index).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Rng } from "../support/rng.js";
import { Bytes } from "../io/gguf/build.js";
import { ROOT } from "./seeds.js";

export interface GgufCaseFile {
  /** File name inside the case's folder. */
  readonly name: string;
  readonly bytes: Uint8Array;
}

export interface GgufCase {
  readonly label: string;
  /** Every file of the case (a split model's parts, one of them mutated), in part order. */
  readonly files: readonly GgufCaseFile[];
  /** The one to open (a split model may be opened by any part). */
  readonly open: string;
}

const FIXTURES = join(ROOT, "test", "fixtures", "gguf");

/** ggml's blck_size and type_size per type id, as libggml-base reports them (0: removed or unknown). */
const GGML_SIZES: ReadonlyMap<number, readonly [number, number]> = new Map(([
  [0, [1, 4]], [1, [1, 2]], [2, [32, 18]], [3, [32, 20]], [6, [32, 22]], [7, [32, 24]], [8, [32, 34]], [9, [32, 36]],
  [10, [256, 84]], [11, [256, 110]], [12, [256, 144]], [13, [256, 176]], [14, [256, 210]], [15, [256, 292]],
  [16, [256, 66]], [17, [256, 74]], [18, [256, 98]], [19, [256, 50]], [20, [32, 18]], [21, [256, 110]], [22, [256, 82]],
  [23, [256, 136]], [24, [1, 1]], [25, [1, 2]], [26, [1, 4]], [27, [1, 8]], [28, [1, 8]], [29, [256, 56]], [30, [1, 2]],
  [34, [256, 54]], [35, [256, 66]], [39, [32, 17]], [40, [64, 36]], [41, [128, 18]], [42, [64, 18]],
] as [number, [number, number]][]));

const DEQUANT_TYPES: readonly [string, number][] = [
  ["Q4_0", 2], ["Q4_1", 3], ["Q5_0", 6], ["Q5_1", 7], ["Q8_0", 8], ["Q2_K", 10], ["Q3_K", 11], ["Q4_K", 12], ["Q5_K", 13],
  ["Q6_K", 14], ["IQ2_XXS", 16], ["IQ2_XS", 17], ["IQ3_XXS", 18], ["IQ1_S", 19], ["IQ4_NL", 20], ["IQ3_S", 21], ["IQ2_S", 22],
  ["IQ4_XS", 23], ["IQ1_M", 29], ["TQ1_0", 34], ["TQ2_0", 35], ["MXFP4", 39], ["NVFP4", 40], ["Q1_0", 41],
];

/** GGUF value types: bytes of a fixed-size item (string 8 and array 12 are their fixed parts). */
const VALUE_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];
const T_U8 = 0, T_U16 = 2, T_U32 = 4, T_I32 = 5, T_STR = 8, T_ARR = 9, T_U64 = 10;

// ---------------------------------------------------------------------------------------------
// The scanner: a seed's fields and where each lies (the seeds are valid files).

interface KvField {
  /** Key length field. */
  readonly at: number;
  key: Uint8Array;
  readonly typeAt: number;
  type: number;
  /** The value's bytes as the file holds them (after the type field). */
  value: Uint8Array;
  readonly valueAt: number;
  /** Every string length and array item-type / count field inside the value. */
  readonly lengths: number[];
  readonly itemTypes: number[];
  readonly counts: number[];
}

interface TensorField {
  readonly at: number;
  name: Uint8Array;
  readonly nDimsAt: number;
  dims: bigint[];
  readonly dimAt: number[];
  typeId: number;
  readonly typeAt: number;
  readonly offsetAt: number;
  /** Set to write an offset other than the running padded sum. */
  offset?: bigint;
  data: Uint8Array;
}

interface Parsed {
  version: number;
  le: boolean;
  kv: KvField[];
  tensors: TensorField[];
  /** The alignment the data is laid out with (general.alignment of the seed, else 32). */
  alignment: number;
  /** Pad the last tensor's data to the alignment (gguf-py does; llama.cpp's loader does not need it). */
  padLast: boolean;
  /** Bytes after the data section. */
  trailing: Uint8Array;
}

class Scan {
  pos = 0;
  readonly v: DataView;
  constructor(readonly b: Uint8Array, readonly le: boolean) {
    this.v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
  u32(): number { const x = this.v.getUint32(this.pos, this.le); this.pos += 4; return x; }
  u64(): bigint { const x = this.v.getBigUint64(this.pos, this.le); this.pos += 8; return x; }
  i64(): bigint { const x = this.v.getBigInt64(this.pos, this.le); this.pos += 8; return x; }
  str(lengths: number[]): Uint8Array {
    lengths.push(this.pos);
    const n = Number(this.u64());
    const s = this.b.slice(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  value(type: number, f: { lengths: number[]; itemTypes: number[]; counts: number[] }): void {
    if (type === T_STR) this.str(f.lengths);
    else if (type === T_ARR) {
      f.itemTypes.push(this.pos);
      const item = this.u32();
      f.counts.push(this.pos);
      const n = Number(this.u64());
      if (item === T_STR || item === T_ARR) for (let i = 0; i < n; i++) this.value(item, f);
      else this.pos += n * VALUE_BYTES[item];
    } else this.pos += VALUE_BYTES[type];
  }
}

const pad = (x: number, a: number): number => Math.ceil(x / a) * a;

function bytesOf(typeId: number, dims: readonly bigint[]): number | undefined {
  const s = GGML_SIZES.get(typeId);
  if (!s) return undefined;
  const n = dims.reduce((a, b) => a * b, 1n);
  if (dims.length > 0 && dims[0] % BigInt(s[0]) !== 0n) return undefined;
  const bytes = (n / BigInt(s[0])) * BigInt(s[1]);
  return bytes <= 1n << 22n ? Number(bytes) : undefined;
}

export function parseGguf(given: Uint8Array): Parsed {
  // A plain copy: a Node Buffer's slice() is a view, and the fields below must be copies.
  const b = new Uint8Array(given);
  const le = (new DataView(b.buffer, b.byteOffset).getUint32(4, true) & 0xffff) !== 0;
  const s = new Scan(b, le);
  s.pos = 4;
  const version = s.u32();
  const nTensors = Number(s.u64());
  const nKv = Number(s.u64());
  const kv: KvField[] = [];
  let alignment = 32;
  for (let i = 0; i < nKv; i++) {
    const at = s.pos;
    const key = s.str([]);
    const typeAt = s.pos;
    const type = s.u32();
    const valueAt = s.pos;
    const f = { lengths: [] as number[], itemTypes: [] as number[], counts: [] as number[] };
    s.value(type, f);
    const value = b.slice(valueAt, s.pos);
    if (new TextDecoder().decode(key) === "general.alignment") alignment = new DataView(value.buffer, value.byteOffset).getUint32(0, le);
    kv.push({ at, key, typeAt, type, value, valueAt, ...f });
  }
  const tensors: TensorField[] = [];
  for (let i = 0; i < nTensors; i++) {
    const at = s.pos;
    const name = s.str([]);
    const nDimsAt = s.pos;
    const nDims = s.u32();
    const dimAt: number[] = [];
    const dims: bigint[] = [];
    for (let j = 0; j < nDims; j++) {
      dimAt.push(s.pos);
      dims.push(s.i64());
    }
    const typeAt = s.pos;
    const typeId = s.u32();
    const offsetAt = s.pos;
    s.u64();
    tensors.push({ at, name, nDimsAt, dims, dimAt, typeId, typeAt, offsetAt, data: new Uint8Array(0) });
  }
  const infosEnd = s.pos;
  const dataStart = nTensors > 0 ? pad(infosEnd, alignment) : infosEnd;
  let p = dataStart;
  let end = dataStart;
  for (const t of tensors) {
    const n = bytesOf(t.typeId, t.dims)!;
    t.data = b.slice(p, p + n);
    end = p + n;
    p = pad(p + n, alignment);
  }
  const padLast = tensors.length > 0 && b.length >= p;
  const tail = padLast ? p : end;
  return { version, le, kv, tensors, alignment, padLast, trailing: b.slice(tail) };
}

/** The file `p` describes, its offsets the running padded sum (or a tensor's own `offset`). */
export function layOut(p: Parsed): Uint8Array {
  const w = new Bytes(p.le);
  w.raw(new TextEncoder().encode("GGUF")).u32(p.version).u64(p.tensors.length).u64(p.kv.length);
  for (const e of p.kv) w.str(e.key).u32(e.type).raw(e.value);
  let running = 0;
  for (const t of p.tensors) {
    w.str(t.name).u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.typeId).u64(t.offset ?? running);
    running = pad(running + t.data.length, p.alignment);
  }
  const parts: Uint8Array[] = [w.bytes()];
  let at = parts[0].length;
  const zeros = (n: number): void => {
    parts.push(new Uint8Array(n));
    at += n;
  };
  if (p.tensors.length > 0) zeros(pad(at, p.alignment) - at);
  p.tensors.forEach((t, i) => {
    parts.push(t.data);
    at += t.data.length;
    if (i < p.tensors.length - 1 || p.padLast) zeros(pad(at, p.alignment) - at);
  });
  parts.push(p.trailing);
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------
// Seeds.

export interface GgufSeed {
  readonly name: string;
  /** One file, or a split model's parts in order. */
  readonly parts: readonly GgufCaseFile[];
}

function everyBlockType(): Uint8Array {
  const p: Parsed = { version: 3, le: true, kv: [], tensors: [], alignment: 32, padLast: true, trailing: new Uint8Array(0) };
  const str = (s: string): Uint8Array => new Bytes().str(s).bytes();
  p.kv.push({ at: 0, key: new TextEncoder().encode("general.architecture"), typeAt: 0, type: T_STR, value: str("llama"), valueAt: 0, lengths: [], itemTypes: [], counts: [] });
  for (const [name, id] of DEQUANT_TYPES) {
    const [block, size] = GGML_SIZES.get(id)!;
    const all = readFileSync(join(FIXTURES, "dequant", `${name}.bin`));
    const blocks = Math.min(3, all.length / size);
    const dims = blocks === 3 ? [BigInt(block), 3n] : [BigInt(block * blocks)];
    p.tensors.push({ at: 0, name: new TextEncoder().encode(`blk.${name.toLowerCase()}`), nDimsAt: 0, dims, dimAt: [], typeId: id, typeAt: 0, offsetAt: 0, data: all.subarray(0, blocks * size) });
  }
  return layOut(p);
}

export function ggufSeeds(): GgufSeed[] {
  const file = (dir: string, name: string): GgufSeed => ({ name: `${dir}/${name}`, parts: [{ name, bytes: new Uint8Array(readFileSync(join(FIXTURES, dir, name))) }] });
  const split = [1, 2, 3].map((k) => ({ name: `split-0000${k}-of-00003.gguf`, bytes: new Uint8Array(readFileSync(join(FIXTURES, "reader", `split-0000${k}-of-00003.gguf`))) }));
  // every-type.gguf without its arrays of arrays, which gguf.cpp refuses: the rest of it compared too.
  const everyType = parseGguf(readFileSync(join(FIXTURES, "reader", "every-type.gguf")));
  everyType.kv = everyType.kv.filter((e) => !(e.type === T_ARR && new DataView(e.value.buffer, e.value.byteOffset).getUint32(0, true) === T_ARR));
  return [
    { name: "every-type-flat.gguf", parts: [{ name: "every-type-flat.gguf", bytes: layOut(everyType) }] },
    file("files", "small.gguf"), file("files", "aligned64.gguf"), file("files", "big-endian.gguf"),
    file("reader", "every-type.gguf"), file("reader", "v2.gguf"), file("reader", "be-blocks.gguf"), file("reader", "be-blocks.le.gguf"),
    { name: "every-block-type.gguf", parts: [{ name: "every-block-type.gguf", bytes: everyBlockType() }] },
    { name: "reader/split (3 parts)", parts: split },
  ];
}

// ---------------------------------------------------------------------------------------------
// Mutations.

const COUNTS = [0n, 1n, 2n, 1n << 30n, (1n << 30n) + 1n, 1n << 40n, 1n << 62n, 1n << 63n, (1n << 64n) - 1n];
const DIMS = [0n, 1n, 2n, 3n, 31n, 32n, 256n, 1n << 31n, (1n << 53n) + 1n, 1n << 62n, (1n << 63n) - 1n, -1n, -(1n << 63n)];
const TYPE_IDS = [-1, 4, 5, 9, 15, 31, 33, 36, 38, 41, 42, 43, 44, 100, 0x7fffffff];
const ALIGNMENTS = [0, 1, 2, 3, 4, 8, 16, 24, 48, 64, 128, 4096, 1 << 16, 1 << 31, 0xffffffff];
const KEYS = ["general.alignment", "split.count", "split.no", "split.tensors.count", "general.name", "general.architecture", "tokenizer.ggml.tokens"];

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.below(xs.length)];

function randomBytes(rng: Rng, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => rng.u32() & 0xff);
}

/** A name or key as a fuzzer would spell it: NUL inside, not UTF-8, control characters, 63/64/0 bytes. */
function oddName(rng: Rng, base: Uint8Array): { bytes: Uint8Array; how: string } {
  switch (rng.below(7)) {
    case 0: {
      const i = rng.below(base.length + 1);
      return { bytes: Buffer.concat([base.subarray(0, i), Uint8Array.of(0), base.subarray(i)]), how: `a NUL at ${i}` };
    }
    case 1: return { bytes: Buffer.concat([base, Uint8Array.of(0)]), how: "a NUL at the end" };
    case 2: return { bytes: Buffer.concat([base, Uint8Array.of(pick(rng, [0x80, 0xc0, 0xff, 0xed]))]), how: "a byte that is not UTF-8" };
    case 3: return { bytes: Buffer.concat([enc("\u001b[31m"), base, enc("\r\u0007")]), how: "control characters" };
    case 4: return { bytes: enc("n".repeat(63)), how: "63 bytes" };
    case 5: return { bytes: enc("é".repeat(32)), how: "64 bytes" };
    default: return { bytes: new Uint8Array(0), how: "empty" };
  }
}

/** A value of GGUF type `type` in byte order `le`, sometimes odd (bool 2, empty arrays, nested arrays, NaN). */
function randomValue(rng: Rng, type: number, le: boolean, depth = 0): Uint8Array {
  const w = new Bytes(le);
  switch (type) {
    case T_STR: {
      const n = pick(rng, [0, 1, 5, 64, 300]);
      return w.str(rng.below(3) === 0 ? randomBytes(rng, n) : enc("v".repeat(n))).bytes();
    }
    case T_ARR: {
      const item = depth < 2 ? rng.below(13) : rng.below(9);
      const n = pick(rng, [0, 1, 3, 50]);
      w.u32(item).u64(n);
      for (let i = 0; i < n; i++) w.raw(randomValue(rng, item, le, depth + 1));
      return w.bytes();
    }
    case 7: return w.u8(pick(rng, [0, 1, 2, 255])).bytes();
    case 6: return w.f32(pick(rng, [NaN, -0, Infinity, 1.5])).bytes();
    case 12: return w.f64(pick(rng, [NaN, -0, -Infinity, 2 ** -1074])).bytes();
    default: return randomBytes(rng, VALUE_BYTES[type]);
  }
}

function kvEntry(key: Uint8Array, type: number, value: Uint8Array): KvField {
  return { at: 0, key, typeAt: 0, type, value, valueAt: 0, lengths: [], itemTypes: [], counts: [] };
}

function uint(le: boolean, type: number, v: number | bigint): Uint8Array {
  const w = new Bytes(le);
  switch (type) {
    case T_U8: return w.u8(Number(v)).bytes();
    case T_U16: return w.u16(Number(v)).bytes();
    case T_U32: return w.u32(Number(v)).bytes();
    case T_I32: return w.i32(Number(v)).bytes();
    default: return w.u64(v).bytes();
  }
}

/** A structured change of `p` (in place), described. */
function structured(rng: Rng, p: Parsed): string {
  const kvI = (): number => rng.below(p.kv.length);
  const tI = (): number => rng.below(p.tensors.length);
  switch (rng.below(14)) {
    case 0: {
      if (p.kv.length < 2) break;
      const i = kvI(), j = kvI();
      p.kv[j].key = p.kv[i].key;
      return `key ${j} renamed to key ${i}'s name (a duplicate when they differ)`;
    }
    case 1: {
      if (p.kv.length === 0) break;
      const i = kvI();
      const o = oddName(rng, p.kv[i].key);
      p.kv[i].key = o.bytes;
      return `key ${i}'s name given ${o.how}`;
    }
    case 2: {
      const type = rng.below(13);
      const key = rng.below(2) === 0 ? enc(pick(rng, KEYS)) : enc(`fuzz.k${rng.below(1000)}`);
      p.kv.splice(rng.below(p.kv.length + 1), 0, kvEntry(key, type, randomValue(rng, type, p.le)));
      return `a ${type === T_ARR ? "array" : `type-${type}`} pair ${JSON.stringify(new TextDecoder().decode(key))} added`;
    }
    case 3: {
      if (p.kv.length === 0) break;
      const i = kvI();
      const [removed] = p.kv.splice(i, 1);
      return `key ${i} (${JSON.stringify(new TextDecoder().decode(removed.key))}) removed`;
    }
    case 4: {
      const a = pick(rng, ALIGNMENTS);
      const type = rng.below(5) === 0 ? pick(rng, [T_U8, T_U16, T_I32, T_U64, T_STR]) : T_U32;
      const value = type === T_STR ? new Bytes(p.le).str(String(a)).bytes() : uint(p.le, type, a);
      const at = p.kv.findIndex((e) => new TextDecoder().decode(e.key) === "general.alignment");
      if (at >= 0) p.kv[at] = kvEntry(p.kv[at].key, type, value);
      else p.kv.push(kvEntry(enc("general.alignment"), type, value));
      const laid = rng.below(4) !== 0 && type === T_U32 && a > 0 && (a & (a - 1)) === 0 && a <= 4096;
      if (laid) p.alignment = a;
      return `general.alignment set to ${a} (type ${type}), data laid out on ${p.alignment}`;
    }
    case 5: {
      const key = pick(rng, ["split.count", "split.no", "split.tensors.count"]);
      const type = rng.below(4) === 0 ? pick(rng, [T_U8, T_U32, T_I32, T_U64]) : key === "split.tensors.count" ? T_I32 : T_U16;
      const v = pick(rng, [0, 1, 2, 3, p.tensors.length, p.tensors.length + 1, 65535, -1]);
      const at = p.kv.findIndex((e) => new TextDecoder().decode(e.key) === key);
      const e = kvEntry(enc(key), type, uint(p.le, type, BigInt.asUintN(64, BigInt(v))));
      if (at >= 0) p.kv[at] = e;
      else p.kv.splice(rng.below(p.kv.length + 1), 0, e);
      return `${key} set to ${v} (type ${type})`;
    }
    case 6: {
      if (p.tensors.length === 0) break;
      const i = tI();
      if (rng.below(2) === 0 && p.tensors.length > 1) {
        const j = tI();
        p.tensors[j].name = p.tensors[i].name;
        return `tensor ${j} renamed to tensor ${i}'s name`;
      }
      const o = oddName(rng, p.tensors[i].name);
      p.tensors[i].name = o.bytes;
      return `tensor ${i}'s name given ${o.how}`;
    }
    case 7: {
      if (p.tensors.length === 0) break;
      const t = p.tensors[tI()];
      const id = rng.below(2) === 0 ? rng.below(44) : pick(rng, TYPE_IDS);
      t.typeId = id;
      const s = GGML_SIZES.get(id);
      if (s && rng.below(4) !== 0) {
        const rows = rng.below(3) + 1;
        t.dims = [BigInt(s[0] * (rng.below(2) + 1)), BigInt(rows)];
        t.data = randomBytes(rng, bytesOf(id, t.dims)!);
        return `tensor type id ${id} with random blocks [${t.dims}]`;
      }
      return `tensor type id ${id}, data unchanged`;
    }
    case 8: {
      if (p.tensors.length === 0) break;
      const t = p.tensors[tI()];
      const how = rng.below(4);
      if (how === 0 && t.dims.length > 0) t.dims[rng.below(t.dims.length)] = pick(rng, DIMS);
      else if (how === 1) t.dims = t.dims.slice(0, rng.below(t.dims.length + 1));
      else if (how === 2) t.dims = [...t.dims, pick(rng, [1n, 2n, 0n])];
      else t.dims = [0n, pick(rng, DIMS)];
      const n = bytesOf(t.typeId, t.dims);
      if (n !== undefined && rng.below(3) !== 0) t.data = randomBytes(rng, n);
      return `tensor dims [${t.dims}]${n === undefined ? "" : ` (${n} bytes)`}`;
    }
    case 9: {
      if (p.tensors.length < 2) break;
      const i = tI(), j = tI();
      [p.tensors[i], p.tensors[j]] = [p.tensors[j], p.tensors[i]];
      return `tensors ${i} and ${j} swapped`;
    }
    case 10: {
      if (rng.below(2) === 0 && p.tensors.length > 0) {
        const i = tI();
        p.tensors.splice(i, 1);
        return `tensor ${i} removed`;
      }
      const n = pick(rng, [1, 2, 100]);
      for (let k = 0; k < n; k++) p.tensors.push({ at: 0, name: enc(`fuzz.t${k}`), nDimsAt: 0, dims: [0n], dimAt: [], typeId: pick(rng, [0, 2, 12, 30]), typeAt: 0, offsetAt: 0, data: new Uint8Array(0) });
      return `${n} empty tensors added`;
    }
    case 11: {
      if (p.tensors.length === 0) break;
      const t = p.tensors[tI()];
      const fill = rng.below(3);
      t.data = fill === 0 ? randomBytes(rng, t.data.length) : new Uint8Array(t.data.length).fill(fill === 1 ? 0xff : 0x7c);
      return `tensor data ${fill === 0 ? "random" : fill === 1 ? "all 0xff (NaN scales)" : "all 0x7c (inf scales)"}`;
    }
    case 12: {
      if (p.tensors.length === 0) break;
      const t = p.tensors[tI()];
      const a = BigInt(p.alignment);
      t.offset = pick(rng, [1n, a, -a, 2n * a, 1n << 63n, -1n]);
      t.offset = BigInt.asUintN(64, t.offset);
      return `a tensor's offset set to ${t.offset}`;
    }
    default: {
      const how = rng.below(4);
      if (how === 0) p.version = pick(rng, [0, 1, 2, 4, 0x10000, 0x03000000]);
      else if (how === 1) p.padLast = !p.padLast;
      else if (how === 2) p.trailing = randomBytes(rng, pick(rng, [1, 31, 4096]));
      else p.le = !p.le;
      return ["version set", "last padding toggled", "bytes appended", "byte order of the header flipped (values not)"][how];
    }
  }
  return "no change (nothing to change)";
}

/** Every field position of a file (counts, lengths, types, dims, offsets), as the scanner found them. */
function fieldsOf(p: Parsed): { kind: string; at: number; size: 4 | 8 }[] {
  const out: { kind: string; at: number; size: 4 | 8 }[] = [{ kind: "tensor count", at: 8, size: 8 }, { kind: "kv count", at: 16, size: 8 }];
  for (const e of p.kv) {
    out.push({ kind: "key length", at: e.at, size: 8 }, { kind: "value type", at: e.typeAt, size: 4 });
    for (const at of e.lengths) out.push({ kind: "string length", at, size: 8 });
    for (const at of e.itemTypes) out.push({ kind: "array item type", at, size: 4 });
    for (const at of e.counts) out.push({ kind: "array count", at, size: 8 });
  }
  for (const t of p.tensors) {
    out.push({ kind: "name length", at: t.at, size: 8 }, { kind: "dimension count", at: t.nDimsAt, size: 4 }, { kind: "ggml type", at: t.typeAt, size: 4 }, { kind: "offset", at: t.offsetAt, size: 8 });
    for (const at of t.dimAt) out.push({ kind: "dimension", at, size: 8 });
  }
  return out;
}

/** A byte-level change of `b` (a valid file, scanned as `p`). */
function poke(rng: Rng, b: Uint8Array, p: Parsed): { bytes: Uint8Array; how: string } {
  const a = Buffer.from(b);
  const v = new DataView(a.buffer, a.byteOffset, a.byteLength);
  const fields = fieldsOf(p);
  const headerEnd = Math.min(a.length, Math.max(...fields.map((f) => f.at + f.size)) + 8);
  switch (rng.below(6)) {
    case 0:
    case 1: {
      const f = pick(rng, fields);
      const old = f.size === 8 ? v.getBigUint64(f.at, p.le) : BigInt(v.getUint32(f.at, p.le));
      let value: bigint;
      if (f.kind === "ggml type") value = BigInt(pick(rng, TYPE_IDS));
      else if (f.kind === "value type" || f.kind === "array item type") value = BigInt(pick(rng, [0, 1, 4, 7, 8, 9, 10, 12, 13, 0xffffffff]));
      else if (f.kind === "dimension count") value = BigInt(pick(rng, [0, 1, 2, 3, 4, 5, 0xffffffff]));
      else if (f.kind === "dimension") value = BigInt.asUintN(64, pick(rng, DIMS));
      else if (rng.below(2) === 0) value = BigInt.asUintN(64, old + pick(rng, [-1n, 1n, -8n, 8n, 32n, -32n]));
      else value = pick(rng, [...COUNTS, BigInt(a.length - f.at), BigInt(a.length - f.at - 7)]);
      if (f.size === 8) v.setBigUint64(f.at, value, p.le);
      else v.setUint32(f.at, Number(BigInt.asUintN(32, value)), p.le);
      return { bytes: a, how: `${f.kind} at ${f.at}: ${old} -> ${value}` };
    }
    case 2: {
      const n = 1 + rng.below(8);
      for (let i = 0; i < n; i++) a[rng.below(headerEnd)] = rng.below(256);
      return { bytes: a, how: `${n} header bytes flipped` };
    }
    case 3: {
      const i = rng.below(a.length);
      const n = 1 + rng.below(64);
      return rng.below(2) === 0
        ? { bytes: Buffer.concat([a.subarray(0, i), a.subarray(i + n)]), how: `${n} bytes dropped at ${i}` }
        : { bytes: Buffer.concat([a.subarray(0, i + n), a.subarray(i)]), how: `${n} bytes at ${i} repeated` };
    }
    case 4: {
      const at = rng.below(2) === 0 ? pick(rng, fields).at + rng.below(9) : rng.below(a.length);
      return { bytes: a.subarray(0, at), how: `truncated to ${at} bytes` };
    }
    default: {
      const n = 1 + rng.below(16);
      for (let i = 0; i < n; i++) a[rng.below(a.length)] ^= 1 << rng.below(8);
      return { bytes: a, how: `${n} bits flipped anywhere` };
    }
  }
}

function randomFile(rng: Rng): { bytes: Uint8Array; how: string } {
  const n = rng.below(3000);
  const body = randomBytes(rng, n);
  if (rng.below(2) === 0) return { bytes: body, how: `${n} random bytes` };
  const head = new Bytes().raw(enc("GGUF")).u32(3).u64(rng.below(4)).u64(rng.below(4)).bytes();
  return { bytes: Buffer.concat([head, body]), how: `GGUF v3 header, small counts, then ${n} random bytes` };
}

function scanOrUndefined(b: Uint8Array): Parsed | undefined {
  try {
    return parseGguf(b);
  } catch {
    return undefined;
  }
}

function clone(p: Parsed): Parsed {
  return { ...p, kv: p.kv.map((e) => ({ ...e })), tensors: p.tensors.map((t) => ({ ...t, dims: [...t.dims] })) };
}

/** `count` cases, deterministic in `seed`. */
export function ggufCases(count: number, seed: number): GgufCase[] {
  const seeds = ggufSeeds();
  const parsed = new Map(seeds.map((s) => [s.name, s.parts.map((f) => parseGguf(f.bytes))]));
  const cases: GgufCase[] = [];
  for (let i = 0; i < count; i++) {
    const rng = new Rng((seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0);
    if (rng.below(20) === 0) {
      const r = randomFile(rng);
      cases.push({ label: r.how, files: [{ name: "random.gguf", bytes: r.bytes }], open: "random.gguf" });
      continue;
    }
    const s = pick(rng, seeds);
    const k = rng.below(s.parts.length);
    const p = parsed.get(s.name)![k];
    const hows: string[] = [];
    let bytes: Uint8Array;
    if (rng.below(2) === 0) {
      const q = clone(p);
      const times = rng.below(4) === 0 ? 2 : 1;
      for (let t = 0; t < times; t++) hows.push(structured(rng, q));
      bytes = layOut(q);
      // Then, now and then, a field of the new layout poked (where the scanner still reads it).
      const scanned = rng.below(6) === 0 ? scanOrUndefined(bytes) : undefined;
      if (scanned) {
        const r = poke(rng, bytes, scanned);
        bytes = r.bytes;
        hows.push(r.how);
      }
    } else {
      const r = poke(rng, s.parts[k].bytes, p);
      bytes = r.bytes;
      hows.push(r.how);
    }
    const files = s.parts.map((f, j) => (j === k ? { name: f.name, bytes } : f));
    const open = s.parts[rng.below(s.parts.length)].name;
    cases.push({ label: `${s.name}${s.parts.length > 1 ? ` part ${k + 1}` : ""}: ${hows.join("; ")}`, files, open });
  }
  return cases;
}
