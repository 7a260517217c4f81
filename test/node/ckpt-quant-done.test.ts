/**
 * Issue 27's "done when" on folders made here, checked against ckpt-quant-oracle.ts (the published
 * rules in plain float64, no code of src/): a 3-shard Llama-like folder (fp8, fp8-ue8m0) and a
 * 2-shard gpt-oss-like folder (experts [E, in, out], mxfp4) quantized and converted back through
 * the CLI; every quantized tensor and every dequantized value equal to the oracle's, the indexes'
 * total_size the exact data bytes, config.json's quantization_config as transformers reads it, and
 * point 6's per-tensor refusals and bad scales.
 */
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { cli, random, safetensorsBytes, scratch, type RawTensor } from "./helpers.js";
import {
  bf16Values, fp8DequantOracle, fp8Oracle, float32Values, mxfp4DequantOracle, mxfp4Oracle, nvfp4Oracle, readSafetensors, u16, type Raw,
} from "./ckpt-quant-oracle.js";

const dir = scratch();

/** bfloat16 bytes of values uniform in +/-a, a from 0.001 to 0.1 per 64 elements (tiles of unlike scale), a few exact zeros. */
function weights(n: number, seed: number): Uint8Array {
  const r = random(seed);
  const out = new Uint16Array(n);
  const f = new Float32Array(1);
  const w = new Uint32Array(f.buffer);
  let a = 0.02;
  for (let i = 0; i < n; i++) {
    if (i % 64 === 0) a = 0.001 * 100 ** (r() / 4294967296);
    f[0] = ((r() / 4294967296) * 2 - 1) * a;
    out[i] = r() % 997 === 0 ? 0 : w[0] >>> 16;
  }
  return new Uint8Array(out.buffer);
}

const tensor = (name: string, shape: number[], seed: number): RawTensor => ({ name, dtype: "bfloat16", shape, bytes: weights(shape.reduce((a, b) => a * b, 1), seed) });

function writeFolder(folder: string, shards: RawTensor[][], config: string): void {
  mkdirSync(folder);
  const map: Record<string, string> = {};
  let total = 0;
  shards.forEach((ts, i) => {
    const name = `model-${String(i + 1).padStart(5, "0")}-of-${String(shards.length).padStart(5, "0")}.safetensors`;
    writeFileSync(join(folder, name), safetensorsBytes(ts));
    for (const t of ts) {
      map[t.name] = name;
      total += t.bytes.length;
    }
  });
  writeFileSync(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: total }, weight_map: map }));
  writeFileSync(join(folder, "config.json"), config);
}

/** Every tensor of a folder's shards, and the index checked: each name mapped to its shard, total_size exact. */
function readFolder(folder: string): Map<string, Raw> {
  const index = JSON.parse(readFileSync(join(folder, "model.safetensors.index.json"), "utf8")) as { metadata: { total_size: number }; weight_map: Record<string, string> };
  const all = new Map<string, Raw>();
  let data = 0;
  for (const f of readdirSync(folder).filter((n) => n.endsWith(".safetensors")).sort()) {
    const { tensors, dataBytes } = readSafetensors(join(folder, f));
    data += dataBytes;
    for (const [k, v] of tensors) {
      assert.equal(index.weight_map[k], f, `${folder}: index maps ${k}`);
      all.set(k, v);
    }
  }
  assert.equal(index.metadata.total_size, data, `${folder}: total_size`);
  assert.equal(Object.keys(index.weight_map).length, all.size, `${folder}: index entries`);
  return all;
}

function sameCodes(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) assert.fail(`${what}: element ${i} is ${got[i]}, the oracle gives ${want[i]}`);
  }
}

const LLAMA = join(dir, "llama");
const LLAMA_CONFIG = '{\n  "architectures": ["LlamaForCausalLM"],\n  "torch_dtype": "bfloat16"\n}\n';
writeFolder(LLAMA, [
  [tensor("model.embed_tokens.weight", [256, 256], 1), tensor("model.layers.0.input_layernorm.weight", [256], 2), tensor("model.layers.0.self_attn.q_proj.weight", [256, 256], 3)],
  [tensor("model.layers.0.self_attn.k_proj.weight", [128, 256], 4), tensor("model.layers.0.mlp.gate_proj.weight", [384, 256], 5), tensor("model.layers.0.mlp.down_proj.weight", [256, 384], 6)],
  [tensor("model.layers.0.conv.weight", [128, 128, 2], 7), tensor("model.norm.weight", [256], 8), tensor("lm_head.weight", [256, 256], 9)],
], LLAMA_CONFIG);
const FP8_QUANTIZED = ["model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight", "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.down_proj.weight"];

