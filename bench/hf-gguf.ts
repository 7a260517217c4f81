/**
 * A Hugging Face folder to GGUF at scale: the wall time and peak resident memory of
 * `tensorcast convert DIR --to T -o OUT.gguf` against llama.cpp's convert_hf_to_gguf.py on the same
 * folder in the same run, each in its own process under /usr/bin/time, and the two files'
 * SHA-256 compared (they must be the same bytes). With --preset P, also `tensorcast quantize DIR
 * --mode P` in one pass against convert_hf_to_gguf.py --outtype auto followed by llama.cpp's
 * llama_model_quantize (test-peers' libllama through koffi, in a process of its own, --threads
 * threads) on its file. Opt-in, not a test: it writes the folder (default about 1 GiB) and the outputs.
 *
 *   TENSORCAST_BIG=1 node build/bench/hf-gguf.js [--python PY] [--layers N] [--types bf16,q8_0]
 *       [--preset Q4_K_M] [--threads N] [--dir DIR] [--keep]
 *
 * PY is a Python with torch, transformers and numpy (the local wheels' venv; without --python only
 * tensorcast's steps run); LLAMA_CPP (default
 * /work/llama.cpp) the llama.cpp source convert_hf_to_gguf.py is run from, with make.py's wrapper
 * (test/fixtures/hf-gguf/make.py: the trained tokenizer's unknown pre-tokenizer hash falls back to
 * its regex's name, as tensorcast names it).
 *
 * The folder is a Llama of hidden 2048, ffn 5632, 16 heads (4 for K/V), bfloat16, the fixtures'
 * tokenizer (320 tokens), in safetensors shards of about 500 MB with an index, as save_pretrained
 * lays it out. The weights are pseudo-random bfloat16 (a pool of 1 Mi values cycled with a
 * per-tensor offset): the converters do the same work whatever the values.
 */
import { copyFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { createHash } from "node:crypto";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { timed, type Timed } from "./timed.js";
import { llamaQuantizeArgv } from "./llama-quantize-child.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(ROOT, "bin", "tensorcast.js");
const FIXTURE = join(ROOT, "test", "fixtures", "hf-gguf");
const LLAMA_CPP = process.env.LLAMA_CPP ?? "/work/llama.cpp";
const MiB = 2 ** 20;

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

if (process.env.TENSORCAST_BIG !== "1") {
  console.error("bench:hf-gguf writes a folder of about 1 GiB and its GGUF files: set TENSORCAST_BIG=1 to run it");
  process.exit(2);
}
/** Without it, only tensorcast's steps run (its memory on a big folder, say). */
const PYTHON = arg("--python");
const LAYERS = Number(arg("--layers", "12"));
const TYPES = arg("--types", "bf16,q8_0")!.split(",");
const PRESET = arg("--preset");
const THREADS = Number(arg("--threads", "2"));
const HIDDEN = 2048;
const FFN = 5632;
const HEADS = 16;
const KV_HEADS = 4;
const VOCAB = 320;
const SHARD_BYTES = 500e6;

/** 1 Mi pseudo-random bfloat16 values of about 0.02, as little-endian bytes. */
function pool(): Uint8Array {
  const out = new Uint16Array(MiB);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  let s = 2463534242;
  for (let i = 0; i < out.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    f[0] = ((s >>> 0) / 2 ** 32 - 0.5) * 0.04;
    out[i] = u[0]! >>> 16;
  }
  return new Uint8Array(out.buffer);
}

interface Tensor {
  name: string;
  shape: number[];
}

function tensors(): Tensor[] {
  const kv = (HIDDEN / HEADS) * KV_HEADS;
  const list: Tensor[] = [{ name: "model.embed_tokens.weight", shape: [VOCAB, HIDDEN] }];
  for (let i = 0; i < LAYERS; i++) {
    const p = `model.layers.${i}.`;
    list.push(
      { name: `${p}input_layernorm.weight`, shape: [HIDDEN] },
      { name: `${p}self_attn.q_proj.weight`, shape: [HIDDEN, HIDDEN] },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, HIDDEN] },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, HIDDEN] },
      { name: `${p}self_attn.o_proj.weight`, shape: [HIDDEN, HIDDEN] },
      { name: `${p}post_attention_layernorm.weight`, shape: [HIDDEN] },
      { name: `${p}mlp.gate_proj.weight`, shape: [FFN, HIDDEN] },
      { name: `${p}mlp.up_proj.weight`, shape: [FFN, HIDDEN] },
      { name: `${p}mlp.down_proj.weight`, shape: [HIDDEN, FFN] },
    );
  }
  list.push({ name: "model.norm.weight", shape: [HIDDEN] }, { name: "lm_head.weight", shape: [VOCAB, HIDDEN] });
  return list;
}

