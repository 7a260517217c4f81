/**
 * PyTorch checkpoints through the CLI: `convert IN -o OUT.safetensors` without --to writes
 * exactly safetensors.torch.save_file's bytes (goldens by test/fixtures/pytorch/make.py), tied
 * weights kept once and listed; a folder of .bin shards becomes save_pretrained's safetensors
 * folder byte for byte; inspect and diff read checkpoints, files and folders; --key picks a
 * nested state dict; a hostile file is exit 1 with one line and no output.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../support/cli.js";
import { ROOT, scratch } from "./helpers.js";

const DIR = join(ROOT, "test", "fixtures", "pytorch");
const dir = scratch();

for (const name of ["dtypes", "dtypes.legacy", "layouts", "layouts.legacy"]) {
  test(`convert ${name}.pt -o OUT.safetensors (no --to) is save_file's bytes`, async () => {
    const out = join(dir, `${name}.safetensors`);
    const r = await runCli("convert", join(DIR, `${name}.pt`), "-o", out);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(readFileSync(out), readFileSync(join(DIR, `${name}.golden.safetensors`)));
    if (name.startsWith("layouts")) assert.match(r.out, /lm_head\.weight \(tied to embed\.weight: the same storage, kept once\)/);
  });
}

test("convert --key model: the nested state dict; without it, the keys are listed (exit 1)", async () => {
  const out = join(dir, "nested.safetensors");
  const bad = await runCli("convert", join(DIR, "nested.pt"), "-o", out);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /"model" \(a state dict of 2 tensors\)/);
  assert.ok(!existsSync(out));
  const r = await runCli("convert", join(DIR, "nested.pt"), "--key", "model", "-o", out);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readFileSync(out), readFileSync(join(DIR, "nested.golden.safetensors")));
});

test("convert DIR of pytorch_model.bin shards -o OUTDIR: save_pretrained's safetensors folder, byte for byte", async () => {
  const out = join(dir, "sharded-out");
  const r = await runCli("convert", join(DIR, "sharded"), "-o", out);
  assert.equal(r.code, 0, r.err);
  const golden = join(DIR, "sharded.golden");
  assert.deepEqual(readdirSync(out).sort(), readdirSync(golden).sort());
  for (const f of readdirSync(golden)) assert.deepEqual(readFileSync(join(out, f)), readFileSync(join(golden, f)), f);
});

test("inspect reads a checkpoint and a folder of shards; diff against the converted file finds no difference", async () => {
  const i = await runCli("inspect", join(DIR, "layouts.pt"), "--json");
  assert.equal(i.code, 0, i.err);
  const report = JSON.parse(i.out) as { format: string; tensors: { name: string; dtype: string; shape: number[] }[] };
  assert.equal(report.format, "pytorch");
  assert.deepEqual(report.tensors.find((t) => t.name === "transposed")!.shape, [8, 6]);
  const f = await runCli("inspect", join(DIR, "sharded"), "--json");
  assert.equal(f.code, 0, f.err);
  assert.equal((JSON.parse(f.out) as { tensors: unknown[] }).tensors.length, 4);
  const out = join(dir, "diff.safetensors");
  assert.equal((await runCli("convert", join(DIR, "dtypes.pt"), "-o", out)).code, 0);
  const d = await runCli("diff", join(DIR, "dtypes.pt"), out, "--json");
  assert.equal(d.code, 0, d.err);
  const diff = JSON.parse(d.out) as { tensors: { name: string; stats: { count: number; differing: number } }[] };
  assert.equal(diff.tensors.length, 18);
  assert.ok(diff.tensors.every((t) => t.stats.count === 15 && t.stats.differing === 0), JSON.stringify(diff.tensors.filter((t) => t.stats.differing !== 0)));
  const folders = await runCli("diff", join(DIR, "sharded"), join(DIR, "sharded.golden"), "--json");
  assert.equal(folders.code, 0, folders.err);
});

test("convert IN.bin --to float16: a PyTorch checkpoint converts like any file", async () => {
  const out = join(dir, "f16.safetensors");
  const r = await runCli("convert", join(DIR, "layouts.pt"), "--to", "float16", "-o", out);
  assert.equal(r.code, 0, r.err);
  const i = JSON.parse((await runCli("inspect", out, "--json")).out) as { tensors: { name: string; dtype: string }[] };
  assert.equal(i.tensors.find((t) => t.name === "offset")!.dtype, "float16");
});

test("a hostile checkpoint: exit 1, one line naming the global, nothing written", async () => {
  const out = join(dir, "hostile.safetensors");
  const r = await runCli("convert", join(DIR, "hostile", "os_system.pt"), "-o", out);
  assert.equal(r.code, 1);
  assert.match(r.err, /GLOBAL "os\.system" is in the blocked module os; nothing was executed/);
  assert.equal(r.err.trim().split("\n").length, 1);
  assert.ok(!existsSync(out));
  const i = await runCli("inspect", join(DIR, "hostile", "eval.pt"));
  assert.equal(i.code, 1);
  assert.match(i.err, /builtins\.eval/);
});
