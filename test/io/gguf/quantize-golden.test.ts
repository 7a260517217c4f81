/**
 * `tensorcast quantize IN.gguf` against the golden SHA-256 of llama_model_quantize's outputs
 * (test/fixtures/gguf-quantize/golden.json, made by make-quantize-golden.ts from the live peer,
 * which quantize-peer.test.ts compares byte for byte in the full suite): the everyday cases of
 * quantize-cases.ts (every preset on the deep model, some on the wide one, the options), in the
 * full suite all of them. The models are made anew from their seed and must hash as they did.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { runCli } from "../../support/cli.js";
import { FULL } from "../../support/suite.js";
import { caseFolder, QUANT_CASES } from "./quantize-cases.js";
import { GOLDEN } from "./quantize-golden-data.js";

const sha256 = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
let folder: Awaited<ReturnType<typeof caseFolder>>;

before(async () => {
  folder = await caseFolder(async (input, output) => {
    const r = await runCli("quantize", input, "--mode", "Q8_0", "-o", output, "-q");
    assert.equal(r.code, 0, r.err);
  });
});
after(() => {
  folder.restore();
  rmSync(folder.dir, { recursive: true, force: true });
});

test("the test models, made from their seed, are those the golden outputs were made from", () => {
  for (const m of ["wide", "deep", "wide-q8_0"]) assert.equal(sha256(readFileSync(join(folder.dir, `${m}.gguf`))), GOLDEN.models[m], m);
});

test("every case has a golden output", () => {
  assert.deepEqual(QUANT_CASES.map((c) => c.id).filter((id) => GOLDEN.outputs[id] === undefined), []);
});

for (const c of QUANT_CASES) {
  test(`quantize ${c.id}: the bytes llama_model_quantize wrote (golden SHA-256)`, { skip: c.everyday || FULL ? false : "full suite only (npm run test:full)" }, async () => {
    const out = join(folder.dir, `${c.id}.gguf`);
    const r = await runCli("quantize", folder.input(c), "--mode", c.preset, "-o", out, "-q", ...c.args, ...(c.imatrix ? ["--imatrix", folder.imatrixPath(c)] : []));
    assert.equal(r.code, 0, r.err);
    assert.equal(sha256(readFileSync(out)), GOLDEN.outputs[c.id]);
  });
}
