/**
 * Mutations of the seed files: byte-level ones for every format (bit flips, overwrites with edge
 * values, truncation, insertion, removal, duplication), chained one to three deep, and crafted
 * files per format aimed at what a reader must bound or refuse (huge, negative and fractional
 * shapes; negative, overlapping and out-of-range offsets; deep nesting; many tensors; overlong
 * varints; group bombs; external_data paths; float-written integers; BOM, duplicate keys, lone
 * surrogates). Everything is driven by a seeded xorshift generator, so case N is the same file on
 * every run and every machine.
 */
import { W, groups, nestedIfs, tensorProto } from "../support/protobuf.js";
import { Rng } from "../support/rng.js";
import { npyWithHeader, type Format, type Seed } from "./seeds.js";

export interface Case {
  readonly format: Format;
  /** What was done, enough to rebuild it by hand. */
  readonly label: string;
  /** The seed it came from, compared with by diff; undefined for files crafted from nothing. */
  readonly seed?: Seed;
  readonly bytes: Uint8Array;
  /** Crafted to probe a limit (many tensors, deep nesting): always also run through the CLI. */
  readonly heavy?: boolean;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.below(xs.length)];

/**
 * The limit probes (deep nesting, many tensors, group bombs) come in two sizes: light ones, near
 * the limits that readers document (protobuf's 100 levels, serde_json's 128, 32 for .npy), among
 * the random cases; and heavy ones (10,000 levels, 200,000 tensors), each made once per run by
 * `heavyCases` with its variant forced.
 */
let heavy = false;
let forced: number | undefined;
const size = (light: number, big: number): number => (heavy ? big : light);
const choose = (rng: Rng, n: number): number => forced ?? rng.below(n);
const INTERESTING = [0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x20, 0x7b, 0x7d, 0x22, 0x2c, 0x3a, 0x5b, 0x5d, 0x08, 0x0a, 0x12];

// ---- byte-level ------------------------------------------------------------------------------

type ByteMutator = (rng: Rng, b: Uint8Array) => [Uint8Array, string];

const BYTE_MUTATORS: readonly ByteMutator[] = [
  (rng, b) => {
    const out = new Uint8Array(b);
    const n = 1 + rng.below(8);
    const at: number[] = [];
    for (let i = 0; i < n && out.length > 0; i++) {
      const bit = rng.below(out.length * 8);
      out[bit >>> 3] ^= 1 << (bit & 7);
      at.push(bit);
    }
    return [out, `flip bits ${at.join(",")}`];
  },
  (rng, b) => {
    const out = new Uint8Array(b);
    const at = rng.below(Math.max(1, out.length));
    const n = 1 + rng.below(8);
    const values: number[] = [];
    for (let i = 0; i < n && at + i < out.length; i++) {
      out[at + i] = rng.below(2) ? pick(rng, INTERESTING) : rng.u32() & 0xff;
      values.push(out[at + i]);
    }
    return [out, `overwrite @${at} [${values.join(",")}]`];
  },
  (rng, b) => {
    const at = rng.below(3) === 0 ? Math.max(0, b.length - 1 - rng.below(4)) : rng.below(b.length + 1);
    return [new Uint8Array(b.subarray(0, at)), `truncate @${at}`];
  },
  (rng, b) => {
    const at = rng.below(b.length + 1);
    const ins = Uint8Array.from({ length: 1 + rng.below(16) }, () => (rng.below(2) ? pick(rng, INTERESTING) : rng.u32() & 0xff));
    return [concat(b.subarray(0, at), ins, b.subarray(at)), `insert @${at} [${[...ins].join(",")}]`];
  },
  (rng, b) => {
    const at = rng.below(b.length + 1);
    const n = 1 + rng.below(32);
    return [concat(b.subarray(0, at), b.subarray(at + n)), `remove @${at} +${n}`];
  },
  (rng, b) => {
    const from = rng.below(b.length + 1);
    const n = 1 + rng.below(64);
    const to = rng.below(b.length + 1);
    return [concat(b.subarray(0, to), b.subarray(from, from + n), b.subarray(to)), `duplicate @${from} +${n} to @${to}`];
  },
];

