/**
 * The Hugging Face folders `tensorcast quantize DIR --mode PRESET -o OUT.gguf` and `convert DIR
 * --to TYPE -o OUT.gguf` are checked on, and the presets each is quantized with. Shared by the
 * golden maker (test/node/make-hf-quantize-golden.ts, which runs convert_hf_to_gguf.py and
 * llama_model_quantize) and the tests, so both build the same folders:
 *
 * - the seven tiny fixtures of test/fixtures/hf-gguf/ (hidden 64: every K and IQ type falls back,
 *   as llama-quantize's rows that are not whole blocks of 256 do);
 * - wide-llama: a Llama of hidden and FFN 256, four layers, bfloat16 values from a fixed seed, made
 *   here (not stored), so K, IQ and TQ blocks are whole and the mixes' layer rules differ by layer;
 * - qwen2 as a PyTorch folder (test/fixtures/hf-gguf/qwen2.pytorch_model.bin, its state dict in
 *   reverse name order) beside qwen2's other files, in a folder named qwen2;
 * - llama as a Hub cache snapshot (models--tiny--llama/snapshots/REV/ linking to blobs/).
 *
 * Node built-ins only: no node:test, so the golden maker can import it.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** build/test/support/ -> the repository root. */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export { legacyImatrixForPeer } from "./gguf-quant-models.js";
export const HF_GGUF_FIXTURES = join(ROOT, "test", "fixtures", "hf-gguf");
export const HF_QUANT_GOLDEN = join(HF_GGUF_FIXTURES, "quantize.json");

/** The presets every folder is quantized with, and the wide model's further ones. */
export const PRESETS = ["Q4_K_M", "Q8_0", "Q2_K", "IQ4_XS"] as const;
export const WIDE_PRESETS = [...PRESETS, "Q3_K_M", "Q4_K_S", "Q5_K_M", "Q6_K", "Q4_0", "IQ4_NL", "TQ2_0"] as const;

export interface HfQuantCase {
  readonly id: string;
  /** The presets quantized, by llama-quantize's names. */
  readonly presets: readonly string[];
  /** convert_hf_to_gguf.py --outtype values whose files are golden too. */
  readonly outtypes: readonly string[];
  /** Makes the folder under `root` (or names the fixture's) and gives its path. */
  make(root: string): string;
}

/** llama.cpp's enum llama_ftype of a preset name, for the peer. */
export const FTYPES: Readonly<Record<string, number>> = {
  Q4_0: 2, Q8_0: 7, Q2_K: 10, Q3_K_M: 12, Q4_K_S: 14, Q4_K_M: 15, Q5_K_M: 17, Q6_K: 18, IQ4_NL: 25, IQ4_XS: 30, TQ2_0: 37, MXFP4_MOE: 38,
};

const FIXTURE_CASES = ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"];
/** Folders with experts (stacked into ffn_*_exps, where MXFP4_MOE differs from Q8_0) and Llama 3's rope_freqs. */
const MOE_CASES = ["mixtral", "qwen3_moe"];
const MOE_PRESETS = ["Q4_K_M", "Q8_0", "MXFP4_MOE", "IQ4_XS"] as const;

/** xorshift32 words from a fixed seed. */
function words(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

/** The bfloat16 code of float64 `v`, rounded to nearest even through float32 (finite, as here). */
function bf16(v: number): number {
  const b = new Uint32Array(new Float32Array([v]).buffer)[0];
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** A safetensors file of bfloat16 tensors (codes given), in the order given. */
function bf16Safetensors(tensors: readonly { name: string; shape: number[]; codes: Uint16Array }[]): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  let at = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: "BF16", shape: t.shape, data_offsets: [at, at + t.codes.length * 2] };
    at += t.codes.length * 2;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8 !== 0) json += " ";
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const data = tensors.map((t) => {
    const b = Buffer.alloc(t.codes.length * 2);
    t.codes.forEach((c, i) => b.writeUInt16LE(c, 2 * i));
    return b;
  });
  return Buffer.concat([len, Buffer.from(json), ...data]);
}

const WIDE = { hidden: 256, ffn: 256, layers: 4, heads: 4, kv: 2, headDim: 64 };

/**
 * wide-llama under `root`: llama's tokenizer and chat template, its config with wider sizes, and
 * tensors of values (the sum of four uniform words, centred: about normal) times 0.05, norms about 1.
 */
export function makeWideLlama(root: string): string {
  const dir = join(root, "wide-llama");
  mkdirSync(dir, { recursive: true });
  const src = join(HF_GGUF_FIXTURES, "llama");
  for (const f of ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"]) copyFileSync(join(src, f), join(dir, f));
  const config = JSON.parse(readFileSync(join(src, "config.json"), "utf8")) as Record<string, unknown>;
  Object.assign(config, {
    dtype: "bfloat16", hidden_size: WIDE.hidden, intermediate_size: WIDE.ffn, num_hidden_layers: WIDE.layers,
    num_attention_heads: WIDE.heads, num_key_value_heads: WIDE.kv, head_dim: WIDE.headDim,
  });
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2) + "\n");
  const vocab = config.vocab_size as number;
  const next = words(20261203);
  const tensor = (name: string, shape: number[], centre: number, scale: number) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const codes = new Uint16Array(n);
    for (let i = 0; i < n; i++) codes[i] = bf16(centre + scale * ((next() + next() + next() + next()) / 2 ** 32 - 2));
    return { name, shape, codes };
  };
  const { hidden: h, ffn, kv, headDim } = WIDE;
  const list = [tensor("model.embed_tokens.weight", [vocab, h], 0, 0.05)];
  for (let l = 0; l < WIDE.layers; l++) {
    const p = `model.layers.${l}`;
    list.push(
      tensor(`${p}.input_layernorm.weight`, [h], 1, 0.1), tensor(`${p}.post_attention_layernorm.weight`, [h], 1, 0.1),
      tensor(`${p}.self_attn.q_proj.weight`, [h, h], 0, 0.05), tensor(`${p}.self_attn.k_proj.weight`, [kv * headDim, h], 0, 0.05),
      tensor(`${p}.self_attn.v_proj.weight`, [kv * headDim, h], 0, 0.05), tensor(`${p}.self_attn.o_proj.weight`, [h, h], 0, 0.05),
      tensor(`${p}.mlp.gate_proj.weight`, [ffn, h], 0, 0.05), tensor(`${p}.mlp.up_proj.weight`, [ffn, h], 0, 0.05),
      tensor(`${p}.mlp.down_proj.weight`, [h, ffn], 0, 0.05),
    );
  }
  list.push(tensor("model.norm.weight", [h], 1, 0.1), tensor("lm_head.weight", [vocab, h], 0, 0.05));
  writeFileSync(join(dir, "model.safetensors"), bf16Safetensors(list));
  return dir;
}

