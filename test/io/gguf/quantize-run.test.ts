// suite: full
/**
 * `tensorcast quantize IN.gguf --mode PRESET` output run by llama.cpp (node-llama-cpp's CPU build,
 * test/support/llama-run.ts): for every case of quantize-cases.ts (every preset on both tiny
 * models of gguf-quant-models.ts, the importance-matrix ones and the options), tensorcast's file
 * and llama_model_quantize's (node-llama-cpp's libllama through koffi) are the same bytes, both load
 * in llama.cpp and evaluate a fixed prompt, their next-token probabilities are finite, sum to 1 and
 * are the same bits.
 *
 * The models are given their byte-level BPE vocabulary ("gpt2", gguf-quant-models.ts): with the
 * SentencePiece one, which has no byte tokens, llama.cpp's tokenizer aborts node-llama-cpp at load.
 * The tensors, and so every quantization decision, are the same.
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { llamaQuantPeer } from "../../support/llama-quant-peer.js";
import { peerSkip } from "../../support/ggml-peer.js";
import { llamaRun, llamaRunMissing, type LlamaRunResult } from "../../support/llama-run.js";
import { runCli } from "../../support/cli.js";
import { caseFolder, ftypeOf, peerImatrix, QUANT_CASES } from "./quantize-cases.js";

const peer = llamaQuantPeer();
const missing = typeof peer === "string" ? peer : llamaRunMissing();
const skip = peerSkip(missing ?? (peer as never));
/** Token ids below both models' vocabularies (16 and 32). */
const PROMPT = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
const VOCAB: Record<string, number> = { wide: 32, "wide-q8_0": 32, deep: 16 };

let folder: Awaited<ReturnType<typeof caseFolder>> | undefined;
const jobs: { model: string; prompt: number[] }[] = [];
const made = new Map<string, { ours: Buffer; theirs: Buffer }>();
const runs = new Map<string, { ours: LlamaRunResult; theirs: LlamaRunResult }>();

before(async () => {
  if (skip !== false) return;
  if (typeof peer === "string") throw new Error(peer);
  folder = await caseFolder(async (input, output) => {
    assert.equal(peer.quantize(input, output, { ftype: 7 }), 0);
  }, "gpt2");
  for (const c of QUANT_CASES) {
    const input: string = folder.input(c);
    const ours = join(folder.dir, `${c.id}.ours.gguf`);
    const theirs = join(folder.dir, `${c.id}.peer.gguf`);
    const imatrixPath: string = folder.imatrixPath(c);
    const im = c.imatrix ? peerImatrix(c.model === "deep" ? "deep" : "wide", imatrixPath) : undefined;
    assert.equal(peer.quantize(input, theirs, { ftype: ftypeOf(c), ...c.peer, ...(im ?? {}) }), 0, `llama_model_quantize failed on ${c.id}`);
    const r = await runCli("quantize", input, "--mode", c.preset.toLowerCase(), "-o", ours, "-q", ...c.args, ...(c.imatrix ? ["--imatrix", imatrixPath] : []));
    assert.equal(r.code, 0, `${c.id}: ${r.err}`);
    made.set(c.id, { ours: readFileSync(ours), theirs: readFileSync(theirs) });
    jobs.push({ model: ours, prompt: PROMPT }, { model: theirs, prompt: PROMPT });
  }
  const results = await llamaRun(jobs);
  QUANT_CASES.forEach((c, i) => runs.set(c.id, { ours: results[2 * i]!, theirs: results[2 * i + 1]! }));
});
after(() => {
  folder?.restore();
  if (folder) rmSync(folder.dir, { recursive: true, force: true });
});

for (const c of QUANT_CASES) {
  test(`llama.cpp runs quantize ${c.id}: finite probabilities, the same bits as from llama_model_quantize's file (the same bytes)`, { skip }, () => {
    const files = made.get(c.id)!;
    assert.ok(files.ours.equals(files.theirs), `${c.id}: tensorcast's file is not llama_model_quantize's`);
    const { ours, theirs } = runs.get(c.id)!;
    assert.equal(ours.error, undefined, `llama.cpp on tensorcast's ${c.id}: ${ours.error}`);
    assert.equal(theirs.error, undefined, `llama.cpp on llama_model_quantize's ${c.id}: ${theirs.error}`);
    const p = ours.probabilities!;
    assert.equal(p.length, VOCAB[c.model]);
    let sum = 0;
    for (const v of p) {
      assert.ok(Number.isFinite(v) && v >= 0, `${c.id}: probability ${v}`);
      sum += v;
    }
    assert.ok(Math.abs(sum - 1) < 1e-5, `${c.id}: probabilities sum to ${sum}`);
    const a = new Uint32Array(p.buffer);
    const b = new Uint32Array(theirs.probabilities!.buffer);
    assert.equal(b.length, a.length);
    const at = a.findIndex((v, i) => v !== b[i]);
    assert.equal(at, -1, `${c.id} token ${at}: ${p[at]} from tensorcast's file, ${theirs.probabilities![at]} from llama_model_quantize's`);
  });
}
