/**
 * The whole GGUF quantization job against llama.cpp's: a generated F16 llama of about 1 GiB
 * (TinyLlama's shapes: hidden 2048, 32 heads sharing 4 KV heads, ffn 5632, vocab 32000; 9 layers
 * by default) quantized to Q4_K_M by `tensorcast quantize IN.gguf --mode Q4_K_M -o OUT.gguf` (its
 * default workers: one per core) and by llama_model_quantize (node-llama-cpp's libllama through
 * koffi, nthread the same count), each in a process of its own under /usr/bin/time for its wall
 * time and peak resident memory; the two outputs must be byte-identical. Opt-in, not a test: it
 * writes about 1 GiB and two outputs of about 0.3 GiB in a temporary folder.
 *
 *   TENSORCAST_BIG=1 node build/bench/ggml-quantize-job.js [--layers N] [--vocab N] [--dir DIR] [--keep] [--skip-llama]
 *
 * The weights are weight-like values (normal, standard deviation 0.02, a heavier tail; see
 * ggml-quantize.ts), a pool of 4 Mi of them read from a different offset for every tensor.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync, statSync, writeSync } from "node:fs";
import { createHash } from "node:crypto";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { timed, type Timed } from "./timed.js";
import { fp16Bits } from "../src/ggml/scalars.js";
import { ggmlDims, writeGguf, type GgufMetadataEntry, type GgufTensorToWrite } from "../src/io/gguf/index.js";
import { llamaQuantizeArgv } from "./llama-quantize-child.js";
import { Rng } from "../test/support/rng.js";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const CLI = fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url));
const GiB = 2 ** 30;
const LAYERS = Number(arg("--layers", "9"));
const HIDDEN = 2048;
const HEADS = 32;
const KV = 4;
const FFN = 5632;
const VOCAB = Number(arg("--vocab", "32000"));
const POOL = 4 << 20;

/** A pool of F16 weight-like values. */
function poolBytes(): Uint16Array {
  const rng = new Rng(0xb16);
  const u = (): number => (rng.u32() + 0.5) / 2 ** 32;
  const out = new Uint16Array(POOL + 2 * FFN);
  for (let i = 0; i < out.length; i++) {
    const v = 0.02 * Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * (rng.below(64) === 0 ? 5 : 1);
    out[i] = fp16Bits(v);
  }
  return out;
}

function tensors(pool: Uint16Array): GgufTensorToWrite[] {
  const out: GgufTensorToWrite[] = [];
  let offset = 0;
  const matrix = (name: string, rows: number, cols: number): void => {
    const start = (offset = (offset + 1_000_003) % POOL);
    function* data(): Generator<Uint8Array> {
      // Row bands from the pool, each from its own offset, so that rows differ.
      const band = Math.max(1, Math.floor((1 << 20) / cols));
      for (let r = 0, at = start; r < rows; r += band, at = (at + 7919 * cols) % POOL) {
        const n = Math.min(band, rows - r) * cols;
        const from = Math.min(at, pool.length - n);
        yield new Uint8Array(pool.buffer, 2 * from, 2 * n);
      }
    }
    out.push({ name, ggmlType: "F16", dims: ggmlDims([rows, cols]), data: data() });
  };
  const norm = (name: string): void => {
    const v = new Float32Array(HIDDEN).map((_, i) => 1 + 0.01 * Math.sin(i));
    out.push({ name, ggmlType: "F32", dims: [HIDDEN], data: new Uint8Array(v.buffer) });
  };
  matrix("token_embd.weight", VOCAB, HIDDEN);
  for (let l = 0; l < LAYERS; l++) {
    norm(`blk.${l}.attn_norm.weight`);
    matrix(`blk.${l}.attn_q.weight`, HIDDEN, HIDDEN);
    matrix(`blk.${l}.attn_k.weight`, (HIDDEN / HEADS) * KV, HIDDEN);
    matrix(`blk.${l}.attn_v.weight`, (HIDDEN / HEADS) * KV, HIDDEN);
    matrix(`blk.${l}.attn_output.weight`, HIDDEN, HIDDEN);
    norm(`blk.${l}.ffn_norm.weight`);
    matrix(`blk.${l}.ffn_gate.weight`, FFN, HIDDEN);
    matrix(`blk.${l}.ffn_up.weight`, FFN, HIDDEN);
    matrix(`blk.${l}.ffn_down.weight`, HIDDEN, FFN);
  }
  norm("output_norm.weight");
  matrix("output.weight", VOCAB, HIDDEN);
  return out;
}

