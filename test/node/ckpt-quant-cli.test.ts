/**
 * `tensorcast quantize` and the way back (`convert QDIR --to bfloat16`) on a sharded Llama-like
 * folder and a gpt-oss-like folder made here, and on the golden source file.
 */
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { dtype } from "../../src/index.js";
import { fp8BlockDequantize, fp8BlockQuantize, mxfp4Dequantize, mxfp4Quantize } from "../../src/kernels/quant/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { quantizedConfigText, unquantizedConfigText } from "../../src/node/quantize/checkpoint.js";
import { cli, random, ROOT, safetensorsBytes, scratch, type RawTensor } from "./helpers.js";

const dir = scratch();
const BF16 = dtype("bfloat16");

/** bfloat16 bytes of `n` values ~ N(0, std) (deterministic). */
function bf16(n: number, seed: number, std = 0.02): Uint8Array {
  const r = random(seed);
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u1 = (r() + 1) / 4294967297;
    const u2 = r() / 4294967296;
    f[i] = std * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }
  const w = new Uint32Array(f.buffer);
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = (w[i] + 0x7fff + ((w[i] >>> 16) & 1)) >>> 16;
  return new Uint8Array(out.buffer);
}

function t(name: string, shape: number[], seed: number, std = 0.02): RawTensor {
  return { name, dtype: "bfloat16", shape, bytes: bf16(shape.reduce((a, b) => a * b, 1), seed, std) };
}

async function read(path: string): Promise<Map<string, { dtype: string; shape: readonly number[]; bytes: Uint8Array }>> {
  const f = await openTensorFile(path);
  const m = new Map<string, { dtype: string; shape: readonly number[]; bytes: Uint8Array }>();
  for (const x of f.tensors) m.set(x.name, { dtype: x.dtype.name, shape: x.shape, bytes: (await x.read(0, x.size)).slice() });
  await f.close();
  return m;
}

async function readFolder(folder: string): Promise<Map<string, { dtype: string; shape: readonly number[]; bytes: Uint8Array }>> {
  const all = new Map<string, { dtype: string; shape: readonly number[]; bytes: Uint8Array }>();
  for (const f of readdirSync(folder).filter((n) => n.endsWith(".safetensors")).sort()) for (const [k, v] of await read(join(folder, f))) all.set(k, v);
  return all;
}

function bf16Values(b: Uint8Array): Float32Array {
  const u = new Uint16Array(b.buffer, b.byteOffset, b.length / 2);
  const w = new Uint32Array(u.length);
  for (let i = 0; i < u.length; i++) w[i] = u[i] << 16;
  return new Float32Array(w.buffer);
}

/** ||a - b|| / ||b|| of two bfloat16 byte runs. */
function relativeError(a: Uint8Array, b: Uint8Array): number {
  const x = bf16Values(a);
  const y = bf16Values(b);
  let num = 0;
  let den = 0;
  for (let i = 0; i < x.length; i++) {
    num += (x[i] - y[i]) ** 2;
    den += y[i] ** 2;
  }
  return Math.sqrt(num / den);
}

const LLAMA = join(dir, "llama");
const LLAMA_CONFIG = '{\n  "architectures": ["LlamaForCausalLM"],\n  "hidden_size": 256,\n  "torch_dtype": "bfloat16"\n}\n';
function makeLlama(): void {
  mkdirSync(LLAMA);
  const shards: RawTensor[][] = [
    [t("model.embed_tokens.weight", [512, 256], 1), t("model.layers.0.input_layernorm.weight", [256], 2, 1),
      t("model.layers.0.self_attn.q_proj.weight", [256, 256], 3), t("model.layers.0.mlp.gate_proj.weight", [384, 256], 4)],
    [t("model.layers.0.mlp.down_proj.weight", [256, 384], 5), t("model.layers.0.mlp.odd_proj.weight", [300, 256], 6),
      t("model.norm.weight", [256], 7, 1), t("lm_head.weight", [512, 256], 8)],
  ];
  const map: Record<string, string> = {};
  let total = 0;
  shards.forEach((ts, i) => {
    const name = `model-0000${i + 1}-of-00002.safetensors`;
    writeFileSync(join(LLAMA, name), safetensorsBytes(ts));
    for (const x of ts) {
      map[x.name] = name;
      total += x.bytes.length;
    }
  });
  writeFileSync(join(LLAMA, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: total }, weight_map: map }));
  writeFileSync(join(LLAMA, "config.json"), LLAMA_CONFIG);
  writeFileSync(join(LLAMA, "tokenizer.json"), '{"model": {}}');
}
makeLlama();

