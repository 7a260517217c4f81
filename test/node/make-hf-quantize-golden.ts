/**
 * Writes test/fixtures/hf-gguf/quantize.json: for each folder of hf-quant-cases.ts, the SHA-256 and
 * size of the files llama.cpp's own tools make from it:
 *   outtypes  convert_hf_to_gguf.py DIR --outtype T (auto, tq1_0, tq2_0, ...)
 *   presets   llama_model_quantize (node-llama-cpp's libllama, nthread 1) of the --outtype auto
 *             file with each preset's llama_ftype: what `tensorcast quantize DIR --mode PRESET`
 *             must write in one pass
 * The files themselves are not kept: the tests make tensorcast's and compare the hashes.
 *
 * Usage (needs test-peers/ and a python with torch, numpy and sentencepiece for
 * convert_hf_to_gguf.py; LLAMA_CPP names the llama.cpp checkout, /work/llama.cpp by default):
 *   node scripts/build-all.mjs && TENSORCAST_CONVERT_PYTHON=/work/venv/bin/python node build/test/node/make-hf-quantize-golden.js
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { llamaQuantPeer } from "../support/llama-quant-peer.js";
import { convertWithPython, FTYPES, HF_QUANT_CASES, HF_QUANT_GOLDEN } from "../support/hf-quant-cases.js";

const PYTHON = process.env.TENSORCAST_CONVERT_PYTHON ?? "python3";
const peer = llamaQuantPeer();
if (typeof peer === "string") throw new Error(peer);

function sum(path: string): { sha256: string; size: number } {
  const b = readFileSync(path);
  return { sha256: createHash("sha256").update(b).digest("hex"), size: b.length };
}

const root = mkdtempSync(join(tmpdir(), "hf-quant-golden-"));
try {
  const cases: Record<string, { outtypes: Record<string, { sha256: string; size: number }>; presets: Record<string, { sha256: string; size: number }> }> = {};
  for (const c of HF_QUANT_CASES) {
    const dir = c.make(root);
    const outtypes: Record<string, { sha256: string; size: number }> = {};
    for (const t of new Set(["auto", ...c.outtypes])) {
      const out = join(root, `${c.id}.${t}.gguf`);
      convertWithPython(PYTHON, dir, t, out);
      if (c.outtypes.includes(t)) outtypes[t] = sum(out);
    }
    const presets: Record<string, { sha256: string; size: number }> = {};
    for (const p of c.presets) {
      const out = join(root, `${c.id}.${p}.gguf`);
      if (peer.quantize(join(root, `${c.id}.auto.gguf`), out, { ftype: FTYPES[p] }) !== 0) throw new Error(`llama_model_quantize ${c.id} ${p} failed`);
      presets[p] = sum(out);
    }
    cases[c.id] = { outtypes, presets };
    console.log(`${c.id}: ${Object.keys(outtypes).length} outtypes, ${Object.keys(presets).length} presets`);
  }
  const made = "convert_hf_to_gguf.py (llama.cpp at /work/llama.cpp) then node-llama-cpp 3.21.1 libllama llama_model_quantize, nthread 1";
  writeFileSync(HF_QUANT_GOLDEN, JSON.stringify({ made, cases }, null, 1) + "\n");
  console.log(`wrote ${HF_QUANT_GOLDEN}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
