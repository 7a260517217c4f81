/**
 * Issue 27's speed and memory targets: `tensorcast quantize --mode fp8` and `--mode mxfp4` of a
 * 1 GiB bfloat16 folder against `tensorcast convert --to float8e4m3fn` of the same folder, and
 * the way back (`convert QDIR --to bfloat16`), each run its own process under /usr/bin/time -v.
 * Not a test: it prints a table (docs/quantize-checkpoints.md quotes it).
 *
 *   npm run bench:ckpt-quant -- [--dir /tmp] [--mib 1024] [--reps 3] [--cli path/to/bin/tensorcast.js] [--keep]
 *
 * Two sharded folders of about `--mib` MiB each are generated in `--dir` (values ~ uniform with a
 * per-row amplitude, bfloat16):
 * - "llama": a Llama-like stack (hidden 2048, intermediate 5632, kv 256; embeddings and lm_head
 *   32000 x 2048), as many layers as fit, shards of about 256 MiB, config.json;
 * - "oss": a gpt-oss-like stack (hidden 1024, 8 experts [8, 1024, 2048] gate_up and
 *   [8, 1024, 1024] down per layer, attention 1024 x 1024, embeddings 32000 x 1024).
 * Then, `--reps` times and in turn (a `sync` before each run, untimed; OUT removed between runs):
 * convert llama --to float8e4m3fn, quantize llama --mode fp8, convert oss --to float8e4m3fn,
 * quantize oss --mode mxfp4, and the way back of each quantized folder. Min and median wall time,
 * CPU time, peak RSS (max over runs) and page faults (major / minor, median), and the ratio of
 * each quantize to the convert of the same folder.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const MiB = 1024 * 1024;
const targetMiB = Number(option("--mib", "1024"));
const reps = Number(option("--reps", "3"));
const cliPath = option("--cli", fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url)));
const keep = args.includes("--keep");
const dir = mkdtempSync(join(option("--dir", tmpdir()), "tensorcast-ckpt-quant-"));

type Spec = [name: string, shape: number[]];

/** A Llama-like stack of about `mib` MiB of bfloat16. */
function llamaSpecs(mib: number): Spec[] {
  const [h, f, kv, vocab] = [2048, 5632, 256, 32000];
  const specs: Spec[] = [["model.embed_tokens.weight", [vocab, h]], ["lm_head.weight", [vocab, h]], ["model.norm.weight", [h]]];
  const layerBytes = 2 * (2 * h * h + 2 * kv * h + 3 * f * h + 2 * h);
  const layers = Math.max(1, Math.round((mib * MiB - 2 * 2 * vocab * h) / layerBytes));
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    specs.push(
      [`${p}.input_layernorm.weight`, [h]], [`${p}.self_attn.q_proj.weight`, [h, h]], [`${p}.self_attn.k_proj.weight`, [kv, h]],
      [`${p}.self_attn.v_proj.weight`, [kv, h]], [`${p}.self_attn.o_proj.weight`, [h, h]], [`${p}.post_attention_layernorm.weight`, [h]],
      [`${p}.mlp.gate_proj.weight`, [f, h]], [`${p}.mlp.up_proj.weight`, [f, h]], [`${p}.mlp.down_proj.weight`, [h, f]],
    );
  }
  return specs;
}

/** A gpt-oss-like stack of about `mib` MiB of bfloat16 (experts in gpt-oss' [E, in, out]). */
function ossSpecs(mib: number): Spec[] {
  const [h, e, vocab] = [1024, 8, 32000];
  const specs: Spec[] = [["model.embed_tokens.weight", [vocab, h]], ["lm_head.weight", [vocab, h]], ["model.norm.weight", [h]]];
  const layerBytes = 2 * (4 * h * h + e * h * 2 * h + e * h * h + e * 2 * h + e * h + e * h + 2 * h);
  const layers = Math.max(1, Math.round((mib * MiB - 2 * 2 * vocab * h) / layerBytes));
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    specs.push(
      [`${p}.input_layernorm.weight`, [h]], [`${p}.self_attn.q_proj.weight`, [h, h]], [`${p}.self_attn.k_proj.weight`, [h, h]],
      [`${p}.self_attn.v_proj.weight`, [h, h]], [`${p}.self_attn.o_proj.weight`, [h, h]], [`${p}.post_attention_layernorm.weight`, [h]],
      [`${p}.mlp.router.weight`, [e, h]], [`${p}.mlp.experts.gate_up_proj`, [e, h, 2 * h]], [`${p}.mlp.experts.gate_up_proj_bias`, [e, 2 * h]],
      [`${p}.mlp.experts.down_proj`, [e, h, h]], [`${p}.mlp.experts.down_proj_bias`, [e, h]],
    );
  }
  return specs;
}