for (const mode of ["fp8", "fp8-ue8m0"] as const) {
  test(`${mode}: a 3-shard Llama-like folder there and back equals the oracle, total_size exact, quantization_config as transformers reads it`, async () => {
    const q = join(dir, `llama-${mode}`);
    const r = await cli(["quantize", LLAMA, "--mode", mode, "-o", q]);
    assert.equal(r.code, 0, r.err);
    // Point 6: the 3-D .weight is reported by name and kept.
    assert.match(r.out, /kept {6}model\.layers\.0\.conv\.weight: not 2-D \(shape \[128, 128, 2\]\)/);
    const config = JSON.parse(readFileSync(join(q, "config.json"), "utf8")) as Record<string, unknown>;
    // FineGrainedFP8Config's keys and types: quant_method "fp8", weight_block_size a list of two ints, activation_scheme "dynamic".
    assert.deepEqual(config.quantization_config, {
      quant_method: "fp8", weight_block_size: [128, 128], activation_scheme: "dynamic", ...(mode === "fp8-ue8m0" ? { scale_fmt: "ue8m0" } : {}),
      modules_to_not_convert: ["model.embed_tokens", "lm_head"],
    });
    assert.equal(config.torch_dtype, "bfloat16");
    const src = readFolder(LLAMA);
    const got = readFolder(q);
    assert.deepEqual([...got.keys()].sort(), [...src.keys(), ...FP8_QUANTIZED.map((n) => `${n}_scale_inv`)].sort());
    const back = join(dir, `llama-${mode}-back`);
    const b = await cli(["convert", q, "--to", "bfloat16", "-o", back]);
    assert.equal(b.code, 0, b.err);
    const deq = readFolder(back);
    assert.equal(readFileSync(join(back, "config.json"), "utf8"), LLAMA_CONFIG);
    for (const [name, s] of src) {
      const d = deq.get(name)!;
      assert.deepEqual([d.dtype, d.shape], ["BF16", s.shape], name);
      if (!FP8_QUANTIZED.includes(name)) {
        assert.deepEqual(got.get(name)!.bytes, s.bytes, `${name} kept`);
        assert.deepEqual(d.bytes, s.bytes, `${name} back`);
        continue;
      }
      const [rows, cols] = s.shape;
      const o = fp8Oracle(bf16Values(s.bytes), rows, cols, 128, 128, mode === "fp8-ue8m0");
      const w = got.get(name)!;
      const inv = got.get(`${name}_scale_inv`)!;
      assert.deepEqual([w.dtype, inv.dtype, inv.shape], ["F8_E4M3", mode === "fp8" ? "F32" : "F8_E8M0", [rows / 128, cols / 128]], name);
      sameCodes(w.bytes, o.q, `${name} weight`);
      const invValues = mode === "fp8" ? [...float32Values(inv.bytes)] : [...inv.bytes];
      sameCodes(invValues, o.inv, `${name} weight_scale_inv`);
      const scales = mode === "fp8" ? o.inv : o.inv.map((c) => 2 ** (c - 127));
      sameCodes(u16(d.bytes), fp8DequantOracle(o.q, rows, cols, scales, rows / 128, cols / 128), `${name} dequantized`);
    }
  });
}