export function concat(...parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

function byteCase(rng: Rng, seed: Seed): Case {
  let bytes = seed.bytes;
  const steps: string[] = [];
  const n = 1 + (rng.below(4) === 0 ? 1 + rng.below(2) : 0);
  for (let i = 0; i < n; i++) {
    const [b, label] = pick(rng, BYTE_MUTATORS)(rng, bytes);
    bytes = b;
    steps.push(label);
  }
  return { format: seed.format, label: `${seed.name}: ${steps.join("; ")}`, seed, bytes };
}

// ---- safetensors -----------------------------------------------------------------------------

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A safetensors file from header JSON text (bytes) and a data buffer, with an honest or a given length. */
function st(header: Uint8Array | string, data: Uint8Array, length?: bigint): Uint8Array {
  const h = typeof header === "string" ? utf8(header) : header;
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(length ?? BigInt(h.length));
  return concat(n, h, data);
}

interface StEntry { key: string; dtype: string; shape: string; offsets: string; extra?: string }

/** The entries of a valid seed, as JSON text pieces that mutations replace. */
function stParts(seed: Seed): { metadata?: string; entries: StEntry[]; data: Uint8Array } {
  const view = Buffer.from(seed.bytes);
  const n = Number(view.readBigUInt64LE(0));
  const json = JSON.parse(view.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>;
  const entries: StEntry[] = [];
  let metadata: string | undefined;
  for (const [k, v] of Object.entries(json)) {
    if (k === "__metadata__") metadata = JSON.stringify(v);
    else entries.push({ key: JSON.stringify(k), dtype: JSON.stringify(v.dtype), shape: JSON.stringify(v.shape), offsets: JSON.stringify(v.data_offsets) });
  }
  return { metadata, entries, data: view.subarray(8 + n) };
}

function stText(p: { metadata?: string; entries: StEntry[] }): string {
  const parts = p.entries.map((e) => `${e.key}:{"dtype":${e.dtype},"shape":${e.shape},"data_offsets":${e.offsets}${e.extra ?? ""}}`);
  if (p.metadata !== undefined) parts.unshift(`"__metadata__":${p.metadata}`);
  return `{${parts.join(",")}}`;
}

const HUGE_DIMS = ["9007199254740992", "18446744073709551616", "1e308", "-1", "0.5", "2.0", "\"2\"", "null", "[2]", "true", "-0", "1E1", "4294967296"];
const BAD_OFFSETS = (b: number, e: number): string[] => [
  `[-1,${e}]`, `[${e},${b}]`, `[${b},${e + 1}]`, `[${b + 1},${e + 1}]`, `[${b},18446744073709551616]`, `[${b}.0,${e}.0]`,
  `[${b},${e}e0]`, `[${b},${e},${e}]`, `[${b}]`, `["${b}","${e}"]`, `[0,${e - b}]`, `[${b},9007199254740993]`, `[${b},${e}.5]`, `null`,
  `[${b},-0]`, `[1e400,1e400]`,
];
const BAD_DTYPES = ["\"f32\"", "\"F128\"", "\"\"", "null", "5", "\"Q4\"", "\"F32 \"", "\"BF16\"", "\"F4\"", "\"F6_E2M3\"", "\"U64\"", "\"C64\"", "\"BOOL\"", "\"F8_E8M0\"", "\"I4\"", "\"STR\""];

/** `depth` nested arrays around `inner`. */
const deepArray = (depth: number, inner = "0"): string => "[".repeat(depth) + inner + "]".repeat(depth);
const deepObject = (depth: number): string => "{\"a\":".repeat(depth) + "\"x\"" + "}".repeat(depth);

type Crafter = (rng: Rng, seeds: readonly Seed[]) => Omit<Case, "format">;

const SAFETENSORS_CRAFTED: readonly Crafter[] = [
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const e = pick(rng, p.entries);
    const dim = pick(rng, HUGE_DIMS);
    const shape = JSON.parse(e.shape) as number[];
    const k = rng.below(shape.length + 1);
    const parts = shape.map(String);
    parts.splice(k, k < shape.length ? 1 : 0, dim);
    e.shape = `[${parts.join(",")}]`;
    return { label: `${seed.name}: tensor ${e.key} shape ${e.shape}`, seed, bytes: st(stText(p), p.data) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const e = pick(rng, p.entries);
    const [b, end] = JSON.parse(e.offsets) as [number, number];
    e.offsets = pick(rng, BAD_OFFSETS(b, end));
    return { label: `${seed.name}: tensor ${e.key} data_offsets ${e.offsets}`, seed, bytes: st(stText(p), p.data) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const e = pick(rng, p.entries);
    e.dtype = pick(rng, BAD_DTYPES);
    return { label: `${seed.name}: tensor ${e.key} dtype ${e.dtype}`, seed, bytes: st(stText(p), p.data) };
  },
  (rng, seeds) => {
    // Float-written integers, everywhere a number is.
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const e = pick(rng, p.entries);
    const form = pick(rng, [(x: number) => `${x}.0`, (x: number) => `${x}e0`, (x: number) => `${x}E+0`, (x: number) => `${x * 10}e-1`]);
    const [b, end] = JSON.parse(e.offsets) as [number, number];
    if (rng.below(2)) e.offsets = `[${form(b)},${form(end)}]`;
    else e.shape = `[${(JSON.parse(e.shape) as number[]).map(form).join(",")}]`;
    return { label: `${seed.name}: float-written integers in ${e.key}: ${e.shape} ${e.offsets}`, seed, bytes: st(stText(p), p.data) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const which = choose(rng, 4);
    const depth = size(126 + rng.below(4), 10_000);
    let text: string;
    if (which === 0) text = deepArray(depth);
    else if (which === 1) {
      p.metadata = deepObject(depth - 1);
      text = stText(p);
    } else if (which === 2) {
      p.entries[0].extra = `,"x":${deepArray(depth - 2)}`;
      text = stText(p);
    } else {
      p.entries[0].shape = deepArray(depth - 2, "1");
      text = stText(p);
    }
    return { label: `${seed.name}: JSON nested ${depth} deep (${["whole header", "__metadata__", "an extra field", "shape"][which]})`, seed, bytes: st(text, p.data), heavy };
  },
  (rng) => {
    // Many tensors (empty ones share offset 0, which the rules allow), or many metadata keys.
    const parts: string[] = [];
    const many = choose(rng, 2) === 0;
    const n = size(2_000, 200_000);
    for (let i = 0; i < n; i++) parts.push(many ? `"t${i}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}` : `"k${i}":"v"`);
    const text = many ? `{${parts.join(",")},"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`
      : `{"__metadata__":{${parts.join(",")}},"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`;
    return { label: many ? `${n} empty tensors and one of 4 bytes` : `${n} metadata entries`, bytes: st(text, Uint8Array.of(1, 2, 3, 4)), heavy };
  },
  (rng, seeds) => {
    // A lying header length.
    const seed = pick(rng, seeds);
    const n = Buffer.from(seed.bytes).readBigUInt64LE(0);
    const size = BigInt(seed.bytes.length);
    const lie = pick(rng, [0n, 1n, 2n, n - 1n, n + 1n, size - 8n, size - 7n, 2n ** 64n - 1n, 100_000_001n, 2n ** 53n, 2n ** 32n + n]);
    const out = Buffer.from(seed.bytes);
    out.writeBigUInt64LE(lie);
    return { label: `${seed.name}: header length ${lie}`, seed, bytes: out };
  },
  (rng, seeds) => {
    // Bytes around the JSON: BOM, leading space, trailing garbage or NULs inside N, a second object.
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const text = stText(p);
    const which = rng.below(6);
    const header = [
      concat(Uint8Array.of(0xef, 0xbb, 0xbf), utf8(text)),
      utf8(` ${text}`),
      utf8(`${text}x`),
      concat(utf8(text), new Uint8Array(3)),
      utf8(`${text}{}`),
      utf8(`${text}\t\r\n  `),
    ][which];
    return { label: `${seed.name}: ${["BOM", "leading space", "trailing x", "NUL padding", "a second object", "whitespace padding"][which]}`, seed, bytes: st(header, p.data) };
  },
  (rng, seeds) => {
    // Duplicate keys: a tensor twice (same or other offsets), a field twice, __metadata__ twice.
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const e = pick(rng, p.entries);
    const which = rng.below(4);
    let text: string;
    if (which === 0) {
      p.entries.push({ ...e });
      text = stText(p);
    } else if (which === 1) {
      p.entries.push({ ...e, offsets: "[0,0]", shape: "[0]" });
      text = stText(p);
    } else if (which === 2) {
      e.extra = `,"dtype":"U8"`;
      text = stText(p);
    } else {
      text = stText(p).replace(/^\{/, `{"__metadata__":{"a":"b"},"__metadata__":{"c":"d"},`);
      if (p.metadata !== undefined) text = text.replace(`,"__metadata__":${p.metadata}`, "");
    }
    return { label: `${seed.name}: duplicate ${["tensor (same entry)", "tensor (another entry)", "dtype key", "__metadata__"][which]} ${e.key}`, seed, bytes: st(text, p.data) };
  },
  (rng, seeds) => {
    // Names: lone surrogates, escaped NUL, invalid and overlong UTF-8, very long, "__proto__".
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const e = pick(rng, p.entries);
    const which = rng.below(11);
    const names = [
      "\"\\ud800\"", "\"a\\udc00b\"", "\"\\u0000\"", "\"__proto__\"", `"${"n".repeat(100_000)}"`, "\"\"", "\"\\ud83d\\ude00\"", "\"__metadata__\"",
      // Control characters a terminal obeys: an ANSI escape, a newline, a carriage return.
      "\"\\u001b[2J\\u001b[31mred\"", "\"a\\nerror: fake\"", "\"ok\\r\\u0007\"",
    ];
    e.key = names[which];
    let header = utf8(stText(p));
    if (rng.below(4) === 0) {
      // Raw invalid UTF-8 in place of the first name's first character.
      const at = Buffer.from(header).indexOf(0x22, 1) + 1;
      header = new Uint8Array(header);
      header[at] = pick(rng, [0xff, 0xc0, 0xed, 0x80]);
    }
    return { label: `${seed.name}: name ${e.key.slice(0, 24)}${which === 4 ? "..." : ""}`, seed, bytes: st(header, p.data) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    p.metadata = pick(rng, ["null", "[]", "{\"a\":1}", "{\"a\":null}", "{\"a\":{\"b\":\"c\"}}", "\"text\"", "{\"\\ud800\":\"x\"}", "{\"a\":\"\\udfff\"}", "{}"]);
    return { label: `${seed.name}: __metadata__ ${p.metadata}`, seed, bytes: st(stText(p), p.data) };
  },
  (rng, seeds) => {
    // The data buffer one byte short or long, or an unknown field in an entry.
    const seed = pick(rng, seeds);
    const p = stParts(seed);
    const which = rng.below(3);
    if (which === 2) pick(rng, p.entries).extra = `,"extra":1`;
    const data = which === 0 ? p.data.subarray(0, Math.max(0, p.data.length - 1)) : which === 1 ? concat(p.data, Uint8Array.of(0)) : p.data;
    return { label: `${seed.name}: ${["data one byte short", "one byte of data after the last tensor", "an unknown field in an entry"][which]}`, seed, bytes: st(stText(p), data) };
  },
];

// ---- .npy ------------------------------------------------------------------------------------

interface NpyParts { descr: string; fortran: string; shape: string; data: Uint8Array; version: number }

function npyParts(seed: Seed): NpyParts | undefined {
  const b = Buffer.from(seed.bytes);
  const version = b[6];
  const start = version === 1 ? 10 : 12;
  const n = version === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const text = b.subarray(start, start + n).toString(version === 3 ? "utf8" : "latin1");
  const m = /'descr': *('[^']*'), *'fortran_order': *(\w+), *'shape': *(\([^)]*\))/.exec(text);
  if (!m) return undefined;
  return { descr: m[1], fortran: m[2], shape: m[3], data: b.subarray(start + n), version };
}

function npyText(p: Pick<NpyParts, "descr" | "fortran" | "shape">, extra = ""): string {
  return `{'descr': ${p.descr}, 'fortran_order': ${p.fortran}, 'shape': ${p.shape}, ${extra}}`;
}

const NPY_SHAPES = [
  "(18446744073709551616,)", "(-1,)", "(2.5,)", "(2.0,)", "(1e3,)", "[3, 4]", "()", "(4294967296, 4294967296)", "(3, 4L)", "('3',)",
  "(True,)", "(None,)", `(${Array(1000).fill(1).join(", ")},)`, "(3, 4,)", "(3 ,4)", "(0x3,)", "(3_0,)", "(+3,)", "(12,)", "(1, 12)", "(4, 3)",
  "(9007199254740993,)", "(3, -4)", "(12, 0)",
];
const NPY_DESCRS = [
  "'>f4'", "'<f4'", "'|b1'", "'O'", "'|O'", "'<U4'", "'|S4'", "'<V2'", "'|V1'", "'<f3'", "'<i16'", "'bfloat16'", "'float8_e4m3fn'", "'int4'",
  "[('a', '<f4')]", "'<M8[s]'", "'<m8'", "'=f4'", "'f4'", "'<c16'", "'<f16'", "''", "'<f\\4'", "'<\\x664'", "'\\x3cf4'", "'<f4\\n'", "\"<f4\"",
  "'<u1'", "'|u1'", "'>i8'", "'>c8'", "'<b1'", "'>b1'", "'|f2'", "'float6_e2m3fn'", "'uint2'",
];

const NPY_CRAFTED: readonly Crafter[] = [
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    p.shape = pick(rng, NPY_SHAPES);
    return { label: `${seed.name}: shape ${p.shape.slice(0, 40)}`, seed, bytes: npyWithHeader(npyText(p), p.data, p.version) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    p.descr = pick(rng, NPY_DESCRS);
    return { label: `${seed.name}: descr ${p.descr}`, seed, bytes: npyWithHeader(npyText(p), p.data, p.version) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    p.fortran = pick(rng, ["True", "1", "'False'", "None", "false", "0", "True "]);
    return { label: `${seed.name}: fortran_order ${p.fortran}`, seed, bytes: npyWithHeader(npyText(p), p.data, p.version) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    const which = rng.below(6);
    const text = [
      `{'descr': ${p.descr}, 'fortran_order': ${p.fortran}, }`,
      npyText(p, "'x': 1, "),
      npyText(p, `'shape': ${p.shape}, `),
      npyText(p, "'shape': (1,), "),
      `{"descr": ${p.descr}, "fortran_order": ${p.fortran}, "shape": ${p.shape}}`,
      `{'shape': ${p.shape}, 'descr': ${p.descr}, 'fortran_order': ${p.fortran}}`,
    ][which];
    return { label: `${seed.name}: keys ${["missing shape", "an extra key", "shape twice (same)", "shape twice (other)", "double quotes", "reordered"][which]}`, seed, bytes: npyWithHeader(text, p.data, p.version) };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    const which = choose(rng, 3);
    const depth = size(30 + rng.below(5), 10_000);
    if (which === 0) p.shape = "(".repeat(depth) + "3," + ")".repeat(depth);
    else if (which === 1) p.descr = "[".repeat(depth) + "'<f4'" + "]".repeat(depth);
    const text = which === 2 ? "{'a': ".repeat(depth) + "1" + "}".repeat(depth) : npyText(p);
    return { label: `${seed.name}: nested ${depth} deep (${["shape", "descr", "dict"][which]})`, seed, bytes: npyWithHeader(text, p.data, 2), heavy };
  },
  (rng, seeds) => {
    // Version bytes and header length field.
    const seed = pick(rng, seeds);
    const out = Buffer.from(seed.bytes);
    const which = rng.below(4);
    if (which === 0) [out[6], out[7]] = pick(rng, [[2, 0], [3, 0], [4, 0], [1, 1], [0, 0], [255, 0]]);
    else if (which === 1) out.writeUInt16LE(pick(rng, [0, 1, 0xffff, out.readUInt16LE(8) + 1, out.readUInt16LE(8) - 1]), 8);
    else if (which === 2) out[out[6] === 1 ? 10 + out.readUInt16LE(8) - 1 : 12 + out.readUInt32LE(8) - 1] = 0x20;
    else out[8 + rng.below(4)] ^= 0x80;
    return { label: `${seed.name}: prefix edit ${which} -> [${[...out.subarray(6, 12)].join(",")}]`, seed, bytes: out };
  },
  (rng, seeds) => {
    // Header text oddities: non-latin-1 and invalid UTF-8, escapes, no newline, NUL padding.
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    const which = rng.below(5);
    let bytes: Uint8Array;
    if (which === 0) bytes = npyWithHeader(npyText({ ...p, descr: "'<f\u00e94'" }), p.data, pick(rng, [1, 3]));
    else if (which === 1) {
      bytes = Buffer.from(npyWithHeader(npyText(p), p.data, 3));
      (bytes as Buffer)[14] = 0xff;
    } else if (which === 2) {
      bytes = Buffer.from(npyWithHeader(npyText(p), p.data, p.version));
      const end = (p.version === 1 ? 10 + (bytes as Buffer).readUInt16LE(8) : 12 + (bytes as Buffer).readUInt32LE(8)) - 1;
      (bytes as Buffer)[end] = 0x20;
    } else if (which === 3) {
      bytes = Buffer.from(npyWithHeader(npyText(p), p.data, p.version));
      const start = p.version === 1 ? 10 : 12;
      const text = npyText(p);
      (bytes as Buffer).fill(0, start + text.length, start + (p.version === 1 ? (bytes as Buffer).readUInt16LE(8) : (bytes as Buffer).readUInt32LE(8)) - 1);
    } else bytes = npyWithHeader(`${npyText(p)} # comment`, p.data, p.version);
    return { label: `${seed.name}: header text ${["non-latin-1 descr", "invalid UTF-8 in 3.0", "no newline", "NUL padding", "a comment"][which]}`, seed, bytes };
  },
  (rng, seeds) => {
    // The data one element short or long, or the shape disagreeing with it.
    const seed = pick(rng, seeds);
    const p = npyParts(seed)!;
    const n = 1 + rng.below(8);
    const data = rng.below(2) ? p.data.subarray(0, Math.max(0, p.data.length - n)) : concat(p.data, new Uint8Array(n));
    return { label: `${seed.name}: data ${data.length - p.data.length} bytes`, seed, bytes: npyWithHeader(npyText(p), data, p.version) };
  },
];

// ---- protobuf: .pb and .onnx -----------------------------------------------------------------

/** A varint that is too long (11 bytes) or overflows 64 bits. */
function badVarint(rng: Rng): number[] {
  return pick(rng, [
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00],
    Array(20).fill(0xff),
  ]);
}

const DIMS = [-1n, 2n ** 62n, 2n ** 63n - 1n, 2n ** 53n, 2n ** 32n, 0n, 3n, -(2n ** 63n)];
const DATA_TYPES = [0, 29, 255, -1, 2 ** 31 - 1, 8, 14, 15, 16, 23, 27, 9, 12];

function externalTensor(rng: Rng, name: string): W {
  const location = pick(rng, ["../../../../etc/passwd", "/etc/passwd", "nonexistent.bin", "", "a/../../b", "\u0000", "C:\\x.bin", "data.bin"]);
  const t = tensorProto(1, [2], name);
  t.len(13, new W().len(1, "location").len(2, location));
  if (rng.below(2)) t.len(13, new W().len(1, pick(rng, ["offset", "length", "checksum"])).len(2, pick(rng, ["-1", "99999999999999999999", "0", "x"])));
  if (rng.below(4) !== 0) t.int(14, 1);
  return t;
}

/** A TensorProto crafted to probe one rule; `name` keeps it findable in a model. */
function craftedTensor(rng: Rng, name: string): [W, string] {
  const which = forced !== undefined ? [6, 7, 11][forced] : rng.below(15);
  switch (which) {
    case 0: {
      const d = pick(rng, DIMS);
      return [tensorProto(1, [2], name).int(1, d).len(9, new Uint8Array(8)), `dims [2, ${d}] with 8 bytes`];
    }
    case 1: {
      const t = pick(rng, DATA_TYPES);
      return [tensorProto(t, [2], name).len(9, new Uint8Array(8)), `data_type ${t}`];
    }
    case 2: {
      const n = pick(rng, [0, 7, 9, 16]);
      return [tensorProto(1, [2], name).len(9, new Uint8Array(n)), `raw_data ${n} bytes for 2 floats`];
    }
    case 3:
      return [tensorProto(1, [2], name).len(4, new Uint8Array(8)).len(9, new Uint8Array(8)), "raw_data and float_data"];
    case 4: {
      const w = tensorProto(1, [2], name);
      w.tag(9, 2).push(...badVarint(rng));
      return [w, "raw_data length an overlong varint"];
    }
    case 5: {
      const w = new W().tag(1, 0).push(...badVarint(rng)).int(2, 1).len(8, name);
      return [w, "a dimension an overlong varint"];
    }
    case 6: {
      const n = heavy ? pick(rng, [20_000, 200_000]) : pick(rng, [98, 99, 100, 101, 150]);
      const w = tensorProto(1, [1], name).len(9, new Uint8Array(4));
      w.append(groups(n).out);
      return [w, `${n} nested groups`];
    }
    case 7: {
      const w = tensorProto(1, [1], name).len(9, new Uint8Array(4));
      const n = size(150, 20_000);
      for (let i = 0; i < n; i++) w.tag(100 + (i % 3), 3);
      return [w, `${n} unclosed groups`];
    }
    case 8: {
      const w = tensorProto(1, [1], name).len(9, new Uint8Array(4));
      const kind = rng.below(3);
      if (kind === 0) w.tag(100, 4);
      else if (kind === 1) w.tag(100, 3).tag(101, 4);
      else w.tag(100, pick(rng, [6, 7]));
      return [w, ["a stray end-group", "a group closed by another", "wire type 6/7"][kind]];
    }
    case 9:
      return [externalTensor(rng, name), "external_data"];
    case 10: {
      const bad = pick(rng, [[0xff], [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]]);
      const w = tensorProto(8, [2], name).len(6, "ok").len(6, bad);
      return [w, `string_data with invalid UTF-8 [${bad.join(",")}]`];
    }
    case 11: {
      const n = size(2_000, 200_000);
      const w = tensorProto(7, [n], name);
      const body = new W();
      for (let i = 0; i < n; i++) body.varint(i);
      w.len(7, body);
      return [w, `${n} int64_data entries`];
    }
    case 12: {
      const w = tensorProto(1, Array(1000).fill(1), name).len(9, new Uint8Array(4));
      return [w, "1,000 dims"];
    }
    case 13: {
      const w = tensorProto(1, [1], name).len(3, new W().int(1, 0).int(2, 1)).float(4, 1);
      return [w, "a segment"];
    }
    default: {
      // A name a terminal would obey: an ANSI escape, a newline, a carriage return, a bell.
      const bad = pick(rng, ["\u001b[2J\u001b[31mred", "a\nerror: fake", "ok\r\u0007", "\u009b31m"]);
      return [tensorProto(1, [1]).len(8, bad).len(9, new Uint8Array(4)), `name ${JSON.stringify(bad)}`];
    }
  }
}

const PB_CRAFTED: readonly Crafter[] = [
  (rng) => {
    const [w, label] = craftedTensor(rng, "t");
    return { label, bytes: w.bytes(), heavy };
  },
  (rng, seeds) => {
    // A field appended to a valid tensor: known number with the wrong wire type, or unknown.
    const seed = pick(rng, seeds);
    const field = pick(rng, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 1000, 536870911]);
    const wire = pick(rng, [0, 1, 2, 5, 3]);
    const w = new W().tag(field, wire);
    if (wire === 0) w.varint(rng.u64());
    else if (wire === 1) w.push(1, 2, 3, 4, 5, 6, 7, 8);
    else if (wire === 2) w.varint(3).push(0x61, 0x62, 0x63);
    else if (wire === 5) w.push(1, 2, 3, 4);
    else w.tag(field, 4);
    return { label: `${seed.name}: append field ${field} wire ${wire}`, seed, bytes: concat(seed.bytes, w.bytes()) };
  },
];

function model(graph: W, irVersion: number | number[] = 8): Uint8Array {
  const m = new W();
  if (Array.isArray(irVersion)) m.tag(1, 0).push(...irVersion);
  else m.int(1, irVersion);
  return m.len(8, new W().len(1, "").int(2, 17)).len(7, graph).bytes();
}

const ONNX_CRAFTED: readonly Crafter[] = [
  (rng) => {
    const [t, label] = craftedTensor(rng, "bad");
    const g = new W().len(2, "g").len(5, tensorProto(1, [1], "good").len(9, new Uint8Array(4)));
    if (rng.below(2)) g.len(5, t);
    else g.len(1, new W().len(2, "k").len(4, "Constant").len(5, new W().len(1, "value").len(5, t).int(20, 4)));
    return { label: `a model whose initializer or Constant has ${label}`, bytes: model(g), heavy };
  },
  (rng) => {
    const levels = heavy ? 7_000 : pick(rng, [31, 32, 33, 34]);
    return { label: `If subgraphs nested ${levels} deep (${levels * 3} messages)`, bytes: model(new W().append(nestedIfs(levels))), heavy };
  },
  () => {
    const g = new W().len(2, "g");
    const n = size(2_000, 200_000);
    for (let i = 0; i < n; i++) g.len(5, new W().int(2, 2).len(8, `t${i}`).len(9, [i & 0xff]).int(1, 1));
    return { label: `${n} initializers`, bytes: model(g), heavy };
  },
  (rng) => {
    const g = new W().len(2, "g").len(5, tensorProto(1, [1], "a").len(9, new Uint8Array(4)));
    const which = forced !== undefined ? 3 + forced : rng.below(6);
    const n = size(pick(rng, [97, 98, 99, 100, 101]), 20_000);
    let bytes: Uint8Array;
    if (which === 0) bytes = concat(model(g), new W().len(7, new W().len(2, "second")).bytes());
    else if (which === 1) bytes = model(g.len(5, tensorProto(1, [1], "a").len(9, new Uint8Array(4))));
    else if (which === 2) bytes = model(g, badVarint(rng));
    else if (which === 3) bytes = model(g.append(groups(n).out));
    else if (which === 4) bytes = new W().int(1, 8).len(7, g).append(groups(n, 99).out).bytes();
    else bytes = model(g.len(1, new W().len(4, "Relu").append(groups(n).out)));
    return {
      label: ["two graph fields", "two initializers named a", "ir_version an overlong varint", `${n} groups in the graph`, `${n} groups in the model`, `${n} groups in a node`][which],
      bytes, heavy,
    };
  },
  (rng, seeds) => {
    const seed = pick(rng, seeds);
    const field = pick(rng, [1, 2, 7, 8, 14, 20, 1000]);
    const wire = pick(rng, [0, 1, 2, 5, 3]);
    const w = new W().tag(field, wire);
    if (wire === 0) w.varint(rng.u64());
    else if (wire === 1) w.push(1, 2, 3, 4, 5, 6, 7, 8);
    else if (wire === 2) w.varint(2).push(0x08, 0x01);
    else if (wire === 5) w.push(1, 2, 3, 4);
    else w.tag(field, 4);
    return { label: `${seed.name}: append field ${field} wire ${wire}`, seed, bytes: concat(seed.bytes, w.bytes()) };
  },
];

const CRAFTED: Record<Format, readonly Crafter[]> = { safetensors: SAFETENSORS_CRAFTED, npy: NPY_CRAFTED, pb: PB_CRAFTED, onnx: ONNX_CRAFTED };

/** Which crafters have heavy variants, and how many: [crafter index, variants]. */
const HEAVY_KINDS: Record<Format, readonly (readonly [number, number])[]> = {
  safetensors: [[4, 4], [5, 2]],
  npy: [[4, 3]],
  pb: [[0, 3]],
  onnx: [[0, 3], [1, 1], [2, 1], [3, 3]],
};

/** The heavy limit probes of `format`, each variant once. */
export function heavyCases(format: Format, formatSeeds: readonly Seed[]): Case[] {
  const craftable = format === "npy" ? formatSeeds.filter((s) => npyParts(s) !== undefined) : formatSeeds;
  const out: Case[] = [];
  for (const [k, variants] of HEAVY_KINDS[format]) {
    for (let v = 0; v < variants; v++) {
      heavy = true;
      forced = v;
      try {
        out.push({ format, ...CRAFTED[format][k](new Rng(1000 + 10 * k + v), craftable) });
      } finally {
        heavy = false;
        forced = undefined;
      }
    }
  }
  return out;
}

/**
 * Case `index` of `format`: a third crafted, two thirds byte mutations of a seed. The generator is
 * seeded by format and index alone, so any case can be rebuilt without the others.
 */
export function makeCase(format: Format, index: number, formatSeeds: readonly Seed[]): Case {
  const rng = new Rng((0x9e3779b1 * (index + 1) + format.length * 0x85ebca6b + format.charCodeAt(0)) >>> 0);
  rng.u32();
  // Crafted mutations work from the seeds they can parse (made ones for npy/safetensors edits).
  const craftable = format === "npy" ? formatSeeds.filter((s) => npyParts(s) !== undefined) : formatSeeds;
  if (index % 3 === 1) {
    const c = pick(rng, CRAFTED[format])(rng, craftable);
    return { format, ...c };
  }
  return byteCase(rng, pick(rng, formatSeeds));
}
