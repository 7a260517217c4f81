/**
 * The command line of GGUF quantization: `quantize IN.gguf --mode PRESET` and `convert IN --to
 * GGMLTYPE -o OUT.gguf`: bad presets and types are usage errors listing the names, what llama.cpp
 * refuses is refused (requantizing, an IQ1/IQ2 preset without an importance matrix, NaN), and
 * convert's output holds what quantizeRows makes of each tensor, with llama-quantize's fallbacks.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { bytesSource } from "../../src/io/byte-source.js";
import { readGguf } from "../../src/io/gguf/header.js";
import { ggufModel } from "../../src/io/gguf/split.js";
import { readGgufBlocks } from "../../src/io/gguf/records.js";
import { quantizeRows } from "../../src/ggml/index.js";
import { writeQuantModel } from "../support/gguf-quant-models.js";
import { runCli as run } from "../support/cli.js";

let dir: string;
let wide: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "tensorcast-quantize-gguf-"));
  wide = join(dir, "wide.gguf");
  await writeQuantModel("wide", wide);
});
after(() => rmSync(dir, { recursive: true, force: true }));

async function tensorsOf(path: string): Promise<{ metadata: string[]; tensors: Map<string, { type: string; dims: number[]; bytes: Uint8Array }> }> {
  const g = await readGguf(bytesSource(readFileSync(path)), { name: path });
  const model = ggufModel([g]);
  const tensors = new Map<string, { type: string; dims: number[]; bytes: Uint8Array }>();
  for (const t of model.tensors) tensors.set(t.name, { type: t.ggmlType.name, dims: [...t.dims], bytes: await readGgufBlocks(model, t, 0, t.byteLength / t.ggmlType.typeSize) });
  return { metadata: [...g.metadata.values()].map((e) => `${e.key}=${JSON.stringify(e.value, (_, v) => (typeof v === "bigint" ? String(v) : v))}`), tensors };
}

/** A safetensors file of float32 / int64 tensors. */
function safetensors(path: string, tensors: { name: string; dtype: "F32" | "I64" | "U8"; shape: number[]; data: Uint8Array }[]): void {
  let at = 0;
  const header: Record<string, unknown> = {};
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + t.data.length] };
    at += t.data.length;
  }
  let json = JSON.stringify(header);
  while ((json.length + 8) % 8 !== 0) json += " ";
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let p = 8 + head.length;
  for (const t of tensors) {
    out.set(t.data, p);
    p += t.data.length;
  }
  writeFileSync(path, out);
}

const f32 = (n: number, seed: number): Float32Array => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed) * (1 + (i % 7)));

test("an unknown preset is a usage error listing the presets", async () => {
  const r = await run("quantize", wide, "--mode", "Q4_K_X", "-o", join(dir, "x.gguf"));
  assert.equal(r.code, 2);
  assert.match(r.err, /"Q4_K_X" is not a llama-quantize preset; the presets are Q4_0, .*Q4_K_M, .*F32/);
  const none = await run("quantize", wide, "-o", join(dir, "x.gguf"));
  assert.equal(none.code, 2);
  assert.match(none.err, /--mode PRESET is missing/);
});

test("an unknown type in --tensor-type, --output-tensor-type or convert --to is a usage error listing the types", async () => {
  for (const args of [["--tensor-type", "attn_v=q9_k"], ["--output-tensor-type", "nvfp4"], ["--tensor-type", "attn_v"]]) {
    const r = await run("quantize", wide, "--mode", "q8_0", "-o", join(dir, "x.gguf"), ...args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.err, args[1] === "attn_v" ? /NAME=TYPE/ : /the types are .*q4_k/);
  }
  const c = await run("convert", wide, "--to", "bfloat16x", "-o", join(dir, "x.gguf"));
  assert.equal(c.code, 2);
  assert.match(c.err, /is not a GGML type tensorcast writes to GGUF; the types are .*q8_0/);
  assert.equal(existsSync(join(dir, "x.gguf")), false);
});

