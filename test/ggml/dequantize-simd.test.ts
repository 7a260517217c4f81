/**
 * The WebAssembly SIMD decoders of GGML types (src/ggml/simd.ts) against the reference decoders
 * (src/ggml/dequantize.ts) bit for bit, NaN as NaN: random blocks weighted toward the scale edges
 * (test/ggml/blocks.ts: zeros, subnormals, the largest finite, Inf, NaN), runs of blocks longer
 * than one streamed chunk, odd offsets, and blocks decoded in place in an arena.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createArena } from "../../src/arena.js";
import { dequantizeBlocks, dequantizeGgml, ggmlType, type GgmlType } from "../../src/ggml/index.js";
import { GGML_SIMD_TYPES, ggmlSimdAvailable, useGgmlSimd } from "../../src/ggml/simd.js";
import { property } from "../support/suite.js";
import { edgeBlocks } from "./blocks.js";
import { assertSameFloats, firstBitDifference } from "./golden.js";

function reference(t: GgmlType, bytes: Uint8Array): Float32Array {
  useGgmlSimd(false);
  try {
    return dequantizeGgml(t, bytes);
  } finally {
    useGgmlSimd(true);
  }
}

test("WebAssembly SIMD is there to test (Node 20+)", () => {
  assert.equal(ggmlSimdAvailable(), true);
});

for (const name of GGML_SIMD_TYPES) {
  const t = ggmlType(name);
  test(`${name}: the SIMD decoder gives the reference's bits on random and edge-scale blocks`, () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.integer({ min: 1, max: 24 }), (seed, blocks) => {
      const bytes = edgeBlocks(t, blocks, seed);
      const ours = dequantizeGgml(t, bytes);
      const ref = reference(t, bytes);
      const at = firstBitDifference(ours, ref);
      if (at !== -1) throw new Error(`${name} seed ${seed}: element ${at}: simd ${ours[at]}, reference ${ref[at]}`);
    }), property(400, 35, 40));
  });

  test(`${name}: many chunks' worth of blocks from an odd offset into an offset output`, () => {
    const blocks = Math.ceil(40000 / t.blockSize) + 3;
    const raw = edgeBlocks(t, blocks, 7 + t.id);
    const shifted = new Uint8Array(raw.length + 5);
    shifted.set(raw, 3);
    const out = new Float32Array(blocks * t.blockSize + 7);
    out.fill(-1);
    dequantizeBlocks(t, shifted, 3, out, 5, blocks);
    assertSameFloats(out.subarray(5, 5 + blocks * t.blockSize), reference(t, raw), name);
    assert.deepEqual([...out.subarray(0, 5), ...out.subarray(5 + blocks * t.blockSize)], [-1, -1, -1, -1, -1, -1, -1]);
  });

  test(`${name}: blocks and output in one arena decode in place, touching nothing around the output`, () => {
    const blocks = 37;
    const raw = edgeBlocks(t, blocks, 11 + t.id);
    const arena = createArena(1 << 20);
    const src = arena.zeros("uint8", [raw.length]).data as Uint8Array;
    src.set(raw);
    const out = arena.zeros("float32", [blocks * t.blockSize + 2]).data as Float32Array;
    out.fill(-1);
    dequantizeBlocks(t, src, 0, out, 1, blocks);
    assertSameFloats(out.subarray(1, 1 + blocks * t.blockSize), reference(t, raw), `${name} in an arena`);
    assert.deepEqual([out[0], out[out.length - 1]], [-1, -1]);
  });
}
