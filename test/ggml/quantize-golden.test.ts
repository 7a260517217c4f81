/**
 * Every GGML quantizer against ggml's own bytes: test/fixtures/gguf/quantize/T.in.npy (12 rows of
 * 512 shaped like weights, with the edge rows make.py describes: zeros, one value, subnormal-scale
 * magnitudes, a few levels, a ramp, negative-dominant, near fp16's top, -0) through
 * `ggml_quantize_chunk` without an importance matrix gave T.bin, and with one
 * (quantize-imatrix/T.imatrix.npy) quantize-imatrix/T.bin. Our bytes must be those, byte for byte,
 * and our decoder of them must give what ggml's to_float gave (T.back.f32.npy).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { canQuantize, dequantizeGgml, ggmlType, quantizableTypes, quantizeRows } from "../../src/ggml/index.js";
import { assertSameFloats, fixture, GGUF_FIXTURES, npyFloat32 } from "./golden.js";
import { GRID_TYPES } from "./rows.js";

interface QuantIndex {
  quantize: Record<string, { rows: number; n_per_row: number; bytes: number }>;
  quantize_imatrix: Record<string, { rows: number; n_per_row: number; bytes: number }>;
}
const INDEX: QuantIndex = JSON.parse(readFileSync(join(GGUF_FIXTURES, "quantize", "index.json"), "utf8"));

/** The first byte where a and b differ, with its block, or undefined. */
export function byteDifference(a: Uint8Array, b: Uint8Array, typeSize: number): string | undefined {
  if (a.length !== b.length) return `lengths ${a.length} and ${b.length}`;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return `byte ${i} (block ${Math.floor(i / typeSize)}, offset ${i % typeSize}): ours 0x${a[i].toString(16)}, ggml 0x${b[i].toString(16)}`;
  }
  return undefined;
}

for (const [name, g] of Object.entries(INDEX.quantize)) {
  test(`${name}: ggml_quantize_chunk's bytes for ${g.rows} rows of ${g.n_per_row}, and ggml's decoding of them`, () => {
    const t = ggmlType(name);
    const x = npyFloat32(fixture("quantize", `${name}.in.npy`));
    const expected = fixture("quantize", `${name}.bin`);
    assert.equal(expected.length, g.bytes);
    const ours = quantizeRows(t, x, g.n_per_row);
    const diff = byteDifference(ours, expected, t.typeSize);
    if (diff !== undefined) assert.fail(`${name}: ${diff}`);
    const back = npyFloat32(fixture("quantize", `${name}.back.f32.npy`));
    assertSameFloats(dequantizeGgml(t, ours), back, `${name} decoded`);
  });
}

for (const [name, g] of Object.entries(INDEX.quantize_imatrix)) {
  const t = ggmlType(name);
  test(`${name} with an importance matrix: ggml_quantize_chunk's bytes for ${g.rows} rows of ${g.n_per_row}`, { skip: canQuantize(t, true) ? false : `no ${name} encoder yet` }, () => {
    const x = npyFloat32(fixture("quantize-imatrix", `${name}.in.npy`));
    const im = npyFloat32(fixture("quantize-imatrix", `${name}.imatrix.npy`));
    const expected = fixture("quantize-imatrix", `${name}.bin`);
    const diff = byteDifference(quantizeRows(t, x, g.n_per_row, im), expected, t.typeSize);
    if (diff !== undefined) assert.fail(`${name} with imatrix: ${diff}`);
  });
}

test("quantizeRows refuses what ggml would assert on, naming what was given", () => {
  const code = (c: string) => (e: unknown) => (e as { code?: string }).code === c;
  assert.throws(() => quantizeRows("Q9_9", new Float32Array(32), 32), code("UNKNOWN_DTYPE"));
  assert.throws(() => quantizeRows("Q8_1", new Float32Array(32), 32), code("UNSUPPORTED_TYPE"));
  assert.throws(() => quantizeRows("Q4_K", new Float32Array(128), 128), /rowLength 128 is not a positive multiple of 256/);
  assert.throws(() => quantizeRows("Q4_0", new Float32Array(96), 64), /96 values are not whole rows of 64/);
  assert.throws(() => quantizeRows("Q4_K", new Float32Array(256), 256, new Float32Array(32)), code("INVALID_DATA"));
  assert.throws(() => quantizeRows("Q4_0", new Float32Array(32), 0), code("SHAPE_MISMATCH"));
  // Any case, and zero rows are zero bytes.
  assert.equal(quantizeRows("q8_0", new Float32Array(0), 32).length, 0);
  assert.deepEqual(Array.from(quantizeRows("Q8_0", new Float32Array(32).fill(1), 32).subarray(0, 4)), [0x08, 0x20, 127, 127]);
});

// Rows the golden set seldom holds (make-quantize-edges.ts: groups where make_q3_quants' fifth pass
// still moves a code, blocks of zeros, constants, outliers, subnormals, FLT_MAX, ties, near powers of
// two, NaN and Inf), against llama.cpp's ggml_quantize_chunk.
{
  const floats = (name: string): Float32Array => new Float32Array(fixture("quantize-edges", name).slice().buffer);
  const general = floats("in.f32");
  const grid = floats("in-grid.f32");
  const im = floats("imatrix.f32");
  for (const name of quantizableTypes()) {
    const t = ggmlType(name);
    const x = GRID_TYPES.has(name) ? grid : general;
    test(`${name}: edge rows quantize as llama.cpp's ggml_quantize_chunk${canQuantize(t) ? ", without and with an importance matrix" : ""}`, () => {
      for (const [file, w] of [[`${name}.bin`, undefined], [`${name}.imatrix.bin`, im]] as const) {
        if (w === undefined && !canQuantize(t)) continue;
        const diff = byteDifference(quantizeRows(t, x, 512, w), fixture("quantize-edges", file), t.typeSize);
        if (diff !== undefined) assert.fail(`${file}: ${diff}`);
      }
    });
  }
}