test("requantizing a quantized model is refused as llama-quantize refuses it, and done with --allow-requantize", async () => {
  const q8 = join(dir, "q8.gguf");
  assert.equal((await run("quantize", wide, "--mode", "Q8_0", "-o", q8, "-q")).code, 0);
  const r = await run("quantize", q8, "--mode", "Q4_K_M", "-o", join(dir, "q4.gguf"));
  assert.equal(r.code, 1);
  assert.match(r.err, /requantizing from type Q8_0 is disabled.*\(code UNSUPPORTED_TYPE\)/);
  assert.equal(existsSync(join(dir, "q4.gguf")), false);
  const ok = await run("quantize", q8, "--mode", "Q4_K_M", "-o", join(dir, "q4.gguf"), "--allow-requantize", "--json");
  assert.equal(ok.code, 0, ok.err);
  assert.equal(JSON.parse(ok.out).tensors.find((t: { name: string }) => t.name === "blk.0.attn_q.weight").to, "Q4_K");
  // The same type again is a copy, not a requantization.
  assert.equal((await run("quantize", q8, "--mode", "q8_0", "-o", join(dir, "q8b.gguf"), "-q")).code, 0);
  assert.deepEqual(readFileSync(join(dir, "q8b.gguf")), readFileSync(q8));
});

test("IQ1 / IQ2 / IQ3_XXS / Q2_K_S presets without --imatrix are refused as llama.cpp refuses them", async () => {
  for (const p of ["IQ2_XXS", "iq2_xs", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", "IQ3_XXS", "IQ3_XS", "Q2_K_S"]) {
    const r = await run("quantize", wide, "--mode", p, "-o", join(dir, "iq.gguf"));
    assert.equal(r.code, 1, p);
    assert.match(r.err, /needs an importance matrix \(--imatrix FILE\).*this quantization requires an imatrix/, p);
  }
  assert.equal(readdirSync(dir).filter((f) => f.startsWith("iq") || f.includes("tensorcast-")).length, 0);
});

test("an existing OUT needs --force; help describes the GGUF form", async () => {
  const out = join(dir, "exists.gguf");
  writeFileSync(out, "x");
  const r = await run("quantize", wide, "--mode", "q8_0", "-o", out);
  assert.equal(r.code, 2);
  assert.match(r.err, /pass --force/);
  const h = await run("quantize", wide, "--help");
  assert.equal(h.code, 0);
  assert.match(h.out, /--leave-output-tensor/);
  assert.match(h.out, /byte for byte the file llama_model_quantize writes/);
});

test("--jobs N: the same bytes on this thread (0) and on 2 workers; a bad count is a usage error", async () => {
  const outs: Buffer[] = [];
  for (const jobs of ["0", "2"]) {
    const out = join(dir, `jobs-${jobs}.gguf`);
    const r = await run("quantize", wide, "--mode", "Q4_K_M", "--jobs", jobs, "-o", out, "--quiet");
    assert.equal(r.code, 0, r.err);
    outs.push(readFileSync(out));
  }
  assert.ok(outs[0].equals(outs[1]), "--jobs 0 and --jobs 2 wrote different bytes");
  const bad = await run("quantize", wide, "--mode", "Q4_K_M", "--jobs", "many", "-o", join(dir, "jobs-bad.gguf"));
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--jobs "many" is not a number of threads from 0 to 64/);
  assert.match((await run("quantize", wide, "--help")).out, /--jobs N/);
});

test("NaN in a tensor is refused, as llama.cpp's loader check refuses it", async () => {
  const path = join(dir, "nan.safetensors");
  const v = f32(512, 1);
  v[300] = NaN;
  safetensors(path, [{ name: "w", dtype: "F32", shape: [2, 256], data: new Uint8Array(v.buffer) }]);
  const r = await run("convert", path, "--to", "q4_k", "-o", join(dir, "nan.gguf"));
  assert.equal(r.code, 1);
  assert.match(r.err, /tensor "w" has invalid data: nan at element 300.*INVALID_DATA/);
  assert.equal(existsSync(join(dir, "nan.gguf")), false);
});

