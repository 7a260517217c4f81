/**
 * A multi-GiB GGUF through the CLI: peak resident memory and wall time of `inspect` (every tensor
 * dequantized for its statistics) and of `convert --to bfloat16 -o OUT.safetensors`. Opt-in, not a
 * test: it writes the GGUF (default about 3.9 GiB) and its bfloat16 safetensors (about 4x that).
 *
 *   TENSORCAST_BIG=1 node build/bench/gguf-big.js [--layers N] [--dir DIR] [--python PY] [--keep]
 *
 * With --python (a Python with transformers, torch, gguf and accelerate, such as the local wheels'
 * venv), transformers does the same job in the same run (bench/gguf-transformers.py:
 * from_pretrained(gguf_file=, dtype=bfloat16) and save_file), and its values are compared with
 * ours. It holds the whole model: use --layers 1 to 4 on a machine of 24 GiB.
 *
 * The model is a llama of 7B's shapes (hidden 4096, ffn 11008, 32 layers, vocab 32000) in
 * llama-quantize's Q4_K_M mix: attn_v, ffn_down and output in Q6_K, the other matrices Q4_K, norms
 * F32. Its blocks are real ones (quantizeRows of pseudo-random rows), a pool of them repeated along
 * each tensor: the dequantizer does the same work on every block whatever its values, and writing
 * the file stays quick. Each step runs in its own process under /usr/bin/time.
 */
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { timed, type Timed } from "./timed.js";
import { ggmlRowBytes, ggmlType } from "../src/ggml/types.js";
import { quantizeRows } from "../src/ggml/quantize/index.js";
import { ggmlDims, writeGguf, type GgufMetadataEntry, type GgufTensorToWrite } from "../src/io/gguf/index.js";

const CLI = fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url));
const MiB = 2 ** 20;
const GiB = 2 ** 30;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const LAYERS = Number(arg("--layers", "32"));
const HIDDEN = 4096;
const FFN = 11008;
const VOCAB = 32000;

/** One row of real blocks of `type` for rows of `n`, cycled to fill a tensor. */
const pools = new Map<string, Uint8Array>();
function pool(type: string, n: number): Uint8Array {
  const key = `${type}/${n}`;
  let p = pools.get(key);
  if (!p) {
    const rows = 16;
    const x = new Float32Array(rows * n);
    let s = 12345;
    for (let i = 0; i < x.length; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      x[i] = ((s >>> 8) / 2 ** 24 - 0.5) * 0.05;
    }
    p = quantizeRows(type, x, n);
    pools.set(key, p);
  }
  return p;
}

function* filled(type: string, rows: number, n: number): Generator<Uint8Array> {
  const p = pool(type, n);
  const rowBytes = ggmlRowBytes(ggmlType(type), n);
  if (rowBytes === undefined) throw new Error(`rows of ${n} are not whole ${type} blocks`);
  const perPiece = p.length / rowBytes;
  for (let r = 0; r < rows; r += perPiece) yield p.subarray(0, Math.min(perPiece, rows - r) * rowBytes);
}

function tensors(): GgufTensorToWrite[] {
  const out: GgufTensorToWrite[] = [];
  const matrix = (name: string, type: string, rows: number, cols: number): void => {
    out.push({ name, ggmlType: type, dims: ggmlDims([rows, cols]), data: filled(type, rows, cols) });
  };
  const norm = (name: string): void => {
    const v = new Float32Array(HIDDEN).fill(1);
    out.push({ name, ggmlType: "F32", dims: [HIDDEN], data: new Uint8Array(v.buffer) });
  };
  matrix("token_embd.weight", "Q4_K", VOCAB, HIDDEN);
  for (let l = 0; l < LAYERS; l++) {
    norm(`blk.${l}.attn_norm.weight`);
    matrix(`blk.${l}.attn_q.weight`, "Q4_K", HIDDEN, HIDDEN);
    matrix(`blk.${l}.attn_k.weight`, "Q4_K", HIDDEN, HIDDEN);
    matrix(`blk.${l}.attn_v.weight`, "Q6_K", HIDDEN, HIDDEN);
    matrix(`blk.${l}.attn_output.weight`, "Q4_K", HIDDEN, HIDDEN);
    norm(`blk.${l}.ffn_norm.weight`);
    matrix(`blk.${l}.ffn_gate.weight`, "Q4_K", FFN, HIDDEN);
    matrix(`blk.${l}.ffn_up.weight`, "Q4_K", FFN, HIDDEN);
    matrix(`blk.${l}.ffn_down.weight`, "Q6_K", HIDDEN, FFN);
  }
  norm("output_norm.weight");
  matrix("output.weight", "Q6_K", VOCAB, HIDDEN);
  return out;
}