test("nvfp4: the 3-shard Llama-like folder there and back equals the oracle (compressed-tensors' names, config and rule in float32)", async () => {
  const q = join(dir, "llama-nvfp4");
  const r = await cli(["quantize", LLAMA, "--mode", "nvfp4", "-o", q]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /kept {6}model\.layers\.0\.conv\.weight: not 2-D \(shape \[128, 128, 2\]\)/);
  const config = JSON.parse(readFileSync(join(q, "config.json"), "utf8")) as Record<string, unknown>;
  assert.deepEqual(config.quantization_config, {
    quant_method: "compressed-tensors", format: "nvfp4-pack-quantized", quantization_status: "compressed",
    config_groups: {
      group_0: {
        targets: ["Linear"], weights: { num_bits: 4, type: "float", strategy: "tensor_group", group_size: 16, symmetric: true, dynamic: false, observer: "minmax" },
        input_activations: null, output_activations: null,
      },
    },
    ignore: ["model.embed_tokens", "lm_head"],
  });
  const src = readFolder(LLAMA);
  const got = readFolder(q);
  const back = join(dir, "llama-nvfp4-back");
  const b = await cli(["convert", q, "--to", "bfloat16", "-o", back]);
  assert.equal(b.code, 0, b.err);
  assert.match(b.out, /4 quantized tensors dequantized to bfloat16/);
  const deq = readFolder(back);
  assert.equal(readFileSync(join(back, "config.json"), "utf8"), LLAMA_CONFIG);
  assert.deepEqual([...deq.keys()].sort(), [...src.keys()].sort());
  for (const [name, s] of src) {
    const d = deq.get(name)!;
    assert.deepEqual([d.dtype, d.shape], ["BF16", s.shape], name);
    if (!FP8_QUANTIZED.includes(name)) {
      assert.deepEqual(d.bytes, s.bytes, `${name} back`);
      continue;
    }
    const base = name.slice(0, -"weight".length);
    const [rows, cols] = s.shape;
    const o = nvfp4Oracle(bf16Values(s.bytes), rows, cols);
    const packed = got.get(`${base}weight_packed`)!;
    const scales = got.get(`${base}weight_scale`)!;
    const global = got.get(`${base}weight_global_scale`)!;
    assert.deepEqual([packed.dtype, packed.shape, scales.dtype, scales.shape, global.dtype, global.shape], ["U8", [rows, cols / 2], "F8_E4M3", [rows, cols / 16], "F32", [1]], name);
    assert.equal(got.has(name), false, `${name} replaced`);
    assert.equal(float32Values(global.bytes)[0], o.g, `${name} global scale`);
    sameCodes(scales.bytes, o.scales, `${name} weight_scale`);
    sameCodes(packed.bytes, o.packed, `${name} weight_packed`);
    sameCodes(u16(d.bytes), o.back, `${name} dequantized`);
  }
});

test("nvfp4 kernel: -0, an all-zero block (scale 0.125), element ties, tiny blocks and float32 output equal the oracle", async () => {
  const { nvfp4AbsMax, nvfp4DequantizeRows, nvfp4GlobalScale, nvfp4QuantizeRows } = await import("../../src/kernels/quant/index.js");
  const { dtype } = await import("../../src/index.js");
  const F32 = dtype("float32");
  const rows = 8;
  const cols = 64;
  const w = new Float32Array(rows * cols);
  const r = random(41);
  for (let i = 0; i < w.length; i++) w[i] = ((r() / 4294967296) * 2 - 1) * 10 ** (-3 * (r() / 4294967296));
  w[0] = 6; // amax: g = 448, so s_b / g is exact for a block with amax 6 and the ties below are exact
  for (const [i, v] of [[1, 0.25], [2, 0.75], [3, 2.5], [4, 5], [5, -1.25], [6, -0], [7, 3.5], [8, -0.0001]] as const) w[i] = v;
  for (let i = 16; i < 32; i++) w[i] = i === 20 ? -0 : 0; // an all-zero block
  for (let i = 32; i < 48; i++) w[i] = 1e-9 * (i - 40); // a block far below the global amax
  const x = new Uint8Array(w.buffer);
  const g = nvfp4GlobalScale(nvfp4AbsMax(x, F32, w.length));
  const o = nvfp4Oracle(Float64Array.from(w), rows, cols);
  assert.equal(g, o.g);
  const q = nvfp4QuantizeRows(x, F32, rows, cols, g);
  sameCodes(q.scales, o.scales, "scales");
  sameCodes(q.packed, o.packed, "packed");
  assert.equal(q.scales[1], 0x20, "all-zero block: scale 0.125");
  assert.deepEqual([q.packed[0] >> 4, q.packed[1] & 15, q.packed[1] >> 4, q.packed[2] & 15, q.packed[2] >> 4, q.packed[3] & 15, q.packed[3] >> 4, q.packed[4] & 15],
    [0, 2, 4, 6, 10, 0, 6, 8], "ties to the even code (0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 5 -> 4, -1.25 -> -1, 3.5 -> 4), -0 -> +0, a tiny negative -> -0");
  const back = new Float32Array(nvfp4DequantizeRows(q.packed, q.scales, rows, cols, g, F32).buffer);
  sameCodes(back, o.values, "float32 values back");
});