test("convert safetensors --to Q4_K: 2-D float tensors quantized (rows of 64 and 80 fall back, and the report says so), 1-D as F32, integers kept, names and order kept", async () => {
  const path = join(dir, "s.safetensors");
  const w256 = f32(4 * 256, 2);
  const w64 = f32(8 * 64, 3);
  const w80 = f32(3 * 80, 4);
  const norm = f32(64, 5);
  const ids = new BigInt64Array([1n, 2n, 3n]);
  safetensors(path, [
    { name: "model.layers.0.self_attn.q_proj.weight", dtype: "F32", shape: [4, 256], data: new Uint8Array(w256.buffer) },
    { name: "model.embed_tokens.weight", dtype: "F32", shape: [8, 64], data: new Uint8Array(w64.buffer) },
    { name: "odd", dtype: "F32", shape: [3, 80], data: new Uint8Array(w80.buffer) },
    { name: "model.norm.weight", dtype: "F32", shape: [64], data: new Uint8Array(norm.buffer) },
    { name: "ids", dtype: "I64", shape: [3], data: new Uint8Array(ids.buffer) },
  ]);
  const out = join(dir, "s.gguf");
  const r = await run("convert", path, "--to", "q4_K", "-o", out);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /model\.embed_tokens\.weight .*Q5_0 \(fallback from Q4_K\)/);
  assert.match(r.out, /odd .*F16 \(fallback from Q4_K\)/);
  assert.match(r.out, /2 of 5 tensors fell back/);
  const g = await tensorsOf(out);
  assert.deepEqual([...g.tensors.keys()], ["model.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight", "odd", "model.norm.weight", "ids"]);
  assert.deepEqual(g.metadata, ["general.quantization_version=2", "general.file_type=14"]);
  const t = (n: string) => g.tensors.get(n)!;
  assert.deepEqual([t("model.layers.0.self_attn.q_proj.weight").type, t("model.embed_tokens.weight").type, t("odd").type, t("model.norm.weight").type, t("ids").type], ["Q4_K", "Q5_0", "F16", "F32", "I64"]);
  assert.deepEqual(t("model.layers.0.self_attn.q_proj.weight").bytes, quantizeRows("Q4_K", w256, 256));
  assert.deepEqual(t("model.embed_tokens.weight").bytes, quantizeRows("Q5_0", w64, 64));
  assert.deepEqual(t("odd").bytes, quantizeRows("F16", w80, 80));
  assert.deepEqual(t("model.norm.weight").bytes, new Uint8Array(norm.buffer));
  assert.deepEqual(t("ids").bytes, new Uint8Array(ids.buffer));
  assert.deepEqual(t("odd").dims, [80, 3]);
});

test("convert a GGUF model --to q4_k holds what quantize --pure Q4_K_S writes (metadata, types, bytes), in the input's tensor order", async () => {
  const a = join(dir, "conv.gguf");
  const b = join(dir, "pure.gguf");
  assert.equal((await run("convert", wide, "--to", "Q4_K", "-o", a, "-q")).code, 0);
  assert.equal((await run("quantize", wide, "--mode", "Q4_K_S", "--pure", "-o", b, "-q")).code, 0);
  const x = await tensorsOf(a);
  const y = await tensorsOf(b);
  assert.deepEqual(x.metadata, y.metadata);
  assert.equal(x.tensors.size, y.tensors.size);
  for (const [name, t] of y.tensors) assert.deepEqual(x.tensors.get(name), t, name);
  assert.equal([...x.tensors.keys()][0], "token_embd.weight");
  assert.equal([...y.tensors.keys()][0], "output.weight");
});

test("convert --to an IQ2 type is refused (it needs an importance matrix)", async () => {
  const r = await run("convert", wide, "--to", "iq2_xxs", "-o", join(dir, "iq2.gguf"));
  assert.equal(r.code, 1);
  assert.match(r.err, /IQ2_XXS needs an importance matrix/);
});
