/**
 * `tensorcast quantize DIR --mode PRESET -o OUT.gguf` and `convert DIR --to TYPE -o OUT.gguf` for
 * the types beyond f32/f16/bf16/q8_0, against test/fixtures/hf-gguf/quantize.json (made by
 * test/node/make-hf-quantize-golden.ts with convert_hf_to_gguf.py and llama_model_quantize): for
 * every folder of hf-quant-cases.ts (the seven fixtures, a wide Llama whose rows are whole K
 * blocks, a PyTorch folder, a Hub cache snapshot) the files are byte for byte those of
 * llama_model_quantize run on convert_hf_to_gguf.py's --outtype auto file, and of
 * convert_hf_to_gguf.py --outtype auto / tq1_0 / tq2_0. `convert DIR --to q4_k` is what
 * `convert AUTO.gguf --to q4_k` writes from the auto file. Then the refusals.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { encodeTensor, rowGroup, rowLength } from "../../src/io/hf-gguf/encode.js";
import { planFolder } from "../../src/node/convert/hf-gguf.js";
import { openCheckpoint } from "../../src/node/io/checkpoint.js";
import { folderRows } from "../../src/node/quantize/hf-gguf.js";
import { HF_GGUF_FIXTURES, HF_QUANT_CASES, PRESETS, readHfQuantGolden } from "../support/hf-quant-cases.js";
import { fullOnly } from "../support/suite.js";
import { cli, scratch, sha256 } from "./helpers.js";

const GOLDEN = readHfQuantGolden();
const OUT = scratch();
const folders = new Map<string, string>();
const folderOf = (id: string): string => {
  let d = folders.get(id);
  if (d === undefined) folders.set(id, (d = HF_QUANT_CASES.find((c) => c.id === id)!.make(OUT)));
  return d;
};

/** `quantize DIR --mode P` for each of `presets`: the golden file's bytes. */
async function quantizeMatches(id: string, presets: readonly string[]): Promise<void> {
  const dir = folderOf(id);
  for (const p of presets) {
    const out = join(OUT, `${id}.${p}.gguf`);
    const r = await cli(["quantize", dir, "--mode", p.toLowerCase(), "-o", out, "-q"]);
    assert.equal(r.code, 0, r.err);
    const want = GOLDEN.cases[id]!.presets[p]!;
    assert.equal(readFileSync(out).length, want.size, `${id} ${p}: size`);
    assert.equal(sha256(out), want.sha256, `${id} ${p}`);
  }
  assert.deepEqual(readdirSync(OUT).filter((f) => f.endsWith(".tmp")), []);
}

for (const c of HF_QUANT_CASES) {
  // the wide model's further presets (a second or so each) are the full suite's
  const everyday = c.presets.filter((p) => (PRESETS as readonly string[]).includes(p) || c.presets.length <= PRESETS.length);
  test(`quantize ${c.id}/ --mode ${everyday.join("|")}: llama_model_quantize's file from convert_hf_to_gguf's auto file`, () => quantizeMatches(c.id, everyday));
  const more = c.presets.filter((p) => !everyday.includes(p));
  if (more.length > 0) test(`quantize ${c.id}/ --mode ${more.join("|")}: the same`, { skip: fullOnly }, () => quantizeMatches(c.id, more));

  test(`convert ${c.id}/ --to ${c.outtypes.join("|")} -o OUT.gguf: convert_hf_to_gguf.py's file`, async () => {
    const dir = folderOf(c.id);
    for (const t of c.outtypes) {
      const out = join(OUT, `${c.id}.${t}.gguf`);
      const r = await cli(["convert", dir, "--to", t, "-o", out, "--force"]);
      assert.equal(r.code, 0, r.err);
      assert.equal(sha256(out), GOLDEN.cases[c.id]!.outtypes[t]!.sha256, `${c.id} ${t}`);
    }
  });
}

test("the report: each tensor's type from the auto file's, the fallbacks, general.file_type", async () => {
  const dir = folderOf("wide-llama");
  const r = await cli(["quantize", dir, "--mode", "Q4_K_M", "-o", join(OUT, "report.gguf"), "--json"]);
  assert.equal(r.code, 0, r.err);
  const rep = JSON.parse(r.out) as { fileType: number; fallbacks: number; tensors: { name: string; from: string; to: string }[] };
  assert.equal(rep.fileType, 15);
  assert.equal(rep.fallbacks, 0);
  const to = Object.fromEntries(rep.tensors.map((t) => [t.name, `${t.from}>${t.to}`]));
  assert.equal(to["token_embd.weight"], "BF16>Q4_K");
  assert.equal(to["output.weight"], "BF16>Q6_K");
  assert.equal(to["blk.0.attn_norm.weight"], "F32>F32");
  // use_more_bits over 4 layers: layers 2 and 3 (i >= 7n/8 = 3, (i - n/8) % 3 == 2)
  assert.deepEqual([0, 1, 2, 3].map((l) => to[`blk.${l}.ffn_down.weight`]), ["BF16>Q4_K", "BF16>Q4_K", "BF16>Q6_K", "BF16>Q6_K"]);
  const small = await cli(["quantize", join(HF_GGUF_FIXTURES, "llama"), "--mode", "Q4_K_M", "-o", join(OUT, "report-small.gguf")]);
  assert.equal(small.code, 0, small.err);
  assert.match(small.out, /F16 +Q5_0 \(fallback from Q4_K\)/);
  assert.match(small.out, /fell back to another type/);
});