/** Writes `specs` as bfloat16 shards of about 256 MiB, an index and config.json; returns the data bytes. */
function generate(folder: string, specs: Spec[], config: string): number {
  mkdirSync(folder);
  const shards: Spec[][] = [[]];
  let inShard = 0;
  for (const s of specs) {
    const bytes = 2 * s[1].reduce((a, b) => a * b, 1);
    if (inShard > 0 && inShard + bytes > 256 * MiB) {
      shards.push([]);
      inShard = 0;
    }
    shards[shards.length - 1].push(s);
    inShard += bytes;
  }
  const map: Record<string, string> = {};
  let total = 0;
  let seed = 0x2545f491;
  const block = new Uint16Array(2 * MiB);
  const f = new Float32Array(1);
  const w = new Uint32Array(f.buffer);
  shards.forEach((ss, i) => {
    const name = `model-${String(i + 1).padStart(5, "0")}-of-${String(shards.length).padStart(5, "0")}.safetensors`;
    const header: Record<string, unknown> = {};
    let at = 0;
    for (const [n, shape] of ss) {
      const bytes = 2 * shape.reduce((a, b) => a * b, 1);
      header[n] = { dtype: "BF16", shape, data_offsets: [at, at + bytes] };
      map[n] = name;
      at += bytes;
    }
    total += at;
    let json = JSON.stringify(header);
    json += " ".repeat((8 - ((8 + json.length) % 8)) % 8);
    const fd = openSync(join(folder, name), "w");
    try {
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(json.length));
      writeSync(fd, length);
      writeSync(fd, Buffer.from(json));
      for (let done = 0; done < at; done += block.byteLength) {
        // Weights ~ uniform in +/-a, a varying from 0.002 to 0.05 every 4096 values (rows of
        // different scale, as trained weights have).
        let amp = 0.02;
        for (let j = 0; j < block.length; j++) {
          seed ^= seed << 13;
          seed ^= seed >>> 17;
          seed ^= seed << 5;
          if (j % 4096 === 0) amp = 0.002 + ((seed >>> 0) / 4294967296) * 0.048;
          f[0] = (((seed >>> 0) / 4294967296) * 2 - 1) * amp;
          block[j] = w[0] >>> 16;
        }
        const n = Math.min(block.byteLength, at - done);
        writeSync(fd, new Uint8Array(block.buffer, 0, n));
      }
    } finally {
      closeSync(fd);
    }
  });
  writeFileSync(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: total }, weight_map: map }, null, 2));
  writeFileSync(join(folder, "config.json"), config);
  return total;
}

interface Run {
  seconds: number;
  cpu: number;
  peakMiB: number;
  major: number;
  minor: number;
}