const METADATA: GgufMetadataEntry[] = [
  { key: "general.architecture", type: "string", value: "llama" },
  { key: "general.name", type: "string", value: "tensorcast-bench" },
  { key: "general.file_type", type: "uint32", value: 15 },
  { key: "llama.block_count", type: "uint32", value: LAYERS },
  { key: "llama.embedding_length", type: "uint32", value: HIDDEN },
  { key: "llama.feed_forward_length", type: "uint32", value: FFN },
  { key: "llama.context_length", type: "uint32", value: 4096 },
  { key: "llama.rope.dimension_count", type: "uint32", value: 128 },
  { key: "llama.attention.head_count", type: "uint32", value: 32 },
  { key: "llama.attention.head_count_kv", type: "uint32", value: 32 },
  { key: "llama.attention.layer_norm_rms_epsilon", type: "float32", value: 1e-5 },
  { key: "llama.vocab_size", type: "uint32", value: VOCAB },
  { key: "general.quantization_version", type: "uint32", value: 2 },
];


if (process.env.TENSORCAST_BIG !== "1") {
  console.log("skipped: set TENSORCAST_BIG=1 (writes a GGUF of about 3.9 GiB and its bfloat16 safetensors, about 13 GiB)");
  process.exit(0);
}
const dir = arg("--dir", "") || mkdtempSync(join(tmpdir(), "tensorcast-gguf-big-"));
const s = statfsSync(dir);
const need = (LAYERS / 32) * 18 * GiB;
if (s.bavail * s.bsize < need) {
  console.log(`skipped: ${dir} has ${((s.bavail * s.bsize) / GiB).toFixed(1)} GiB free; this needs ${(need / GiB).toFixed(1)} GiB`);
  process.exit(0);
}
const gguf = join(dir, "big.gguf");
const out = join(dir, "big.safetensors");
try {
  const started = performance.now();
  const fd = openSync(gguf, "w");
  try {
    await writeGguf({ write: (bytes, position) => void writeSync(fd, bytes, 0, bytes.length, position) }, METADATA, tensors());
  } finally {
    closeSync(fd);
  }
  const size = statSync(gguf).size;
  console.log(`# ${gguf}: ${(size / GiB).toFixed(2)} GiB (${LAYERS} layers, Q4_K_M mix), written in ${((performance.now() - started) / 1000).toFixed(1)} s; Node ${process.version}`);
  console.log("| step | result | wall s | peak RSS MiB | notes |\n|---|---|---:|---:|---|");
  const row = (label: string, t: Timed, note: string): void =>
    console.log(`| ${label} | ${t.status === 0 ? "ok" : `exit ${t.status}`} | ${t.seconds.toFixed(1)} | ${t.peakMiB.toFixed(0)} | ${t.status === 0 ? note : t.stderr.trim().split("\n").slice(-2).join(" ")} |`);
  const inspect = timed([process.execPath, CLI, "inspect", gguf, "--json"]);
  row("tensorcast inspect (every tensor dequantized for min / max / mean)", inspect, "");
  const conv = timed([process.execPath, CLI, "convert", gguf, "--to", "bfloat16", "-o", out]);
  row("tensorcast convert --to bfloat16 -o OUT.safetensors", conv, conv.status === 0 ? `OUT ${(statSync(out).size / GiB).toFixed(2)} GiB` : "");
  const python = arg("--python", "");
  if (python !== "") {
    const script = fileURLToPath(new URL("../../bench/gguf-transformers.py", import.meta.url));
    const tf = timed([python, script, dir, "big.gguf", out, join(dir, "transformers.safetensors")]);
    const result = /RESULT (.*)/.exec(tf.stdout)?.[1];
    row("transformers from_pretrained(gguf_file=, dtype=bfloat16) + save_file", tf, result ?? "");
  }
} finally {
  if (!process.argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
}
