/**
 * Writes test/fixtures/gguf/quantize-edges/: rows that the golden rows (make.py's weights) seldom
 * hold, and what node-llama-cpp 3.21.1's libggml-base `ggml_quantize_chunk` makes of them for every
 * type tensorcast quantizes, without an importance matrix and with one. Keeps the edges in the
 * everyday suite without the peer installed.
 *
 * in.f32: 12 rows of 512 float32 values.
 *   rows 0-1   q3-fifth-pass.f32: 64 groups of 16 where make_q3_quants' fifth pass still moves a
 *              code (found by counting fifth-pass moves in search.ts over rows.ts's gaussian, heavy
 *              and levels groups, Rng seed 12345; one group in about 20000 is one)
 *   rows 2-9   rows.ts's adversarialRows, a kind per 32 values (zeros, constants, outliers,
 *              subnormals, FLT_MAX, ties, levels, ramps, near powers of two, NaN and Inf)
 *   rows 10-11 the same, a kind per 256 values
 * in-grid.f32: 8 rows of 512 for the codebook types (IQ1, IQ2, IQ3), whose ggml code aborts on NaN,
 *   Inf and sums that overflow: rows.ts's kinds without huge values, random bits and non-finite ones,
 *   at scales up to 2^20.
 * imatrix.f32: 512 weights (rows.ts's importance). T.bin (where ggml quantizes T without a matrix)
 * and T.imatrix.bin: ggml's bytes.
 *
 * Usage: npx tsc -p tsconfig.test.json && node build/test/ggml/make-quantize-edges.js   (needs test-peers/)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canQuantize, GGML_TYPES } from "../../src/ggml/index.js";
import { ggmlPeer } from "../support/ggml-peer.js";
import { GGUF_FIXTURES } from "./golden.js";
import { adversarialRows, GRID_KINDS, GRID_MAX_EXP, GRID_TYPES, importance, ROW_KINDS } from "./rows.js";

const peer = ggmlPeer();
if (typeof peer === "string") throw new Error(peer);
const dir = join(GGUF_FIXTURES, "quantize-edges");
const N = 512;
const kinds = ROW_KINDS.filter((k) => k !== "payloads");
const x = new Float32Array(12 * N);
x.set(new Float32Array(new Uint8Array(readFileSync(join(dir, "q3-fifth-pass.f32"))).buffer), 0);
x.set(adversarialRows(8, N, 32, 0x5eed, kinds), 2 * N);
x.set(adversarialRows(2, N, 256, 0x5eee, kinds), 10 * N);
const grid = adversarialRows(8, N, 32, 0x5eef, GRID_KINDS, GRID_MAX_EXP);
const im = importance(N, 7);
writeFileSync(join(dir, "in.f32"), new Uint8Array(x.buffer));
writeFileSync(join(dir, "in-grid.f32"), new Uint8Array(grid.buffer));
writeFileSync(join(dir, "imatrix.f32"), new Uint8Array(im.buffer));
for (const t of GGML_TYPES) {
  if (!canQuantize(t, true)) continue;
  const rows = GRID_TYPES.has(t.name) ? grid : x;
  if (!peer.requiresImatrix(t.id)) writeFileSync(join(dir, `${t.name}.bin`), peer.quantize(t.id, rows, N));
  writeFileSync(join(dir, `${t.name}.imatrix.bin`), peer.quantize(t.id, rows, N, im));
}
console.log("wrote", dir);