function timed(argv: string[]): Run {
  const log = join(dir, "time.txt");
  execFileSync("sync");
  const r = spawnSync("/usr/bin/time", ["-v", "-o", log, process.execPath, cliPath, ...argv], { stdio: ["ignore", "ignore", "pipe"] });
  if (r.status !== 0) throw new Error(`tensorcast ${argv.join(" ")} failed (${r.status}): ${r.stderr}`);
  const report = readFileSync(log, "utf8");
  const num = (re: RegExp): number => {
    const m = re.exec(report);
    if (!m) throw new Error(`no ${re} in the /usr/bin/time report:\n${report}`);
    return Number(m[1]);
  };
  const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(report);
  if (!wall) throw new Error(`no wall time in the /usr/bin/time report:\n${report}`);
  return {
    seconds: Number(wall[1] ?? 0) * 3600 + Number(wall[2]) * 60 + Number(wall[3]),
    cpu: num(/User time \(seconds\): ([\d.]+)/) + num(/System time \(seconds\): ([\d.]+)/),
    peakMiB: num(/Maximum resident set size \(kbytes\): (\d+)/) / 1024,
    major: num(/Major \(requiring I\/O\) page faults: (\d+)/),
    minor: num(/Minor \(reclaiming a frame\) page faults: (\d+)/),
  };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const llama = join(dir, "llama");
const oss = join(dir, "oss");
try {
  const llamaBytes = generate(llama, llamaSpecs(targetMiB), '{\n  "architectures": ["LlamaForCausalLM"],\n  "torch_dtype": "bfloat16"\n}\n');
  const ossBytes = generate(oss, ossSpecs(targetMiB), '{\n  "architectures": ["GptOssForCausalLM"],\n  "torch_dtype": "bfloat16"\n}\n');
  const out = join(dir, "out");
  // The quantized folders the way back reads, made once (untimed).
  const llamaQ = join(dir, "llama-fp8");
  const ossQ = join(dir, "oss-mxfp4");
  timed(["quantize", llama, "--mode", "fp8", "-o", llamaQ, "-q"]);
  timed(["quantize", oss, "--mode", "mxfp4", "-o", ossQ, "-q"]);
  const contenders: [string, string[]][] = [
    ["llama: convert --to float8e4m3fn", ["convert", llama, "--to", "float8e4m3fn", "-o", out, "-q"]],
    ["llama: quantize --mode fp8", ["quantize", llama, "--mode", "fp8", "-o", out, "-q"]],
    ["llama: back, convert llama-fp8 --to bfloat16", ["convert", llamaQ, "--to", "bfloat16", "-o", out, "-q"]],
    ["oss: convert --to float8e4m3fn", ["convert", oss, "--to", "float8e4m3fn", "-o", out, "-q"]],
    ["oss: quantize --mode mxfp4", ["quantize", oss, "--mode", "mxfp4", "-o", out, "-q"]],
    ["oss: back, convert oss-mxfp4 --to bfloat16", ["convert", ossQ, "--to", "bfloat16", "-o", out, "-q"]],
  ];
  const runs = new Map<string, Run[]>(contenders.map(([n]) => [n, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const [name, argv] of contenders) {
      rmSync(out, { recursive: true, force: true });
      runs.get(name)!.push(timed(argv));
    }
  }
  rmSync(out, { recursive: true, force: true });
  const header = `${new Date().toISOString()}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model.trim()}; ` +
    `llama ${(llamaBytes / MiB).toFixed(0)} MiB, oss ${(ossBytes / MiB).toFixed(0)} MiB of bfloat16; ${reps} runs each, page cache warm; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`;
  console.log(`<!-- ${header} -->`);
  console.log("| contender | wall min | wall median | / convert (min, median) | CPU median | peak RSS (max) | page faults major / minor (median) |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const [name] of contenders) {
    const rs = runs.get(name)!;
    const base = runs.get(`${name.split(":")[0]}: convert --to float8e4m3fn`)!;
    const ratio = name.includes("quantize")
      ? `${(Math.min(...rs.map((r) => r.seconds)) / Math.min(...base.map((r) => r.seconds))).toFixed(2)}x, ${(median(rs.map((r) => r.seconds)) / median(base.map((r) => r.seconds))).toFixed(2)}x`
      : "";
    console.log(`| ${name} | ${Math.min(...rs.map((r) => r.seconds)).toFixed(2)} s | ${median(rs.map((r) => r.seconds)).toFixed(2)} s | ${ratio} | ` +
      `${median(rs.map((r) => r.cpu)).toFixed(2)} s | ${Math.max(...rs.map((r) => r.peakMiB)).toFixed(0)} MiB | ${median(rs.map((r) => r.major))} / ${median(rs.map((r) => r.minor))} |`);
  }
} finally {
  if (!keep) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}