test("convert DIR --to q4_k|q6_k|iq4_xs is convert AUTO.gguf --to TYPE of convert_hf_to_gguf's auto file", async () => {
  for (const [id, targets] of [["wide-llama", ["q4_k"]], ["llama", ["q6_k", "iq4_xs"]], ["qwen2-pytorch", ["q4_k"]]] as const) {
    const dir = folderOf(id);
    const auto = join(OUT, `${id}.auto.gguf`);
    if (!existsSync(auto)) assert.equal((await cli(["convert", dir, "--to", "auto", "-o", auto])).code, 0);
    assert.equal(sha256(auto), GOLDEN.cases[id]!.outtypes.auto!.sha256);
    for (const t of targets) {
      const direct = join(OUT, `${id}.direct.${t}.gguf`);
      const twoSteps = join(OUT, `${id}.two.${t}.gguf`);
      let r = await cli(["convert", dir, "--to", t, "-o", direct, "-q"]);
      assert.equal(r.code, 0, r.err);
      r = await cli(["convert", auto, "--to", t, "-o", twoSteps, "-q"]);
      assert.equal(r.code, 0, r.err);
      assert.ok(readFileSync(direct).equals(readFileSync(twoSteps)), `${id} ${t}`);
    }
  }
});

test("refusals: an unknown preset lists the presets; IQ presets without an importance matrix; -o that is not .gguf", async () => {
  const dir = join(HF_GGUF_FIXTURES, "llama");
  const out = join(OUT, "refused.gguf");
  let r = await cli(["quantize", dir, "--mode", "Q4_K_X", "-o", out]);
  assert.equal(r.code, 2);
  assert.match(r.err, /"Q4_K_X" is not a llama-quantize preset; the presets are Q4_0, Q4_1, .*IQ4_XS.*Q4_K_M/);
  // on the wide model: the fixtures' rows of 64 fall back to IQ4_NL, which needs none, as in llama.cpp
  for (const p of ["IQ2_XS", "IQ1_S", "IQ3_XXS", "Q2_K_S"]) {
    r = await cli(["quantize", folderOf("wide-llama"), "--mode", p, "-o", out]);
    assert.equal(r.code, 1, p);
    assert.match(r.err, new RegExp(`${p} needs an importance matrix \\(--imatrix FILE\\)`), p);
  }
  r = await cli(["quantize", dir, "--mode", "q4_k_m", "-o", join(OUT, "refused.safetensors")]);
  assert.equal(r.code, 2);
  assert.match(r.err, /name it OUT\.gguf/);
  r = await cli(["quantize", dir, "--mode", "q4_k_m"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /-o OUT\.gguf is missing/);
  r = await cli(["convert", dir, "--to", "iq2_xs", "-o", out]);
  assert.equal(r.code, 2);
  assert.match(r.err, /IQ2_XS needs an importance matrix/);
  r = await cli(["convert", dir, "--to", "int4", "-o", out]);
  assert.equal(r.code, 2);
  assert.match(r.err, /float32, float16, bfloat16, q8_0, tq1_0, tq2_0, auto .*q4_k.*"int4"/);
  assert.equal(existsSync(out), false);
  assert.deepEqual(readdirSync(OUT).filter((f) => f.includes("refused")), []);
  // a checkpoint mode still quantizes the folder's safetensors (fp8 tiles)
  r = await cli(["quantize", dir, "--mode", "fp8", "-o", join(OUT, "fp8-folder"), "-q"]);
  assert.equal(r.code, 0, r.err);
  assert.ok(existsSync(join(OUT, "fp8-folder", "model.safetensors")));
});

test("a folder tensor's rows in bands of any size: the bytes of the whole tensor, each value read once, whole head groups, the chunk let go", async () => {
  const dir = folderOf("wide-llama");
  const plan = await planFolder(dir, "auto");
  const file = await openCheckpoint(dir);
  try {
    for (const name of ["blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.ffn_down.weight", "token_embd.weight", "blk.0.attn_norm.weight"]) {
      const t = plan.tensors.find((x) => x.name === name)!;
      const s = file.tensors.find((x) => x.name === t.source)!;
      const raw = await s.read(0, s.shape.reduce((a, b) => a * b, 1));
      const whole = encodeTensor(t, () => raw);
      const group = rowGroup(t) * rowLength(t);
      const rows = t.dims.slice(1).reduce((a, b) => a * b, 1);
      const total = rows * t.dims[0];
      const per = whole.length / total;
      for (const [chunkValues, band] of [[3 * group, 5], [group, 7], [100, 64], [1 << 22, 3]] as const) {
        const reads: [number, number][] = [];
        const counted = { ...s, read: (start: number, count: number) => (reads.push([start, count]), s.read(start, count)) } as typeof s;
        const src = folderRows(t, new Map([[s.name, counted]]), chunkValues);
        const parts: Uint8Array[] = [];
        for (let r = 0; r < rows; r += band) parts.push(await src.read(r, Math.min(band, rows - r)));
        assert.ok(Buffer.concat(parts).equals(whole), `${name} chunks of ${chunkValues}, bands of ${band}`);
        assert.equal(reads.reduce((n, [, c]) => n + c, 0), total, `${name}: every value read once`);
        assert.ok(reads.every(([a, c]) => a % group === 0 && (c % group === 0 || a + c === total)), `${name}: whole groups`);
        const n = reads.length;
        // out of order (a band inside a group first): still the right bytes; the last chunk was let go
        const late = Math.min(rows - 1, rowGroup(t) + 3);
        assert.ok(Buffer.from(await src.read(late, 1)).equals(whole.subarray(late * t.dims[0] * per, (late + 1) * t.dims[0] * per)), `${name} row ${late}`);
        assert.equal(reads.length, n + 1);
      }
    }
  } finally {
    await file.close();
  }
});