/** Writes the folder: config, the fixture's tokenizer, shards of bfloat16 and the index. */
function writeFolder(dir: string): number {
  mkdirSync(dir, { recursive: true });
  const config = JSON.parse(readFileSync(join(FIXTURE, "llama", "config.json"), "utf8")) as Record<string, unknown>;
  Object.assign(config, {
    dtype: "bfloat16", head_dim: HIDDEN / HEADS, hidden_size: HIDDEN, intermediate_size: FFN, num_attention_heads: HEADS,
    num_hidden_layers: LAYERS, num_key_value_heads: KV_HEADS, vocab_size: VOCAB, max_position_embeddings: 4096,
  });
  writeFileSync(join(dir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
  for (const f of ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"]) copyFileSync(join(FIXTURE, "llama", f), join(dir, f));
  const values = pool();
  const all = tensors();
  const shards: Tensor[][] = [[]];
  let bytes = 0;
  for (const t of all) {
    const n = t.shape.reduce((a, b) => a * b, 1) * 2;
    if (bytes + n > SHARD_BYTES && shards[shards.length - 1]!.length > 0) {
      shards.push([]);
      bytes = 0;
    }
    shards[shards.length - 1]!.push(t);
    bytes += n;
  }
  const weightMap: Record<string, string> = {};
  let total = 0;
  shards.forEach((list, k) => {
    const file = `model-${String(k + 1).padStart(5, "0")}-of-${String(shards.length).padStart(5, "0")}.safetensors`;
    const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
    let at = 0;
    for (const t of list) {
      const n = t.shape.reduce((a, b) => a * b, 1) * 2;
      header[t.name] = { dtype: "BF16", shape: t.shape, data_offsets: [at, at + n] };
      at += n;
      weightMap[t.name] = file;
    }
    let json = JSON.stringify(header);
    json += " ".repeat((8 - ((json.length + 8) % 8)) % 8);
    const fd = openSync(join(dir, file), "w");
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    writeSync(fd, len);
    writeSync(fd, Buffer.from(json));
    list.forEach((t, i) => {
      let left = t.shape.reduce((a, b) => a * b, 1) * 2;
      let from = (i * 7919 * 2) % values.length;
      while (left > 0) {
        const piece = values.subarray(from, Math.min(values.length, from + left));
        writeSync(fd, piece);
        left -= piece.length;
        from = 0;
      }
    });
    closeSync(fd);
    total += at;
  });
  writeFileSync(join(dir, "model.safetensors.index.json"), `${JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2)}\n`);
  return total;
}

const sha256 = (path: string): string => createHash("sha256").update(readFileSync(path)).digest("hex");

function convertHfToGguf(dir: string, outtype: string, out: string): Timed {
  // make.py's wrapper around convert_hf_to_gguf.main(), as the fixtures are made.
  const script = [
    "import sys, json",
    `sys.path.insert(0, ${JSON.stringify(FIXTURE)})`,
    "import make",
    "code = make.CONVERT.replace('LLAMA_CPP', repr(make.LLAMA_CPP)).replace('PRE)', repr(json.dumps(make.PRE_BY_REGEX)) + ')')",
    "exec(compile(code, 'convert', 'exec'), {'__name__': '__main__'})",
  ].join("\n");
  return timed(["env", `PYTHONPATH=${join(LLAMA_CPP, "gguf-py")}`, `LLAMA_CPP=${LLAMA_CPP}`, PYTHON!, "-c", script, dir, "--outtype", outtype, "--outfile", out]);
}

function row(what: string, t: Timed): string {
  if (t.status !== 0) throw new Error(`${what} failed (${t.status}):\n${t.stderr.slice(-3000)}`);
  return `${what.padEnd(58)} ${t.seconds.toFixed(1).padStart(7)} s ${t.peakMiB.toFixed(0).padStart(7)} MiB`;
}

const base = arg("--dir") ?? mkdtempSync(join(tmpdir(), "tensorcast-hf-gguf-bench-"));
try {
  const folder = join(base, "llama-bench");
  const bytes = writeFolder(folder);
  console.log(`HF folder -> GGUF: a Llama of ${LAYERS} layers (hidden ${HIDDEN}, ffn ${FFN}), ${(bytes / 2 ** 30).toFixed(2)} GiB of bfloat16; load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`${"step".padEnd(58)} ${"wall".padStart(9)} ${"peak RSS".padStart(11)}`);
  for (const t of TYPES) {
    const ours = join(base, `ours.${t}.gguf`);
    const theirs = join(base, `theirs.${t}.gguf`);
    console.log(row(`tensorcast convert DIR --to ${t}`, timed([process.execPath, CLI, "convert", folder, "--to", t, "-o", ours, "-q", "--force"])));
    if (PYTHON !== undefined) {
      console.log(row(`convert_hf_to_gguf.py --outtype ${t}`, convertHfToGguf(folder, t, theirs)));
      console.log(`  same bytes: ${sha256(ours) === sha256(theirs)}`);
    }
    rmSync(ours, { force: true });
    rmSync(theirs, { force: true });
  }
  if (PRESET !== undefined && PYTHON !== undefined) {
    const ours = join(base, `ours.${PRESET}.gguf`);
    const auto = join(base, "theirs.auto.gguf");
    const theirs = join(base, `theirs.${PRESET}.gguf`);
    const a = timed([process.execPath, CLI, "quantize", folder, "--mode", PRESET, "-o", ours, "-q", "--force"]);
    console.log(row(`tensorcast quantize DIR --mode ${PRESET} (one pass)`, a));
    const b = convertHfToGguf(folder, "auto", auto);
    console.log(row("convert_hf_to_gguf.py --outtype auto", b));
    const c = timed(llamaQuantizeArgv(auto, theirs, PRESET, THREADS));
    console.log(row(`llama_model_quantize ${PRESET} (${THREADS} threads)`, c));
    console.log(`  both steps: ${(b.seconds + c.seconds).toFixed(1)} s, peak ${Math.max(b.peakMiB, c.peakMiB).toFixed(0)} MiB; tensorcast ${((b.seconds + c.seconds) / a.seconds).toFixed(2)}x faster; same bytes: ${sha256(ours) === sha256(theirs)}`);
  }
} finally {
  if (!process.argv.includes("--keep") && arg("--dir") === undefined) rmSync(base, { recursive: true, force: true });
}