for (const mode of ["fp8", "fp8-ue8m0"] as const) {
  test(`quantize --mode ${mode}: a sharded Llama-like folder there and back`, async () => {
    const out = join(dir, `llama-${mode}`);
    const r = await cli(["quantize", LLAMA, "--mode", mode, "-o", out]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /3 tensors quantized, 5 kept/);
    assert.match(r.out, /kept {6}model\.layers\.0\.mlp\.odd_proj\.weight: shape \[300, 256\] is not a multiple of the 128x128 block/);
    assert.match(r.out, /kept {6}lm_head\.weight: embedding, lm_head or norm/);
    assert.deepEqual(readdirSync(out).sort(), ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json"]);
    assert.equal(readFileSync(join(out, "tokenizer.json"), "utf8"), '{"model": {}}');
    const config = readFileSync(join(out, "config.json"), "utf8");
    assert.ok(config.startsWith(LLAMA_CONFIG.slice(0, LLAMA_CONFIG.lastIndexOf("\n}"))), "every byte before kept");
    const qc = JSON.parse(config).quantization_config;
    assert.deepEqual(qc, {
      quant_method: "fp8", weight_block_size: [128, 128], activation_scheme: "dynamic", ...(mode === "fp8-ue8m0" ? { scale_fmt: "ue8m0" } : {}),
      modules_to_not_convert: ["model.embed_tokens", "model.layers.0.mlp.odd_proj", "lm_head"],
    });
    const src = await readFolder(LLAMA);
    const q = await readFolder(out);
    // The index: every tensor, total_size the exact data bytes.
    const index = JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8"));
    let total = 0;
    for (const v of q.values()) total += v.bytes.length;
    assert.equal(index.metadata.total_size, total);
    assert.deepEqual(Object.keys(index.weight_map).sort(), [...q.keys()].sort());
    // Each quantized weight equals the library's (itself checked against transformers' golden files).
    for (const name of ["model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.down_proj.weight"]) {
      const s = src.get(name)!;
      const lib = fp8BlockQuantize(s.bytes, BF16, s.shape, [128, 128], mode === "fp8" ? "float32" : "ue8m0");
      assert.equal(q.get(name)!.dtype, "float8e4m3fn");
      assert.deepEqual(q.get(name)!.bytes, lib.weight);
      assert.deepEqual(q.get(`${name}_scale_inv`)!.bytes, lib.scaleInv);
      assert.equal(q.get(`${name}_scale_inv`)!.dtype, mode === "fp8" ? "float32" : "float8e8m0");
    }
    for (const name of ["model.embed_tokens.weight", "model.layers.0.mlp.odd_proj.weight", "lm_head.weight", "model.norm.weight"]) {
      assert.deepEqual(q.get(name)!.bytes, src.get(name)!.bytes);
    }
    // Refused again.
    const again = await cli(["quantize", out, "--mode", mode, "-o", join(dir, `again-${mode}`)]);
    assert.equal(again.code, 1);
    assert.match(again.err, /already quantized/);
    // And back.
    const back = join(dir, `llama-${mode}-back`);
    const b = await cli(["convert", out, "--to", "bfloat16", "-o", back]);
    assert.equal(b.code, 0, b.err);
    assert.match(b.out, /3 quantized tensors dequantized to bfloat16, 5 copied/);
    const d = await readFolder(back);
    assert.deepEqual([...d.keys()].sort(), [...src.keys()].sort());
    assert.equal(readFileSync(join(back, "config.json"), "utf8"), LLAMA_CONFIG);
    for (const [name, s] of src) {
      const got = d.get(name)!;
      assert.equal(got.dtype, "bfloat16", name);
      assert.deepEqual(got.shape, s.shape, name);
      if (q.get(name)!.dtype !== "float8e4m3fn") {
        assert.deepEqual(got.bytes, s.bytes, name);
        continue;
      }
      const sc = q.get(`${name}_scale_inv`)!;
      assert.deepEqual(got.bytes, fp8BlockDequantize(q.get(name)!.bytes, s.shape, sc.bytes, dtype(sc.dtype), sc.shape, BF16), name);
      const e = relativeError(got.bytes, s.bytes);
      // float8e4m3fn keeps 3 mantissa bits: about 2.5 % rms relative error for Gaussian weights.
      assert.ok(e > 0.01 && e < (mode === "fp8" ? 0.035 : 0.045), `${name}: relative error ${e}`);
    }
  });
}

const OSS = join(dir, "oss");
function makeOss(): void {
  mkdirSync(OSS);
  const ts = [
    t("model.layers.0.mlp.experts.gate_up_proj", [4, 128, 256], 11, 0.05), t("model.layers.0.mlp.experts.down_proj", [4, 128, 128], 12, 0.05),
    t("model.layers.0.mlp.experts.gate_up_proj_bias", [4, 256], 13), t("model.layers.0.mlp.router.weight", [4, 128], 14),
    t("model.layers.0.self_attn.q_proj.weight", [128, 128], 15), t("model.embed_tokens.weight", [64, 128], 16),
  ];
  writeFileSync(join(OSS, "model-00001-of-00001.safetensors"), safetensorsBytes(ts));
  writeFileSync(join(OSS, "model.safetensors.index.json"), JSON.stringify({ metadata: {}, weight_map: Object.fromEntries(ts.map((x) => [x.name, "model-00001-of-00001.safetensors"])) }));
  writeFileSync(join(OSS, "config.json"), '{"architectures": ["GptOssForCausalLM"]}');
}
makeOss();

test("quantize --mode mxfp4: a gpt-oss-like folder there and back", async () => {
  const out = join(dir, "oss-mxfp4");
  const r = await cli(["quantize", OSS, "--mode", "mxfp4", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /2 tensors quantized, 4 kept/);
  assert.match(r.out, /kept {6}model\.layers\.0\.self_attn\.q_proj\.weight: dense weight: transformers' Mxfp4 loader reads MXFP4 only for MoE experts/);
  const qc = JSON.parse(readFileSync(join(out, "config.json"), "utf8")).quantization_config;
  assert.deepEqual(qc, { quant_method: "mxfp4", modules_to_not_convert: ["model.layers.0.mlp.router", "model.layers.0.self_attn.q_proj", "model.embed_tokens"] });
  const src = await readFolder(OSS);
  const q = await readFolder(out);
  for (const name of ["model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"]) {
    const s = src.get(name)!;
    const lib = mxfp4Quantize(s.bytes, BF16, s.shape);
    assert.deepEqual(q.get(`${name}_blocks`)!.shape, lib.blocksShape);
    assert.deepEqual(q.get(`${name}_blocks`)!.bytes, lib.blocks);
    assert.deepEqual(q.get(`${name}_scales`)!.bytes, lib.scales);
  }
  const back = join(dir, "oss-back");
  const b = await cli(["convert", out, "--to", "bfloat16", "-o", back]);
  assert.equal(b.code, 0, b.err);
  const d = await readFolder(back);
  for (const [name, s] of src) {
    const got = d.get(name)!;
    assert.deepEqual(got.shape, s.shape, name);
    if (!q.has(`${name}_blocks`)) {
      assert.deepEqual(got.bytes, s.bytes, name);
      continue;
    }
    const bl = q.get(`${name}_blocks`)!;
    const sc = q.get(`${name}_scales`)!;
    assert.deepEqual(got.bytes, mxfp4Dequantize(bl.bytes, bl.shape, sc.bytes, sc.shape, BF16).data, name);
    const e = relativeError(got.bytes, s.bytes);
    assert.ok(e > 0.05 && e < 0.15, `${name}: relative error ${e}`);
  }
});

test("quantize FILE --mode fp8: the golden source file gives transformers' fp8.safetensors tensors", async () => {
  const fixtures = join(ROOT, "test", "fixtures", "ckpt-quant");
  const out = join(dir, "golden-fp8.safetensors");
  // The golden recipe quantizes every 2-D .weight (no name rule), so nothing is skipped by name here.
  const r = await cli(["quantize", join(fixtures, "source.safetensors"), "--mode", "fp8", "-o", out]);
  assert.equal(r.code, 0, r.err);
  const got = await read(out);
  const gold = await read(join(fixtures, "fp8.safetensors"));
  assert.deepEqual([...got.keys()].sort(), [...gold.keys()].sort());
  for (const [k, v] of gold) {
    assert.equal(got.get(k)!.dtype, v.dtype, k);
    assert.deepEqual(got.get(k)!.bytes, v.bytes, k);
  }
  const back = join(dir, "golden-back.safetensors");
  assert.equal((await cli(["convert", out, "--to", "bfloat16", "-o", back])).code, 0);
  const deq = await read(back);
  for (const [k, v] of await read(join(fixtures, "fp8_dequantized.safetensors"))) assert.deepEqual(deq.get(k)!.bytes, v.bytes, k);
});

test("bad scales on the way back are INVALID_DATA (exit 1), nothing written", async () => {
  const w = new Uint8Array(128 * 128).fill(0x38);
  for (const bad of [NaN, Infinity, 0, -0.5]) {
    const file = join(dir, `bad-${String(bad)}.safetensors`);
    writeFileSync(file, safetensorsBytes([
      { name: "x.weight", dtype: "float8e4m3fn", shape: [128, 128], bytes: w },
      { name: "x.weight_scale_inv", dtype: "float32", shape: [1, 1], bytes: new Uint8Array(new Float32Array([bad]).buffer) },
    ]));
    const r = await cli(["convert", file, "--to", "bfloat16", "-o", join(dir, `bad-out-${String(bad)}.safetensors`)]);
    assert.equal(r.code, 1, String(bad));
    assert.match(r.err, /INVALID_DATA/);
    assert.ok(!readdirSync(dir).includes(`bad-out-${String(bad)}.safetensors`));
  }
});

test("config.json: quantization_config appended and removed surgically", () => {
  const text = '{\n  "a": 1,\n  "b": {"c": "}"}\n}\n';
  const q = quantizedConfigText(text, "fp8", [128, 128], []);
  assert.equal(q, '{\n  "a": 1,\n  "b": {"c": "}"},\n  "quantization_config": {"quant_method":"fp8","weight_block_size":[128,128],"activation_scheme":"dynamic","modules_to_not_convert":[]}\n}\n');
  assert.equal(unquantizedConfigText(q), text);
  assert.throws(() => quantizedConfigText(q, "fp8", [128, 128], []), /already has a quantization_config/);
  assert.equal(unquantizedConfigText('{"quantization_config": {"x": [1, {"y": "}"}]}, "a": 1}'), '{"a": 1}');
});

test("quantize refuses a file already quantized (its weight_scale_inv / _blocks names), naming the tensor", async () => {
  const fixtures = join(ROOT, "test", "fixtures", "ckpt-quant");
  for (const [file, name] of [["fp8.safetensors", "a.weight_scale_inv"], ["mxfp4.safetensors", "experts.down_proj_blocks"]]) {
    const r = await cli(["quantize", join(fixtures, file), "--mode", "fp8", "-o", join(dir, `re-${file}`)]);
    assert.equal(r.code, 1, file);
    assert.match(r.err, new RegExp(`already quantized \\(it holds ${name.replace(".", "\\.")}`));
    assert.ok(!readdirSync(dir).includes(`re-${file}`));
  }
});

test("inspect shows a quantized tensor as one logical tensor; diff SRC QDIR compares its dequantized values", async () => {
  const out = join(dir, "llama-inspect");
  assert.equal((await cli(["quantize", LLAMA, "--mode", "fp8", "-o", out, "-q"])).code, 0);
  const r = await cli(["inspect", out, "--json"]);
  assert.equal(r.code, 0, r.err);
  const rows = JSON.parse(r.out).tensors as { name: string; dtype: string; shape: number[]; quantized?: string }[];
  assert.deepEqual(rows.map((x) => x.name).sort(), [
    "lm_head.weight", "model.embed_tokens.weight", "model.layers.0.input_layernorm.weight", "model.layers.0.mlp.down_proj.weight",
    "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.odd_proj.weight", "model.layers.0.self_attn.q_proj.weight", "model.norm.weight",
  ]);
  const q = rows.find((x) => x.name === "model.layers.0.mlp.down_proj.weight")!;
  assert.deepEqual([q.dtype, q.shape, q.quantized], ["bfloat16", [256, 384], "fp8 128x128 (float8e4m3fn + weight_scale_inv float32 [2, 3])"]);
  assert.equal(rows.find((x) => x.name === "lm_head.weight")!.quantized, undefined);
  const d = await cli(["diff", LLAMA, out, "--json"]);
  const report = JSON.parse(d.out);
  const rowsD = report.tensors ?? report.rows ?? report;
  const text = JSON.stringify(rowsD);
  assert.match(text, /model\.layers\.0\.mlp\.down_proj\.weight/);
  assert.doesNotMatch(text, /weight_scale_inv/);
  const plain = await cli(["diff", LLAMA, out]);
  assert.match(plain.out, /model\.layers\.0\.mlp\.down_proj\.weight\s+bfloat16\s+\[256, 384\]/);
  assert.match(plain.out, /5 of 8 common tensors identical/);
});

test("quantize --shard K/N: two slices into one folder, then index, equal the whole-folder run file for file", async () => {
  const whole = join(dir, "llama-whole");
  const sliced = join(dir, "llama-sliced");
  assert.equal((await cli(["quantize", LLAMA, "--mode", "fp8", "-o", whole, "-q"])).code, 0);
  for (const k of ["1/2", "0/2"]) {
    const r = await cli(["quantize", LLAMA, "--mode", "fp8", "-o", sliced, "--shard", k, "-q"]);
    assert.equal(r.code, 0, r.err);
  }
  assert.ok(!readdirSync(sliced).some((n) => n.endsWith(".index.json")), "no index from a slice");
  assert.equal((await cli(["index", sliced, "-q"])).code, 0);
  assert.deepEqual(readdirSync(sliced).sort(), readdirSync(whole).sort());
  for (const name of readdirSync(whole)) assert.deepEqual(readFileSync(join(sliced, name)), readFileSync(join(whole, name)), name);
  const bad = await cli(["quantize", join(ROOT, "test", "fixtures", "ckpt-quant", "source.safetensors"), "--mode", "fp8", "-o", join(dir, "x.safetensors"), "--shard", "0/2"]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--shard slices a sharded checkpoint/);
});
