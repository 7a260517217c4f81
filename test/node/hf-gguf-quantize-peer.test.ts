// suite: full
/**
 * `tensorcast quantize DIR --mode PRESET -o OUT.gguf` against llama.cpp's two steps run live: for
 * every folder of hf-quant-cases.ts, convert_hf_to_gguf.py --outtype auto writes its file, then
 * llama_model_quantize (node-llama-cpp's libllama through koffi) quantizes that file with each
 * preset; tensorcast's one-pass file must be the same bytes. The wide model takes every preset
 * that needs no importance matrix (F16, BF16 and F32 too), the others a dozen. convert DIR --to
 * T is compared with convert_hf_to_gguf.py --outtype T the same way. The peer's files must also
 * be those test/fixtures/hf-gguf/quantize.json names, so the everyday suite's hashes stay theirs.
 *
 * Python: TENSORCAST_CONVERT_PYTHON (a python with torch, numpy, sentencepiece and transformers,
 * which convert_hf_to_gguf.py imports) and LLAMA_CPP (a llama.cpp checkout, /work/llama.cpp by
 * default); without them, or without the peer (test-peers/), the tests are skipped with the reason.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { LLAMA_PRESETS } from "../../src/ggml/presets.js";
import { llamaQuantPeer } from "../support/llama-quant-peer.js";
import { pythonMissing } from "../support/python.js";
import { convertWithPython, HF_QUANT_CASES, legacyImatrixForPeer, makeWideLlama, readHfQuantGolden, wideImatrixEntries } from "../support/hf-quant-cases.js";
import { legacyImatrix } from "../support/gguf-quant-models.js";
import { cli, scratch } from "./helpers.js";

const PYTHON = process.env.TENSORCAST_CONVERT_PYTHON ?? "";
const LLAMA_CPP = process.env.LLAMA_CPP ?? "/work/llama.cpp";
// tensor_requires_imatrix's types come out of these without an importance matrix
const NEEDS_IMATRIX = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", "IQ3_XXS", "IQ3_XS", "Q2_K_S"];
const MORE = ["Q4_1", "Q5_1", "Q5_K_S", "Q3_K_L", "IQ3_S", "IQ3_M", "Q6_K", "TQ1_0", "MXFP4_MOE", "F16"];

function missing(): string | undefined {
  if (PYTHON === "") return "TENSORCAST_CONVERT_PYTHON is not set (a python with torch, numpy, sentencepiece and transformers for llama.cpp's convert_hf_to_gguf.py)";
  if (!existsSync(join(LLAMA_CPP, "convert_hf_to_gguf.py"))) return `${join(LLAMA_CPP, "convert_hf_to_gguf.py")} is missing (LLAMA_CPP names a llama.cpp checkout)`;
  return pythonMissing("torch, numpy, sentencepiece, transformers", [PYTHON]);
}

const peer = llamaQuantPeer();
const skip = missing() ?? (typeof peer === "string" ? peer : false);
const OUT = scratch();
const sha256 = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
const GOLDEN = readHfQuantGolden();

function firstDifference(a: Uint8Array, b: Uint8Array): string {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return `first difference at byte ${i} (sizes ${a.length} and ${b.length})`;
  return `sizes ${a.length} and ${b.length}`;
}

for (const c of HF_QUANT_CASES) {
  const presets = c.id === "wide-llama"
    ? LLAMA_PRESETS.filter((p) => p.aliasOf === undefined && !NEEDS_IMATRIX.includes(p.name)).map((p) => p.name)
    : [...new Set([...c.presets, ...(c.id === "qwen2-pytorch" || c.id === "llama-hub" ? [] : MORE)])];
  test(`${c.id}: quantize DIR (${presets.length} presets) and convert DIR --to ${c.outtypes.join("|")} are llama.cpp's files, live`, { skip }, async () => {
    if (typeof peer === "string") throw new Error(peer);
    const dir = c.make(OUT);
    for (const t of new Set(["auto", ...c.outtypes])) {
      const theirs = join(OUT, `${c.id}.${t}.peer.gguf`);
      const ours = join(OUT, `${c.id}.${t}.ours.gguf`);
      convertWithPython(PYTHON, dir, t, theirs);
      const r = await cli(["convert", dir, "--to", t, "-o", ours, "-q"]);
      assert.equal(r.code, 0, r.err);
      const a = readFileSync(ours);
      const b = readFileSync(theirs);
      assert.ok(a.equals(b), `${c.id} --to ${t}: ${firstDifference(a, b)}`);
      const golden = GOLDEN.cases[c.id]?.outtypes[t];
      if (golden !== undefined) assert.equal(sha256(b), golden.sha256, `${c.id} ${t}: convert_hf_to_gguf's file is not quantize.json's (run make-hf-quantize-golden)`);
    }
    const auto = join(OUT, `${c.id}.auto.peer.gguf`);
    for (const p of presets) {
      const theirs = join(OUT, `${c.id}.${p}.peer.gguf`);
      const ours = join(OUT, `${c.id}.${p}.ours.gguf`);
      const ftype = LLAMA_PRESETS.find((x) => x.name === p)!.ftype;
      assert.equal(peer.quantize(auto, theirs, { ftype }), 0, `llama_model_quantize ${c.id} ${p}`);
      const r = await cli(["quantize", dir, "--mode", p, "-o", ours, "-q"]);
      assert.equal(r.code, 0, `${p}: ${r.err}`);
      const a = readFileSync(ours);
      const b = readFileSync(theirs);
      assert.ok(a.equals(b), `${c.id} ${p}: ${firstDifference(a, b)}`);
      const golden = GOLDEN.cases[c.id]?.presets[p];
      if (golden !== undefined) assert.equal(sha256(b), golden.sha256, `${c.id} ${p}: the peer's file is not quantize.json's (run make-hf-quantize-golden)`);
    }
  });
}

test("wide-llama with an importance matrix (IQ2_XS, IQ1_M, IQ3_XXS, Q2_K_S, IQ4_XS, Q4_K_M): llama-quantize --imatrix's files, live", { skip }, async () => {
  if (typeof peer === "string") throw new Error(peer);
  const dir = makeWideLlama(join(OUT, "imatrix"));
  const auto = join(OUT, "imatrix.auto.gguf");
  convertWithPython(PYTHON, dir, "auto", auto);
  const bytes = legacyImatrix(wideImatrixEntries());
  const path = join(OUT, "wide.imatrix.dat");
  writeFileSync(path, bytes);
  const im = legacyImatrixForPeer(bytes, path);
  for (const p of ["IQ2_XS", "IQ1_M", "IQ3_XXS", "Q2_K_S", "IQ4_XS", "Q4_K_M"]) {
    const theirs = join(OUT, `imatrix.${p}.peer.gguf`);
    const ours = join(OUT, `imatrix.${p}.ours.gguf`);
    assert.equal(peer.quantize(auto, theirs, { ftype: LLAMA_PRESETS.find((x) => x.name === p)!.ftype, ...im }), 0, `llama_model_quantize ${p}`);
    const r = await cli(["quantize", dir, "--mode", p, "--imatrix", path, "-o", ours, "-q"]);
    assert.equal(r.code, 0, `${p}: ${r.err}`);
    const a = readFileSync(ours);
    const b = readFileSync(theirs);
    assert.ok(a.equals(b), `${p}: ${firstDifference(a, b)}`);
  }
});