const OSS = join(dir, "oss");
const OSS_CONFIG = '{"architectures": ["GptOssForCausalLM"], "torch_dtype": "bfloat16"}';
writeFolder(OSS, [
  [tensor("model.embed_tokens.weight", [64, 64], 11), tensor("model.layers.0.self_attn.q_proj.weight", [64, 64], 12),
    tensor("model.layers.0.mlp.router.weight", [4, 64], 13), tensor("model.layers.0.mlp.experts.gate_up_proj", [4, 64, 128], 14)],
  [tensor("model.layers.0.mlp.experts.gate_up_proj_bias", [4, 128], 15), tensor("model.layers.0.mlp.experts.down_proj", [4, 64, 64], 16),
    tensor("model.layers.1.mlp.experts.down_proj", [2, 48, 64], 17), tensor("lm_head.weight", [64, 64], 18)],
], OSS_CONFIG);
const EXPERTS = ["model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"];

test("mxfp4: a 2-shard gpt-oss-like folder there and back equals the oracle, total_size exact, quantization_config as transformers reads it", async () => {
  const q = join(dir, "oss-mxfp4");
  const r = await cli(["quantize", OSS, "--mode", "mxfp4", "-o", q]);
  assert.equal(r.code, 0, r.err);
  // Point 6: experts whose input dimension is not a multiple of 32 are reported by name and kept.
  assert.match(r.out, /kept {6}model\.layers\.1\.mlp\.experts\.down_proj: input dimension 48 is not a multiple of 32/);
  const config = JSON.parse(readFileSync(join(q, "config.json"), "utf8")) as Record<string, unknown>;
  // Mxfp4Config: quant_method "mxfp4", modules_to_not_convert a list of module names.
  assert.deepEqual(config.quantization_config, {
    quant_method: "mxfp4", modules_to_not_convert: ["model.embed_tokens", "model.layers.0.self_attn.q_proj", "model.layers.0.mlp.router", "lm_head"],
  });
  const src = readFolder(OSS);
  const got = readFolder(q);
  const back = join(dir, "oss-back");
  const b = await cli(["convert", q, "--to", "bfloat16", "-o", back]);
  assert.equal(b.code, 0, b.err);
  const deq = readFolder(back);
  assert.equal(readFileSync(join(back, "config.json"), "utf8"), OSS_CONFIG);
  assert.deepEqual([...deq.keys()].sort(), [...src.keys()].sort());
  for (const [name, s] of src) {
    const d = deq.get(name)!;
    assert.deepEqual([d.dtype, d.shape], ["BF16", s.shape], name);
    if (!EXPERTS.includes(name)) {
      assert.deepEqual(got.get(name)!.bytes, s.bytes, `${name} kept`);
      assert.deepEqual(d.bytes, s.bytes, `${name} back`);
      continue;
    }
    const [e, inDim, outDim] = s.shape;
    const o = mxfp4Oracle(bf16Values(s.bytes), e, inDim, outDim);
    const blocks = got.get(`${name}_blocks`)!;
    const scales = got.get(`${name}_scales`)!;
    assert.deepEqual([blocks.dtype, blocks.shape, scales.dtype, scales.shape], ["U8", [e, outDim, inDim / 32, 16], "U8", [e, outDim, inDim / 32]], name);
    sameCodes(blocks.bytes, o.blocks, `${name}_blocks`);
    sameCodes(scales.bytes, o.scales, `${name}_scales`);
    sameCodes(u16(d.bytes), mxfp4DequantOracle(o.blocks, o.scales, e, outDim, inDim / 32), `${name} dequantized`);
  }
});

