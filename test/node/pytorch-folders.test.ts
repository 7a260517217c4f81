/**
 * PyTorch folders (pytorch_model.bin alone, or pytorch_model-0000k-of-0000n.bin shards and their
 * pytorch_model.bin.index.json) through every folder-taking command, as a safetensors folder is:
 * convert with and without --to, --max-shard-size, quantize --mode fp8 | fp8-ue8m0 | mxfp4 | nvfp4,
 * inspect, diff. The goldens (test/fixtures/pytorch/make.py) are torch's own casts (`.to`) written by
 * safetensors' save_file, shard for shard, with the index transformers writes.
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../support/cli.js";
import { ROOT, scratch } from "./helpers.js";

const DIR = join(ROOT, "test", "fixtures", "pytorch");
const dir = scratch();

/** Whether the 16-bit code `c` of a float16 or bfloat16 is a NaN. */
function isNan16(c: number, type: string): boolean {
  return type === "BF16" ? (c & 0x7f80) === 0x7f80 && (c & 0x7f) !== 0 : (c & 0x7c00) === 0x7c00 && (c & 0x3ff) !== 0;
}

/**
 * OUT's files equal the golden folder's, byte for byte; with `nanCodes`, a float16 / bfloat16
 * element may be another NaN code than torch's (its vectorized float32 -> bfloat16 writes 0xFFFF for
 * every NaN; tensorcast writes 0x7FC0 with the sign, and tests treat every NaN code as equal:
 * docs/semantics.md), every other byte still equal, headers included.
 */
function assertSameFolder(out: string, golden: string, nanCodes = false): void {
  assert.deepEqual(readdirSync(out).sort(), readdirSync(golden).sort());
  for (const f of readdirSync(golden)) {
    const a = readFileSync(join(out, f));
    const b = readFileSync(join(golden, f));
    if (!nanCodes || !f.endsWith(".safetensors")) {
      assert.deepEqual(a, b, f);
      continue;
    }
    assert.equal(a.length, b.length, f);
    const n = Number(b.readBigUInt64LE(0));
    assert.deepEqual(a.subarray(0, 8 + n), b.subarray(0, 8 + n), `${f}: header`);
    const header = JSON.parse(b.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; data_offsets: [number, number] }>;
    let nans = 0;
    for (const [name, t] of Object.entries(header)) {
      if (name === "__metadata__") continue;
      for (let at = 8 + n + t.data_offsets[0]; at < 8 + n + t.data_offsets[1]; at++) {
        if (a[at] === b[at]) continue;
        const even = at - ((at - 8 - n - t.data_offsets[0]) % 2);
        const both = (t.dtype === "BF16" || t.dtype === "F16") && isNan16(a.readUInt16LE(even), t.dtype) && isNan16(b.readUInt16LE(even), t.dtype);
        assert.ok(both, `${f}: ${name} differs at byte ${at - 8 - n - t.data_offsets[0]} (not two NaNs)`);
        nans++;
      }
    }
    assert.ok(nans > 0 || a.equals(b), f);
  }
}

for (const [input, to, golden] of [
  ["sharded", "float16", "sharded.float16.golden"],
  ["onefile", "float16", "onefile.float16.golden"],
  ["onefile", "bfloat16", "onefile.bfloat16.golden"],
] as const) {
  test(`convert ${input}/ --to ${to} -o OUTDIR: the folder save_pretrained writes after .to(${to}), byte for byte${to === "bfloat16" ? " (NaN codes aside)" : ""}`, async () => {
    const out = join(dir, `${input}-${to}`);
    const r = await runCli("convert", join(DIR, input), "--to", to, "-o", out);
    assert.equal(r.code, 0, r.err);
    assertSameFolder(out, join(DIR, golden), to === "bfloat16");
    // The summary names each .bin and the file it became in OUTDIR, not the hidden folder it was built in.
    assert.match(r.out, new RegExp(`pytorch_model(-00001-of-00002)?\\.bin -> ${out.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/model`));
    assert.doesNotMatch(r.out, /\.tensorcast-\d+-/);
    assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".")), []);
  });
}