const u32 = (key: string, value: number): GgufMetadataEntry => ({ key, type: "uint32", value });
const METADATA: GgufMetadataEntry[] = [
  { key: "general.architecture", type: "string", value: "llama" },
  { key: "general.name", type: "string", value: "tensorcast-quantize-bench" },
  u32("general.file_type", 1),
  u32("llama.block_count", LAYERS), u32("llama.embedding_length", HIDDEN), u32("llama.feed_forward_length", FFN),
  u32("llama.context_length", 2048), u32("llama.rope.dimension_count", HIDDEN / HEADS),
  u32("llama.attention.head_count", HEADS), u32("llama.attention.head_count_kv", KV),
  { key: "llama.attention.layer_norm_rms_epsilon", type: "float32", value: 1e-5 },
  u32("llama.vocab_size", VOCAB),
  u32("general.quantization_version", 2),
];

if (process.env.TENSORCAST_BIG !== "1") {
  console.log("skipped: set TENSORCAST_BIG=1 (writes a GGUF of about 1 GiB and two Q4_K_M outputs)");
  process.exit(0);
}
const dir = arg("--dir", "") || mkdtempSync(join(tmpdir(), "tensorcast-quantize-job-"));
const s = statfsSync(dir);
if (s.bavail * s.bsize < (LAYERS / 9) * 2 * GiB) {
  console.log(`skipped: ${dir} has ${((s.bavail * s.bsize) / GiB).toFixed(1)} GiB free`);
  process.exit(0);
}
const gguf = join(dir, "f16.gguf");
const ours = join(dir, "tensorcast-q4_k_m.gguf");
const theirs = join(dir, "llama-q4_k_m.gguf");
const threads = availableParallelism();
const digest = (path: string): string => createHash("sha256").update(readFileSync(path)).digest("hex");
try {
  const fd = openSync(gguf, "w");
  try {
    await writeGguf({ write: (bytes, position) => void writeSync(fd, bytes, 0, bytes.length, position) }, METADATA, tensors(poolBytes()));
  } finally {
    closeSync(fd);
  }
  console.log(`# ${gguf}: ${(statSync(gguf).size / GiB).toFixed(2)} GiB F16 (${LAYERS} layers); ${threads} threads each; Node ${process.version}; load average before ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log("| job | result | wall s | peak RSS MiB |\n|---|---|---:|---:|");
  const row = (label: string, t: Timed): void =>
    console.log(`| ${label} | ${t.status === 0 ? "ok" : `exit ${t.status}: ${t.stderr.trim().split("\n").slice(-2).join(" ")}`} | ${t.seconds.toFixed(1)} | ${t.peakMiB.toFixed(0)} |`);
  row("tensorcast quantize --mode Q4_K_M", timed([process.execPath, CLI, "quantize", gguf, "--mode", "Q4_K_M", "-o", ours]));
  if (!process.argv.includes("--skip-llama")) {
    row(`llama_model_quantize Q4_K_M (nthread ${threads})`, timed(llamaQuantizeArgv(gguf, theirs, "Q4_K_M", threads)));
    console.log(`\noutputs ${digest(ours) === digest(theirs) ? "byte-identical" : "DIFFER"}; load average after ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  }
} finally {
  if (!process.argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
}
