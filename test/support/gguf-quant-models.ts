/**
 * Tiny llama models for the GGUF quantization tests, made here from a fixed seed (nothing large is
 * committed; test/fixtures/gguf-quantize/golden.json holds their SHA-256 so a change shows):
 *
 *   wide  2 layers, n_embd 256, 4 heads sharing 1 KV head (n_gqa 4), n_ff 80, vocab 32, F16
 *         weights and F32 norms, an output.weight of its own: rows of 256 for the K-quants, rows
 *         of 80 (ffn_down) that fit no block of 32 and fall back to F16
 *   deep  16 layers, n_embd 32, 2 heads (n_gqa 1), n_ff 64, vocab 16, F32, tied embeddings (no
 *         output.weight): every K-quant and IQ row falls back, and the layer rules of attn_v and
 *         ffn_down show through the fallbacks (Q6_K -> Q8_0 where Q4_K -> Q5_0)
 *   table 4 layers, n_embd 512, 8 heads sharing 4 KV heads, n_ff 1536, vocab 1024, F16, weights
 *         scaled by 0.12 (next-token distributions neither flat nor one-hot): rows that fit every
 *         block, so each preset's own types show; bench/gguf-presets.ts measures the presets on it
 *
 * Their metadata has general.quantization_version and general.file_type early, a string array and
 * a float array, so the output's key order (those two moved last) is checked too.
 */
import { writeFileSync } from "node:fs";
import { writeGguf, type GgufMetadataEntry, type GgufTensorToWrite } from "../../src/io/gguf/index.js";
import { layoutGguf } from "../../src/io/gguf/write.js";
import { splitByGgufSplit, splitMetadata, splitOutputPaths } from "../../src/io/gguf/split-write.js";
import { Rng } from "./rng.js";

export type QuantModelName = "wide" | "deep" | "table";

/**
 * The models' vocabulary: "llama" (SentencePiece, the one the goldens hold) or "gpt2" (byte-level
 * BPE with one merge), for running them in llama.cpp: its SPM tokenizer falls back to <0xXX> byte
 * tokens and throws (an abort through node-llama-cpp, which tokenizes a few texts at load) when a
 * vocabulary has none, while its BPE tokenizer drops a piece it cannot find.
 */
export type QuantModelVocab = "llama" | "gpt2";

interface Shape {
  layers: number;
  embd: number;
  heads: number;
  headsKv: number;
  ff: number;
  vocab: number;
  weights: "F16" | "F32";
  tied: boolean;
  /** What the 2-D weights but the token embedding are multiplied by (1 where absent)... */
  scale?: number;
  /** ... and attn_output and ffn_down instead, the layers' writes to the residual stream. */
  outScale?: number;
}

const SHAPES: Record<QuantModelName, Shape> = {
  wide: { layers: 2, embd: 256, heads: 4, headsKv: 1, ff: 80, vocab: 32, weights: "F16", tied: false },
  deep: { layers: 16, embd: 32, heads: 2, headsKv: 2, ff: 64, vocab: 16, weights: "F32", tied: true },
  table: { layers: 4, embd: 512, heads: 8, headsKv: 4, ff: 1536, vocab: 1024, weights: "F16", tied: false, scale: 0.12, outScale: 0.002 },
};

/** Float32 values, roughly normal with a few outliers, from `rng`. */
function values(rng: Rng, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // Sum of three uniforms: a bell between -1.5 and 1.5; one value in 64 ten times larger.
    const u = (rng.u32() + rng.u32() + rng.u32()) / 2 ** 32 - 1.5;
    out[i] = rng.below(64) === 0 ? u * 10 : u;
  }
  return out;
}

