/**
 * A GGUF model read as transformers' tensors (src/node/io/gguf-hf.ts): any run of elements of any
 * tensor reads as the same run of the whole tensor, whatever heads or blocks it cuts; the whole
 * tensor is the golden values (gguf-py's dequantization, transformed as transformers does); and
 * F16 widens to float32 as numpy does, every one of the 65,536 codes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cast, Tensor } from "../../src/index.js";
import { applyTransform } from "../../src/io/gguf-hf/index.js";
import { halfBitsToFloatBits, openGgufHf } from "../../src/node/io/gguf-hf.js";
import { random } from "./helpers.js";
import { openTensorFile } from "../../src/node/io/reader.js";

/** gguf-py's dequantized values of every GGUF tensor (CASE/input.safetensors), by GGUF name. */
async function goldenInput(path: string): Promise<Map<string, Float32Array>> {
  const f = await openTensorFile(path);
  try {
    const out = new Map<string, Float32Array>();
    for (const t of f.tensors) out.set(t.name, new Float32Array((await t.read(0, t.size)).slice().buffer));
    return out;
  } finally {
    await f.close();
  }
}

const FIXTURES = join(fileURLToPath(new URL("../../../", import.meta.url)), "test/fixtures/gguf-hf");

test("float16 -> float32 as numpy's astype: exact for every number, NaN keeping its payload and its signalling bit", () => {
  const codes = new Uint16Array(65536).map((_, i) => i);
  const viaCast = new Uint32Array((cast(Tensor.fromStorage(codes, "float16", [65536]), "float32").data as Float32Array).buffer);
  for (let h = 0; h < 65536; h++) {
    const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    // numpy's npy_halfbits_to_floatbits: sign, all-ones exponent, the 10 payload bits on top
    const want = isNaN ? (((h & 0x8000) << 16) | 0x7f800000 | ((h & 0x3ff) << 13)) >>> 0 : viaCast[h]!;
    assert.equal(halfBitsToFloatBits(h), want, `0x${h.toString(16)}`);
  }
  // a few from numpy itself (np.array([...], np.uint16).view(np.float16).astype(np.float32))
  assert.deepStrictEqual([0x7c01, 0xfc01, 0x7e00, 0x7dff, 0x0001, 0x8000].map(halfBitsToFloatBits), [0x7f802000, 0xff802000, 0x7fc00000, 0x7fbfe000, 0x33800000, 0x80000000]);
});

for (const c of ["llama", "gemma2", "phi3"]) {
  test(`${c}: every tensor whole is the golden values transformed; any run of it reads as that run`, async () => {
    const view = await openGgufHf(join(FIXTURES, c, "model.gguf"));
    const input = await goldenInput(join(FIXTURES, c, "input.safetensors"));
    const next = random(c.length * 7919);
    try {
      for (const t of view.tensors) {
        const want = applyTransform(t.plan.transform, t.shape, input.get(t.plan.from)!);
        const whole = new Float32Array((await t.read(0, t.size)).slice().buffer);
        assert.deepStrictEqual(new Uint32Array(whole.buffer), new Uint32Array(want.buffer), t.name);
        for (let k = 0; k < 12; k++) {
          const start = next() % t.size;
          const count = next() % (t.size - start + 1);
          const into = k % 2 === 0 ? new Uint8Array(count * 4) : undefined;
          const got = await t.read(start, count, into);
          if (into) assert.equal(got, into, "reads into the buffer given");
          assert.deepStrictEqual(new Uint8Array(got), new Uint8Array(want.buffer, start * 4, count * 4), `${t.name} [${start}, +${count})`);
        }
      }
    } finally {
      await view.gguf.close();
    }
  });
}