test("config.json round trip: quantization_config added and removed gives every byte again, however the object closes", async () => {
  const { quantizedConfigText, unquantizedConfigText } = await import("../../src/node/quantize/checkpoint.js");
  for (const text of ['{"a": 1}', '{"a": 1}\n', '{\n  "a": 1\n}\n', '{\n\t"a": [1, 2]  \r\n}', "{}", "{ }\n"]) {
    for (const mode of ["fp8", "fp8-ue8m0", "mxfp4"] as const) {
      const q = quantizedConfigText(text, mode, [128, 128], ["lm_head"]);
      assert.equal((JSON.parse(q) as { quantization_config: { quant_method: string } }).quantization_config.quant_method, mode === "mxfp4" ? "mxfp4" : "fp8");
      assert.equal(unquantizedConfigText(q), text, JSON.stringify(text));
    }
  }
});

test("point 6: NaN e8m0 scales (0xFF) in mxfp4 _scales and fp8-ue8m0 weight_scale_inv are INVALID_DATA on the way back, nothing written", async () => {
  const scales = new Uint8Array(2 * 32 * 2).fill(120);
  scales[77] = 0xff;
  const cases: [string, RawTensor[]][] = [
    ["mxfp4", [
      { name: "m.experts.down_proj_blocks", dtype: "uint8", shape: [2, 32, 2, 16], bytes: new Uint8Array(2 * 32 * 2 * 16).fill(0x21) },
      { name: "m.experts.down_proj_scales", dtype: "uint8", shape: [2, 32, 2], bytes: scales },
    ]],
    ["ue8m0", [
      { name: "x.weight", dtype: "float8e4m3fn", shape: [256, 128], bytes: new Uint8Array(256 * 128).fill(0x38) },
      { name: "x.weight_scale_inv", dtype: "float8e8m0", shape: [2, 1], bytes: new Uint8Array([127, 0xff]) },
    ]],
  ];
  for (const [what, ts] of cases) {
    const file = join(dir, `nan-${what}.safetensors`);
    writeFileSync(file, safetensorsBytes(ts));
    const r = await cli(["convert", file, "--to", "bfloat16", "-o", join(dir, `nan-${what}-out.safetensors`)]);
    assert.equal(r.code, 1, what);
    assert.match(r.err, new RegExp(`scale ${what === "mxfp4" ? 77 : 1} is NaN.*INVALID_DATA`), what);
    assert.ok(!readdirSync(dir).includes(`nan-${what}-out.safetensors`), what);
  }
});

test("point 6: nvfp4 global scales 0, -1, NaN, Inf and a zero block scale are INVALID_DATA on the way back, nothing written", async () => {
  const cases: [string, number, number, RegExp][] = [
    ["g0", 0, 0x38, /global scale 0/], ["gneg", -1, 0x38, /global scale -1/], ["gnan", NaN, 0x38, /global scale NaN/],
    ["ginf", Infinity, 0x38, /global scale Infinity/], ["s0", 448, 0, /scale 5 is 0/],
  ];
  for (const [what, g, scale, message] of cases) {
    const scales = new Uint8Array(16 * 2).fill(0x38);
    scales[5] = scale;
    const file = join(dir, `nv-${what}.safetensors`);
    writeFileSync(file, safetensorsBytes([
      { name: "x.weight_packed", dtype: "uint8", shape: [16, 16], bytes: new Uint8Array(256).fill(0x21) },
      { name: "x.weight_scale", dtype: "float8e4m3fn", shape: [16, 2], bytes: scales },
      { name: "x.weight_global_scale", dtype: "float32", shape: [1], bytes: new Uint8Array(new Float32Array([g]).buffer) },
    ]));
    const r = await cli(["convert", file, "--to", "bfloat16", "-o", join(dir, `nv-${what}-out.safetensors`)]);
    assert.equal(r.code, 1, what);
    assert.match(r.err, message, what);
    assert.match(r.err, /INVALID_DATA/, what);
    assert.ok(!readdirSync(dir).includes(`nv-${what}-out.safetensors`), what);
  }
});