/** IEEE binary16 bits of a float32 (round to nearest even; the values here are well inside its range). */
function f16Bits(x: number): number {
  const f = new Float32Array([x]);
  const b = new Uint32Array(f.buffer)[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = ((b >>> 23) & 0xff) - 127 + 15;
  let mant = b & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (exp << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

function tensorBytes(v: Float32Array, type: "F16" | "F32"): Uint8Array {
  if (type === "F32") return new Uint8Array(v.buffer.slice(0));
  const h = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) h[i] = f16Bits(v[i]);
  return new Uint8Array(h.buffer);
}

/** The metadata and tensors of model `name` (tensors in gguf-py's usual order, not llama.cpp's). */
export function quantModel(name: QuantModelName, vocab: QuantModelVocab = "llama"): { metadata: GgufMetadataEntry[]; tensors: GgufTensorToWrite[] } {
  const s = SHAPES[name];
  const rng = new Rng({ wide: 0x5eed1, deep: 0x5eed2, table: 0x5eed3 }[name]);
  const u32 = (key: string, value: number): GgufMetadataEntry => ({ key, type: "uint32", value });
  const metadata: GgufMetadataEntry[] = [
    { key: "general.architecture", type: "string", value: "llama" },
    u32("general.quantization_version", 2),
    { key: "general.name", type: "string", value: `tensorcast-${name}` },
    u32("general.file_type", s.weights === "F16" ? 1 : 0),
    u32("llama.context_length", 256), u32("llama.embedding_length", s.embd), u32("llama.block_count", s.layers),
    u32("llama.feed_forward_length", s.ff), u32("llama.attention.head_count", s.heads), u32("llama.attention.head_count_kv", s.headsKv),
    u32("llama.rope.dimension_count", s.embd / s.heads),
    { key: "llama.attention.layer_norm_rms_epsilon", type: "float32", value: 1e-5 },
    u32("llama.vocab_size", s.vocab),
    { key: "tokenizer.ggml.model", type: "string", value: vocab },
    { key: "tokenizer.ggml.tokens", type: "array", value: { itemType: "string", items: Array.from({ length: s.vocab }, (_, i) => `t${i}`) } },
    vocab === "llama"
      ? { key: "tokenizer.ggml.scores", type: "array", value: { itemType: "float32", items: new Float32Array(s.vocab).map((_, i) => -i) } }
      : { key: "tokenizer.ggml.merges", type: "array", value: { itemType: "string", items: ["t 1"] } },
  ];
  const tensors: GgufTensorToWrite[] = [];
  const add = (tname: string, shape: number[], type: "F16" | "F32"): void => {
    const n = shape.reduce((a, b) => a * b, 1);
    const v = values(rng, n);
    const scale = tname === "token_embd.weight" ? undefined : /attn_output|ffn_down/.test(tname) ? s.outScale ?? s.scale : s.scale;
    if (shape.length === 2 && scale !== undefined) for (let i = 0; i < n; i++) v[i] = Math.fround(v[i] * scale);
    tensors.push({ name: tname, ggmlType: type, dims: shape.slice().reverse(), data: tensorBytes(v, type) });
  };
  const kv = (s.embd / s.heads) * s.headsKv;
  add("token_embd.weight", [s.vocab, s.embd], s.weights);
  for (let i = 0; i < s.layers; i++) {
    add(`blk.${i}.attn_norm.weight`, [s.embd], "F32");
    add(`blk.${i}.attn_q.weight`, [s.embd, s.embd], s.weights);
    add(`blk.${i}.attn_k.weight`, [kv, s.embd], s.weights);
    add(`blk.${i}.attn_v.weight`, [kv, s.embd], s.weights);
    add(`blk.${i}.attn_output.weight`, [s.embd, s.embd], s.weights);
    add(`blk.${i}.ffn_norm.weight`, [s.embd], "F32");
    add(`blk.${i}.ffn_gate.weight`, [s.ff, s.embd], s.weights);
    add(`blk.${i}.ffn_up.weight`, [s.ff, s.embd], s.weights);
    add(`blk.${i}.ffn_down.weight`, [s.embd, s.ff], s.weights);
  }
  add("output_norm.weight", [s.embd], "F32");
  if (!s.tied) add("output.weight", [s.vocab, s.embd], s.weights);
  return { metadata, tensors };
}

/** A GGUF file's bytes, written by writeGguf into memory. */
export async function ggufBytes(metadata: readonly GgufMetadataEntry[], tensors: readonly GgufTensorToWrite[]): Promise<Uint8Array> {
  const parts: { bytes: Uint8Array; at: number }[] = [];
  const layout = await writeGguf({ write: (bytes, at) => void parts.push({ bytes: bytes.slice(), at }) }, metadata, tensors);
  const out = new Uint8Array(layout.size);
  for (const p of parts) out.set(p.bytes, p.at);
  return out;
}

/** The bytes of model `name` as a GGUF file. */
export async function quantModelBytes(name: QuantModelName, vocab: QuantModelVocab = "llama"): Promise<Uint8Array> {
  const { metadata, tensors } = quantModel(name, vocab);
  return ggufBytes(metadata, tensors);
}

/**
 * Writes model `name` as a split model of parts of at most `maxTensors` tensors (llama-gguf-split's
 * rule) beside `prefix`: PREFIX-0000k-of-0000n.gguf. Returns the parts' paths.
 */
export async function writeSplitQuantModel(name: QuantModelName, prefix: string, maxTensors: number): Promise<string[]> {
  const { metadata, tensors } = quantModel(name);
  const lengths = layoutGguf(metadata, tensors).byteLengths;
  const parts = splitByGgufSplit(lengths, { maxTensors });
  const paths = splitOutputPaths(`${prefix}.gguf`, parts.length);
  for (let no = 0; no < parts.length; no++) {
    writeFileSync(paths[no]!, await ggufBytes(splitMetadata(metadata, no, parts.length, tensors.length), parts[no]!.map((i) => tensors[i]!)));
  }
  return paths;
}

/** Writes model `name` to `path`. */
export async function writeQuantModel(name: QuantModelName, path: string, vocab: QuantModelVocab = "llama"): Promise<void> {
  writeFileSync(path, await quantModelBytes(name, vocab));
}

/**
 * A legacy llama-imatrix .dat for `names` (each with `columns[name]` weights): entry count, then
 * per entry name, ncall, nval and the sums, then the chunk count and a dataset name.
 */
export function legacyImatrix(entries: readonly { name: string; columns: number }[], seed = 7): Uint8Array {
  const rng = new Rng(seed);
  const enc = new TextEncoder();
  const chunks: Uint8Array[] = [];
  const i32 = (v: number): Uint8Array => new Uint8Array(new Int32Array([v]).buffer);
  chunks.push(i32(entries.length));
  for (const e of entries) {
    const name = enc.encode(e.name);
    chunks.push(i32(name.length), name, i32(10), i32(e.columns));
    const sums = new Float32Array(e.columns);
    for (let i = 0; i < e.columns; i++) sums[i] = 10 * (0.05 + rng.u32() / 2 ** 32);
    chunks.push(new Uint8Array(sums.buffer));
  }
  const ds = enc.encode("tensorcast-test-data.txt");
  chunks.push(i32(10), i32(ds.length), ds);
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * What llama-quantize hands llama_model_quantize for a legacy .dat (each entry's sums / ncall in
 * float32), read here apart from tensorcast's reader, and the kv overrides it adds (`path` as given).
 */
export function legacyImatrixForPeer(bytes: Uint8Array, path: string): { imatrix: Map<string, Float32Array>; kvOverrides: { key: string; str?: string; int?: number }[] } {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const imatrix = new Map<string, Float32Array>();
  let at = 4;
  for (let e = v.getInt32(0, true); e > 0; e--) {
    const len = v.getInt32(at, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 4, at + 4 + len));
    at += 4 + len;
    const ncall = v.getInt32(at, true);
    const nval = v.getInt32(at + 4, true);
    at += 8;
    const w = new Float32Array(nval);
    for (let i = 0; i < nval; i++) w[i] = Math.fround(v.getFloat32(at + 4 * i, true) / ncall);
    at += 4 * nval;
    imatrix.set(name, w);
  }
  const chunks = v.getInt32(at, true);
  const dsLen = v.getInt32(at + 4, true);
  const dataset = new TextDecoder().decode(bytes.subarray(at + 8, at + 8 + dsLen));
  return {
    imatrix,
    kvOverrides: [
      { key: "quantize.imatrix.file", str: path }, { key: "quantize.imatrix.dataset", str: dataset },
      { key: "quantize.imatrix.entries_count", int: imatrix.size }, { key: "quantize.imatrix.chunks_count", int: chunks },
    ],
  };
}
