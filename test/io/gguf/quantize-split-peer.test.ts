// suite: full
/**
 * Split models through `tensorcast quantize` against llama.cpp's llama_model_quantize (node-llama-cpp's
 * libllama through koffi): a split input with --keep-split gives the peer's parts byte for byte
 * (keep_split: PREFIX-0000k-of-0000n.gguf, the model's metadata and split.* in the first part), and
 * without it the peer's one file; an unsplit input with --keep-split is the peer's one part named
 * -00001-of-00001.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { llamaQuantPeer } from "../../support/llama-quant-peer.js";
import { peerSkip } from "../../support/ggml-peer.js";
import { runCli } from "../../support/cli.js";
import { writeQuantModel, writeSplitQuantModel } from "../../support/gguf-quant-models.js";

const peer = llamaQuantPeer();
const skip = peerSkip(peer as never);
const dir = mkdtempSync(join(tmpdir(), "tensorcast-quant-split-"));
after(() => { if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true }); });

function sameFiles(a: string, b: string, names: readonly string[]): void {
  for (const n of names) assert.ok(readFileSync(join(a, n)).equals(readFileSync(join(b, n))), n);
}

for (const [model, preset, ftype] of [["wide", "Q4_K_M", 15], ["wide", "Q8_0", 7], ["deep", "Q4_K_M", 15]] as const) {
  test(`quantize the ${model} model split --keep-split --mode ${preset}: llama_model_quantize's parts, byte for byte; without it, its one file`, { skip }, async () => {
    if (typeof peer === "string") throw new Error(peer);
    const inDir = join(dir, `in-${model}-${preset}`);
    const ours = join(dir, `ours-${model}-${preset}`);
    const theirs = join(dir, `theirs-${model}-${preset}`);
    for (const d of [inDir, ours, theirs]) rmSync(d, { recursive: true, force: true });
    for (const d of [inDir, ours, theirs]) mkdirSync(d);
    const parts = await writeSplitQuantModel(model, join(inDir, "m"), 7);
    assert.ok(parts.length >= 3, `${parts.length} parts`);
    assert.equal(peer.quantize(parts[0]!, join(theirs, "q"), { ftype, keepSplit: true }), 0);
    const r = await runCli("quantize", parts[1]!, "--mode", preset, "--keep-split", "-o", join(ours, "q.gguf"), "-q");
    assert.equal(r.code, 0, r.err);
    const names = readdirSync(theirs).sort();
    assert.equal(names.length, parts.length);
    assert.deepEqual(readdirSync(ours).sort(), names);
    sameFiles(ours, theirs, names);
    assert.equal(peer.quantize(parts[0]!, join(theirs, "one.gguf"), { ftype }), 0);
    const one = await runCli("quantize", parts[0]!, "--mode", preset, "-o", join(ours, "one.gguf"), "-q");
    assert.equal(one.code, 0, one.err);
    sameFiles(ours, theirs, ["one.gguf"]);
  });
}

test("quantize an unsplit model --keep-split: llama_model_quantize's one part, named -00001-of-00001", { skip }, async () => {
  if (typeof peer === "string") throw new Error(peer);
  const input = join(dir, "whole.gguf");
  await writeQuantModel("wide", input);
  assert.equal(peer.quantize(input, join(dir, "peer-whole"), { ftype: 7, keepSplit: true }), 0);
  const r = await runCli("quantize", input, "--mode", "q8_0", "--keep-split", "-o", join(dir, "ours-whole.gguf"), "-q");
  assert.equal(r.code, 0, r.err);
  assert.ok(readFileSync(join(dir, "ours-whole-00001-of-00001.gguf")).equals(readFileSync(join(dir, "peer-whole-00001-of-00001.gguf"))));
});
