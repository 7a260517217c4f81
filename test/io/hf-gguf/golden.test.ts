/**
 * Hugging Face folder -> GGUF against llama.cpp's convert_hf_to_gguf.py (test/fixtures/hf-gguf/
 * make.py): for each tiny model folder and outtype, the core's plan and encoder, fed the folder's
 * files and safetensors bytes, must give convert_hf_to_gguf's file byte for byte (compared whole
 * where the GGUF is kept, else by its SHA-256 and size).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { convertInMemory, golden, HF_GGUF_CASES, OUTTYPES } from "./fixtures.js";

for (const c of HF_GGUF_CASES) {
  for (const [t, outtype] of Object.entries(OUTTYPES)) {
    test(`hf-gguf ${c} --outtype ${t}: convert_hf_to_gguf.py's bytes`, async () => {
      const ours = await convertInMemory(c, outtype);
      const want = golden(c, t);
      if (want.bytes !== undefined) {
        let first = -1;
        for (let i = 0; i < Math.min(ours.length, want.bytes.length); i++) if (ours[i] !== want.bytes[i]) { first = i; break; }
        assert.equal(first, -1, `first differing byte at ${first}`);
      }
      assert.equal(ours.length, want.size);
      assert.equal(createHash("sha256").update(ours).digest("hex"), want.sha256);
    });
  }
}

test("hf-gguf: the fixture cases are there", () => {
  assert.ok(HF_GGUF_CASES.includes("llama"));
});