test("convert onefile/ -o OUTDIR (no --to): model.safetensors, tied lm_head.weight kept once, tokenizer and config copied", async () => {
  const out = join(dir, "onefile-pt");
  const r = await runCli("convert", join(DIR, "onefile"), "-o", out);
  assert.equal(r.code, 0, r.err);
  assertSameFolder(out, join(DIR, "onefile.golden"));
  assert.match(r.out, /lm_head\.weight \(tied to model\.embed_tokens\.weight/);
  assert.doesNotMatch(r.out, /undefined/);
});

test("convert DIR of .bin -o OUTDIR --max-shard-size (no --to): save_pretrained(max_shard_size=)'s folder (huggingface_hub's split in the state dict's order), split and joined", async () => {
  for (const [input, size, golden] of [["onefile", "100", "onefile.split100.golden"], ["sharded", "5GB", "sharded.joined.golden"]] as const) {
    const out = join(dir, `${input}-${size}`);
    const r = await runCli("convert", join(DIR, input), "--max-shard-size", size, "-o", out);
    assert.equal(r.code, 0, r.err);
    assertSameFolder(out, join(DIR, golden));
  }
});

test("convert DIR of .bin shards --to float16 --max-shard-size: laid out anew (split and joined), read back equal", async () => {
  const split = join(dir, "onefile-split");
  const r = await runCli("convert", join(DIR, "onefile"), "--to", "float16", "--max-shard-size", "40", "-o", split);
  assert.equal(r.code, 0, r.err);
  const files = readdirSync(split).sort();
  assert.ok(files.includes("model.safetensors.index.json") && files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length > 1, files.join(", "));
  const joined = join(dir, "sharded-joined");
  const j = await runCli("convert", join(DIR, "sharded"), "--to", "float16", "--max-shard-size", "5GB", "-o", joined);
  assert.equal(j.code, 0, j.err);
  assert.deepEqual(readdirSync(joined).sort(), ["config.json", "model.safetensors"]);
  for (const [a, b] of [[split, join(DIR, "onefile.float16.golden")], [joined, join(DIR, "sharded.float16.golden")]]) {
    const d = await runCli("diff", a, b, "--json");
    assert.equal(d.code, 0, d.err);
    const diff = JSON.parse(d.out) as { tensors: { name: string; stats: { differing: number } }[]; onlyA?: unknown[]; onlyB?: unknown[] };
    assert.ok(diff.tensors.length > 0 && diff.tensors.every((t) => t.stats.differing === 0), d.out);
  }
});

for (const mode of ["fp8", "fp8-ue8m0", "mxfp4", "nvfp4"] as const) {
  test(`quantize DIR of .bin --mode ${mode}: the same folder as from the converted safetensors folder`, async () => {
    for (const [input, viaSafetensors] of [["sharded", "sharded.golden"], ["onefile", "onefile.golden"]] as const) {
      const a = join(dir, `${input}-${mode}-pt`);
      const b = join(dir, `${input}-${mode}-st`);
      const r = await runCli("quantize", join(DIR, input), "--mode", mode, "-o", a);
      assert.equal(r.code, 0, r.err);
      assert.equal((await runCli("quantize", join(DIR, viaSafetensors), "--mode", mode, "-o", b)).code, 0);
      assertSameFolder(a, b);
    }
  });
}

test("inspect and diff take a one-file PyTorch folder; a Hub snapshot folder of .bin files linked into blobs/ converts", async () => {
  const i = await runCli("inspect", join(DIR, "onefile"), "--json");
  assert.equal(i.code, 0, i.err);
  assert.equal((JSON.parse(i.out) as { tensors: unknown[] }).tensors.length, 7);
  const d = await runCli("diff", join(DIR, "onefile"), join(DIR, "onefile.golden"), "--json");
  assert.equal(d.code, 0, d.err);
  // models--org--name/snapshots/REV/ with each file a link to ../../blobs/HASH, as huggingface_hub lays the cache out.
  for (const [layout, source] of [["one", "onefile"], ["sharded", "sharded"]] as const) {
    const repo = join(dir, `models--org--${layout}`);
    const snap = join(repo, "snapshots", "abc123");
    mkdirSync(join(repo, "blobs"), { recursive: true });
    mkdirSync(snap, { recursive: true });
    for (const [k, f] of readdirSync(join(DIR, source)).entries()) {
      cpSync(join(DIR, source, f), join(repo, "blobs", `blob${k}`));
      symlinkSync(join("..", "..", "blobs", `blob${k}`), join(snap, f));
    }
    const out = join(dir, `hub-${layout}`);
    const r = await runCli("convert", snap, "--to", "float16", "-o", out);
    assert.equal(r.code, 0, r.err);
    assertSameFolder(out, join(DIR, `${source}.float16.golden`));
    const p = await runCli("convert", snap, "-o", `${out}-pt`);
    assert.equal(p.code, 0, p.err);
  }
});

test("convert DIR of .bin --to: a shard that is a link out of the folder is refused (exit 1), nothing written", async () => {
  const bad = join(dir, "escape");
  mkdirSync(bad);
  writeFileSync(join(bad, "config.json"), "{}\n");
  symlinkSync(join(DIR, "onefile", "pytorch_model.bin"), join(bad, "pytorch_model.bin"));
  const out = join(dir, "escape-out");
  const r = await runCli("convert", bad, "--to", "float16", "-o", out);
  assert.equal(r.code, 1, r.out);
  assert.match(r.err, /symbolic link/);
  assert.ok(!existsSync(out));
});

test("convert DIR of .bin shards --to float16 --shard K/N, then index --from DIR: the same folder as one run", async () => {
  const out = join(dir, "sliced");
  for (const k of ["0/2", "1/2"]) {
    const r = await runCli("convert", join(DIR, "sharded"), "--to", "float16", "--shard", k, "-o", out, "-q");
    assert.equal(r.code, 0, r.err);
  }
  assert.ok(!existsSync(join(out, "model.safetensors.index.json")));
  const i = await runCli("index", out, "--from", join(DIR, "sharded"));
  assert.equal(i.code, 0, i.err);
  assertSameFolder(out, join(DIR, "sharded.float16.golden"));
  const one = await runCli("convert", join(DIR, "onefile"), "--to", "float16", "--shard", "0/2", "-o", join(dir, "sliced-one"));
  assert.equal(one.code, 2);
  assert.match(one.err, /holds one weights file \(pytorch_model\.bin\) and no index/);
});
