/**
 * Random GGML blocks weighted toward the edges: random bytes, then each scale field (binary16,
 * E8M0, UE4M3, as the table lays them out) often set to a special code: zeros of both signs,
 * subnormals, the largest finite, infinities and NaNs.
 */
import type { GgmlType } from "../../src/ggml/index.js";
import { Rng } from "../support/rng.js";

export const HALF_EDGES = [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x0200, 0x3555];
export const BYTE_EDGES = [0x00, 0x01, 0x02, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff, 0x78, 0x77];

export function edgeBlocks(t: GgmlType, blocks: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  const out = new Uint8Array(blocks * t.typeSize);
  for (let i = 0; i < out.length; i++) out[i] = rng.below(256);
  for (let b = 0; b < blocks; b++) {
    for (const f of t.fields) {
      for (let k = 0; k < f.count; k++) {
        // The first blocks take each edge code in turn, so every one is there; later ones draw them.
        const fixed = k === 0 && b < (f.kind === "f16" ? HALF_EDGES.length : BYTE_EDGES.length);
        if (!fixed && rng.below(2) === 0) continue;
        const at = b * t.typeSize + f.offset + k * (f.kind === "f16" ? 2 : 1);
        if (f.kind === "f16") {
          const h = fixed ? HALF_EDGES[b] : HALF_EDGES[rng.below(HALF_EDGES.length)];
          out[at] = h & 0xff;
          out[at + 1] = h >> 8;
        } else if (f.kind === "e8m0" || f.kind === "ue4m3") {
          out[at] = fixed ? BYTE_EDGES[b] : BYTE_EDGES[rng.below(BYTE_EDGES.length)];
        }
      }
    }
  }
  return out;
}
