// suite: full
/**
 * Every GGML type against llama.cpp's own decoder, live: node-llama-cpp 3.21.1's libggml-base
 * (test-peers/) through koffi, `ggml_get_type_traits(type)->to_float` on random blocks weighted
 * toward the scale edges (test/ggml/blocks.ts), every type the library decodes, by both paths: the
 * WebAssembly SIMD kernels where the type has one (src/ggml/simd.ts) and the reference decoders.
 * Skipped with the reason where test-peers is not installed; under CI=true it must run.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { dequantizeGgml, GGML_TYPES, canDequantize } from "../../src/ggml/index.js";
import { useGgmlSimd } from "../../src/ggml/simd.js";
import { ggmlPeer, peerSkip } from "../support/ggml-peer.js";
import { runs } from "../support/suite.js";
import { edgeBlocks } from "./blocks.js";
import { firstBitDifference } from "./golden.js";

const peer = ggmlPeer();
const skip = peerSkip(peer);

test("the table agrees with the peer's type traits for every id it has", { skip }, () => {
  if (typeof peer === "string") assert.fail(peer);
  for (const t of GGML_TYPES) {
    if (t.id > 41) continue; // Q2_0 (42) is newer than node-llama-cpp 3.21.1's ggml
    const p = peer.traits(t.id);
    assert.equal(p.name.toUpperCase(), t.name, `id ${t.id}`);
    assert.equal(p.blockSize, t.blockSize, t.name);
    assert.equal(p.typeSize, t.typeSize, t.name);
  }
});

for (const t of GGML_TYPES) {
  if (!canDequantize(t) || t.id > 41) continue;
  test(`${t.name}: random and edge-scale blocks decode as llama.cpp's to_float`, { skip }, (ctx) => {
    if (typeof peer === "string") assert.fail(peer);
    if (!peer.traits(t.id).hasToFloat) {
      ctx.diagnostic(`ggml has no to_float for ${t.name}; compared with Cast only`);
      return;
    }
    fc.assert(fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.integer({ min: 1, max: 16 }), (seed, blocks) => {
      const bytes = edgeBlocks(t, blocks, seed);
      const theirs = peer.toFloat(t.id, bytes, blocks * t.blockSize);
      for (const simd of [true, false]) {
        useGgmlSimd(simd);
        let ours: Float32Array;
        try {
          ours = dequantizeGgml(t, bytes);
        } finally {
          useGgmlSimd(true);
        }
        const at = firstBitDifference(ours, theirs);
        if (at !== -1) throw new Error(`${t.name} (${simd ? "SIMD" : "reference"}) seed ${seed}: element ${at}: ours ${ours[at]}, ggml ${theirs[at]}`);
      }
    }), { numRuns: runs(300), seed: 35 });
  });
}
