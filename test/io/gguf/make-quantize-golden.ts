/**
 * Writes test/fixtures/gguf-quantize/golden.json: the SHA-256 of the tiny test models
 * (gguf-quant-models.ts) and of what node-llama-cpp 3.21.1's libllama llama_model_quantize writes
 * for each case of quantize-cases.ts, so the everyday suite checks tensorcast's bytes against the
 * peer's without the peer installed. Nothing else is stored: the models are made anew by the tests.
 *
 * Usage: node scripts/build-all.mjs && node build/test/io/gguf/make-quantize-golden.js   (needs test-peers/)
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { llamaQuantPeer } from "../../support/llama-quant-peer.js";
import { caseFolder, ftypeOf, peerImatrix, QUANT_CASES } from "./quantize-cases.js";
import { GOLDEN_PATH } from "./quantize-golden-data.js";

const peer = llamaQuantPeer();
if (typeof peer === "string") throw new Error(peer);
const sha256 = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

const folder = await caseFolder(async (input, output) => {
  if (peer.quantize(input, output, { ftype: 7 }) !== 0) throw new Error("llama_model_quantize failed on the Q8_0 input");
});
try {
  const models: Record<string, string> = {};
  for (const m of ["wide", "deep", "wide-q8_0"]) models[m] = sha256(readFileSync(join(folder.dir, `${m}.gguf`)));
  const outputs: Record<string, string> = {};
  for (const c of QUANT_CASES) {
    const out = join(folder.dir, `${c.id}.gguf`);
    const im = c.imatrix ? peerImatrix(c.model === "deep" ? "deep" : "wide", folder.imatrixPath(c)) : undefined;
    if (peer.quantize(folder.input(c), out, { ftype: ftypeOf(c), ...c.peer, ...(im ?? {}) }) !== 0) throw new Error(`llama_model_quantize failed on ${c.id}`);
    outputs[c.id] = sha256(readFileSync(out));
  }
  mkdirSync(dirname(GOLDEN_PATH), { recursive: true });
  writeFileSync(GOLDEN_PATH, JSON.stringify({ made: "node-llama-cpp 3.21.1 libllama llama_model_quantize, nthread 1", models, outputs }, null, 1) + "\n");
  console.log(`wrote ${GOLDEN_PATH}: ${Object.keys(outputs).length} outputs`);
} finally {
  folder.restore();
  rmSync(folder.dir, { recursive: true, force: true });
}