/** qwen2 as a PyTorch folder under `root`: its files but model.safetensors, and the committed pytorch_model.bin. */
export function makeQwen2Pytorch(root: string): string {
  const dir = join(root, "pytorch", "qwen2");
  mkdirSync(dir, { recursive: true });
  const src = join(HF_GGUF_FIXTURES, "qwen2");
  for (const f of readdirSync(src)) if (f !== "model.safetensors") copyFileSync(join(src, f), join(dir, f));
  copyFileSync(join(HF_GGUF_FIXTURES, "qwen2.pytorch_model.bin"), join(dir, "pytorch_model.bin"));
  return dir;
}

/** The snapshot revision the Hub cache case is named by (a commit hash, as the Hub's are). */
export const HUB_REVISION = "0123456789abcdef0123456789abcdef01234567";

/** llama as the Hub cache lays it out: blobs/SHA256 and snapshots/REV/NAME -> ../../blobs/SHA256, refs/main. */
export function makeLlamaHubSnapshot(root: string): string {
  const repo = join(root, "hub", "models--tiny--llama");
  const snap = join(repo, "snapshots", HUB_REVISION);
  mkdirSync(join(repo, "blobs"), { recursive: true });
  mkdirSync(join(repo, "refs"), { recursive: true });
  mkdirSync(snap, { recursive: true });
  writeFileSync(join(repo, "refs", "main"), HUB_REVISION);
  const src = join(HF_GGUF_FIXTURES, "llama");
  for (const f of readdirSync(src)) {
    const data = readFileSync(join(src, f));
    const blob = createHash("sha256").update(data).digest("hex");
    writeFileSync(join(repo, "blobs", blob), data);
    symlinkSync(join("..", "..", "blobs", blob), join(snap, f));
  }
  return snap;
}

export const HF_QUANT_CASES: readonly HfQuantCase[] = [
  ...FIXTURE_CASES.map((id) => ({ id, presets: PRESETS, outtypes: ["auto", "tq1_0", "tq2_0"], make: () => join(HF_GGUF_FIXTURES, id) })),
  { id: "wide-llama", presets: WIDE_PRESETS, outtypes: ["auto", "tq1_0", "tq2_0", "q8_0"], make: makeWideLlama },
  { id: "qwen2-pytorch", presets: ["Q4_K_M"], outtypes: ["auto", "f16"], make: makeQwen2Pytorch },
  { id: "llama-hub", presets: ["Q4_K_M"], outtypes: ["auto"], make: makeLlamaHubSnapshot },
  ...MOE_CASES.map((id) => ({ id, presets: MOE_PRESETS, outtypes: ["auto"], make: () => join(HF_GGUF_FIXTURES, id) })),
  { id: "llama3rope", presets: ["Q4_K_M", "Q8_0"], outtypes: ["auto"], make: () => join(HF_GGUF_FIXTURES, "llama3rope") },
];

/** The golden file: per case, the SHA-256 and size of each outtype's and each preset's file. */
export interface HfQuantGolden {
  readonly made: string;
  readonly cases: Readonly<Record<string, { readonly outtypes: Readonly<Record<string, { sha256: string; size: number }>>; readonly presets: Readonly<Record<string, { sha256: string; size: number }>> }>>;
}

export function readHfQuantGolden(): HfQuantGolden {
  return JSON.parse(readFileSync(HF_QUANT_GOLDEN, "utf8")) as HfQuantGolden;
}

/**
 * convert_hf_to_gguf.py DIR --outtype OUTTYPE --outfile OUT through make.py's wrapper (its
 * pre-tokenizer fallback for the fixtures' trained tokenizers), with `python`.
 * @throws Error with its stderr when it fails.
 */
export function convertWithPython(python: string, dir: string, outtype: string, out: string): void {
  const r = spawnSync(python, [join(HF_GGUF_FIXTURES, "make.py"), "--convert", dir, outtype, out], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`convert_hf_to_gguf.py ${dir} --outtype ${outtype} failed: ${r.error?.message ?? ""}${r.stderr ?? ""}`);
}

/** The entries llama-imatrix would collect for wide-llama: every block weight and output.weight, 256 columns each. */
export function wideImatrixEntries(): { name: string; columns: number }[] {
  const out: { name: string; columns: number }[] = [];
  for (let i = 0; i < WIDE.layers; i++) {
    for (const t of ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]) out.push({ name: `blk.${i}.${t}.weight`, columns: WIDE.hidden });
  }
  out.push({ name: "output.weight", columns: WIDE.hidden });
  return out;
}

