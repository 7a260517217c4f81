/**
 * Every GGML block type decodes bit for bit as ggml's own C code: 96 random blocks of each (every
 * byte pattern the format can hold, NaN and Inf scales included) against what libggml-base's
 * to_float gave for them (test/fixtures/gguf/dequant, NaN compared as NaN), and blocks with edge
 * scales against llama.cpp's (test/fixtures/gguf/edges).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { dequantizeGgml, GGML_TYPES, ggmlType } from "../../src/ggml/index.js";
import { assertSameFloats, fixture, INDEX, npyFloat32 } from "./golden.js";

const golden = Object.entries(INDEX.dequant);

test("the golden set covers every block type GGUF files carry (Q2_0 excepted: gguf-py 0.19 has none)", () => {
  const carried = GGML_TYPES.filter((t) => t.stored && t.quantized && t.name !== "Q2_0").map((t) => t.name).sort();
  assert.deepEqual(golden.map(([name]) => name).sort(), carried);
});

for (const [name, g] of golden) {
  test(`${name}: the table's block (${g.block} elements, ${g.bytes_per_block} bytes) and ggml's decoding of ${g.blocks} random blocks`, () => {
    const t = ggmlType(name);
    assert.equal(t.blockSize, g.block);
    assert.equal(t.typeSize, g.bytes_per_block);
    const raw = fixture("dequant", `${name}.bin`);
    const expected = npyFloat32(fixture("dequant", `${name}.f32.npy`));
    assert.equal(raw.length, g.blocks * g.bytes_per_block);
    assertSameFloats(dequantizeGgml(t, raw), expected, name);
    // Decoding from an odd offset into a larger buffer gives the same values.
    const shifted = new Uint8Array(raw.length + 3);
    shifted.set(raw, 1);
    assertSameFloats(dequantizeGgml(name.toLowerCase(), shifted.subarray(1, 1 + raw.length)), expected, `${name} at an odd offset`);
  });
}

// Scale edges (zero, subnormal, largest, Inf and NaN binary16 scales; E8M0 0xFF; UE4M3 0x7F and bit 7)
// that random bytes seldom hold, against llama.cpp's to_float (test/ggml/make-edges.ts made them).
for (const t of GGML_TYPES.filter((r) => r.quantized && r.stored && r.name !== "Q2_0")) {
  test(`${t.name}: blocks with edge scales decode as llama.cpp's to_float`, () => {
    const raw = fixture("edges", `${t.name}.bin`);
    const expected = new Float32Array(fixture("edges", `${t.name}.f32`).buffer);
    assertSameFloats(dequantizeGgml(t, raw), expected, `${t.name} edges`);
  });
}
