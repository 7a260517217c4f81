// suite: full
/**
 * `tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf` against llama.cpp's llama_model_quantize
 * (node-llama-cpp's libllama through koffi): for every case of quantize-cases.ts (every preset on
 * both tiny models, the importance-matrix presets with a legacy .dat, and the options) the two
 * outputs are the same bytes. The peer's files' SHA-256 are also those test/fixtures/gguf-quantize/
 * golden.json holds, so the everyday suite's check stays the peer's.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { llamaQuantPeer } from "../../support/llama-quant-peer.js";
import { peerSkip } from "../../support/ggml-peer.js";
import { runCli } from "../../support/cli.js";
import { caseFolder, ftypeOf, peerImatrix, QUANT_CASES } from "./quantize-cases.js";
import { GOLDEN } from "./quantize-golden-data.js";

const peer = llamaQuantPeer();
const skip = peerSkip(peer as never);
let folder: Awaited<ReturnType<typeof caseFolder>>;

const sha256 = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

function firstDifference(a: Uint8Array, b: Uint8Array): string {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return `first difference at byte ${i} (sizes ${a.length} and ${b.length})`;
  return `sizes ${a.length} and ${b.length}`;
}

before(async () => {
  if (typeof peer === "string") return;
  folder = await caseFolder(async (input, output) => {
    assert.equal(peer.quantize(input, output, { ftype: 7 }), 0);
  });
});
after(() => {
  folder?.restore();
  if (folder) rmSync(folder.dir, { recursive: true, force: true });
});

for (const c of QUANT_CASES) {
  test(`quantize ${c.id}: tensorcast's file is llama_model_quantize's, byte for byte`, { skip }, async () => {
    if (typeof peer === "string") throw new Error(peer);
    const input = folder.input(c);
    const ours = join(folder.dir, `${c.id}.ours.gguf`);
    const theirs = join(folder.dir, `${c.id}.peer.gguf`);
    const imatrixPath = folder.imatrixPath(c);
    const im = c.imatrix ? peerImatrix(c.model === "deep" ? "deep" : "wide", imatrixPath) : undefined;
    assert.equal(peer.quantize(input, theirs, { ftype: ftypeOf(c), ...c.peer, ...(im ?? {}) }), 0, "llama_model_quantize failed");
    const r = await runCli("quantize", input, "--mode", c.preset.toLowerCase(), "-o", ours, "-q", ...c.args, ...(c.imatrix ? ["--imatrix", imatrixPath] : []));
    assert.equal(r.code, 0, r.err);
    const a = readFileSync(ours);
    const b = readFileSync(theirs);
    assert.ok(a.equals(b), `${c.id}: ${firstDifference(a, b)}`);
    const golden = GOLDEN.outputs[c.id];
    if (golden !== undefined) assert.equal(sha256(b), golden, `${c.id}: the peer's file is not golden.json's (run make-quantize-golden)`);
  });
}

test("the test models are those golden.json was made from", { skip }, () => {
  for (const m of ["wide", "deep", "wide-q8_0"] as const) {
    assert.equal(sha256(readFileSync(join(folder.dir, `${m}.gguf`))), GOLDEN.models[m], m);
  }
});
