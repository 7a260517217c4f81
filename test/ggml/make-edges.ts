/**
 * Writes test/fixtures/gguf/edges/: for every GGML block type llama.cpp decodes, 20 blocks weighted
 * toward the scale edges (blocks.ts: zero, subnormal, largest, Inf and NaN binary16 scales; E8M0 and
 * UE4M3 bytes 0, 1, 0x7F, 0x80, 0xFF ...), and what node-llama-cpp 3.21.1's libggml-base to_float
 * gives for them. The random golden blocks rarely hold these codes; this keeps them in the everyday
 * suite without the peer installed.
 *
 * Usage: npx tsc -p tsconfig.test.json && node build/test/ggml/make-edges.js   (needs test-peers/)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GGML_TYPES } from "../../src/ggml/index.js";
import { ggmlPeer } from "../support/ggml-peer.js";
import { edgeBlocks } from "./blocks.js";
import { GGUF_FIXTURES } from "./golden.js";

const peer = ggmlPeer();
if (typeof peer === "string") throw new Error(peer);
const dir = join(GGUF_FIXTURES, "edges");
mkdirSync(dir, { recursive: true });
const BLOCKS = 20;
for (const t of GGML_TYPES) {
  if (!t.quantized || !t.stored || t.id > 41 || !peer.traits(t.id).hasToFloat) continue;
  const bytes = edgeBlocks(t, BLOCKS, 0x35 + t.id);
  const values = peer.toFloat(t.id, bytes, BLOCKS * t.blockSize);
  writeFileSync(join(dir, `${t.name}.bin`), bytes);
  writeFileSync(join(dir, `${t.name}.f32`), new Uint8Array(values.buffer));
}
console.log("wrote", dir);
